// CORS through HttpServer::dispatch: preflights answered without the key, allowed origins echoed on every
// reply (errors too), other origins and servers without --cors-origin given no CORS headers.
#include <gtest/gtest.h>
#include <httplib.h>

#include "fake_service.h"
#include "server/http_server.h"

namespace tf::server {
namespace {

ServerOptions options(std::vector<std::string> origins) {
  ServerOptions o;
  o.port = 0;
  o.names = {"smol", {}};
  o.api_keys = {"sk-1"};
  o.cors_origins = std::move(origins);
  return o;
}

httplib::Response send(HttpServer& srv, const std::string& method, const std::string& path, httplib::Headers headers) {
  httplib::Request req;
  req.method = method;
  req.path = path;
  req.headers = std::move(headers);
  httplib::Response res;
  srv.dispatch(req, res);
  return res;
}

const httplib::Headers kPreflight = {{"Origin", "http://localhost:3000"},
                                     {"Access-Control-Request-Method", "POST"},
                                     {"Access-Control-Request-Headers", "authorization, content-type"}};

TEST(Cors, PreflightIsAnsweredWithoutTheKey) {
  testing::FakeService svc;
  HttpServer srv(options({"http://localhost:3000"}));
  srv.set_service(&svc);
  const auto res = send(srv, "OPTIONS", "/v1/chat/completions", kPreflight);
  EXPECT_EQ(res.status, 204);
  EXPECT_EQ(res.get_header_value("Access-Control-Allow-Origin"), "http://localhost:3000");
  EXPECT_EQ(res.get_header_value("Access-Control-Allow-Methods"), "POST, OPTIONS");
  EXPECT_EQ(res.get_header_value("Access-Control-Allow-Headers"), "authorization, content-type");
  EXPECT_EQ(res.get_header_value("Vary"), "Origin");
}

TEST(Cors, AllowedOriginsSeeEveryReplyIncludingErrors) {
  testing::FakeService svc;
  HttpServer srv(options({"*"}));
  srv.set_service(&svc);
  const auto denied = send(srv, "GET", "/v1/models", {{"Origin", "https://ui.example"}});
  EXPECT_EQ(denied.status, 401);
  EXPECT_EQ(denied.get_header_value("Access-Control-Allow-Origin"), "https://ui.example");
  const auto ok = send(srv, "GET", "/v1/models", {{"Origin", "https://ui.example"}, {"Authorization", "Bearer sk-1"}});
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.get_header_value("Access-Control-Allow-Origin"), "https://ui.example");
}

TEST(Cors, OtherOriginsAndUnconfiguredServersGetNoCorsHeaders) {
  testing::FakeService svc;
  for (const auto& origins : {std::vector<std::string>{}, std::vector<std::string>{"http://other"}}) {
    HttpServer srv(options(origins));
    srv.set_service(&svc);
    const auto pre = send(srv, "OPTIONS", "/v1/chat/completions", kPreflight);
    EXPECT_EQ(pre.status, 204);  // not 401: browsers send no key on a preflight
    EXPECT_FALSE(pre.has_header("Access-Control-Allow-Origin"));
    const auto get = send(srv, "GET", "/v1/models", {{"Origin", "http://localhost:3000"}});
    EXPECT_FALSE(get.has_header("Access-Control-Allow-Origin"));
  }
}

// Browsers reject a reply that repeats an Access-Control-* header: each is sent once, preflights included.
TEST(Cors, EachHeaderIsSentOnceAndCredentialsOnlyForAListedOrigin) {
  testing::FakeService svc;
  for (const auto& origin : {std::string("http://localhost:3000"), std::string("*")}) {
    HttpServer srv(options({origin}));
    srv.set_service(&svc);
    const auto pre = send(srv, "OPTIONS", "/v1/chat/completions", kPreflight);
    const auto get =
        send(srv, "GET", "/v1/models", {{"Origin", "http://localhost:3000"}, {"Authorization", "Bearer sk-1"}});
    for (const auto* res : {&pre, &get}) {
      for (const char* name :
           {"Access-Control-Allow-Origin", "Access-Control-Expose-Headers", "Vary", "Access-Control-Allow-Methods",
            "Access-Control-Allow-Headers", "Access-Control-Allow-Credentials"})
        EXPECT_LE(res->headers.count(name), 1u) << name << " for " << origin;
      EXPECT_EQ(res->headers.count("Access-Control-Allow-Origin"), 1u);
      EXPECT_EQ(res->get_header_value("Access-Control-Allow-Credentials"), origin == "*" ? "" : "true") << origin;
    }
  }
}

TEST(Cors, AnUnknownRouteOrAPlainOptionsIsNoPreflight) {
  testing::FakeService svc;
  HttpServer srv(options({"*"}));
  srv.set_service(&svc);
  EXPECT_EQ(send(srv, "OPTIONS", "/v1/nothing", kPreflight).status, 401);
  EXPECT_EQ(send(srv, "OPTIONS", "/v1/models", {}).status, 401);
  EXPECT_EQ(send(srv, "OPTIONS", "/v1/models", {{"Authorization", "Bearer sk-1"}}).status, 405);
}

}  // namespace
}  // namespace tf::server
