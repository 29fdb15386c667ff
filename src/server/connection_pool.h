#pragma once
// The worker threads that answer HTTP requests. The connection front (connection_front.h) hands a worker a
// request only once it is whole, and a reply holds its worker while its request waits in the engine's queue
// and while it streams. A fixed pool smaller than what the engine holds at once (running plus queued)
// therefore fills with replies, and /health and /metrics wait behind them. This pool starts a thread when a
// request finds none idle, up to a limit the server raises to the engine's capacity plus spare once the
// engine has loaded; requests beyond the limit wait, first come first served, for a thread to come free. A
// thread idle for `linger` ends, so that a burst's threads (their stacks) do not stay resident.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

namespace tf::server {

class ConnectionPool {
 public:
  explicit ConnectionPool(std::size_t limit, std::chrono::milliseconds linger = std::chrono::seconds(10));
  ~ConnectionPool();  // shutdown()
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // Runs `job` on an idle thread, on a new one while under the limit, or else when a thread comes free.
  void enqueue(std::function<void()> job);
  // Runs the jobs already queued, then ends every thread and waits for them. Jobs enqueued later are dropped.
  void shutdown();

  // The most threads at once (at least 1). Raising it starts threads for connections that wait.
  void set_limit(std::size_t limit);
  std::size_t limit() const;
  std::size_t threads() const;  // alive now, busy or idle
  std::size_t waiting() const;  // connections queued for a thread

 private:
  void start_locked();
  void work(std::list<std::thread>::iterator self);
  void reap(std::unique_lock<std::mutex>& lock);

  mutable std::mutex mu_;
  std::condition_variable jobs_cv_;   // a job was queued, or shutdown
  std::condition_variable ended_cv_;  // a thread ended
  std::deque<std::function<void()>> jobs_;
  std::list<std::thread> threads_;    // alive; each erases itself when it ends
  std::vector<std::thread> ended_;    // ended, to join (a thread cannot join itself)
  std::size_t limit_;
  std::size_t idle_ = 0;              // threads waiting for a job
  const std::chrono::milliseconds linger_;
  bool stopping_ = false;
};

}  // namespace tf::server
