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

// The one sampling function (ARCHITECTURE §4): temperature, then top-k, top-p and min-p in that fixed
// order, then Gumbel-max with keyed noise for (seed, position, token id). Temperature 0 is greedy with ties
// to the lowest id. A pure function of the logits row and (params, seed, position).
std::int32_t sample_token(std::span<const float> logits, const SamplingParams& params, std::uint64_t seed,
                          std::int64_t position);

// Temperature 0: the first index of the largest logit (NaNs never win; a NaN at index 0 gives 0).
std::int32_t greedy_token(std::span<const float> logits);

// The candidates left after the filters, as (token id, scaled logit), best first; exposed for tests.
std::vector<std::pair<std::int32_t, float>> filtered_candidates(std::span<const float> logits,
                                                                const SamplingParams& params);

}  // namespace tf
