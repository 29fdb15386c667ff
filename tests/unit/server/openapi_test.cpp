// The OpenAPI document stays true to the server: it parses, it is OpenAPI 3.1 with this build's version, and
// its paths and methods are exactly the router's routes. Served open at /openapi.json.
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <set>

#include "fake_service.h"
#include "server/http_server.h"
#include "server/openapi_document.h"

namespace tf::server {
namespace {

TEST(OpenApi, DocumentsExactlyTheRoutes) {
  ServerOptions o;
  o.names = {"smol", {}};
  HttpServer srv(o);
  std::set<std::pair<std::string, std::string>> routes, documented;
  for (auto [method, pattern] : srv.router().routes()) {
    std::transform(method.begin(), method.end(), method.begin(), ::tolower);
    routes.emplace(method, pattern);
  }
  const auto& doc = openapi_document();
  EXPECT_EQ(doc["openapi"], "3.1.0");
  for (const auto& [path, item] : doc["paths"].items())
    for (const auto& [method, operation] : item.items()) {
      documented.emplace(method, path);
      EXPECT_TRUE(operation.contains("responses")) << method << " " << path;
      // Every path parameter is declared.
      for (auto at = path.find('{'); at != std::string::npos; at = path.find('{', at + 1)) {
        const auto name = path.substr(at + 1, path.find('}', at) - at - 1);
        const auto& params = operation.value("parameters", nlohmann::ordered_json::array());
        EXPECT_TRUE(std::any_of(params.begin(), params.end(), [&](const auto& p) { return p["name"] == name; }))
            << method << " " << path << " lacks " << name;
      }
    }
  EXPECT_EQ(documented, routes);
}

TEST(OpenApi, IsServedWithoutAKey) {
  testing::FakeService svc;
  ServerOptions o;
  o.names = {"smol", {}};
  o.api_keys = {"sk-1"};
  HttpServer srv(o);
  srv.set_service(&svc);
  httplib::Request req;
  req.method = "GET";
  req.path = "/openapi.json";
  httplib::Response res;
  srv.dispatch(req, res);
  EXPECT_EQ(res.status, 200);
  const auto body = nlohmann::json::parse(res.body);
  EXPECT_EQ(body["info"]["title"], "TensorFold");
  EXPECT_NE(body["info"]["version"], "@TENSORFOLD_VERSION@");
}

}  // namespace
}  // namespace tf::server
