#include "hub/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>

#include "tensorfold/version.h"

namespace tf::hub {
namespace {

constexpr std::size_t kMaxKeptBody = 64 * 1024;

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Exchange {
  const HttpRequest* request;
  HttpResponse* response;
  CURL* curl;
  bool sink_failed = false;
  bool body_started = false;
};

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

extern "C" std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  const std::string line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) {
    ex->response->headers.clear();  // a 100 Continue or similar interim answer: keep only the final one
    return size * count;
  }
  if (const auto colon = line.find(':'); colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    ex->response->headers[name] = trim(line.substr(colon + 1));
  }
  return size * count;
}

extern "C" std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  const std::size_t n = size * count;
  long status = 0;
  curl_easy_getinfo(ex->curl, CURLINFO_RESPONSE_CODE, &status);
  if (status >= 200 && status < 300 && ex->request->body_sink) {
    if (!ex->body_started) {
      ex->body_started = true;
      if (ex->request->on_body_start && !ex->request->on_body_start(status)) {
        ex->sink_failed = true;
        return 0;
      }
    }
    if (!ex->request->body_sink(data, n)) {
      ex->sink_failed = true;
      return 0;  // makes curl stop with CURLE_WRITE_ERROR
    }
    ex->response->sunk_bytes += n;
    return n;
  }
  if (ex->response->body.size() < kMaxKeptBody || !ex->request->body_sink) ex->response->body.append(data, n);
  return n;
}

}  // namespace

std::string HttpResponse::header(const std::string& lower_name) const {
  const auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

HttpResponse http_perform(const HttpRequest& request) {
  global_init();
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
  if (!curl) throw TransportError("libcurl could not start a transfer", false);
  HttpResponse response;
  Exchange ex{&request, &response, curl.get()};
  curl_slist* headers = nullptr;
  for (const auto& h : request.headers) headers = curl_slist_append(headers, h.c_str());
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_list(headers, &curl_slist_free_all);
  const std::string agent = std::string("tensorfold/") + kVersion;

  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(c, CURLOPT_USERAGENT, agent.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, header_list.get());
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // worker threads: no SIGALRM for timeouts
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, request.connect_timeout_s);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, request.stall_timeout_s);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &ex);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &ex);
  if (request.method == "HEAD") curl_easy_setopt(c, CURLOPT_NOBODY, 1L);

  const CURLcode rc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &response.status);
  if (rc != CURLE_OK) {
    if (ex.sink_failed) throw TransportError("writing the download failed", response.sunk_bytes > 0);
    throw TransportError(curl_easy_strerror(rc), response.sunk_bytes > 0);
  }
  return response;
}

std::string url_origin(const std::string& url) {
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return std::string();
  const auto host_end = url.find_first_of("/?#", scheme_end + 3);
  std::string origin = url.substr(0, host_end);
  std::transform(origin.begin(), origin.end(), origin.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return origin;
}

std::string resolve_location(const std::string& base, const std::string& location) {
  if (location.find("://") != std::string::npos) return location;
  if (location.rfind("//", 0) == 0) return base.substr(0, base.find("://") + 1) + location;
  if (!location.empty() && location[0] == '/') return url_origin(base) + location;
  const auto query = base.find('?');
  const std::string path = base.substr(0, query);
  return path.substr(0, path.rfind('/') + 1) + location;
}

std::string url_escape(const std::string& s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace tf::hub
