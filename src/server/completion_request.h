#pragma once
// POST /v1/completions: a raw prompt (text or token ids), read and validated.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "server/sampling_fields.h"
#include "server/structured_fields.h"

namespace tf::server {

using CompletionPrompt = std::variant<std::string, std::vector<std::int32_t>>;

struct CompletionRequest {
  std::optional<std::string> model;
  // The prompt as text (tokenized with the tokenizer's special tokens, as HF does by default) or as token ids
  // (used as given; the handler checks them against the vocabulary).
  std::vector<CompletionPrompt> prompts;  // one choice (n of them) each, in order
  // The choice's text starts with its prompt; with logprobs, so do its log-probabilities (the prompt scored),
  // and max_tokens may be 0 (the prompt only: how evaluation harnesses ask for a prompt's log-likelihood).
  bool echo = false;
  std::int64_t best_of = 1;               // candidates per prompt (>= n); the n best by log-probability return
  SamplingFields sampling;
  bool stream = false;
  bool include_usage = false;
  std::optional<std::string> user;
  StructuredOutput structured;  // response_format json_object / json_schema, grammar, regex
};

// prompt: a string, a list of token ids, or a list (at most 128) of strings and token-id lists. suffix is
// refused (400) when set; max_tokens 0 without echo is refused (400 naming max_tokens).
CompletionRequest parse_completion_request(const nlohmann::ordered_json& body);

}  // namespace tf::server
