#include "blocks/moe_router.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace tf {

std::string router_spec_problem(const RouterSpec& s) {
  if (s.experts < 1 || s.top_k < 1 || s.top_k > s.experts)
    return "num_experts_per_tok must be between 1 and the experts";
  if (s.groups < 1 || s.experts % s.groups != 0) return "n_group must divide the number of experts";
  if (s.top_groups < 1 || s.top_groups > s.groups) return "topk_group must be between 1 and n_group";
  if (s.groups > 1 && s.score != RouterSpec::Score::Sigmoid)
    return "group-limited routing is read for sigmoid routers only";
  if (s.groups > 1 && s.experts / s.groups < 2) return "group-limited routing needs at least 2 experts per group";
  if (s.top_k > s.top_groups * (s.experts / s.groups))
    return "num_experts_per_tok exceeds the experts of topk_group groups";
  if (!s.correction_bias.empty() && static_cast<int>(s.correction_bias.size()) != s.experts)
    return "e_score_correction_bias must have one value per expert";
  if (!s.expert_scale.empty() && static_cast<int>(s.expert_scale.size()) != s.experts)
    return "per_expert_scale must have one value per expert";
  if (s.token_experts.size() % static_cast<std::size_t>(s.top_k) != 0)
    return "the token -> experts table must have num_experts_per_tok columns";
  for (std::size_t i = 0; i < s.token_experts.size(); ++i) {
    const std::int32_t e = s.token_experts[i];
    if (e < 0 || e >= s.experts) return "the token -> experts table names an expert out of range";
    for (std::size_t j = i - i % static_cast<std::size_t>(s.top_k); j < i; ++j)
      if (s.token_experts[j] == e) return "the token -> experts table names one expert twice for a token";
  }
  return {};
}

namespace {

// The indices of the `k` largest values (ties: the lower index first), in that order.
std::vector<int> top_indices(std::span<const float> v, int k) {
  std::vector<int> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(),
                   [&](int a, int b) { return v[static_cast<std::size_t>(a)] > v[static_cast<std::size_t>(b)]; });
  idx.resize(static_cast<std::size_t>(k));
  return idx;
}

// The chosen experts' weights from their unbiased scores.
std::vector<ExpertChoice> weigh(const std::vector<int>& picked, const std::vector<float>& scores, const RouterSpec& s) {
  std::vector<ExpertChoice> out;
  float sum = 0.0f;
  for (const int e : picked) {
    out.push_back({e, scores[static_cast<std::size_t>(e)]});
    sum = sum + scores[static_cast<std::size_t>(e)];
  }
  const float denominator = sum + 1e-20f;
  for (auto& c : out) {
    if (s.norm_top_k) c.weight = c.weight / denominator;
    c.weight = c.weight * s.scaling;
    if (!s.expert_scale.empty()) c.weight = c.weight * s.expert_scale[static_cast<std::size_t>(c.expert)];
  }
  return out;
}

std::vector<float> score_row(std::span<const float> logits, const RouterSpec& s) {
  if (static_cast<int>(logits.size()) != s.experts) throw std::invalid_argument("route_row: logits of another width");
  const auto E = static_cast<std::size_t>(s.experts);
  std::vector<float> scores(E);
  if (s.score == RouterSpec::Score::SqrtSoftplus) {
    // torch's softplus: x itself past 20, else log1p(exp(x)).
    for (std::size_t e = 0; e < E; ++e)
      scores[e] = std::sqrt(logits[e] > 20.0f ? logits[e] : std::log1p(std::exp(logits[e])));
  } else if (s.score == RouterSpec::Score::Sigmoid) {
    for (std::size_t e = 0; e < E; ++e) scores[e] = 1.0f / (1.0f + std::exp(-logits[e]));
  } else {
    const float top = *std::max_element(logits.begin(), logits.end());
    float sum = 0.0f;
    for (std::size_t e = 0; e < E; ++e) {
      scores[e] = std::exp(logits[e] - top);
      sum = sum + scores[e];
    }
    for (auto& v : scores) v = v / sum;
  }
  return scores;
}

}  // namespace

std::vector<ExpertChoice> route_row(std::span<const float> logits, const RouterSpec& s, std::int32_t token) {
  const std::vector<float> scores = score_row(logits, s);
  const auto k = static_cast<std::size_t>(s.top_k);
  if (token < 0 || static_cast<std::size_t>(token) >= s.token_experts.size() / k)
    throw std::out_of_range("route_row: token " + std::to_string(token) + " beyond the token -> experts table");
  std::vector<int> picked(s.token_experts.begin() + static_cast<std::ptrdiff_t>(token * k),
                          s.token_experts.begin() + static_cast<std::ptrdiff_t>((token + 1) * k));
  std::sort(picked.begin(), picked.end());
  return weigh(picked, scores, s);
}

std::vector<ExpertChoice> route_row(std::span<const float> logits, const RouterSpec& s) {
  const auto E = static_cast<std::size_t>(s.experts);
  const std::vector<float> scores = score_row(logits, s);
  std::vector<float> choice = scores;
  if (!s.correction_bias.empty())
    for (std::size_t e = 0; e < E; ++e) choice[e] = choice[e] + s.correction_bias[e];
  if (s.groups > 1) {
    const auto per = E / static_cast<std::size_t>(s.groups);
    std::vector<float> group_score(static_cast<std::size_t>(s.groups));
    for (std::size_t g = 0; g < group_score.size(); ++g) {
      const auto best = top_indices(std::span<const float>(choice).subspan(g * per, per), 2);
      group_score[g] =
          choice[g * per + static_cast<std::size_t>(best[0])] + choice[g * per + static_cast<std::size_t>(best[1])];
    }
    std::vector<bool> kept(group_score.size(), false);
    for (const int g : top_indices(group_score, s.top_groups)) kept[static_cast<std::size_t>(g)] = true;
    for (std::size_t e = 0; e < E; ++e)
      if (!kept[e / per]) choice[e] = -std::numeric_limits<float>::infinity();
  }
  std::vector<int> picked = top_indices(choice, s.top_k);
  std::sort(picked.begin(), picked.end());
  return weigh(picked, scores, s);
}

}  // namespace tf
