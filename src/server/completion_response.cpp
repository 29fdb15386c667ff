#include "server/completion_response.h"

#include "server/usage_json.h"

namespace tf::server {

namespace {
nlohmann::ordered_json header(const ReplyMeta& meta) {
  return {{"id", meta.id},
          {"object", "text_completion"},
          {"created", meta.created},
          {"model", meta.model},
          {"system_fingerprint", meta.system_fingerprint}};
}
nlohmann::ordered_json choice(const std::string& text, nlohmann::ordered_json finish_reason) {
  return {{"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", std::move(finish_reason)}};
}
}  // namespace

nlohmann::ordered_json text_completion(const ReplyMeta& meta, const std::string& text, const GenerationResult& result) {
  auto j = header(meta);
  j["choices"] = nlohmann::ordered_json::array({choice(text, openai_finish_reason(result.finish))});
  j["usage"] = completion_usage(result);
  return j;
}

nlohmann::ordered_json text_completion_chunk(const ReplyMeta& meta, const std::string& text, nlohmann::ordered_json finish_reason,
                                     bool include_usage) {
  auto j = header(meta);
  j["choices"] = nlohmann::ordered_json::array({choice(text, std::move(finish_reason))});
  if (include_usage) j["usage"] = nullptr;
  return j;
}

nlohmann::ordered_json text_completion_usage_chunk(const ReplyMeta& meta, const GenerationResult& result) {
  auto j = header(meta);
  j["choices"] = nlohmann::ordered_json::array();
  j["usage"] = completion_usage(result);
  return j;
}

}  // namespace tf::server
