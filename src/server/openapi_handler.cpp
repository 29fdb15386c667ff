// GET /openapi.json, and the parsed document it serves.
#include "server/handlers.h"
#include "server/http_reply.h"
#include "server/openapi_document.h"
#include "tensorfold/version.h"

namespace tf::server {

const nlohmann::ordered_json& openapi_document() {
  static const nlohmann::ordered_json doc = [] {
    auto d = nlohmann::ordered_json::parse(openapi_document_text());
    d["info"]["version"] = std::string(kVersion);
    return d;
  }();
  return doc;
}

void handle_openapi(const httplib::Request&, httplib::Response& res) { send_json(res, 200, openapi_document()); }

}  // namespace tf::server
