#pragma once
// CORS for browser pages on other origins (a web UI on another port): --cors-origin lists the origins
// allowed ("*": any). Allowed origins get Access-Control-Allow-Origin on every reply, errors included, so the
// page can read them; preflights (OPTIONS with Access-Control-Request-Method) are answered without the API
// key, since browsers never send credentials on them. Each header is sent once per reply; an origin listed by
// name also gets Access-Control-Allow-Credentials. With no origins configured nothing changes but that
// preflights get a 204 without CORS headers (the browser then refuses the call, as it should).
#include <string>
#include <vector>

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace tf::server {

class CorsPolicy {
 public:
  explicit CorsPolicy(std::vector<std::string> origins) : origins_(std::move(origins)) {}

  static bool is_preflight(const httplib::Request& req);
  // Adds Access-Control-Allow-Origin (and Vary, Expose-Headers) when the request's Origin is allowed.
  void apply(const httplib::Request& req, httplib::Response& res) const;
  // Answers a preflight for a route that takes `methods` ("GET, POST").
  void preflight(const httplib::Request& req, httplib::Response& res, const std::string& methods) const;

 private:
  bool allows(const std::string& origin) const;
  bool listed(const std::string& origin) const;  // named itself (not by "*")
  std::vector<std::string> origins_;
};

}  // namespace tf::server
