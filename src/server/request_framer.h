#pragma once
// Finds where one HTTP/1.1 request ends in the bytes a connection has sent so far, without parsing more of it
// than that takes: the header block (up to its blank line), then a body by Content-Length or chunked
// transfer coding. The connection front reads a request whole before a worker thread sees it, so a client
// that is slow or silent costs a buffer, not a thread; this tells it when the request is whole, and refuses
// what is over the limits before it is buffered.
#include <cstddef>
#include <string>
#include <string_view>

namespace tf::server {

struct FrameLimits {
  std::size_t max_header_bytes = 64 * 1024;  // request line and headers, with the blank line
  std::size_t max_body_bytes = 16 << 20;     // Content-Length, or the chunked body's size as sent
};

struct Frame {
  enum class State { Incomplete, Complete, Invalid };
  State state = State::Incomplete;
  bool headers_done = false;     // the header block is whole (its fields below are read)
  std::size_t header_end = 0;    // the offset past the header block's blank line
  std::size_t end = 0;           // Complete: the offset past the request (a pipelined next one may follow)
  bool expect_continue = false;  // "Expect: 100-continue" with a body still to come
  int status = 0;                // Invalid: the status to answer (400, 413, 431, 501)
  std::string reason;            // Invalid: why, for the error envelope
};

// Frames the request at the start of `bytes`.
Frame frame_request(std::string_view bytes, const FrameLimits& limits);

}  // namespace tf::server
