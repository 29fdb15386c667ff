#pragma once
// TapeRunner runs the CUDA backend's tapes (fusion, memory, dyn values, launches, CUDA graphs; the overview is
// at the top of cuda_tape_runner.cpp) and owns the device buffers and the graphs that takes.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cuda/cuda_arena_plan.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_launches.h"
#include "backends/cuda/cuda_tape.h"

namespace tf::cuda_internal {

class TapeRunner {
 public:
  // Runs tapes on `stream`; outputs the caller still holds after a tape get memory from `pool`.
  TapeRunner(cudaStream_t stream, std::shared_ptr<Pool> pool);
  ~TapeRunner();
  TapeRunner(const TapeRunner&) = delete;
  TapeRunner& operator=(const TapeRunner&) = delete;

  // Runs the tape's ops and empties it (an empty tape: nothing to do); returns once the GPU is done, or with
  // wait = false once the launches are queued (the caller then queues its own work, or more tapes: the
  // pieces of one decode step, and calls wait()).
  void run(std::vector<Op>& tape, bool wait = true);
  // Waits for everything queued on the stream (counted in the stats' wait time).
  void wait();
  // Runs queued since the last wait() (a decode step's pieces so far).
  int queued() const { return queued_; }
  // Graphs on (the default) replays a captured graph for every decode tape seen before.
  void set_graphs(bool on) { graphs_ = on; }
  const CudaBackendStats& stats() const { return stats_; }
  // Grows the integer matmul's scratch to `need` bytes when it is smaller (DecodeLinearArgs::imma_scratch).
  void reserve_imma_scratch(std::size_t need);

 private:
  static constexpr int kMaxGraphs = 256;  // a decode step of N pieces keeps N graphs
  // Runs queued without a wait between them (a step's pieces) each copy their dyn block from a slot of their
  // own: the host must not rewrite a pinned slot whose copy may not have run yet. The slot is the run's
  // place since the last wait, so a piece's graph (which holds its slot's address) replays step after step.
  static constexpr int kDynSlots = 32;
  struct Plan {
    std::vector<std::uint64_t> sig;
    std::vector<std::size_t> offset;
    std::vector<bool> needed;
    cudaGraphExec_t exec = nullptr;
    std::int64_t launches = 0;
  };

  // The tape's structure in words: everything the launches depend on except the dyn values (ids,
  // positions), plus which outputs escape. Equal signatures give equal plans and equal launches.
  static void signature(const std::vector<Op>& ops, std::vector<std::uint64_t>& sig, std::vector<char>& escapes);
  void push_buffers(std::vector<std::uint64_t>& sig) const;
  static std::uint64_t hash_words(const std::vector<std::uint64_t>& v);
  // Lays out and fills the dyn block (ids, positions, cache rows, uploads) in tape order.
  std::vector<DynRefs> build_dyn(const std::vector<Op>& ops);
  void finish(std::vector<Op>& ops);
  bool wait_ = true;  // run()'s argument, for finish()
  int queued_ = 0;    // runs queued since the last wait(); the next run's dyn slot
  int slot_ = 0;      // this run's dyn slot
  std::int64_t step_launches_ = 0;  // kernels of the runs since the last wait
  void* dyn_dev() const { return static_cast<char*>(dyn_dev_) + static_cast<std::size_t>(slot_) * dyn_bytes_; }
  void* dyn_host() const { return static_cast<char*>(dyn_host_) + static_cast<std::size_t>(slot_) * dyn_bytes_; }
  void clear_graphs();

  // The steps of run(), in order.
  // A decode tape seen before: its outputs get the plan's memory and its graph replays (false: not seen).
  bool replay(std::vector<Op>& ops, const std::vector<char>& esc);
  // Grows the arena to the plan's need and points every output at its memory (escaping ones have pool memory).
  void place_outputs(std::vector<Op>& ops, const ArenaPlan& memory);
  // Grows the dyn buffers to the dyn block and decode attention's buffers to the tape's attends.
  void reserve_launch_buffers(const std::vector<Op>& ops);
  // Copies the dyn block, then captures the launches into a graph and launches it (a new decode tape with
  // graphs on) or launches them one by one; waits.
  void run_or_capture(std::vector<Op>& ops, const std::vector<Launch>& launches, const ArenaPlan& memory,
                      bool use_graph);

  cudaStream_t stream_ = nullptr;
  std::shared_ptr<Pool> pool_;
  bool graphs_ = true;
  // RMSNorm fused into the next decode matmul (one launch less per norm); TF_CUDA_FUSE_NORM=0 turns it off
  // for A/B measurements (docs/benchmarks.md).
  bool fuse_norm_ = [] {
    const char* v = std::getenv("TF_CUDA_FUSE_NORM");
    return v == nullptr || std::string(v) != "0";
  }();
  // The widest norm (rows x cols) fused into a matmul; TF_CUDA_FUSE_NORM_MAX overrides it for A/B runs.
  std::int64_t fuse_norm_max_ = env_i64("TF_CUDA_FUSE_NORM_MAX", 2048);
  CudaBackendStats stats_;
  void* arena_ = nullptr;
  std::size_t arena_bytes_ = 0;
  std::vector<char> dyn_;
  void* dyn_dev_ = nullptr;
  void* dyn_host_ = nullptr;
  std::size_t dyn_bytes_ = 0;
  // The integer matmul's x terms, prepared once per launch (DecodeLinearArgs::imma_scratch): two buffers of
  // imma_scratch_bytes_ each, the second LaunchBuffers::imma_scratch_alt.
  void* imma_scratch_ = nullptr;
  std::size_t imma_scratch_bytes_ = 0;
  void* attn_work_ = nullptr;
  std::size_t attn_work_bytes_ = 0;
  std::unordered_map<std::uint64_t, std::vector<Plan>> plans_;
  int plan_count_ = 0;
  std::vector<std::uint64_t> sig_;
  std::chrono::steady_clock::time_point flush_start_;
};

}  // namespace tf::cuda_internal
