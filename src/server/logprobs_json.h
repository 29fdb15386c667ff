#pragma once
// Token log-probabilities (engine/sampler.h TokenLogprob) in OpenAI's shapes, and what several choices of one
// request add up to.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "engine/generation.h"
#include "server/inference_service.h"

namespace tf::server {

// Chat completions: {"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob",
// "bytes"}]}]}. "token" is the token's text (invalid UTF-8 of a partial character becomes U+FFFD on the
// wire; "bytes" holds the exact bytes).
nlohmann::ordered_json chat_logprobs(const InferenceService& service, std::span<const TokenLogprob> records);

// Completions (legacy): {"tokens", "token_logprobs", "top_logprobs": [{text: logprob}], "text_offset"}; the
// offsets count UTF-8 bytes of the tokens' texts from `offset` on, which is advanced past them.
nlohmann::ordered_json completion_logprobs(const InferenceService& service, std::span<const TokenLogprob> records,
                                           std::size_t& offset);

// Sum of a request's choices: completion tokens and drafting counters added; prompt tokens added over the
// results marked as the first choice of their prompt.
GenerationResult sum_results(std::span<const GenerationResult> results, const std::vector<bool>& first_of_prompt);

}  // namespace tf::server
