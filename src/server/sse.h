#pragma once
// Server-sent events as OpenAI streams them: "data: <json>\n\n", typed "event: <type>\n" lines for the
// Responses API, and the closing "data: [DONE]".
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace tf::server {

std::string sse_data(const nlohmann::ordered_json& payload);
std::string sse_event(std::string_view event, const nlohmann::ordered_json& payload);
std::string sse_done();

}  // namespace tf::server
