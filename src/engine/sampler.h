#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace tf {

struct SamplingParams {
  float temperature = 1.0f;  // 0: greedy
  int top_k = 0;             // 0: off
  float top_p = 1.0f;        // 1: off
  float min_p = 0.0f;        // 0: off
};

// The request's seed, else this hash of the prompt tokens: the same prompt samples the same way.
std::uint64_t seed_from_prompt(std::span<const std::int32_t> prompt);

// The seed of choice `index` of a request whose seed is `seed` (n > 1, best_of): choice 0 samples with the
// seed itself, choice i > 0 with mix64(seed + i * 0x9e3779b97f4a7c15) (mod 2^64; mix64: keyed_noise.h), so each
// choice equals the same request run alone with that seed.
std::uint64_t choice_seed(std::uint64_t seed, std::int64_t index);

// The one sampling function (ARCHITECTURE §4): temperature, then top-k, top-p and min-p in that fixed
// order, then Gumbel-max with keyed noise for (seed, position, token id). Temperature 0 is greedy with ties
// to the lowest id. A pure function of the logits row and (params, seed, position).
std::int32_t sample_token(std::span<const float> logits, const SamplingParams& params, std::uint64_t seed,
                          std::int64_t position);

// Temperature 0: the first index of the largest logit (NaNs never win; a NaN at index 0 gives 0).
std::int32_t greedy_token(std::span<const float> logits);

// A sampled token's log-probability and the `top` most likely tokens' (best first, ties by id), under the
// distribution sample_token draws from: the log-softmax of the scaled logits of the candidates left after
// top-k, top-p and min-p (a token filtered out has -inf and is never listed). At temperature 0 (greedy) the
// distribution is the log-softmax of the whole row at temperature 1. Sums in double, in id order.
struct TokenLogprob {
  std::int32_t token = 0;
  float logprob = 0.0f;
  std::vector<std::pair<std::int32_t, float>> top;
};
TokenLogprob token_logprob(std::span<const float> logits, const SamplingParams& params, std::int32_t token, int top);

// The candidates left after the filters, as (token id, scaled logit), best first; exposed for tests.
std::vector<std::pair<std::int32_t, float>> filtered_candidates(std::span<const float> logits,
                                                                const SamplingParams& params);

}  // namespace tf
