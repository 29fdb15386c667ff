#pragma once
// The request's changes to a logits row before it is sampled: OpenAI's logit_bias, presence_penalty and
// frequency_penalty, and vLLM's repetition_penalty. Exactness: a row's changes are a pure function of the
// prompt and of the tokens generated before that row, so a verify row (its prefix: the drafts before it) is
// changed exactly as serial decoding changes that position, and drafted output still equals serial output.
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace tf {

struct LogitAdjustments {
  std::vector<std::pair<std::int32_t, float>> bias;  // (token id, added to its logit), ids unique
  float presence_penalty = 0.0f;                     // subtracted once from each token generated at least once
  float frequency_penalty = 0.0f;                    // subtracted per time a token was generated
  float repetition_penalty = 1.0f;  // tokens of the prompt or the reply: a positive logit / p, a negative * p
  bool active() const {
    return !bias.empty() || presence_penalty != 0.0f || frequency_penalty != 0.0f || repetition_penalty != 1.0f;
  }
};

// Applies, in this order: repetition_penalty (over the prompt and the generated tokens), frequency_penalty and
// presence_penalty (over the generated tokens: OpenAI's definition), then logit_bias. Float arithmetic in a
// fixed order: the same bits every time.
void adjust_logits(const LogitAdjustments& a, std::span<const std::int32_t> prompt,
                   std::span<const std::int32_t> generated, std::span<float> row);

}  // namespace tf
