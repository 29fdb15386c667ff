#include "server/cors.h"

#include <httplib.h>

#include <algorithm>

namespace tf::server {

bool CorsPolicy::is_preflight(const httplib::Request& req) {
  return req.method == "OPTIONS" && req.has_header("Origin") && req.has_header("Access-Control-Request-Method");
}

namespace {

// httplib's set_header adds a line: a header set twice would be sent twice, which browsers reject for the
// Access-Control-* ones. Each is set here exactly once.
void set_once(httplib::Response& res, const std::string& name, const std::string& value) {
  res.headers.erase(name);
  res.set_header(name, value);
}

}  // namespace

bool CorsPolicy::allows(const std::string& origin) const {
  if (origin.empty()) return false;
  return std::any_of(origins_.begin(), origins_.end(), [&](const std::string& o) { return o == "*" || o == origin; });
}

bool CorsPolicy::listed(const std::string& origin) const {
  return !origin.empty() && std::find(origins_.begin(), origins_.end(), origin) != origins_.end();
}

void CorsPolicy::apply(const httplib::Request& req, httplib::Response& res) const {
  const auto origin = req.get_header_value("Origin");
  if (!allows(origin)) return;
  // The origin itself rather than "*", so a reply cached for one origin is not served to another (Vary).
  set_once(res, "Access-Control-Allow-Origin", origin);
  set_once(res, "Vary", "Origin");
  // Headers a client acts on besides the CORS-safelisted ones.
  set_once(res, "Access-Control-Expose-Headers", "Retry-After, WWW-Authenticate");
  // Credentials (cookies, HTTP auth) only for an origin named on the command line: "*" lets any page call, but
  // not with the browser's credentials.
  if (listed(origin)) set_once(res, "Access-Control-Allow-Credentials", "true");
}

void CorsPolicy::preflight(const httplib::Request& req, httplib::Response& res, const std::string& methods) const {
  res.status = 204;
  if (!allows(req.get_header_value("Origin"))) return;
  apply(req, res);
  set_once(res, "Access-Control-Allow-Methods", methods + ", OPTIONS");
  // Whatever headers the page asks for (Authorization, Content-Type, x-api-key, anthropic-version, the
  // OpenAI SDK's x-stainless-*): the key check happens on the call itself.
  const auto asked = req.get_header_value("Access-Control-Request-Headers");
  if (!asked.empty()) set_once(res, "Access-Control-Allow-Headers", asked);
  set_once(res, "Access-Control-Max-Age", "600");
}

}  // namespace tf::server
