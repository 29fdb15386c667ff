#include "server/connection_front.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

namespace tf::server {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kReadChunk = 64 * 1024;
constexpr int kSweepMs = 100;  // deadlines are checked this often

// Best effort: a reply the front writes itself is small, and a client that does not read it loses it.
void send_all_now(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const auto n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0)
      done += static_cast<std::size_t>(n);
    else if (!(n < 0 && errno == EINTR))
      return;
  }
}

}  // namespace

Connection::~Connection() {
  if (fd >= 0) ::close(fd);
}

ConnectionFront::ConnectionFront(int listen_fd, FrontOptions options, Handoff handoff, Refusal refusal)
    : listen_fd_(listen_fd), options_(std::move(options)), handoff_(std::move(handoff)), refusal_(std::move(refusal)) {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) throw std::runtime_error("cannot create the connection front's epoll");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listen_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  ev.data.fd = wake_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
}

ConnectionFront::~ConnectionFront() {
  stop();
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void ConnectionFront::start() {
  running_ = true;
  thread_ = std::thread([this] {
    try {
      loop();
    } catch (...) {
      // Nothing is expected to throw here but a failed allocation; the server reports that it stopped.
    }
    conns_.clear();  // closes every connection the front held
    idle_.clear();
    running_ = false;
  });
}

void ConnectionFront::stop() {
  if (stopping_.exchange(true)) {
    if (thread_.joinable()) thread_.join();
    return;
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(wake_fd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
  std::lock_guard lock(returned_mu_);
  returned_.clear();
}

void ConnectionFront::give_back(std::shared_ptr<Connection> connection) {
  std::lock_guard lock(returned_mu_);
  if (stopping_) return;  // dropping it closes it
  returned_.push_back(std::move(connection));
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(wake_fd_, &one, sizeof one);
}

void ConnectionFront::loop() {
  std::vector<epoll_event> events(256);
  auto last_sweep = Clock::now();
  while (!stopping_) {
    const int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), kSweepMs);
    if (n < 0 && errno != EINTR) throw std::runtime_error("epoll_wait failed");
    for (int i = 0; i < n; ++i) {
      const int fd = events[static_cast<std::size_t>(i)].data.fd;
      if (fd == listen_fd_) {
        accept_all();
      } else if (fd == wake_fd_) {
        std::uint64_t count;
        [[maybe_unused]] const auto r = ::read(wake_fd_, &count, sizeof count);
        take_returned();
      } else if (const auto it = conns_.find(fd); it != conns_.end()) {
        read_from(*it->second);
      }
    }
    const auto now = Clock::now();
    if (now - last_sweep >= std::chrono::milliseconds(kSweepMs)) {
      last_sweep = now;
      expire(now);
      if (accept_paused_until_ != Clock::time_point{} && now >= accept_paused_until_) {
        accept_paused_until_ = {};
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = listen_fd_;
        epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &ev);
      }
    }
  }
}

void ConnectionFront::accept_all() {
  for (;;) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if ((errno == EMFILE || errno == ENFILE) && close_oldest_idle()) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors with no idle connection to give up: stop accepting for a moment (the kernel
        // keeps the backlog) instead of spinning on a listener that stays readable.
        accept_paused_until_ = Clock::now() + std::chrono::milliseconds(kSweepMs);
        epoll_event ev{};
        ev.data.fd = listen_fd_;
        epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &ev);
      }
      return;  // EAGAIN: accepted all that waited
    }
    int yes = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    auto c = std::make_shared<Connection>(fd);
    c->deadline = Clock::now() + options_.header_timeout;
    add(std::move(c));
  }
}

void ConnectionFront::add(std::shared_ptr<Connection> c) {
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.fd = c->fd;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c->fd, &ev) != 0) return;  // dropping it closes it
  auto& conn = *c;
  buffered_ += conn.buffer.size();
  conns_.emplace(conn.fd, std::move(c));
  ++open_;
  mark_idle(conn, conn.buffer.empty());
  if (!conn.buffer.empty()) advance(conn);
}

void ConnectionFront::mark_idle(Connection& c, bool idle) {
  if (c.idle == idle) return;
  c.idle = idle;
  if (idle) {
    c.idle_at = idle_.insert(idle_.end(), c.fd);
    ++idle_count_;
    while (idle_.size() > options_.max_idle && close_oldest_idle()) {
    }
  } else {
    idle_.erase(c.idle_at);
    --idle_count_;
  }
}

bool ConnectionFront::close_oldest_idle() {
  if (idle_.empty()) return false;
  const auto it = conns_.find(idle_.front());
  if (it == conns_.end()) {
    idle_.pop_front();
    --idle_count_;
    return true;
  }
  close(*it->second);
  return true;
}

void ConnectionFront::take_returned() {
  std::vector<std::shared_ptr<Connection>> back;
  {
    std::lock_guard lock(returned_mu_);
    back.swap(returned_);
  }
  const auto now = Clock::now();
  for (auto& c : back) {
    c->idle = false;
    c->continue_sent = false;
    c->frame = Frame{};
    c->deadline = now + (c->buffer.empty() ? options_.keep_alive : options_.header_timeout);
    add(std::move(c));
  }
}

void ConnectionFront::read_from(Connection& c) {
  if (c.lingering) {
    drain(c);
    return;
  }
  bool eof = false;
  for (;;) {
    const auto before = c.buffer.size();
    c.buffer.resize(before + kReadChunk);
    const auto n = ::recv(c.fd, c.buffer.data() + before, kReadChunk, 0);
    c.buffer.resize(before + static_cast<std::size_t>(n > 0 ? n : 0));
    if (n > 0) {
      buffered_ += static_cast<std::size_t>(n);
      if (c.idle) {
        mark_idle(c, false);
        c.deadline = Clock::now() + options_.header_timeout;  // the headers' clock starts at their first byte
      } else if (c.frame.headers_done) {
        c.deadline = Clock::now() + options_.body_timeout;  // the body may take as long as it keeps coming
      }
      if (static_cast<std::size_t>(n) < kReadChunk) break;
      // A full chunk: frame before reading more, so no request is read past its limits.
      const auto f = frame_request(c.buffer, options_.limits);
      if (f.state != Frame::State::Incomplete) break;
      continue;
    }
    if (n == 0)
      eof = true;
    else if (errno == EINTR)
      continue;
    else if (errno != EAGAIN && errno != EWOULDBLOCK)
      eof = true;
    break;
  }
  if (buffered_ > options_.max_buffered_bytes) {
    refuse(c, 503, "The server is receiving too many requests at once; retry shortly.");
    return;
  }
  const int fd = c.fd;
  advance(c);
  // advance() may have handed the connection off or closed it; a peer that finished sending and has no
  // whole request left is gone.
  if (const auto it = conns_.find(fd); eof && it != conns_.end() && it->second.get() == &c) close(c);
}

void ConnectionFront::advance(Connection& c) {
  if (c.buffer.empty()) return;
  c.frame = frame_request(c.buffer, options_.limits);
  switch (c.frame.state) {
    case Frame::State::Complete:
      hand_off(c);
      return;
    case Frame::State::Invalid:
      refuse(c, c.frame.status, c.frame.reason);
      return;
    case Frame::State::Incomplete:
      if (c.frame.headers_done && !c.continue_sent && c.frame.expect_continue) {
        // The client waits for this before it sends the body.
        send_all_now(c.fd, "HTTP/1.1 100 Continue\r\n\r\n");
        c.continue_sent = true;
        c.deadline = Clock::now() + options_.body_timeout;
      }
      if (c.frame.headers_done && c.deadline - Clock::now() > options_.body_timeout)
        c.deadline = Clock::now() + options_.body_timeout;
      if (c.frame.headers_done) {
        // The total deadline: body_timeout from the headers' end, plus the bytes received so far at the
        // minimum rate. A client at least that fast always stays ahead of it; a trickle falls behind.
        if (!c.body_since) c.body_since = Clock::now();
        const auto received = c.buffer.size() - std::min(c.buffer.size(), c.frame.header_end);
        const auto total =
            *c.body_since + options_.body_timeout +
            std::chrono::milliseconds(received * 1000 / std::max<std::size_t>(1, options_.body_min_bytes_per_s));
        c.deadline = std::min(c.deadline, std::chrono::time_point_cast<Clock::duration>(total));
      }
      return;
  }
}

void ConnectionFront::hand_off(Connection& c) {
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  const auto it = conns_.find(c.fd);
  auto owned = std::move(it->second);
  conns_.erase(it);
  --open_;
  mark_idle(*owned, false);
  owned->body_since.reset();  // the next request's body has its own deadline
  buffered_ -= owned->buffer.size();
  handoff_(std::move(owned));
}

void ConnectionFront::refuse(Connection& c, int status, const std::string& reason) {
  send_all_now(c.fd, refusal_(status, reason));
  ::shutdown(c.fd, SHUT_WR);
  // A client refused mid-body is usually still sending it and reads the reply only after. Closing now, with
  // its bytes unread, would reset the connection and lose the reply (and the client sees a broken pipe):
  // the rest is read and dropped, without buffering, until the client stops or `linger` passes.
  mark_idle(c, false);
  buffered_ -= c.buffer.size();
  c.buffer = std::string();
  c.lingering = true;
  c.deadline = Clock::now() + options_.linger;
  drain(c);
}

void ConnectionFront::drain(Connection& c) {
  char sink[16 * 1024];
  for (;;) {
    const auto n = ::recv(c.fd, sink, sizeof sink, 0);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    close(c);  // the client finished (EOF) or is gone
    return;
  }
}

void ConnectionFront::close(Connection& c) {
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  mark_idle(c, false);
  buffered_ -= c.buffer.size();
  --open_;
  conns_.erase(c.fd);  // the last reference: closes the socket
}

void ConnectionFront::expire(Clock::time_point now) {
  std::vector<int> late;
  for (const auto& [fd, c] : conns_)
    if (now >= c->deadline) late.push_back(fd);
  for (const int fd : late) {
    auto& c = *conns_.at(fd);
    // A client that started a request hears why it ends; a silent one is just closed, as HTTP servers do.
    if (c.buffer.empty() || c.lingering)
      close(c);
    else
      refuse(c, 408, "The request was not received in time.");
  }
}

}  // namespace tf::server
