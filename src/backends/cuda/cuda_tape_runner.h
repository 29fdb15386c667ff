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
  // Waits for everything queued on the stream (counted in the stats' wait time); ends a step.
  void wait();
  // Ends a step without waiting (a greedy step queued ahead): the stats' launches count from here.
  void end_step();
  // Graphs on (the default) replays a captured graph for every decode tape seen before.
  void set_graphs(bool on) { graphs_ = on; }
  // How the prefill GEMM takes x (tf::PromptPrecision; decode tapes never read it).
  void set_prefill_x(cuda::PrefillX x) { prefill_x_ = x; }
  cuda::PrefillX prefill_x() const { return prefill_x_; }
  const CudaBackendStats& stats() const { return stats_; }
  // Grows the integer matmul's scratch to `need` bytes when it is smaller (DecodeLinearArgs::imma_scratch).
  void reserve_imma_scratch(std::size_t need);

 private:
  static constexpr int kMaxGraphs = 256;  // a decode step of N pieces keeps N graphs
  // Queued runs (a step's pieces, a greedy step queued ahead) each copy their dyn block from a pinned host
  // slot of their own, in turn: the host must not rewrite a slot whose copy may not have run yet (each slot's
  // event says when it has). They all copy to the one device block: a copy waits in stream order for the
  // kernels before it, so no run's kernels see the next run's values, and every graph holds one address.
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
  // Copies the dyn block to the device through the next host slot, then the ids of embeddings fed on the
  // device (Op::ids_dev) over their placeholders.
  void upload_dyn(const std::vector<Op>& ops, const std::vector<DynRefs>& dref);
  void finish(std::vector<Op>& ops);
  bool wait_ = true;  // run()'s argument, for finish()
  int host_slot_ = 0;  // the dyn host slot the next run copies from
  std::int64_t step_launches_ = 0;  // kernels of the runs since the last wait
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
  void run_or_capture(std::vector<Op>& ops, const std::vector<DynRefs>& dref, const std::vector<Launch>& launches,
                      const ArenaPlan& memory, bool use_graph);

  cudaStream_t stream_ = nullptr;
  std::shared_ptr<Pool> pool_;
  bool graphs_ = true;
  cuda::PrefillX prefill_x_ = cuda::PrefillX::Bf16;
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
  void* dyn_host_ = nullptr;                      // kDynSlots slots of dyn_bytes_
  std::vector<cudaEvent_t> dyn_copied_;           // a slot's last copy has run
  std::size_t dyn_bytes_ = 0;
  // The integer matmul's x terms, prepared once per launch (DecodeLinearArgs::imma_scratch): two buffers of
  // imma_scratch_bytes_ each, the second LaunchBuffers::imma_scratch_alt.
  void* imma_scratch_ = nullptr;
  std::size_t imma_scratch_bytes_ = 0;
  // The prefill GEMMs' x terms (cuda::prefill_linear_mma, or prefill_linear_imma in A/B runs): grown to the widest prefill linear of a
  // tape (prefill tapes launch kernel by kernel, never in a graph).
  void* prefill_scratch_ = nullptr;
  std::size_t prefill_scratch_bytes_ = 0;
  void* attn_work_ = nullptr;
  std::size_t attn_work_bytes_ = 0;
  std::unordered_map<std::uint64_t, std::vector<Plan>> plans_;
  int plan_count_ = 0;
  std::vector<std::uint64_t> sig_;
  std::chrono::steady_clock::time_point flush_start_;
};

}  // namespace tf::cuda_internal
