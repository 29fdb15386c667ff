#pragma once
// --vision-urls: https image URLs fetched by the server, within a policy that keeps a request from reaching
// anything but a public web server: https on port 443 only; the host resolved first and every address it has
// must be public (server/address_policy.h); the connection pinned to a checked address (and each socket's
// address checked again as it opens); redirects followed by hand, each hop checked the same way, at most 3; the
// body bounded by the image limit and the whole fetch by a time limit; no proxy from the environment. Each
// refusal is a 400 naming the part.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/image_inputs.h"

namespace tf::server {

struct FetchPolicy {
  int max_redirects = 3;
  std::chrono::milliseconds time_limit{10000};  // the whole fetch, every hop
};

// One GET to `url`, connecting only to `address` (the host's checked address) within `time_left`, reading at
// most `max_bytes` of body. A 3xx's Location comes back resolved against `url`.
struct HopResult {
  long status = 0;
  std::string location;
  std::vector<std::uint8_t> body;
  bool too_large = false;
  std::string error;  // the transport's failure (status 0)
};
class HopTransport {
 public:
  virtual ~HopTransport() = default;
  virtual HopResult get(const std::string& url, const std::string& host, const std::string& address,
                        std::chrono::milliseconds time_left, std::size_t max_bytes) = 0;
};

// The host's addresses as text; empty (with `error` set) when it does not resolve.
using Resolver = std::function<std::vector<std::string>(const std::string& host, std::string& error)>;

// The host of an https URL on port 443, as a resolver takes it (IPv6 literals without brackets); throws a 400
// naming `param` for another scheme, another port, credentials in the URL or a URL that does not parse.
std::string checked_https_host(const std::string& url, const std::string& param);

// The policy's fetch over `transport` and `resolve` (tests give their own).
std::vector<std::uint8_t> fetch_image_url(const std::string& url, const std::string& param, std::size_t max_bytes,
                                          const FetchPolicy& policy, HopTransport& transport, const Resolver& resolve);

// The server's fetcher: libcurl and getaddrinfo.
std::unique_ptr<ImageFetcher> make_curl_image_fetcher(FetchPolicy policy = {});

}  // namespace tf::server
