#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "engine/keyed_noise.h"
#include "engine/sampler_weights.h"
#include "engine/sampling_math.h"

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

namespace {

using Candidate = std::pair<std::int32_t, float>;  // (id, scaled logit)

// Best first: larger v, equal v (-0 == +0) to the lower id.
bool better(const Candidate& a, const Candidate& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; }

// One row's scaled logits and what the filters need, in buffers reused row after row (per thread).
struct Row {
  std::vector<float> v;   // logit / T; NaN where the logit is NaN
  std::vector<double> w;  // weights (sampler_weights.h), when a filter needs them
  std::vector<std::uint16_t> bin;
  std::size_t count = 0;  // non-NaN entries
  Candidate first{0, 0.0f};
};

Row& scaled_row(std::span<const float> logits, float temperature) {
  thread_local Row r;
  const std::size_t n = logits.size();
  if (static_cast<std::int64_t>(n) > sampling::kMaxVocab) throw std::invalid_argument("sampler: vocabulary over 2^21");
  r.v.resize(n);
  std::size_t nans = 0;
  const float mx = scale_row(logits.data(), n, temperature, r.v.data(), nans);
  r.count = n - nans;
  // The first candidate: the lowest id holding the maximum, and its own value (of a -0/+0 tie, its sign), as
  // the CUDA sampler takes it.
  r.first = {0, mx};
  for (std::size_t i = 0; i < n; ++i)
    if (r.v[i] == mx) {
      r.first = {static_cast<std::int32_t>(i), r.v[i]};
      break;
    }
  return r;
}

// min-p over `c`, whose weights `weight_of` gives; none kept keeps `first`, the best candidate.
template <class WeightOf>
void apply_min_p(std::vector<Candidate>& c, float min_p, const Candidate& first, WeightOf weight_of) {
  if (!(min_p > 0.0f) || c.empty()) return;
  std::size_t out = 0;
  for (const auto& x : c)
    if (weight_of(x) >= static_cast<double>(min_p)) c[out++] = x;
  c.resize(out);
  if (c.empty()) c.push_back(first);
}

// Weights in the buffer are exact where they carry mass; elsewhere the true weight is under 1e-13, so for
// a larger min_p 0 decides the same.
double weight_for_min_p(const Row& r, std::int32_t id, float min_p) {
  const auto i = static_cast<std::size_t>(id);
  if (r.w[i] > 0.0 || min_p > 1e-13f) return r.w[i];
  return sampling::weight(r.v[i], r.first.second);
}

// The candidates the filters keep (in no particular order), or `all` when none filters:
// then every non-NaN entry of the row is a candidate.
struct Kept {
  std::vector<Candidate> c;
  bool all = false;
};

void keep_top_p_sorted(std::vector<Candidate>& c, float v_max, float top_p) {
  std::uint64_t total = 0;
  for (const auto& [id, v] : c) total += sampling::mass(v, v_max);
  std::uint64_t prefix = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    prefix += sampling::mass(c[i].second, v_max);
    if (sampling::top_p_reached(prefix, total, top_p)) {
      c.resize(i + 1);
      return;
    }
  }
}

// top-p over the whole row without sorting it: the masses go into bins of the gap to the max (1/64 nat
// wide; a bin holds a range of v, so bins are in candidate order), the bin where the running mass reaches
// top-p is found from the bins' sums, and only that bin's members are sorted to find the last kept one.
// The running sum at any candidate is the same integer the sorted walk would have, so the cut is too.
void keep_top_p_binned(Row& r, float top_p, std::vector<Candidate>& out) {
  constexpr int kPerNat = 64;
  constexpr int kBins = static_cast<int>(sampling::kMasslessGap) * kPerNat + 1;
  const std::size_t n = r.v.size();
  const float v_max = r.first.second;
  r.w.resize(n);
  r.bin.resize(n);
  row_weights(r.v.data(), n, v_max, r.w.data());
  thread_local std::vector<std::uint64_t> bin_mass;
  bin_mass.assign(kBins, 0);
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(v_max) - static_cast<double>(r.v[i]);
    if (!(d <= sampling::kMasslessGap)) {  // no mass (or NaN): never kept, since the cut is at a massive one
      r.bin[i] = kBins;
      continue;
    }
    const auto b = static_cast<std::uint16_t>(d * kPerNat);
    r.bin[i] = b;
    const std::uint64_t m = sampling::mass_of_weight(r.w[i]);
    bin_mass[b] += m;
    total += m;
  }
  std::uint64_t before = 0;
  int cut = 0;
  while (cut < kBins - 1 && !sampling::top_p_reached(before + bin_mass[static_cast<std::size_t>(cut)], total, top_p))
    before += bin_mass[static_cast<std::size_t>(cut++)];
  std::vector<Candidate> edge;
  for (std::size_t i = 0; i < n; ++i) {
    if (r.bin[i] < cut)
      out.emplace_back(static_cast<std::int32_t>(i), r.v[i]);
    else if (r.bin[i] == cut)
      edge.emplace_back(static_cast<std::int32_t>(i), r.v[i]);
  }
  std::sort(edge.begin(), edge.end(), better);
  for (const auto& c : edge) {
    out.push_back(c);
    before += sampling::mass_of_weight(r.w[static_cast<std::size_t>(c.first)]);
    if (sampling::top_p_reached(before, total, top_p)) break;
  }
}

// top-k without sorting the row: counts in bins of the gap to the max (as keep_top_p_binned's), the bin
// where the count reaches k found from the bins, only its members sorted. Falls back to a selection over
// every candidate when the k-th lies further than the bins reach. Leaves the k best in `out`, best first.
void keep_top_k(Row& r, std::size_t top_k, std::vector<Candidate>& out) {
  constexpr int kPerNat = 64;
  constexpr int kBins = static_cast<int>(sampling::kMasslessGap) * kPerNat + 1;
  const std::size_t n = r.v.size();
  const float v_max = r.first.second;
  r.bin.resize(n);
  thread_local std::vector<std::uint32_t> bin_count;
  bin_count.assign(kBins + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(v_max) - static_cast<double>(r.v[i]);
    const auto b = static_cast<std::uint16_t>(d <= sampling::kMasslessGap ? static_cast<int>(d * kPerNat) : kBins);
    r.bin[i] = b;
    bin_count[b] += r.v[i] == r.v[i];
  }
  std::size_t before = 0;
  int cut = 0;
  while (cut < kBins && before + bin_count[static_cast<std::size_t>(cut)] < top_k) before += bin_count[static_cast<std::size_t>(cut++)];
  out.clear();
  std::vector<Candidate> edge;
  for (std::size_t i = 0; i < n; ++i) {
    if (r.v[i] != r.v[i]) continue;
    if (r.bin[i] < cut)
      out.emplace_back(static_cast<std::int32_t>(i), r.v[i]);
    else if (r.bin[i] == cut)
      edge.emplace_back(static_cast<std::int32_t>(i), r.v[i]);
  }
  const auto need = static_cast<std::ptrdiff_t>(top_k - before);
  std::nth_element(edge.begin(), edge.begin() + need - 1, edge.end(), better);  // the bin past the gap may be large
  edge.resize(static_cast<std::size_t>(need));
  out.insert(out.end(), edge.begin(), edge.end());
  std::sort(out.begin(), out.end(), better);
}

Kept kept_candidates(Row& r, const SamplingParams& p) {
  Kept k;
  const std::size_t n = r.v.size();
  const float v_max = r.first.second;
  if (p.top_k > 0 && static_cast<std::size_t>(p.top_k) < r.count) {
    keep_top_k(r, static_cast<std::size_t>(p.top_k), k.c);
    if (p.top_p < 1.0f) keep_top_p_sorted(k.c, v_max, p.top_p);
    apply_min_p(k.c, p.min_p, r.first, [&](const Candidate& x) { return sampling::weight(x.second, v_max); });
    return k;
  }
  if (p.top_p < 1.0f) {
    keep_top_p_binned(r, p.top_p, k.c);
    apply_min_p(k.c, p.min_p, r.first, [&](const Candidate& x) { return weight_for_min_p(r, x.first, p.min_p); });
    return k;
  }
  if (p.min_p > 0.0f) {
    r.w.resize(n);
    row_weights(r.v.data(), n, v_max, r.w.data());
    k.c.push_back(r.first);  // its weight is 1: kept by any min_p <= 1, and kept when none is
    for (std::size_t i = 0; i < n; ++i)
      if (r.v[i] == r.v[i] && static_cast<std::int32_t>(i) != r.first.first &&
          weight_for_min_p(r, static_cast<std::int32_t>(i), p.min_p) >= static_cast<double>(p.min_p))
        k.c.emplace_back(static_cast<std::int32_t>(i), r.v[i]);
    return k;
  }
  k.all = true;
  return k;
}

}  // namespace

std::vector<std::pair<std::int32_t, float>> filtered_candidates(std::span<const float> logits,
                                                                const SamplingParams& p) {
  Row& r = scaled_row(logits, p.temperature);
  if (r.count == 0) return {};
  Kept k = kept_candidates(r, p);
  if (k.all)
    for (std::size_t i = 0; i < r.v.size(); ++i)
      if (r.v[i] == r.v[i]) k.c.emplace_back(static_cast<std::int32_t>(i), r.v[i]);
  std::sort(k.c.begin(), k.c.end(), better);
  return std::move(k.c);
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
  Row& r = scaled_row(logits, p.temperature);
  if (r.count == 0) return 0;
  const Kept k = kept_candidates(r, p);
  // Gumbel-max, seeded with the first candidate (always kept); a candidate whose score provably falls short
  // of the best so far is passed over without its logs (sampling::cannot_win).
  const std::uint64_t rk = row_key(seed, position);
  std::int32_t best = r.first.first;
  double best_score = sampling::score(r.first.second, rk, best);
  const auto consider = [&](std::int32_t id, float v) {
    const std::uint64_t key = mix64(rk ^ static_cast<std::uint32_t>(id));
    if (sampling::cannot_win(v, key, best_score)) return;
    const double s = exact::add(static_cast<double>(v), gumbel_of_key(key));
    if (s > best_score || (s == best_score && id < best)) {
      best_score = s;
      best = id;
    }
  };
  if (k.all) {
    for (std::size_t i = 0; i < r.v.size(); ++i)
      if (r.v[i] == r.v[i]) consider(static_cast<std::int32_t>(i), r.v[i]);
  } else {
    for (const auto& [id, v] : k.c) consider(id, v);
  }
  return best;
}

}  // namespace tf
