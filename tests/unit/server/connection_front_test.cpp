// The connection front over real sockets: idle and slowly-sending connections hold no worker, so /health
// answers beside hundreds of them; headers that do not arrive in time get a 408; pipelined and keep-alive
// requests are answered in order; 100-continue is answered once; idle connections beyond the cap close
// oldest first.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "fake_service.h"
#include "server/http_server.h"

namespace tf::server {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

ServerOptions options() {
  ServerOptions o;
  o.port = 0;
  o.names = {"smol", {}};
  o.default_max_tokens = 16;
  o.max_body_bytes = 4096;
  return o;
}

int connect_to(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool send_text(int fd, const std::string& s) {
  return send(fd, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size());
}

// What the server sends until it has sent `until` (or closes, or `timeout` passes).
std::string receive(int fd, const std::string& until, std::chrono::milliseconds timeout = 3000ms) {
  std::string got;
  const auto end = Clock::now() + timeout;
  while (got.find(until) == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || poll(&p, 1, static_cast<int>(left)) <= 0) break;
    char buf[4096];
    const auto n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got;
}

// True when the server closed the connection (EOF) within `timeout`.
bool closed_by_server(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return false;
  char c;
  return recv(fd, &c, 1, MSG_DONTWAIT) == 0;
}

int count(const std::string& s, const std::string& part) {
  int n = 0;
  for (auto at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
  return n;
}

const std::string kHealth = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";

struct Sockets {
  std::vector<int> fds;
  ~Sockets() {
    for (int fd : fds) close(fd);
  }
};

class Front : public ::testing::Test {
 protected:
  void start(ServerOptions o) {
    srv = std::make_unique<HttpServer>(std::move(o));
    srv->bind();
    srv->start();
    srv->set_service(&svc);
    srv->set_engine_capacity(1);  // 17 workers: far fewer than the connections below
  }
  void TearDown() override {
    if (srv) srv->stop();
  }
  testing::FakeService svc;
  std::unique_ptr<HttpServer> srv;
};

TEST_F(Front, IdleAndSendingConnectionsHoldNoWorker) {
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  if (lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  const int n = static_cast<int>(std::min<rlim_t>(400, (lim.rlim_cur - 64) / 2));
  start(options());
  Sockets s;
  for (int i = 0; i < n; ++i) {
    s.fds.push_back(connect_to(srv->port()));
    ASSERT_GE(s.fds.back(), 0);
    if (i % 2 == 1) {  // half send a request's start and no more
      ASSERT_TRUE(send_text(s.fds.back(), "POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n{"));
    }
  }
  const int probe = connect_to(srv->port());
  ASSERT_GE(probe, 0);
  s.fds.push_back(probe);
  const auto t0 = Clock::now();
  ASSERT_TRUE(send_text(probe, kHealth));
  const auto reply = receive(probe, "\"drafter\"");
  EXPECT_LT(Clock::now() - t0, 1s);
  EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply;
}

TEST_F(Front, HeadersLateAre408AndSilentConnectionsClose) {
  auto o = options();
  o.header_timeout_s = 1;
  start(std::move(o));
  Sockets s;
  const int slow = connect_to(srv->port()), silent = connect_to(srv->port());
  s.fds = {slow, silent};
  ASSERT_TRUE(send_text(slow, "GET /health HTTP/1.1\r\nHost:"));
  const auto reply = receive(slow, "}}", 2500ms);
  EXPECT_EQ(reply.rfind("HTTP/1.1 408", 0), 0u) << reply;
  EXPECT_TRUE(closed_by_server(silent, 1000ms));
}

// A body trickled a byte at a time, each within --timeout of the last, still has a total deadline: --timeout
// plus its bytes at the minimum rate (16 KiB/s), here about one second.
TEST_F(Front, ATrickledBodyIs408AtItsTotalDeadline) {
  auto o = options();
  o.timeout_s = 1;
  start(std::move(o));
  Sockets s;
  const int fd = connect_to(srv->port());
  s.fds = {fd};
  ASSERT_TRUE(send_text(fd, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"));
  const auto t0 = Clock::now();
  std::string reply;
  for (int i = 0; i < 40 && reply.empty(); ++i) {
    if (!send_text(fd, "{")) break;    // the server may have closed its side
    reply = receive(fd, "}}", 300ms);  // a byte every 0.3 s: never idle for --timeout
  }
  if (reply.empty()) reply = receive(fd, "}}", 1000ms);
  EXPECT_EQ(reply.rfind("HTTP/1.1 408", 0), 0u) << reply;
  EXPECT_LT(Clock::now() - t0, 3s);
  EXPECT_GT(Clock::now() - t0, 900ms);
}

TEST_F(Front, PipelinedAndKeepAliveRequestsAreAnsweredInOrder) {
  start(options());
  Sockets s;
  const int fd = connect_to(srv->port());
  s.fds = {fd};
  ASSERT_TRUE(send_text(fd, kHealth + "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n" + kHealth));
  std::string got;
  for (int i = 0; i < 3 && count(got, "\"drafter\"") < 2; ++i) got += receive(fd, "\"drafter\"");
  EXPECT_EQ(count(got, "HTTP/1.1 200"), 3) << got;
  EXPECT_LT(got.find("\"status\""), got.find("\"smol\""));
  ASSERT_TRUE(send_text(fd, kHealth));  // the same connection, later
  EXPECT_EQ(receive(fd, "\"drafter\"").rfind("HTTP/1.1 200", 0), 0u);
}

TEST_F(Front, ExpectContinueIsAnsweredOnce) {
  start(options());
  Sockets s;
  const int fd = connect_to(srv->port());
  s.fds = {fd};
  const std::string body = R"({"prompt":"hi","max_tokens":2})";
  ASSERT_TRUE(send_text(fd,
                        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        "Expect: 100-continue\r\nContent-Length: " +
                            std::to_string(body.size()) + "\r\n\r\n"));
  EXPECT_EQ(receive(fd, "\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(send_text(fd, body));
  const auto reply = receive(fd, "\"usage\"");
  EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply;
  EXPECT_EQ(count(reply, "100 Continue"), 0);
}

TEST_F(Front, OversizedBodiesAreRefusedBeforeTheyAreRead) {
  start(options());
  Sockets s;
  const int fd = connect_to(srv->port());
  s.fds = {fd};
  ASSERT_TRUE(send_text(fd, "POST /v1/completions HTTP/1.1\r\nContent-Length: 100000000\r\n\r\n"));
  const auto reply = receive(fd, "}}");
  EXPECT_EQ(reply.rfind("HTTP/1.1 413", 0), 0u) << reply;
  EXPECT_NE(reply.find("request_too_large"), std::string::npos);
}

TEST_F(Front, IdleConnectionsBeyondTheCapCloseOldestFirst) {
  auto o = options();
  o.max_idle_connections = 3;
  start(std::move(o));
  Sockets s;
  for (int i = 0; i < 4; ++i) {
    s.fds.push_back(connect_to(srv->port()));
    std::this_thread::sleep_for(50ms);  // accepted in this order
  }
  EXPECT_TRUE(closed_by_server(s.fds[0], 2000ms));
  for (int i = 1; i < 4; ++i) EXPECT_FALSE(closed_by_server(s.fds[static_cast<std::size_t>(i)], 100ms)) << i;
  ASSERT_TRUE(send_text(s.fds[1], kHealth));
  EXPECT_EQ(receive(s.fds[1], "\"drafter\"").rfind("HTTP/1.1 200", 0), 0u);
}

}  // namespace
}  // namespace tf::server
