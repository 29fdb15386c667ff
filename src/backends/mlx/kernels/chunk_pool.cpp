#include "backends/mlx/kernels/chunk_pool.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tf {
namespace {

// A job is published as a new object and never reused: a helper that wakes late holds a job whose chunks are
// all claimed and finds nothing to do, so it can never run a chunk of a later job under an earlier job's
// bounds. The caller waits only for `done` to reach `chunks`.
struct Job {
  Job(std::int64_t n, const std::function<void(std::int64_t)>& f) : chunks(n), fn(f) {}
  const std::int64_t chunks;
  const std::function<void(std::int64_t)>& fn;
  // Apart, so that a thread claiming a chunk does not take the line from one reporting a chunk done.
  alignas(64) std::atomic<std::int64_t> next{0};
  alignas(64) std::atomic<std::int64_t> done{0};

  void work() {
    for (std::int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < chunks;) {
      fn(i);
      done.fetch_add(1, std::memory_order_release);
    }
  }
};

class ChunkPool {
 public:
  explicit ChunkPool(int helpers) {
    for (int i = 0; i < helpers; ++i) threads_.emplace_back([this] { serve(); });
  }
  ~ChunkPool() {
    stop_.store(true);
    generation_.fetch_add(1);
    generation_.notify_all();
    for (auto& t : threads_) t.join();
  }

  int helpers() const { return static_cast<int>(threads_.size()); }

  void run(std::int64_t chunks, const std::function<void(std::int64_t)>& fn) {
    std::lock_guard<std::mutex> lock(calls_);
    auto job = std::make_shared<Job>(chunks, fn);
    current_.store(job);
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
    job->work();
    // The chunks helpers began: a chunk is microseconds, so spin a while before yielding the core (a yield is a
    // system call, and a helper the OS preempted is what the yield is for).
    for (int spins = 0; job->done.load(std::memory_order_acquire) < chunks; ++spins) {
      if (spins < 4096) {
#if defined(__x86_64__)
        __builtin_ia32_pause();
#endif
      } else {
        std::this_thread::yield();
      }
    }
  }

 private:
  void serve() {
    std::uint64_t seen = generation_.load();
    while (!stop_.load()) {
      // Spin a little (decode calls come every few tens of microseconds), then sleep until the next job.
      std::uint64_t now = seen;
      for (int i = 0; i < 20000 && (now = generation_.load(std::memory_order_acquire)) == seen; ++i) {
#if defined(__x86_64__)
        __builtin_ia32_pause();
#endif
      }
      if (now == seen) {
        generation_.wait(seen);
        now = generation_.load(std::memory_order_acquire);
      }
      seen = now;
      if (stop_.load()) return;
      if (auto job = current_.load()) job->work();
    }
  }

  std::mutex calls_;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<std::shared_ptr<Job>> current_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

int configured_threads() {
  if (const char* env = std::getenv("TENSORFOLD_THREADS")) {
    const int n = std::atoi(env);
    if (n >= 1) return n;
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

ChunkPool& pool() {
  static ChunkPool p(configured_threads() - 1);
  return p;
}

thread_local bool serial_here = false;

}  // namespace

SerialChunks::SerialChunks() : was_(serial_here) { serial_here = true; }
SerialChunks::~SerialChunks() { serial_here = was_; }

int chunk_pool_threads() { return pool().helpers(); }

void parallel_chunks(std::int64_t chunks, const std::function<void(std::int64_t)>& fn) {
  if (chunks <= 0) return;
  if (chunks == 1 || serial_here || pool().helpers() == 0) {
    for (std::int64_t i = 0; i < chunks; ++i) fn(i);
    return;
  }
  pool().run(chunks, fn);
}

}  // namespace tf
