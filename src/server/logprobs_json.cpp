#include "server/logprobs_json.h"

#include <cmath>

namespace tf::server {

namespace {

std::string token_text(const InferenceService& service, std::int32_t id) {
  const std::int32_t one[] = {id};
  return service.detokenize(one);
}

// OpenAI writes -9999.0 for a token with no probability; JSON has no -infinity.
double finite(float v) { return std::isfinite(v) ? static_cast<double>(v) : -9999.0; }

nlohmann::ordered_json bytes_of(const std::string& s) {
  auto a = nlohmann::ordered_json::array();
  for (const unsigned char c : s) a.push_back(static_cast<int>(c));
  return a;
}

}  // namespace

nlohmann::ordered_json token_logprob_list(const InferenceService& service, std::span<const TokenLogprob> records,
                                          bool bytes) {
  auto list = nlohmann::ordered_json::array();
  const auto entry = [&](std::int32_t id, float logprob) {
    const auto text = token_text(service, id);
    nlohmann::ordered_json e = {{"token", text}, {"logprob", finite(logprob)}};
    if (bytes) e["bytes"] = bytes_of(text);
    return e;
  };
  for (const auto& r : records) {
    auto top = nlohmann::ordered_json::array();
    for (const auto& [id, lp] : r.top) top.push_back(entry(id, lp));
    auto e = entry(r.token, r.logprob);
    e["top_logprobs"] = std::move(top);
    list.push_back(std::move(e));
  }
  return list;
}

nlohmann::ordered_json chat_logprobs(const InferenceService& service, std::span<const TokenLogprob> records) {
  return {{"content", token_logprob_list(service, records)}, {"refusal", nullptr}};
}

nlohmann::ordered_json completion_logprobs(const InferenceService& service, std::span<const TokenLogprob> records,
                                           std::size_t& offset) {
  auto tokens = nlohmann::ordered_json::array(), logprobs = nlohmann::ordered_json::array(),
       tops = nlohmann::ordered_json::array(), offsets = nlohmann::ordered_json::array();
  for (const auto& r : records) {
    const auto text = token_text(service, r.token);
    tokens.push_back(text);
    logprobs.push_back(finite(r.logprob));
    auto top = nlohmann::ordered_json::object();
    for (const auto& [id, lp] : r.top) {
      const auto t = token_text(service, id);
      if (!top.contains(t)) top[t] = finite(lp);
    }
    // OpenAI's legacy completions always list the chosen token among the alternatives ("up to logprobs + 1
    // elements"), even when it is not among the k best (a sampled, unlikely token).
    if (!top.contains(text)) top[text] = finite(r.logprob);
    tops.push_back(std::move(top));
    offsets.push_back(offset);
    offset += text.size();
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(logprobs)},
          {"top_logprobs", std::move(tops)},
          {"text_offset", std::move(offsets)}};
}

nlohmann::ordered_json echo_logprobs(const InferenceService& service, std::int32_t first_token,
                                     std::span<const TokenLogprob> records, std::size_t& offset) {
  const auto first = token_text(service, first_token);
  using json = nlohmann::ordered_json;
  json out = {{"tokens", json::array({first})},
              {"token_logprobs", json::array({nullptr})},
              {"top_logprobs", json::array({nullptr})},
              {"text_offset", json::array({0})}};
  offset = first.size();
  append_completion_logprobs(out, completion_logprobs(service, records, offset));
  return out;
}

void append_completion_logprobs(nlohmann::ordered_json& into, const nlohmann::ordered_json& more) {
  for (const char* key : {"tokens", "token_logprobs", "top_logprobs", "text_offset"})
    for (const auto& v : more.at(key)) into[key].push_back(v);
}

GenerationResult sum_results(std::span<const GenerationResult> results, const std::vector<bool>& first_of_prompt) {
  GenerationResult sum;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    if (i < first_of_prompt.size() && first_of_prompt[i]) {
      sum.prompt_tokens += r.prompt_tokens;
      sum.cached_tokens += r.cached_tokens;
    }
    sum.completion_tokens += r.completion_tokens;
    sum.drafted += r.drafted;
    sum.accepted += r.accepted;
    sum.rounds += r.rounds;
  }
  if (!results.empty()) sum.finish = results.back().finish;
  return sum;
}

}  // namespace tf::server
