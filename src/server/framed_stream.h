#pragma once
// The httplib::Stream a worker serves one request through: reads come from the request the connection front
// framed (never from the socket, so a worker never waits for a client to send), writes go to the socket
// with the --timeout as their deadline for each wait.
#include <httplib.h>

#include <chrono>
#include <string>

namespace tf::server {

class FramedStream final : public httplib::Stream {
 public:
  // Serves bytes [from, end) of `buffer`; `continue_sent`: the front already answered 100 Continue.
  FramedStream(int fd, const std::string& buffer, std::size_t from, std::size_t end,
               std::chrono::milliseconds write_timeout, bool continue_sent);

  bool is_readable() const override { return at_ < end_; }
  bool is_writable() const override;
  ssize_t read(char* ptr, std::size_t size) override;
  ssize_t write(const char* ptr, std::size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

  bool write_failed() const { return write_failed_; }

 private:
  int fd_;
  const std::string& buffer_;
  std::size_t at_, end_;
  std::chrono::milliseconds write_timeout_;
  bool swallow_continue_;
  bool write_failed_ = false;
};

}  // namespace tf::server
