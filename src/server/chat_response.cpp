#include "server/chat_response.h"

#include "server/usage_json.h"

namespace tf::server {

namespace {
nlohmann::ordered_json header(const ReplyMeta& meta, const char* object) {
  return {{"id", meta.id},
          {"object", object},
          {"created", meta.created},
          {"model", meta.model},
          {"system_fingerprint", meta.system_fingerprint}};
}
}  // namespace

nlohmann::ordered_json chat_completion(const ReplyMeta& meta, nlohmann::ordered_json message,
                                       const std::string& finish_reason, const GenerationResult& result) {
  auto j = header(meta, "chat.completion");
  j["choices"] = nlohmann::ordered_json::array({{{"index", 0},
                                                 {"message", std::move(message)},
                                                 {"logprobs", nullptr},
                                                 {"finish_reason", finish_reason}}});
  j["usage"] = completion_usage(result);
  return j;
}

nlohmann::ordered_json chat_chunk(const ReplyMeta& meta, nlohmann::ordered_json delta, nlohmann::ordered_json finish_reason,
                          bool include_usage) {
  auto j = header(meta, "chat.completion.chunk");
  j["choices"] = nlohmann::ordered_json::array(
      {{{"index", 0}, {"delta", std::move(delta)}, {"logprobs", nullptr}, {"finish_reason", std::move(finish_reason)}}});
  if (include_usage) j["usage"] = nullptr;
  return j;
}

nlohmann::ordered_json chat_usage_chunk(const ReplyMeta& meta, const GenerationResult& result) {
  auto j = header(meta, "chat.completion.chunk");
  j["choices"] = nlohmann::ordered_json::array();
  j["usage"] = completion_usage(result);
  return j;
}

}  // namespace tf::server
