#pragma once
// text_completion objects (also the streamed chunks, which share the object name).
#include <nlohmann/json.hpp>
#include <string>

#include "engine/generation.h"
#include "server/chat_response.h"

namespace tf::server {

nlohmann::ordered_json text_completion(const ReplyMeta& meta, const std::string& text, const GenerationResult& result);
// One streamed chunk; `finish_reason` null or a string; "usage": null with include_usage.
nlohmann::ordered_json text_completion_chunk(const ReplyMeta& meta, const std::string& text, nlohmann::ordered_json finish_reason,
                                     bool include_usage);
nlohmann::ordered_json text_completion_usage_chunk(const ReplyMeta& meta, const GenerationResult& result);

}  // namespace tf::server
