#include "server/sampling_fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "server/api_error.h"

namespace tf::server {

namespace {
constexpr std::size_t kMaxStops = 16;
constexpr std::size_t kMaxStopBytes = 1024;
constexpr std::int64_t kMaxTokensLimit = std::int64_t{1} << 40;
}  // namespace

std::vector<std::string> parse_stop(const JsonFields& fields, std::string_view name) {
  std::vector<std::string> stops;
  const auto* v = fields.get(name);
  if (!v) return stops;
  auto add = [&](const nlohmann::ordered_json& s) {
    if (!s.is_string())
      throw invalid_request(fmt::format("Invalid type for '{}': expected a string or a list of strings, but got "
                                        "{} instead.",
                                        fields.param(name), json_type_name(s)),
                            fields.param(name), "invalid_type");
    auto text = s.get<std::string>();
    if (text.empty())
      throw invalid_request(fmt::format("Invalid '{}': a stop string must not be empty.", fields.param(name)),
                            fields.param(name), "invalid_value");
    if (text.size() > kMaxStopBytes)
      throw invalid_request(fmt::format("Invalid '{}': a stop string may be at most {} bytes.", fields.param(name),
                                        kMaxStopBytes),
                            fields.param(name), "invalid_value");
    stops.push_back(std::move(text));
  };
  if (v->is_array()) {
    if (v->size() > kMaxStops)
      throw invalid_request(fmt::format("Invalid '{}': at most {} stop strings are allowed, but got {}.",
                                        fields.param(name), kMaxStops, v->size()),
                            fields.param(name), "invalid_value");
    for (const auto& s : *v) add(s);
  } else {
    add(*v);
  }
  return stops;
}

SamplingFields parse_sampling_fields(const JsonFields& f,
                                     std::initializer_list<std::string_view> max_token_fields) {
  SamplingFields s;
  if (auto v = f.number("temperature", 0.0, 2.0)) s.temperature = static_cast<float>(*v);
  if (auto v = f.number("top_p", 0.0, 1.0)) s.top_p = static_cast<float>(*v);
  if (auto v = f.number("min_p", 0.0, 1.0)) s.min_p = static_cast<float>(*v);
  if (auto v = f.integer("top_k", std::numeric_limits<int>::min(), std::numeric_limits<int>::max()))
    s.top_k = *v <= 0 ? 0 : static_cast<int>(*v);
  s.seed = f.bits64("seed");
  for (auto name : max_token_fields) {
    if (auto v = f.integer(name, 1, kMaxTokensLimit); v && !s.max_tokens) {
      s.max_tokens = *v;
      s.max_tokens_param = std::string(name);
    }
  }
  s.stop = parse_stop(f, "stop");
  if (auto v = f.boolean("draft")) s.draft = *v;
  if (auto v = f.boolean("return_token_ids")) s.return_token_ids = *v;
  return s;
}

void parse_adjustment_fields(const JsonFields& f, SamplingFields& s) {
  if (auto n = f.integer("n", 1, 128)) s.n = *n;
  if (auto v = f.number("presence_penalty", -2.0, 2.0)) s.adjust.presence_penalty = static_cast<float>(*v);
  if (auto v = f.number("frequency_penalty", -2.0, 2.0)) s.adjust.frequency_penalty = static_cast<float>(*v);
  if (auto v = f.number("repetition_penalty", 0.0, 10.0)) {
    if (*v <= 0.0)
      throw invalid_request("Invalid 'repetition_penalty': it must be greater than 0 (1 is off).", "repetition_penalty",
                            "invalid_value");
    s.adjust.repetition_penalty = static_cast<float>(*v);
  }
  if (const auto* bias = f.object("logit_bias")) {
    if (bias->size() > 1024)
      throw invalid_request(
          fmt::format("Invalid 'logit_bias': at most 1024 tokens may be biased, but got {}.", bias->size()),
          "logit_bias", "invalid_value");
    const JsonFields b(*bias, "logit_bias.");
    for (const auto& [key, value] : bias->items()) {
      std::int64_t id = -1;
      const bool digits = !key.empty() && key.size() <= 10 && key.find_first_not_of("0123456789") == std::string::npos;
      if (digits) id = std::stoll(key);
      if (!digits || id > std::numeric_limits<std::int32_t>::max())
        throw invalid_request(fmt::format("Invalid 'logit_bias': the key '{}' is not a token id.", key), "logit_bias",
                              "invalid_value");
      const auto v = b.number(key, -100.0, 100.0);
      if (!v) continue;
      s.adjust.bias.emplace_back(static_cast<std::int32_t>(id), static_cast<float>(*v));
    }
    std::sort(s.adjust.bias.begin(), s.adjust.bias.end());
    for (std::size_t i = 1; i < s.adjust.bias.size(); ++i)
      if (s.adjust.bias[i].first == s.adjust.bias[i - 1].first)
        throw invalid_request(fmt::format("Invalid 'logit_bias': token id {} is given twice.", s.adjust.bias[i].first),
                              "logit_bias", "invalid_value");
  }
}

SamplingParams merge_sampling(const SamplingParams& defaults, const SamplingFields& f) {
  SamplingParams p = defaults;
  if (f.temperature) p.temperature = *f.temperature;
  if (f.top_p) p.top_p = *f.top_p;
  if (f.min_p) p.min_p = *f.min_p;
  if (f.top_k) p.top_k = *f.top_k;
  return p;
}

}  // namespace tf::server
