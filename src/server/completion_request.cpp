#include "server/completion_request.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "server/api_error.h"
#include "server/chat_request.h"

namespace tf::server {

namespace {

constexpr std::size_t kMaxPrompts = 128;

bool is_token_id(const nlohmann::ordered_json& v) {
  if (v.is_number_integer()) return true;
  if (v.is_number_float()) {
    const double d = v.get<double>();
    return std::isfinite(d) && d == std::floor(d);
  }
  return false;
}

std::vector<std::int32_t> token_ids(const nlohmann::ordered_json& list, const std::string& param) {
  std::vector<std::int32_t> ids;
  ids.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& v = list[i];
    if (!is_token_id(v))
      throw invalid_request(fmt::format("Invalid type for '{}[{}]': expected an integer token id, but got {} "
                                        "instead.",
                                        param, i, json_type_name(v)),
                            param, "invalid_type");
    const double d = v.get<double>();
    if (d < 0 || d > std::numeric_limits<std::int32_t>::max())
      throw invalid_request(fmt::format("Invalid '{}[{}]': token id {} is out of range.", param, i, v.dump()), param,
                            "invalid_value");
    ids.push_back(static_cast<std::int32_t>(d));
  }
  return ids;
}

std::vector<CompletionPrompt> parse_prompt(const nlohmann::ordered_json* p) {
  if (!p) throw invalid_request("Missing required parameter: 'prompt'.", "prompt");
  if (p->is_string()) return {p->get<std::string>()};
  if (!p->is_array())
    throw invalid_request(fmt::format("Invalid type for 'prompt': expected a string, a list of token ids or a list "
                                      "of either, but got {} instead.",
                                      json_type_name(*p)),
                          "prompt", "invalid_type");
  if (p->empty()) throw invalid_request("Invalid 'prompt': the prompt is empty.", "prompt", "invalid_value");
  if (is_token_id((*p)[0])) return {token_ids(*p, "prompt")};
  if (p->size() > kMaxPrompts)
    throw invalid_request(
        fmt::format("Invalid 'prompt': at most {} prompts per request, but got {}.", kMaxPrompts, p->size()), "prompt",
        "invalid_value");
  std::vector<CompletionPrompt> prompts;
  for (std::size_t i = 0; i < p->size(); ++i) {
    const auto& one = (*p)[i];
    const std::string param = fmt::format("prompt[{}]", i);
    if (one.is_string()) {
      prompts.emplace_back(one.get<std::string>());
    } else if (one.is_array()) {
      if (one.empty())
        throw invalid_request(fmt::format("Invalid '{}': the prompt is empty.", param), "prompt", "invalid_value");
      prompts.emplace_back(token_ids(one, param));
    } else {
      throw invalid_request(fmt::format("Invalid type for '{}': expected a string or a list of token ids, but got {} "
                                        "instead.",
                                        param, json_type_name(one)),
                            "prompt", "invalid_type");
    }
  }
  return prompts;
}

}  // namespace

CompletionRequest parse_completion_request(const nlohmann::ordered_json& body) {
  const JsonFields f(body);
  CompletionRequest r;
  r.model = f.string("model");
  r.prompts = parse_prompt(f.get("prompt"));
  r.echo = f.boolean("echo").value_or(false);
  if (const auto* sfx = f.get("suffix")) {
    if (!sfx->is_string())
      throw invalid_request(fmt::format("Invalid type for 'suffix': expected a string, but got {} instead.",
                                        json_type_name(*sfx)),
                            "suffix", "invalid_type");
    if (!sfx->get<std::string>().empty())
      throw unsupported("'suffix' (insertion) is not supported by this server; leave it unset or null.", "suffix");
  }
  // max_tokens 0 with echo: the prompt alone (scored when logprobs is set); anything else below 1 is refused
  // by parse_sampling_fields.
  const bool prompt_only = r.echo && f.integer("max_tokens", 0, std::numeric_limits<std::int64_t>::max()) == 0;
  r.sampling = prompt_only ? parse_sampling_fields(f, {}) : parse_sampling_fields(f, {"max_tokens"});
  if (prompt_only) r.sampling.max_tokens = 0;
  parse_adjustment_fields(f, r.sampling);
  if (auto lp = f.integer("logprobs", 0, 20)) r.sampling.logprobs = static_cast<int>(*lp);
  r.stream = f.boolean("stream").value_or(false);
  r.best_of = f.integer("best_of", 1, 128).value_or(r.sampling.n);
  if (r.best_of < r.sampling.n)
    throw invalid_request(
        fmt::format("Invalid 'best_of': it must be at least n ({}), but got {}.", r.sampling.n, r.best_of), "best_of",
        "invalid_value");
  if (r.best_of > r.sampling.n && r.stream)
    throw invalid_request(
        "Invalid 'best_of': a streamed completion cannot pick the best of several; leave best_of "
        "unset or equal to n.",
        "best_of", "invalid_value");
  if (r.prompts.size() * static_cast<std::size_t>(r.best_of) > 128)
    throw invalid_request(fmt::format("Invalid 'prompt': {} prompts times best_of/n {} is over 128 choices.",
                                      r.prompts.size(), r.best_of),
                          "prompt", "invalid_value");
  if (const auto* so = f.object("stream_options"))
    r.include_usage = JsonFields(*so, "stream_options.").boolean("include_usage").value_or(false);
  r.user = f.string("user");
  r.structured = parse_structured_output(f);
  return r;
}

}  // namespace tf::server
