#include "server/disconnect_watch.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace tf::server {

namespace {

bool numeric_address(const sockaddr_storage& sa, socklen_t len, std::string& host, int& port) {
  char h[NI_MAXHOST], s[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&sa), len, h, sizeof h, s, sizeof s,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  host = h;
  port = std::atoi(s);
  return true;
}

bool is_connection(int fd, const ConnectionAddress& a) {
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return false;
  std::string host;
  int port = -1;
  if (!numeric_address(sa, len, host, port) || port != a.remote_port || host != a.remote_addr) return false;
  len = sizeof sa;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return false;
  return numeric_address(sa, len, host, port) && port == a.local_port;
}

#ifdef POLLRDHUP
constexpr short kWatchEvents = POLLRDHUP;  // the peer closed its side; pending data does not wake us
#else
constexpr short kWatchEvents = POLLIN;  // tell EOF from data with a peek
#endif

class Monitor {
 public:
  static Monitor& instance() {
    static Monitor* m = new Monitor;  // lives as long as the process: watches may end during exit
    return *m;
  }

  std::uint64_t add(int fd, std::function<void()> on_gone) {
    std::lock_guard lock(mu_);
    start_locked();
    const auto id = ++next_id_;
    entries_[id] = Entry{fd, std::move(on_gone), false};
    wake();
    return id;
  }

  void remove(std::uint64_t id) {
    std::lock_guard lock(mu_);  // callbacks run under mu_, so none is running once we hold it
    entries_.erase(id);
    wake();
  }

 private:
  struct Entry {
    int fd;
    std::function<void()> on_gone;
    bool done;
  };

  void start_locked() {
    if (started_) return;
    if (pipe(wake_) != 0) wake_[0] = wake_[1] = -1;
    for (int fd : wake_)
      if (fd >= 0) {
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        fcntl(fd, F_SETFD, FD_CLOEXEC);
      }
    started_ = true;
    std::thread([this] { loop(); }).detach();
  }

  void wake() {
    if (wake_[1] >= 0) {
      const char c = 1;
      [[maybe_unused]] auto n = write(wake_[1], &c, 1);
    }
  }

  void loop() {
    std::vector<pollfd> fds;
    std::vector<std::uint64_t> ids;
    for (;;) {
      fds.assign(1, pollfd{wake_[0], POLLIN, 0});
      ids.clear();
      {
        std::lock_guard lock(mu_);
        for (const auto& [id, e] : entries_)
          if (!e.done) {
            fds.push_back(pollfd{e.fd, kWatchEvents, 0});
            ids.push_back(id);
          }
      }
      // Without a wake pipe, poll in slices so new watches are picked up.
      const int n = poll(fds.data(), static_cast<nfds_t>(fds.size()), wake_[0] >= 0 ? -1 : 200);
      if (n < 0) {
        if (errno != EINTR) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      if (fds[0].revents) {
        char buf[64];
        while (read(wake_[0], buf, sizeof buf) > 0) {
        }
      }
      std::lock_guard lock(mu_);
      for (std::size_t i = 1; i < fds.size(); ++i) {
        const short ev = fds[i].revents;
        if (!ev) continue;
        auto it = entries_.find(ids[i - 1]);
        if (it == entries_.end()) continue;  // removed meanwhile; the fd may be someone else's now
        auto& e = it->second;
        bool gone = (ev & (POLLHUP | POLLERR)) != 0;
#ifdef POLLRDHUP
        gone = gone || (ev & POLLRDHUP) != 0;
#endif
        if (!gone && (ev & POLLIN)) {
          char c;
          const auto r = recv(e.fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
          if (r == 0) gone = true;
          else if (r > 0) e.done = true;  // the client sent more (pipelining): it is there; stop watching
        }
        if (ev & POLLNVAL) e.done = true;
        if (gone) {
          e.done = true;
          if (e.on_gone) e.on_gone();
        }
      }
    }
  }

  std::mutex mu_;
  std::unordered_map<std::uint64_t, Entry> entries_;
  std::uint64_t next_id_ = 0;
  bool started_ = false;
  int wake_[2] = {-1, -1};
};

}  // namespace

int find_connection_socket(const ConnectionAddress& a) {
  if (a.remote_port <= 0 || a.local_port <= 0 || a.remote_addr.empty()) return -1;
  std::error_code ec;
  std::filesystem::directory_iterator it("/proc/self/fd", ec);
  if (!ec) {
    for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
      if (ec) break;
      const auto name = it->path().filename().string();
      char* end = nullptr;
      const long fd = std::strtol(name.c_str(), &end, 10);
      if (end && *end == '\0' && fd >= 0 && is_connection(static_cast<int>(fd), a)) return static_cast<int>(fd);
    }
    return -1;
  }
  const long limit = std::min<long>(sysconf(_SC_OPEN_MAX), 65536);
  for (int fd = 0; fd < limit; ++fd)
    if (is_connection(fd, a)) return fd;
  return -1;
}

DisconnectWatch::DisconnectWatch(int fd, std::function<void()> on_gone) {
  if (fd >= 0) id_ = Monitor::instance().add(fd, std::move(on_gone));
}

DisconnectWatch& DisconnectWatch::operator=(DisconnectWatch&& other) noexcept {
  if (this != &other) {
    stop();
    id_ = other.id_;
    other.id_ = 0;
  }
  return *this;
}

void DisconnectWatch::stop() {
  if (id_ != 0) {
    Monitor::instance().remove(id_);
    id_ = 0;
  }
}

}  // namespace tf::server
