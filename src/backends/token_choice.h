#pragma once
#include <cstdint>

namespace tf {

// How one row's token is chosen: engine/sampler.h's sample_token of that row with these settings, bit for
// bit (the one sampling function; its arithmetic is engine/sampling_math.h, which a backend's kernel shares).
// Temperature <= 0 is greedy_token.
struct TokenChoice {
  float temperature = 0.0f;
  int top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  std::uint64_t seed = 0;
  std::int64_t position = 0;  // the absolute position of the token chosen (the noise's key)
};

}  // namespace tf
