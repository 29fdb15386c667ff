#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/keyed_noise.h"

namespace tf {

std::uint64_t seed_from_prompt(std::span<const std::int32_t> prompt) {
  std::uint64_t h = 0x5eed5eed5eed5eedull ^ prompt.size();
  for (auto t : prompt) h = mix64(h ^ static_cast<std::uint32_t>(t));
  return h;
}

std::uint64_t choice_seed(std::uint64_t seed, std::int64_t index) {
  if (index == 0) return seed;
  return mix64(seed + static_cast<std::uint64_t>(index) * 0x9e3779b97f4a7c15ull);
}

std::vector<std::pair<std::int32_t, float>> filtered_candidates(std::span<const float> logits,
                                                                const SamplingParams& p) {
  std::vector<std::pair<std::int32_t, float>> c;
  c.reserve(logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i) {
    const float v = logits[i] / p.temperature;
    if (!std::isnan(v)) c.emplace_back(static_cast<std::int32_t>(i), v);
  }
  // Best first; equal logits in id order, so every filter cuts at the same place every time.
  auto better = [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; };
  const bool need_sort = (p.top_k > 0 && static_cast<std::size_t>(p.top_k) < c.size()) || p.top_p < 1.0f;
  if (p.top_k > 0 && static_cast<std::size_t>(p.top_k) < c.size()) {
    std::partial_sort(c.begin(), c.begin() + p.top_k, c.end(), better);
    c.resize(static_cast<std::size_t>(p.top_k));
  } else if (need_sort) {
    std::sort(c.begin(), c.end(), better);
  }
  if (c.empty()) return c;
  if (p.top_p < 1.0f || p.min_p > 0.0f) {
    float max_v = c[0].second;
    if (!need_sort)
      for (const auto& [id, v] : c) max_v = std::max(max_v, v);
    // Probabilities in double, summed in the sorted order: the same numbers every run.
    double total = 0.0;
    std::vector<double> w(c.size());
    for (std::size_t i = 0; i < c.size(); ++i) {
      w[i] = std::exp(static_cast<double>(c[i].second) - static_cast<double>(max_v));
      total += w[i];
    }
    if (p.top_p < 1.0f) {
      double cum = 0.0;
      std::size_t keep = c.size();
      for (std::size_t i = 0; i < c.size(); ++i) {
        cum += w[i] / total;
        if (cum >= static_cast<double>(p.top_p)) {
          keep = i + 1;
          break;
        }
      }
      c.resize(keep);
      w.resize(keep);
    }
    if (p.min_p > 0.0f) {
      // min-p compares with the most likely token, whose weight is exp(0) = 1 relative to max_v.
      std::size_t out = 0;
      for (std::size_t i = 0; i < c.size(); ++i)
        if (w[i] >= static_cast<double>(p.min_p)) c[out++] = c[i];
      c.resize(std::max<std::size_t>(out, 1));
    }
  }
  return c;
}

std::int32_t greedy_token(std::span<const float> logits) {
  // The first index of the largest value: the same answer as scanning with `logits[i] > logits[best]` from
  // best = 0 (NaNs never win; a NaN at 0 wins by default), in two passes that vectorize: the maximum over 8
  // independent lanes (no loop-carried compare chain), then the first index holding it.
  if (logits.empty() || std::isnan(logits[0])) return 0;
  const std::size_t n = logits.size();
  float lane[8];
  for (float& m : lane) m = logits[0];
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) lane[k] = logits[i + k] > lane[k] ? logits[i + k] : lane[k];
  float best = lane[0];
  for (int k = 1; k < 8; ++k) best = lane[k] > best ? lane[k] : best;
  for (; i < n; ++i) best = logits[i] > best ? logits[i] : best;
  for (std::size_t j = 0; j < n; ++j)
    if (logits[j] == best) return static_cast<std::int32_t>(j);
  return 0;
}

TokenLogprob token_logprob(std::span<const float> logits, const SamplingParams& p, std::int32_t token, int top) {
  std::vector<std::pair<std::int32_t, float>> c;
  if (p.temperature > 0.0f) {
    c = filtered_candidates(logits, p);
  } else {
    c.reserve(logits.size());
    for (std::size_t i = 0; i < logits.size(); ++i)
      if (!std::isnan(logits[i])) c.emplace_back(static_cast<std::int32_t>(i), logits[i]);
  }
  // In id order, so the sum is the same whatever order the filters left.
  std::sort(c.begin(), c.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  double max_v = -std::numeric_limits<double>::infinity();
  for (const auto& [id, v] : c) max_v = std::max(max_v, static_cast<double>(v));
  double total = 0.0;
  for (const auto& [id, v] : c) total += std::exp(static_cast<double>(v) - max_v);
  const double log_total = max_v + std::log(total);
  TokenLogprob r;
  r.token = token;
  r.logprob = -std::numeric_limits<float>::infinity();
  const auto it =
      std::lower_bound(c.begin(), c.end(), token, [](const auto& a, std::int32_t t) { return a.first < t; });
  if (it != c.end() && it->first == token && std::isfinite(log_total))
    r.logprob = static_cast<float>(static_cast<double>(it->second) - log_total);
  if (top > 0 && std::isfinite(log_total)) {
    auto better = [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    };
    const auto k = std::min<std::size_t>(static_cast<std::size_t>(top), c.size());
    std::partial_sort(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(k), c.end(), better);
    for (std::size_t i = 0; i < k; ++i) {
      if (!std::isfinite(c[i].second)) break;  // masked or filtered: not a possible token
      r.top.emplace_back(c[i].first, static_cast<float>(static_cast<double>(c[i].second) - log_total));
    }
  }
  return r;
}

std::int32_t sample_token(std::span<const float> logits, const SamplingParams& p, std::uint64_t seed,
                          std::int64_t position) {
  if (p.temperature <= 0.0f) return greedy_token(logits);
  const auto c = filtered_candidates(logits, p);
  if (c.empty()) return 0;
  std::int32_t best = c[0].first;
  double best_score = -std::numeric_limits<double>::infinity();
  for (const auto& [id, v] : c) {
    const double score = static_cast<double>(v) + gumbel_noise(seed, position, id);
    if (score > best_score || (score == best_score && id < best)) {
      best_score = score;
      best = id;
    }
  }
  return best;
}

}  // namespace tf
