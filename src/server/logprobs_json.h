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

// The Responses API's list of {"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob", "bytes"}]}
// (an output_text part's "logprobs"; chat's "content" is the same list). Without `bytes` (the
// response.output_text.delta and .done events' shape) the "bytes" fields are left out.
nlohmann::ordered_json token_logprob_list(const InferenceService& service, std::span<const TokenLogprob> records,
                                          bool bytes = true);

// Completions (legacy): {"tokens", "token_logprobs", "top_logprobs": [{text: logprob}], "text_offset"}; the
// offsets count UTF-8 bytes of the tokens' texts from `offset` on, which is advanced past them.
nlohmann::ordered_json completion_logprobs(const InferenceService& service, std::span<const TokenLogprob> records,
                                           std::size_t& offset);

// Completions with echo and logprobs: the prompt's tokens in completion_logprobs' shape, its first token with
// a null logprob and a null top entry (no row comes before it), then `records` (prompt tokens 1..n-1);
// offsets from 0. `offset` is left past the prompt tokens' texts.
nlohmann::ordered_json echo_logprobs(const InferenceService& service, std::int32_t first_token,
                                     std::span<const TokenLogprob> records, std::size_t& offset);
// Appends `more`'s four lists to `into`'s (both in completion_logprobs' shape).
void append_completion_logprobs(nlohmann::ordered_json& into, const nlohmann::ordered_json& more);

// Sum of a request's choices: completion tokens and drafting counters added; prompt tokens added over the
// results marked as the first choice of their prompt.
GenerationResult sum_results(std::span<const GenerationResult> results, const std::vector<bool>& first_of_prompt);

}  // namespace tf::server
