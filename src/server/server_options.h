#pragma once
// How `tensorfold serve` configured the HTTP API.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/model_names.h"

namespace tf::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (see HttpServer::port())
  ModelNames names;
  std::vector<std::string> api_keys;  // none: no authentication
  // The generation limit for a request that sets none (--max-tokens); clipped to the context end.
  std::int64_t default_max_tokens = 4096;
  std::size_t max_body_bytes = std::size_t{16} << 20;
  std::size_t store_max_items = 1024;
  std::size_t store_max_bytes = std::size_t{256} << 20;
  std::string system_fingerprint = "fp_tensorfold";
  // Connections served at once until HttpServer::set_engine_capacity() (while the model loads, only /health
  // and 503s are answered).
  std::size_t connection_threads = 16;
  // --header-timeout: seconds from a request's first byte (or a new connection) to the end of its headers.
  int header_timeout_s = 10;
  // --timeout: the longest wait, in seconds, for more of a request's body or for the client to take more of
  // a reply.
  int timeout_s = 30;
  // --keep-alive: seconds an idle connection is kept between requests.
  int keep_alive_s = 5;
  // --max-idle-connections: idle connections kept open at once; beyond, the oldest is closed.
  std::size_t max_idle_connections = 4096;
  // --cors-origin: origins whose browser pages may call the API ("*": any); none: no CORS headers.
  std::vector<std::string> cors_origins;
  // --reasoning on|off: enable_thinking for chat requests that do not set it (unset: the template decides).
  std::optional<bool> reasoning;
  // --reasoning-budget: reasoning tokens before the block is closed (0: none); thinking_budget overrides it.
  std::int64_t reasoning_budget = 0;
  // --vision: chat requests may carry images (server/image_inputs.h has the limits).
  bool vision = false;
  // --vision-urls: https image URLs are fetched (server/image_fetch.h has the policy); else they are refused.
  bool vision_urls = false;
};

}  // namespace tf::server
