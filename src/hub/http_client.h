#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace tf::hub {

// One HTTP exchange over libcurl. Redirects are not followed: the hub's first answer carries the file's
// metadata (X-Linked-Etag, X-Repo-Commit, Location), and the auth header must not follow a redirect to
// another host; callers decide.
struct HttpRequest {
  std::string method = "GET";  // GET or HEAD
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  // Where a 2xx body goes; returning false aborts the transfer. Without it the body is kept in memory.
  std::function<bool(const char* data, std::size_t size)> body_sink;
  // Called once, before the first byte of a 2xx body goes to body_sink, with the status (e.g. to see a 200
  // where a Range asked for 206); returning false aborts the transfer.
  std::function<bool(long status)> on_body_start;
  long connect_timeout_s = 10;
  long stall_timeout_s = 30;  // fewer than 1 byte/s for this long ends the transfer as a drop
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased; the last value of a repeated name
  std::string body;                            // the body when no sink took it (error bodies: at most 64 KiB)
  std::uint64_t sunk_bytes = 0;                // bytes handed to body_sink

  std::string header(const std::string& lower_name) const;
};

// Transport failures (refused, reset, dropped before the declared length, stalled) come back as
// TransportError; an HTTP status, whatever it is, is a response.
struct TransportError : std::runtime_error {
  TransportError(const std::string& what, bool body_started) : std::runtime_error(what), partial(body_started) {}
  bool partial;  // some of the body had arrived
};

HttpResponse http_perform(const HttpRequest& request);

// "https://host:port" of a URL (scheme, host and port), to tell whether a redirect leaves the hub.
std::string url_origin(const std::string& url);
// Resolves a Location header against the URL it answered.
std::string resolve_location(const std::string& base, const std::string& location);
// Percent-encodes one path segment or a query value.
std::string url_escape(const std::string& s);

}  // namespace tf::hub
