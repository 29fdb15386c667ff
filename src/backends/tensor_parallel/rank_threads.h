#pragma once
// The threads that run tensor-parallel ranks apart (collective.h): rank 0 on the caller's thread, every other
// rank on a thread of its own that lives as long as the backend, and a host-side meeting point for sums.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tf {

class RankThreads {
 public:
  explicit RankThreads(int ranks);
  ~RankThreads();
  RankThreads(const RankThreads&) = delete;
  RankThreads& operator=(const RankThreads&) = delete;
  // f(r) for r = 0 .. ranks - 1 at once; returns when all have returned, rethrowing the error of the first
  // rank to fail.
  // `on_failure` runs (once, before waiting for the others) when a rank throws: it must make the others
  // return (NCCL: abort the communicators; a Rendezvous: abort()), or the call would wait for them forever.
  void run(const std::function<void(int)>& f, const std::function<void()>& on_failure);

 private:
  struct Worker {
    std::thread thread;
    std::function<void()> job;
    bool done = true;
  };
  void loop(std::size_t w);
  std::mutex mu_;
  std::condition_variable wake_, finished_;
  std::vector<Worker> workers_;  // ranks 1 .. n-1
  bool stop_ = false;
};

// A host-side sum over ranks for ThreadCollective: each rank deposits its values, waits for the others, and
// gets their sum in rank order (the same bits on every rank). abort() makes every waiting rank throw.
class Rendezvous {
 public:
  explicit Rendezvous(int ranks) : parts_(static_cast<std::size_t>(ranks)) {}
  std::vector<float> sum(std::size_t r, std::vector<float> part);
  void abort();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::vector<float>> parts_;
  std::size_t arrived_ = 0, left_ = 0;
  std::uint64_t round_ = 0;
  bool aborted_ = false;
};

}  // namespace tf
