// frame_request: where a request ends (Content-Length, chunked, pipelined), when it is not whole yet, and
// what is refused before it is buffered (oversized headers or body, ambiguous framing).
#include "server/request_framer.h"

#include <gtest/gtest.h>

namespace tf::server {
namespace {

const FrameLimits kLimits{1024, 100};

TEST(RequestFramer, AGetWithoutBodyEndsAtTheBlankLine) {
  const std::string r = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  const auto f = frame_request(r + "GET /", kLimits);
  EXPECT_EQ(f.state, Frame::State::Complete);
  EXPECT_EQ(f.end, r.size());
}

TEST(RequestFramer, WaitsForTheHeadersAndTheBody) {
  EXPECT_EQ(frame_request("", kLimits).state, Frame::State::Incomplete);
  EXPECT_EQ(frame_request("POST / HTTP/1.1\r\nContent-Len", kLimits).state, Frame::State::Incomplete);
  const std::string head = "POST / HTTP/1.1\r\ncontent-length: 5\r\n\r\n";
  auto f = frame_request(head + "abc", kLimits);
  EXPECT_EQ(f.state, Frame::State::Incomplete);
  EXPECT_TRUE(f.headers_done);
  f = frame_request(head + "abcdeGET", kLimits);
  EXPECT_EQ(f.state, Frame::State::Complete);
  EXPECT_EQ(f.end, head.size() + 5);
}

TEST(RequestFramer, AsksForTheBodyOnlyWhenItIsAwaited) {
  const std::string head = "POST / HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n";
  EXPECT_TRUE(frame_request(head, kLimits).expect_continue);
  EXPECT_FALSE(frame_request(head + "abcde", kLimits).expect_continue);
}

TEST(RequestFramer, FramesAChunkedBody) {
  const std::string head = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  EXPECT_EQ(frame_request(head + "3\r\nabc\r\n", kLimits).state, Frame::State::Incomplete);
  const std::string body = "3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
  const auto f = frame_request(head + body + "next", kLimits);
  EXPECT_EQ(f.state, Frame::State::Complete);
  EXPECT_EQ(f.end, head.size() + body.size());
  const std::string trailers = "0\r\nX-T: 1\r\n\r\n";
  EXPECT_EQ(frame_request(head + trailers, kLimits).end, head.size() + trailers.size());
  EXPECT_EQ(frame_request(head + "zz\r\n", kLimits).status, 400);
  EXPECT_EQ(frame_request(head + "3\r\nabcX\r\n", kLimits).status, 400);
}

TEST(RequestFramer, RefusesWhatIsOverTheLimitsBeforeItArrives) {
  EXPECT_EQ(frame_request("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", kLimits).status, 413);
  EXPECT_EQ(frame_request("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", kLimits).status, 413);
  EXPECT_EQ(frame_request("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n65\r\n", kLimits).status, 413);
  EXPECT_EQ(frame_request("GET / HTTP/1.1\r\nX: " + std::string(2000, 'a'), kLimits).status, 431);
}

TEST(RequestFramer, RefusesAmbiguousFraming) {
  EXPECT_EQ(frame_request("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", kLimits).status, 400);
  EXPECT_EQ(frame_request("POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", kLimits).status,
            400);
  EXPECT_EQ(frame_request("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", kLimits).status, 400);
  EXPECT_EQ(frame_request("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", kLimits).status, 501);
  EXPECT_EQ(frame_request("POST / HTTP/1.1\r\nno colon\r\n\r\n", kLimits).status, 400);
}

}  // namespace
}  // namespace tf::server
