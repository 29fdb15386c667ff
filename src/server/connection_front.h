#pragma once
// The connection front: one thread that accepts connections and reads each request whole (headers within
// the header timeout, the body within the limits) before a worker thread sees it, over epoll.
//
// httplib serves a connection on one thread from accept to close, blocked in read() while the client is idle
// or still sending, so 90 silent sockets filled the pool and /health waited for their read timeouts. Here a
// connection costs a buffer while it is idle or sending; only a whole request takes a worker, which answers
// it and gives the connection back for the next one. Idle connections (new ones that sent nothing, and
// keep-alive ones between requests) are capped, oldest closed first; each phase has its deadline.
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "server/request_framer.h"

namespace tf::server {

// One client connection. The front owns it while it is idle or sending; a worker owns it while it answers.
struct Connection {
  explicit Connection(int socket) : fd(socket) {}
  ~Connection();  // closes the socket
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  int fd;
  std::string buffer;  // bytes received from the start of the current request
  Frame frame;         // of the request at buffer's start; Complete when a worker gets it
  bool continue_sent = false;
  std::size_t served = 0;  // requests answered on it

  // The front's bookkeeping.
  std::chrono::steady_clock::time_point deadline;
  // When the current request's headers were whole: its body's total deadline counts from here.
  std::optional<std::chrono::steady_clock::time_point> body_since;
  bool idle = false;       // waiting for the first byte of a request
  bool lingering = false;  // refused: what the client still sends is read and dropped until it stops
  std::list<int>::iterator idle_at;
};

struct FrontOptions {
  std::chrono::milliseconds header_timeout{10'000};         // the first byte of a request to its blank line
  std::chrono::milliseconds body_timeout{30'000};           // --timeout: the longest wait for more of a body
  // A body's total time: body_timeout plus its bytes at this rate, so a client trickling bytes (each within
  // body_timeout of the last) cannot hold a connection for ever, and a large upload at any sane rate fits.
  std::size_t body_min_bytes_per_s = 16 * 1024;
  std::chrono::milliseconds keep_alive{5'000};              // idle between requests on one connection
  std::chrono::milliseconds linger{10'000};                 // the longest a refused client's bytes are drained
  std::size_t max_idle = 4096;                              // idle connections kept; more close the oldest
  std::size_t max_buffered_bytes = std::size_t{512} << 20;  // request bytes held across all connections
  FrameLimits limits;
};

class ConnectionFront {
 public:
  using Handoff = std::function<void(std::shared_ptr<Connection>)>;
  // The whole HTTP response (status line to body) refusing a request the front could not frame.
  using Refusal = std::function<std::string(int status, const std::string& reason)>;

  // Takes `listen_fd` (listening, any blocking mode) and closes it on stop().
  ConnectionFront(int listen_fd, FrontOptions options, Handoff handoff, Refusal refusal);
  ~ConnectionFront();  // stop()
  ConnectionFront(const ConnectionFront&) = delete;
  ConnectionFront& operator=(const ConnectionFront&) = delete;

  void start();
  // Stops accepting and closes every connection the front holds; connections given back later are closed.
  void stop();
  bool running() const { return running_; }

  // A worker answered a request and the connection stays open: the front waits for its next request.
  void give_back(std::shared_ptr<Connection> connection);

  std::size_t connections() const { return open_; }  // held by the front now
  std::size_t idle_connections() const { return idle_count_; }

 private:
  void loop();
  void accept_all();
  void read_from(Connection& c);
  void drain(Connection& c);
  void take_returned();
  void expire(std::chrono::steady_clock::time_point now);
  void advance(Connection& c);  // frame what is buffered and act on it
  void refuse(Connection& c, int status, const std::string& reason);
  void close(Connection& c);
  void hand_off(Connection& c);
  void add(std::shared_ptr<Connection> c);
  void mark_idle(Connection& c, bool idle);
  bool close_oldest_idle();

  int listen_fd_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd: give_back() and stop() wake the loop
  FrontOptions options_;
  Handoff handoff_;
  Refusal refusal_;
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::atomic<bool> stopping_{false};

  // The loop thread's own state.
  std::unordered_map<int, std::shared_ptr<Connection>> conns_;
  std::list<int> idle_;  // oldest first
  std::size_t buffered_ = 0;
  std::chrono::steady_clock::time_point accept_paused_until_{};
  std::atomic<std::size_t> open_{0}, idle_count_{0};

  std::mutex returned_mu_;
  std::vector<std::shared_ptr<Connection>> returned_;
};

}  // namespace tf::server
