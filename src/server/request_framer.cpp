#include "server/request_framer.h"

#include <cctype>
#include <charconv>
#include <optional>

namespace tf::server {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Frame invalid(int status, std::string reason) {
  Frame f;
  f.state = Frame::State::Invalid;
  f.status = status;
  f.reason = std::move(reason);
  return f;
}

// Where the chunked body that starts at `at` ends, once it is whole; or why it is refused.
struct Chunked {
  bool complete = false;
  std::size_t end = 0;
  std::string error;
  bool too_large = false;
};

Chunked frame_chunked(std::string_view bytes, std::size_t at, std::size_t max_body) {
  Chunked c;
  std::size_t body = 0;
  for (;;) {
    const auto eol = bytes.find("\r\n", at);
    if (eol == std::string_view::npos) {
      if (bytes.size() - at > 1024) c.error = "a chunk size line is too long";
      return c;
    }
    auto line = bytes.substr(at, eol - at);
    line = trim(line.substr(0, line.find(';')));  // chunk extensions are ignored
    std::size_t size = 0;
    const auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), size, 16);
    if (line.empty() || ec != std::errc() || ptr != line.data() + line.size()) {
      c.error = "a chunk size is not hexadecimal";
      return c;
    }
    at = eol + 2;
    if (size == 0) {
      // Trailer fields, then a blank line.
      if (bytes.compare(at, 2, "\r\n") == 0) {
        c.complete = true;
        c.end = at + 2;
        return c;
      }
      const auto blank = bytes.find("\r\n\r\n", at);
      if (blank == std::string_view::npos) return c;
      c.complete = true;
      c.end = blank + 4;
      return c;
    }
    if (size > max_body || body + size > max_body) {
      c.too_large = true;
      return c;
    }
    body += size;
    if (bytes.size() < at + size + 2) return c;
    if (bytes.compare(at + size, 2, "\r\n") != 0) {
      c.error = "a chunk does not end with CRLF";
      return c;
    }
    at += size + 2;
  }
}

}  // namespace

Frame frame_request(std::string_view bytes, const FrameLimits& limits) {
  Frame f;
  // Blank lines before a request line are allowed (RFC 9112 2.2).
  std::size_t start = 0;
  while (bytes.compare(start, 2, "\r\n") == 0) start += 2;
  const auto blank = bytes.find("\r\n\r\n", start);
  if (blank == std::string_view::npos) {
    if (bytes.size() > limits.max_header_bytes)
      return invalid(431, "The request's headers are larger than the server accepts.");
    return f;
  }
  if (blank + 4 > limits.max_header_bytes)
    return invalid(431, "The request's headers are larger than the server accepts.");
  f.headers_done = true;
  f.header_end = blank + 4;

  std::optional<std::size_t> length;
  bool chunked = false;
  bool expect = false;
  std::size_t at = bytes.find("\r\n", start) + 2;  // past the request line
  while (at < blank + 2) {
    const auto eol = bytes.find("\r\n", at);
    const auto line = bytes.substr(at, eol - at);
    at = eol + 2;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return invalid(400, "A request header line has no name.");
    const auto name = line.substr(0, colon);
    const auto value = trim(line.substr(colon + 1));
    if (iequals(name, "Content-Length")) {
      std::size_t n = 0;
      const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec == std::errc::result_out_of_range)
        return invalid(413, "The request body is larger than the server accepts.");
      if (value.empty() || ec != std::errc() || ptr != value.data() + value.size())
        return invalid(400, "Content-Length is not a number.");
      if (length && *length != n) return invalid(400, "Content-Length is given twice with different values.");
      length = n;
    } else if (iequals(name, "Transfer-Encoding")) {
      if (!iequals(value, "chunked")) return invalid(501, "Transfer-Encoding other than chunked is not supported.");
      chunked = true;
    } else if (iequals(name, "Expect")) {
      expect = iequals(value, "100-continue");
    }
  }
  // Both framings at once is a request-smuggling shape (RFC 9112 6.1): refused rather than guessed.
  if (chunked && length) return invalid(400, "Content-Length and Transfer-Encoding: chunked are both given.");

  if (chunked) {
    const auto c = frame_chunked(bytes, f.header_end, limits.max_body_bytes);
    if (c.too_large) return invalid(413, "The request body is larger than the server accepts.");
    if (!c.error.empty()) return invalid(400, "The chunked request body is malformed: " + c.error + ".");
    f.expect_continue = expect && !c.complete;
    if (c.complete) {
      f.state = Frame::State::Complete;
      f.end = c.end;
    }
    return f;
  }
  const std::size_t body = length.value_or(0);
  if (body > limits.max_body_bytes) return invalid(413, "The request body is larger than the server accepts.");
  if (bytes.size() - f.header_end >= body) {
    f.state = Frame::State::Complete;
    f.end = f.header_end + body;
  } else {
    f.expect_continue = expect;
  }
  return f;
}

}  // namespace tf::server
