#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace tf::hub {

// Progress of one file's download on stderr. On a terminal: one bar redrawn in place with bytes, speed and
// ETA; otherwise (logs, CI) a line when the file starts and one when it ends, so logs stay readable.
// add() is called from every connection's thread.
class DownloadProgress {
 public:
  DownloadProgress(std::string name, std::uint64_t total, std::uint64_t already_have);
  ~DownloadProgress();
  DownloadProgress(const DownloadProgress&) = delete;
  DownloadProgress& operator=(const DownloadProgress&) = delete;

  void add(std::uint64_t bytes) { done_.fetch_add(bytes, std::memory_order_relaxed); }
  void finish(bool ok);

 private:
  void draw(bool final_line);
  std::string name_;
  std::uint64_t total_, start_bytes_;
  std::atomic<std::uint64_t> done_;
  std::chrono::steady_clock::time_point started_;
  bool tty_;
  bool finished_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread painter_;
};

std::string human_bytes(std::uint64_t bytes);

}  // namespace tf::hub
