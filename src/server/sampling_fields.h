#pragma once
// The sampling and length fields that chat completions, completions and responses share.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/logit_adjust.h"
#include "engine/sampler.h"
#include "server/json_fields.h"

namespace tf::server {

struct SamplingFields {
  std::optional<float> temperature, top_p, min_p;
  std::optional<int> top_k;                // <= 0 turns top-k off
  std::optional<std::uint64_t> seed;
  std::optional<std::int64_t> max_tokens;       // the client's limit on generated tokens (0: none; echo only)
  std::string max_tokens_param = "max_tokens";  // the field that carried it, for errors
  std::vector<std::string> stop;
  bool draft = true;
  // vLLM's return_token_ids: a non-streamed choice also carries the generated token ids.
  bool return_token_ids = false;
  // logit_bias, presence_penalty, frequency_penalty, repetition_penalty (parse_adjustment_fields).
  LogitAdjustments adjust;
  // Chat's logprobs + top_logprobs, completions' logprobs: -1 off, else the alternatives per token (<= 20).
  int logprobs = -1;
  std::int64_t n = 1;  // choices per prompt
};

// Reads temperature, top_p, top_k, min_p, seed, stop, draft and the first present of `max_token_fields`.
SamplingFields parse_sampling_fields(const JsonFields& fields, std::initializer_list<std::string_view> max_token_fields);

// logit_bias (token id strings to -100..100), presence_penalty and frequency_penalty (-2..2),
// repetition_penalty (> 0, at most 10) and n (1..128): the fields chat completions and completions share.
// Token ids are checked against the vocabulary in plan_generation.
void parse_adjustment_fields(const JsonFields& fields, SamplingFields& into);

// `stop`: a string or a list of strings (at most 16, none empty).
std::vector<std::string> parse_stop(const JsonFields& fields, std::string_view name);

// The server's defaults with the request's fields on top.
SamplingParams merge_sampling(const SamplingParams& defaults, const SamplingFields& fields);

}  // namespace tf::server
