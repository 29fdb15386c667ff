#include "server/usage_json.h"

namespace tf::server {

namespace {
// Our own counters beside OpenAI's fields: what drafting proposed, what was accepted, forward rounds.
nlohmann::ordered_json tensorfold_usage(const GenerationResult& r) {
  return {{"drafted", r.drafted}, {"accepted", r.accepted}, {"rounds", r.rounds}};
}
}  // namespace

nlohmann::ordered_json completion_usage(const GenerationResult& r) {
  return {{"prompt_tokens", r.prompt_tokens},
          {"completion_tokens", r.completion_tokens},
          {"total_tokens", r.prompt_tokens + r.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", r.cached_tokens}}},
          {"tensorfold", tensorfold_usage(r)}};
}

nlohmann::ordered_json responses_usage(const GenerationResult& r) {
  return {{"input_tokens", r.prompt_tokens},
          {"input_tokens_details", {{"cached_tokens", r.cached_tokens}, {"cache_write_tokens", 0}}},
          {"output_tokens", r.completion_tokens},
          {"output_tokens_details", {{"reasoning_tokens", 0}}},
          {"total_tokens", r.prompt_tokens + r.completion_tokens},
          {"tensorfold", tensorfold_usage(r)}};
}

const char* openai_finish_reason(FinishReason f) { return f == FinishReason::Length ? "length" : "stop"; }

}  // namespace tf::server
