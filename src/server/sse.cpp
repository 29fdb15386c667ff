#include "server/sse.h"

#include "server/json_fields.h"

namespace tf::server {

// dump_json escapes every control character, so a payload is one line and cannot end the event early.
std::string sse_data(const nlohmann::ordered_json& payload) { return "data: " + dump_json(payload) + "\n\n"; }

std::string sse_event(std::string_view event, const nlohmann::ordered_json& payload) {
  std::string out = "event: ";
  out += event;
  out += '\n';
  out += sse_data(payload);
  return out;
}

std::string sse_done() { return "data: [DONE]\n\n"; }

}  // namespace tf::server
