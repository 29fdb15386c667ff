#pragma once
// POST /v1/completions: a raw prompt (text or token ids), read and validated.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "server/sampling_fields.h"

namespace tf::server {

struct CompletionRequest {
  std::optional<std::string> model;
  // The prompt as text (tokenized with the tokenizer's special tokens, as HF does by default) or as token ids
  // (used as given; the handler checks them against the vocabulary).
  std::variant<std::string, std::vector<std::int32_t>> prompt;
  SamplingFields sampling;
  bool stream = false;
  bool include_usage = false;
  std::optional<std::string> user;
};

// prompt: a string, a one-element list of a string, a list of token ids, or a one-element list of such a
// list. echo, logprobs, suffix and best_of > 1 are refused (400) when set.
CompletionRequest parse_completion_request(const nlohmann::ordered_json& body);

}  // namespace tf::server
