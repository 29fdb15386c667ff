#include "server/connection_pool.h"

#include <algorithm>
#include <system_error>

namespace tf::server {

ConnectionPool::ConnectionPool(std::size_t limit, std::chrono::milliseconds linger)
    : limit_(std::max<std::size_t>(1, limit)), linger_(linger) {}

ConnectionPool::~ConnectionPool() { shutdown(); }

void ConnectionPool::enqueue(std::function<void()> job) {
  std::unique_lock lock(mu_);
  if (stopping_) return;  // httplib stops accepting before it shuts its queue down
  jobs_.push_back(std::move(job));
  // Every queued job has an idle thread to take it, or gets a new one while under the limit.
  if (jobs_.size() > idle_ && threads_.size() < limit_) start_locked();
  else jobs_cv_.notify_one();
  reap(lock);
}

void ConnectionPool::shutdown() {
  std::unique_lock lock(mu_);
  stopping_ = true;
  jobs_cv_.notify_all();
  ended_cv_.wait(lock, [&] { return threads_.empty(); });
  reap(lock);
}

void ConnectionPool::set_limit(std::size_t limit) {
  std::unique_lock lock(mu_);
  limit_ = std::max<std::size_t>(1, limit);
  while (!stopping_ && jobs_.size() > idle_ && threads_.size() < limit_) {
    const auto before = threads_.size();
    start_locked();
    if (threads_.size() == before) break;  // the system refused a thread
  }
  // Over a lowered limit, threads end as they finish their connection (work() checks).
  jobs_cv_.notify_all();
  reap(lock);
}

std::size_t ConnectionPool::limit() const {
  std::lock_guard lock(mu_);
  return limit_;
}

std::size_t ConnectionPool::threads() const {
  std::lock_guard lock(mu_);
  return threads_.size();
}

std::size_t ConnectionPool::waiting() const {
  std::lock_guard lock(mu_);
  return jobs_.size() > idle_ ? jobs_.size() - idle_ : 0;
}

void ConnectionPool::start_locked() {
  threads_.emplace_front();
  const auto self = threads_.begin();
  try {
    // The thread takes mu_ first thing, so it sees *self assigned.
    *self = std::thread([this, self] { work(self); });
  } catch (const std::system_error&) {
    // Out of threads: the connection waits for one that comes free rather than failing the accept loop.
    threads_.erase(self);
    return;
  }
  ++idle_;  // idle until it takes a job
}

void ConnectionPool::work(std::list<std::thread>::iterator self) {
  std::unique_lock lock(mu_);
  for (;;) {
    if (threads_.size() > limit_) {
      if (!jobs_.empty()) jobs_cv_.notify_one();  // the job this thread was woken for goes to another
      break;
    }
    jobs_cv_.wait_for(lock, linger_, [&] { return !jobs_.empty() || stopping_; });
    if (jobs_.empty()) break;  // idle for linger_, or stopping with nothing left to serve
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    --idle_;
    lock.unlock();
    job();
    job = nullptr;  // the connection's state goes before the lock is taken again
    lock.lock();
    ++idle_;
  }
  --idle_;
  ended_.push_back(std::move(*self));
  threads_.erase(self);
  ended_cv_.notify_all();
}

void ConnectionPool::reap(std::unique_lock<std::mutex>& lock) {
  if (ended_.empty()) return;
  // An ended thread has given back its stack's memory; joining frees what is left of it. Not under mu_: the
  // thread may still be on its way out.
  auto ended = std::move(ended_);
  ended_.clear();
  lock.unlock();
  for (auto& t : ended) t.join();
  lock.lock();
}

}  // namespace tf::server
