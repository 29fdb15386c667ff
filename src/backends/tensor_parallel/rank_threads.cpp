#include "backends/tensor_parallel/rank_threads.h"

#include <stdexcept>

namespace tf {

RankThreads::RankThreads(int ranks) : workers_(static_cast<std::size_t>(ranks > 1 ? ranks - 1 : 0)) {
  for (std::size_t w = 0; w < workers_.size(); ++w) workers_[w].thread = std::thread([this, w] { loop(w); });
}

RankThreads::~RankThreads() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& w : workers_) w.thread.join();
}

void RankThreads::loop(std::size_t w) {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !workers_[w].done; });
    if (stop_) return;
    auto job = std::move(workers_[w].job);
    lock.unlock();
    try {
      job();
    } catch (...) {  // run() keeps the error that matters (the first rank's to fail)
    }
    lock.lock();
    workers_[w].done = true;
    finished_.notify_all();
  }
}

void RankThreads::run(const std::function<void(int)>& f, const std::function<void()>& on_failure) {
  // The first rank to fail makes the others return (they may be waiting for it), once per run; its error is
  // the one rethrown (its peers' are only "a peer failed").
  std::mutex root_mu;
  std::exception_ptr root;
  auto fail = [&](std::exception_ptr e) {
    {
      std::lock_guard lock(root_mu);
      if (root) return;
      root = std::move(e);
    }
    if (on_failure) on_failure();
  };
  {
    std::lock_guard lock(mu_);
    for (std::size_t w = 0; w < workers_.size(); ++w) {
      workers_[w].job = [&f, &fail, r = static_cast<int>(w + 1)] {
        try {
          f(r);
        } catch (...) {
          fail(std::current_exception());
          throw;
        }
      };
      workers_[w].done = false;
    }
  }
  wake_.notify_all();
  try {
    f(0);
  } catch (...) {
    fail(std::current_exception());
  }
  std::unique_lock lock(mu_);
  finished_.wait(lock, [&] {
    for (const auto& w : workers_)
      if (!w.done) return false;
    return true;
  });
  if (root) std::rethrow_exception(root);
}

std::vector<float> Rendezvous::sum(std::size_t r, std::vector<float> part) {
  std::unique_lock lock(mu_);
  const std::size_t n = parts_.size();
  cv_.wait(lock, [&] { return aborted_ || left_ == 0; });  // the last round's sums all taken
  if (aborted_) throw std::runtime_error("tensor parallel: a peer rank failed");
  parts_[r] = std::move(part);
  const std::uint64_t mine = round_;
  if (++arrived_ == n) {
    ++round_;
    left_ = n;
    cv_.notify_all();
  } else {
    cv_.wait(lock, [&] { return aborted_ || round_ != mine; });
  }
  if (aborted_) throw std::runtime_error("tensor parallel: a peer rank failed");
  std::vector<float> out = parts_[0];
  for (std::size_t k = 1; k < n; ++k) {
    if (parts_[k].size() != out.size()) throw std::logic_error("tensor parallel: ranks summed different shapes");
    for (std::size_t i = 0; i < out.size(); ++i) out[i] += parts_[k][i];
  }
  if (--left_ == 0) {
    arrived_ = 0;
    cv_.notify_all();
  }
  return out;
}

void Rendezvous::abort() {
  std::lock_guard lock(mu_);
  aborted_ = true;
  cv_.notify_all();
}

}  // namespace tf
