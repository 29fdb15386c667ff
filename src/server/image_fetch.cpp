#include "server/image_fetch.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <sys/socket.h>

#include <mutex>

#include "server/address_policy.h"
#include "server/api_error.h"

namespace tf::server {
namespace {

using Clock = std::chrono::steady_clock;

ApiError url_refused(const std::string& param, const std::string& why) {
  return invalid_request(fmt::format("Invalid '{}': {}.", param, why), param, "invalid_image_url");
}

struct UrlHandle {
  CURLU* u = curl_url();
  ~UrlHandle() { curl_url_cleanup(u); }
  std::string part(CURLUPart what) const {
    char* s = nullptr;
    if (curl_url_get(u, what, &s, 0) != CURLUE_OK || s == nullptr) return {};
    std::string out(s);
    curl_free(s);
    return out;
  }
};

std::vector<std::string> resolve_host(const std::string& host, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), "443", &hints, &list); rc != 0) {
    error = gai_strerror(rc);
    return {};
  }
  std::vector<std::string> out;
  for (const addrinfo* a = list; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    const void* raw = a->ai_family == AF_INET
                          ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr)
                          : static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr);
    if ((a->ai_family == AF_INET || a->ai_family == AF_INET6) && inet_ntop(a->ai_family, raw, text, sizeof text))
      out.emplace_back(text);
  }
  freeaddrinfo(list);
  return out;
}

// Every socket libcurl opens is checked again: a connection can only reach a public address, whatever resolved it.
curl_socket_t open_checked_socket(void*, curlsocktype, curl_sockaddr* a) {
  if (!non_public(&a->addr).empty()) return CURL_SOCKET_BAD;
  return socket(a->family, a->socktype, a->protocol);
}

struct Body {
  std::vector<std::uint8_t> bytes;
  std::size_t max = 0;
  bool too_large = false;
};

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto& b = *static_cast<Body*>(user);
  if (b.bytes.size() + size * n > b.max) {
    b.too_large = true;
    return 0;  // aborts the transfer
  }
  b.bytes.insert(b.bytes.end(), data, data + size * n);
  return size * n;
}

class CurlTransport final : public HopTransport {
 public:
  HopResult get(const std::string& url, const std::string& host, const std::string& address,
                std::chrono::milliseconds time_left, std::size_t max_bytes) override {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    HopResult r;
    std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> c(curl_easy_init(), curl_easy_cleanup);
    if (!c) {
      r.error = "libcurl could not start";
      return r;
    }
    // The host's name resolves to the address checked, and to nothing else.
    const bool literal = non_public(host) != "not an IP address";
    const std::string pin =
        fmt::format("{}:443:{}", host, address.find(':') != std::string::npos ? "[" + address + "]" : address);
    std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> resolve(
        literal ? nullptr : curl_slist_append(nullptr, pin.c_str()), curl_slist_free_all);
    Body body{{}, max_bytes, false};
    CURL* h = c.get();
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    if (resolve) curl_easy_setopt(h, CURLOPT_RESOLVE, resolve.get());
    curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, open_checked_socket);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);  // each hop is checked here, not by libcurl
    curl_easy_setopt(h, CURLOPT_PROXY, "");           // no proxy from the environment: the address is the peer
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max<std::int64_t>(time_left.count(), 1)));
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(max_bytes));
    curl_easy_setopt(h, CURLOPT_USERAGENT, "tensorfold (image fetch)");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
    const CURLcode rc = curl_easy_perform(h);
    r.too_large = body.too_large || rc == CURLE_FILESIZE_EXCEEDED;
    if (rc != CURLE_OK && !r.too_large) {
      r.error = curl_easy_strerror(rc);
      return r;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
    char* location = nullptr;
    if (curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &location) == CURLE_OK && location != nullptr)
      r.location = location;
    r.body = std::move(body.bytes);
    return r;
  }
};

class CurlImageFetcher final : public ImageFetcher {
 public:
  explicit CurlImageFetcher(FetchPolicy policy) : policy_(policy) {}
  std::vector<std::uint8_t> fetch(const std::string& url, const std::string& param,
                                  std::size_t max_bytes) const override {
    CurlTransport transport;
    return fetch_image_url(url, param, max_bytes, policy_, transport, resolve_host);
  }

 private:
  FetchPolicy policy_;
};

}  // namespace

std::string checked_https_host(const std::string& url, const std::string& param) {
  UrlHandle h;
  if (h.u == nullptr || curl_url_set(h.u, CURLUPART_URL, url.c_str(), 0) != CURLUE_OK)
    throw url_refused(param, "the image URL does not parse");
  if (h.part(CURLUPART_SCHEME) != "https") throw url_refused(param, "image URLs must be https");
  if (!h.part(CURLUPART_USER).empty()) throw url_refused(param, "image URLs may not carry credentials");
  if (const auto port = h.part(CURLUPART_PORT); !port.empty() && port != "443")
    throw url_refused(param, fmt::format("image URLs must use port 443, not {}", port));
  std::string host = h.part(CURLUPART_HOST);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);  // an IPv6 literal
  if (host.empty()) throw url_refused(param, "the image URL has no host");
  return host;
}

std::vector<std::uint8_t> fetch_image_url(const std::string& start, const std::string& param, std::size_t max_bytes,
                                          const FetchPolicy& policy, HopTransport& transport, const Resolver& resolve) {
  const auto deadline = Clock::now() + policy.time_limit;
  std::string url = start;
  for (int hop = 0;; ++hop) {
    const std::string host = checked_https_host(url, param);
    std::string error;
    const auto addresses = resolve(host, error);
    if (addresses.empty())
      throw url_refused(param, fmt::format("the image URL's host '{}' does not resolve ({})", host,
                                           error.empty() ? "no address" : error));
    // Every address the name has must be public: a name that also points inward is refused whole.
    for (const auto& a : addresses)
      if (const auto why = non_public(a); !why.empty())
        throw url_refused(param, fmt::format("the image URL's host '{}' is {}, a {} address; image URLs may reach "
                                             "public addresses only",
                                             host, a, why));
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0)
      throw url_refused(param, fmt::format("the image took longer than {} s to fetch",
                                           static_cast<double>(policy.time_limit.count()) / 1000.0));
    const HopResult r = transport.get(url, host, addresses.front(), left, max_bytes);
    if (r.too_large)
      throw invalid_request(fmt::format("Invalid '{}': the image at the URL is over the limit of {:.0f} MiB an image.",
                                        param, static_cast<double>(max_bytes) / (1024.0 * 1024.0)),
                            param, "image_too_large");
    if (!r.error.empty()) throw url_refused(param, fmt::format("the image could not be fetched ({})", r.error));
    if (r.status >= 300 && r.status < 400 && !r.location.empty()) {
      if (hop >= policy.max_redirects)
        throw url_refused(param, fmt::format("the image URL redirects more than {} times", policy.max_redirects));
      url = r.location;
      continue;
    }
    if (r.status < 200 || r.status >= 300)
      throw url_refused(param, fmt::format("fetching the image answered HTTP {}", r.status));
    return r.body;
  }
}

std::unique_ptr<ImageFetcher> make_curl_image_fetcher(FetchPolicy policy) {
  return std::make_unique<CurlImageFetcher>(policy);
}

}  // namespace tf::server
