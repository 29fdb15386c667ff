#include "server/completion_request.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "server/api_error.h"
#include "server/chat_request.h"

namespace tf::server {

namespace {

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

std::variant<std::string, std::vector<std::int32_t>> parse_prompt(const nlohmann::ordered_json* p) {
  if (!p) throw invalid_request("Missing required parameter: 'prompt'.", "prompt");
  if (p->is_string()) return p->get<std::string>();
  if (!p->is_array())
    throw invalid_request(fmt::format("Invalid type for 'prompt': expected a string, a list of token ids or a "
                                      "one-element list of either, but got {} instead.",
                                      json_type_name(*p)),
                          "prompt", "invalid_type");
  if (p->empty()) throw invalid_request("Invalid 'prompt': the prompt is empty.", "prompt", "invalid_value");
  const auto& first = (*p)[0];
  if (is_token_id(first)) return token_ids(*p, "prompt");
  if (p->size() > 1)
    throw unsupported(fmt::format("Invalid 'prompt': this server completes one prompt per request, but got a list "
                                  "of {}.",
                                  p->size()),
                      "prompt");
  if (first.is_string()) return first.get<std::string>();
  if (first.is_array()) {
    if (first.empty()) throw invalid_request("Invalid 'prompt': the prompt is empty.", "prompt", "invalid_value");
    return token_ids(first, "prompt[0]");
  }
  throw invalid_request(fmt::format("Invalid type for 'prompt[0]': expected a string or a list of token ids, but "
                                    "got {} instead.",
                                    json_type_name(first)),
                        "prompt", "invalid_type");
}

}  // namespace

CompletionRequest parse_completion_request(const nlohmann::ordered_json& body) {
  const JsonFields f(body);
  CompletionRequest r;
  r.model = f.string("model");
  r.prompt = parse_prompt(f.get("prompt"));
  if (f.boolean("echo").value_or(false))
    throw unsupported("'echo' is not supported by this server; leave it unset or false.", "echo");
  if (const auto* lp = f.get("logprobs")) {
    if (!lp->is_number_integer())
      throw invalid_request(fmt::format("Invalid type for 'logprobs': expected an integer, but got {} instead.",
                                        json_type_name(*lp)),
                            "logprobs", "invalid_type");
    throw unsupported("'logprobs' is not supported by this server; leave it unset or null.", "logprobs");
  }
  if (const auto* sfx = f.get("suffix")) {
    if (!sfx->is_string())
      throw invalid_request(fmt::format("Invalid type for 'suffix': expected a string, but got {} instead.",
                                        json_type_name(*sfx)),
                            "suffix", "invalid_type");
    if (!sfx->get<std::string>().empty())
      throw unsupported("'suffix' (insertion) is not supported by this server; leave it unset or null.", "suffix");
  }
  if (auto best_of = f.integer("best_of", 1, 128); best_of && *best_of != 1)
    throw unsupported("'best_of' other than 1 is not supported by this server.", "best_of");
  check_common_unsupported(f);
  r.sampling = parse_sampling_fields(f, {"max_tokens"});
  r.stream = f.boolean("stream").value_or(false);
  if (const auto* so = f.object("stream_options"))
    r.include_usage = JsonFields(*so, "stream_options.").boolean("include_usage").value_or(false);
  r.user = f.string("user");
  return r;
}

}  // namespace tf::server
