#include "server/cors.h"

#include <httplib.h>

#include <algorithm>

namespace tf::server {

bool CorsPolicy::is_preflight(const httplib::Request& req) {
  return req.method == "OPTIONS" && req.has_header("Origin") && req.has_header("Access-Control-Request-Method");
}

bool CorsPolicy::allows(const std::string& origin) const {
  if (origin.empty()) return false;
  return std::any_of(origins_.begin(), origins_.end(), [&](const std::string& o) { return o == "*" || o == origin; });
}

void CorsPolicy::apply(const httplib::Request& req, httplib::Response& res) const {
  const auto origin = req.get_header_value("Origin");
  if (!allows(origin)) return;
  // The origin itself rather than "*", so a reply cached for one origin is not served to another (Vary).
  res.set_header("Access-Control-Allow-Origin", origin);
  res.set_header("Vary", "Origin");
  // Headers a client acts on besides the CORS-safelisted ones.
  res.set_header("Access-Control-Expose-Headers", "Retry-After, WWW-Authenticate");
}

void CorsPolicy::preflight(const httplib::Request& req, httplib::Response& res, const std::string& methods) const {
  res.status = 204;
  if (!allows(req.get_header_value("Origin"))) return;
  apply(req, res);
  res.set_header("Access-Control-Allow-Methods", methods + ", OPTIONS");
  // Whatever headers the page asks for (Authorization, Content-Type, x-api-key, anthropic-version, the
  // OpenAI SDK's x-stainless-*): the key check happens on the call itself.
  const auto asked = req.get_header_value("Access-Control-Request-Headers");
  if (!asked.empty()) res.set_header("Access-Control-Allow-Headers", asked);
  res.set_header("Access-Control-Max-Age", "600");
}

}  // namespace tf::server
