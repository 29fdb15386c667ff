#pragma once
// The threads the CPU kernels spread their work over. parallel_chunks(n, fn) runs fn(0) .. fn(n - 1) on the
// calling thread and the pool's helpers and returns when all are done. The caller claims chunks itself and
// waits only for chunks a helper has begun: a helper the OS has not scheduled costs nothing, where a
// fork-join region (OpenMP's) waits for every thread to check in — measured to dominate decode on a loaded
// machine (docs/benchmarks.md). Chunks are the kernels' fixed partition of their output, so which thread
// runs one never changes a bit of its result.
#include <cstdint>
#include <functional>

namespace tf {

// Helper threads: TENSORFOLD_THREADS - 1 if set, else the CPUs this process may run on - 1.
int chunk_pool_threads();

void parallel_chunks(std::int64_t chunks, const std::function<void(std::int64_t)>& fn);

// While one lives, parallel_chunks on its thread runs every chunk on that thread, in order (tests compare
// that with the pool's results: they must be the same bits).
class SerialChunks {
 public:
  SerialChunks();
  ~SerialChunks();
  SerialChunks(const SerialChunks&) = delete;
  SerialChunks& operator=(const SerialChunks&) = delete;

 private:
  bool was_;
};

}  // namespace tf
