#pragma once
// Noticing that a client went away while its generation runs, so the generation can be cancelled.
//
// httplib hands a handler no socket, so the connection is found by its address pair (the one TCP connection
// with this local and remote address and port); the handler's thread holds it open for the whole request.
// One monitor thread polls every watched socket for a hang-up (POLLRDHUP/POLLHUP/POLLERR) and calls the
// watch's callback once.
#include <cstdint>
#include <functional>
#include <string>

namespace tf::server {

struct ConnectionAddress {
  std::string local_addr;
  int local_port = -1;
  std::string remote_addr;
  int remote_port = -1;
};

// This process's socket for the TCP connection with these addresses, or -1.
int find_connection_socket(const ConnectionAddress& address);

class DisconnectWatch {
 public:
  DisconnectWatch() = default;
  // Calls `on_gone` once, from the monitor thread, when the peer of `fd` hangs up. A negative fd watches nothing.
  DisconnectWatch(int fd, std::function<void()> on_gone);
  ~DisconnectWatch() { stop(); }
  DisconnectWatch(DisconnectWatch&& other) noexcept : id_(other.id_) { other.id_ = 0; }
  DisconnectWatch& operator=(DisconnectWatch&& other) noexcept;
  DisconnectWatch(const DisconnectWatch&) = delete;
  DisconnectWatch& operator=(const DisconnectWatch&) = delete;

  // Stops watching; once it returns, the callback is not running and never will.
  void stop();
  bool active() const { return id_ != 0; }

 private:
  std::uint64_t id_ = 0;
};

}  // namespace tf::server
