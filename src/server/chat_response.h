#pragma once
// chat.completion and chat.completion.chunk objects.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/generation.h"

namespace tf::server {

// What every object of one reply shares.
struct ReplyMeta {
  std::string id;
  std::string model;
  std::int64_t created = 0;
  std::string system_fingerprint;
};

// `message`: the assistant message (role, content, and reasoning and tool calls when there are any).
nlohmann::ordered_json chat_completion(const ReplyMeta& meta, nlohmann::ordered_json message,
                                       const std::string& finish_reason, const GenerationResult& result);

// One streamed chunk with a single choice. `finish_reason` is null or a string; with include_usage every
// chunk carries "usage": null (the usage itself comes in chat_usage_chunk).
nlohmann::ordered_json chat_chunk(const ReplyMeta& meta, nlohmann::ordered_json delta, nlohmann::ordered_json finish_reason,
                          bool include_usage);
// The last chunk when stream_options.include_usage: no choices, the usage.
nlohmann::ordered_json chat_usage_chunk(const ReplyMeta& meta, const GenerationResult& result);

}  // namespace tf::server
