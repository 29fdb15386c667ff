#pragma once
// Token accounting and finish reasons in OpenAI's shapes.
#include <nlohmann/json.hpp>

#include "engine/generation.h"

namespace tf::server {

// chat.completion / text_completion usage: prompt_tokens, completion_tokens, total_tokens,
// prompt_tokens_details.cached_tokens.
nlohmann::ordered_json completion_usage(const GenerationResult& r);
// Responses usage: input_tokens (+ details.cached_tokens), output_tokens (+ details.reasoning_tokens), total_tokens.
nlohmann::ordered_json responses_usage(const GenerationResult& r);
// "length" when the token limit or the context end stopped generation, else "stop".
const char* openai_finish_reason(FinishReason f);

}  // namespace tf::server
