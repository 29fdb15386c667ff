#include "server/framed_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

namespace tf::server {

namespace {

void address_of(const sockaddr_storage& addr, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(addr);
    inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
    port = ntohs(a.sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(addr);
    inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof text);
    port = ntohs(a.sin6_port);
  } else {
    port = -1;
  }
  ip = text;
}

}  // namespace

FramedStream::FramedStream(int fd, const std::string& buffer, std::size_t from, std::size_t end,
                           std::chrono::milliseconds write_timeout, bool continue_sent)
    : fd_(fd), buffer_(buffer), at_(from), end_(end), write_timeout_(write_timeout), swallow_continue_(continue_sent) {}

bool FramedStream::is_writable() const {
  pollfd p{fd_, POLLOUT, 0};
  int n;
  do n = ::poll(&p, 1, static_cast<int>(write_timeout_.count()));
  while (n < 0 && errno == EINTR);
  return n > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL)) == 0;
}

ssize_t FramedStream::read(char* ptr, std::size_t size) {
  const auto n = std::min(size, end_ - at_);
  std::memcpy(ptr, buffer_.data() + at_, n);
  at_ += n;
  return static_cast<ssize_t>(n);
}

ssize_t FramedStream::write(const char* ptr, std::size_t size) {
  // httplib answers "Expect: 100-continue" itself; the front already did (the body was read before any
  // worker saw the request), so the second interim reply is dropped.
  if (swallow_continue_) {
    swallow_continue_ = false;
    if (std::string_view(ptr, size).rfind("HTTP/1.1 100 ", 0) == 0) return static_cast<ssize_t>(size);
  }
  if (write_failed_) return -1;
  std::size_t done = 0;
  while (done < size) {
    const auto n = ::send(fd_, ptr + done, size - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && is_writable()) {
      continue;
    } else {
      write_failed_ = true;  // the peer is gone, or did not read for the whole write timeout
      return -1;
    }
  }
  return static_cast<ssize_t>(size);
}

void FramedStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) address_of(addr, ip, port);
}

void FramedStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) address_of(addr, ip, port);
}

}  // namespace tf::server
