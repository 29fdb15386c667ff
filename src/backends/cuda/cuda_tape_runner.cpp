// Running the CUDA backend's tapes. Ops are recorded on a tape, not launched: a tape runs when its result is
// needed (to_host) or before the KV cache must grow. Running a tape:
//  1. fusion (cuda_fusion.cpp; each rule is on its op's descriptor in ops/): an add feeding an rms_norm
//     becomes one launch (the residual add fused into the norm); rope(q) and rope(k) read by an attend go
//     into it (in decode calls into the attention kernel itself); in decode tapes (every op <= 16 rows),
//     linears that read the same input run as one launch, and a swiglu of two such linears becomes their
//     epilogue;
//  2. memory (cuda_arena_plan.cpp): tensors nobody holds after the tape live in an arena at offsets planned
//     from the tape alone (first fit over their live ranges); tensors still held by the caller get pool
//     memory;
//  3. values that change from step to step (token ids, positions, cache rows) go to a small "dyn" block that
//     is copied to a fixed device buffer before the launches; the kernels read them from there
//     (cuda_launches.cpp). Tapes queued without a wait between them (the pieces of a decode step, a greedy
//     step queued ahead) each copy from a pinned host slot of their own (upload_dyn); ids an embedding reads
//     on the device (Op::ids_dev) are copied over their placeholders there;
//  4. a decode tape is keyed by its signature (every op's kind, shape, weights, settings and inputs, the
//     pointers of what the caller holds, but not the dyn values) and the runner's buffers (arena, dyn block,
//     attention work, integer-matmul scratch): a key seen before replays its CUDA graph after the dyn copy; a
//     new key is captured into one. Prefill tapes launch kernel by kernel.
// Every kernel a decode tape uses computes a row the same whatever the rows beside it (docs/cuda.md).
#include "backends/cuda/cuda_tape_runner.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "backends/cuda/cuda_fusion.h"
#include "backends/cuda/ops/op_descriptor.h"

namespace tf::cuda_internal {

TapeRunner::TapeRunner(cudaStream_t stream, std::shared_ptr<Pool> pool) : stream_(stream), pool_(std::move(pool)) {}

TapeRunner::~TapeRunner() {
  clear_graphs();
  cudaFree(arena_);
  cudaFree(dyn_dev_);
  cudaFreeHost(dyn_host_);
  for (cudaEvent_t e : dyn_copied_) cudaEventDestroy(e);
  cudaFree(imma_scratch_);
  cudaFree(prefill_scratch_);
  cudaFree(attn_work_);
}

void TapeRunner::run(std::vector<Op>& tape, bool wait) {
  if (tape.empty()) return;
  flush_start_ = std::chrono::steady_clock::now();
  wait_ = wait;
  std::vector<Op> ops = std::move(tape);
  tape.clear();
  const int n_ops = static_cast<int>(ops.size());
  const bool decode = decode_tape(ops);
  ++stats_.flushes;

  // Outputs the caller still holds get pool memory now (their pointers are part of the signature).
  std::vector<char> esc;
  signature(ops, sig_, esc);
  for (int i = 0; i < n_ops; ++i) {
    if (!esc[static_cast<std::size_t>(i)]) continue;
    Act& out = *ops[static_cast<std::size_t>(i)].out;
    out.pool_bytes = out.bytes();
    out.ptr = static_cast<float*>(pool_->get(out.pool_bytes));
    out.pooled = true;
    sig_.push_back(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(out.ptr)));
  }
  const bool use_graph = decode && graphs_;
  if (use_graph && replay(ops, esc)) return;

  const Fusion fusion = fuse(ops, esc, decode, fuse_norm_, fuse_norm_max_);
  const ArenaPlan memory = plan_arena(ops, esc, fusion);
  place_outputs(ops, memory);

  // 3. dyn block layout and launches.
  const std::vector<DynRefs> dref = build_dyn(ops);
  reserve_launch_buffers(ops);
  const LaunchBuffers buffers{.dyn_dev = dyn_dev_,
                              .attn_work = attn_work_,
                              .imma_scratch = imma_scratch_,
                              .imma_scratch_alt = static_cast<char*>(imma_scratch_) + imma_scratch_bytes_,
                              .imma_scratch_bytes = imma_scratch_bytes_,
                              .prefill_scratch = prefill_scratch_,
                              .prefill_scratch_bytes = prefill_scratch_bytes_,
                              .prefill_x = prefill_x_};
  const std::vector<Launch> launches = build_launches(ops, fusion.steps, dref, buffers);
  // 4. run
  run_or_capture(ops, dref, launches, memory, use_graph);
}

bool TapeRunner::replay(std::vector<Op>& ops, const std::vector<char>& esc) {
  const int n_ops = static_cast<int>(ops.size());
  // Fast path: a tape seen before reuses its plan and replays its graph.
  std::vector<std::uint64_t> probe = sig_;
  push_buffers(probe);
  auto it = plans_.find(hash_words(probe));
  if (it != plans_.end())
    for (auto& plan : it->second)
      if (plan.sig == probe) {
        for (int i = 0; i < n_ops; ++i) {
          Act& out = *ops[static_cast<std::size_t>(i)].out;
          if (esc[static_cast<std::size_t>(i)]) continue;
          out.ptr = plan.needed[static_cast<std::size_t>(i)]
                        ? reinterpret_cast<float*>(static_cast<char*>(arena_) + plan.offset[static_cast<std::size_t>(i)])
                        : nullptr;
        }
        upload_dyn(ops, build_dyn(ops));
        TF_CK(cudaGraphLaunch(plan.exec, stream_));
        ++stats_.graph_replays;
        step_launches_ += plan.launches;
        finish(ops);
        return true;
      }
  return false;
}

void TapeRunner::place_outputs(std::vector<Op>& ops, const ArenaPlan& memory) {
  const int n_ops = static_cast<int>(ops.size());
  const std::vector<bool>& escapes = memory.escapes;
  const std::vector<bool>& needed = memory.needed;
  const std::vector<std::size_t>& offset = memory.offset;
  const std::size_t arena_need = memory.arena_need;
  if (arena_need > arena_bytes_) {
    TF_CK(cudaStreamSynchronize(stream_));
    clear_graphs();
    cudaFree(arena_);
    arena_bytes_ = align_up(arena_need, 1 << 20);
    TF_CK(cudaMalloc(&arena_, arena_bytes_));
  }
  for (int i = 0; i < n_ops; ++i) {
    Act& out = *ops[static_cast<std::size_t>(i)].out;
    if (escapes[static_cast<std::size_t>(i)]) continue;  // pool memory, given above
    if (!needed[static_cast<std::size_t>(i)]) {
      out.ptr = nullptr;
    } else {
      out.ptr = reinterpret_cast<float*>(static_cast<char*>(arena_) + offset[static_cast<std::size_t>(i)]);
    }
  }
}

void TapeRunner::reserve_launch_buffers(const std::vector<Op>& ops) {
  LaunchBufferNeeds need;
  for (const Op& op : ops)
    if (auto add_need = op_descriptor(op.kind).need_buffers) add_need(op, need);
  if (dyn_.size() > dyn_bytes_) {
    TF_CK(cudaStreamSynchronize(stream_));
    clear_graphs();
    cudaFree(dyn_dev_);
    cudaFreeHost(dyn_host_);
    dyn_bytes_ = align_up(dyn_.size(), 1 << 16);
    TF_CK(cudaMalloc(&dyn_dev_, dyn_bytes_));
    TF_CK(cudaMallocHost(&dyn_host_, dyn_bytes_ * kDynSlots));
    if (dyn_copied_.empty()) {
      dyn_copied_.resize(kDynSlots);
      for (cudaEvent_t& e : dyn_copied_) TF_CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    }
  }
  if (need.prefill_need > prefill_scratch_bytes_) {
    TF_CK(cudaStreamSynchronize(stream_));  // a GEMM queued before may still read the old one
    cudaFree(prefill_scratch_);
    prefill_scratch_ = nullptr;
    prefill_scratch_bytes_ = 0;
    TF_CK(cudaMalloc(&prefill_scratch_, need.prefill_need));
    prefill_scratch_bytes_ = need.prefill_need;
  }
  if (need.max_attn_rows > 0) {
    const std::size_t work = cuda::decode_attention_work_floats(static_cast<int>(need.max_attn_rows), need.max_heads,
                                                                need.max_dim, need.max_splits);
    if (work * 4 > attn_work_bytes_) {
      TF_CK(cudaStreamSynchronize(stream_));
      clear_graphs();
      cudaFree(attn_work_);
      attn_work_bytes_ = align_up(std::max(work * 4, attn_work_bytes_), 1 << 20);
      TF_CK(cudaMalloc(&attn_work_, attn_work_bytes_));
    }
  }
}

void TapeRunner::run_or_capture(std::vector<Op>& ops, const std::vector<DynRefs>& dref,
                                const std::vector<Launch>& launches, const ArenaPlan& memory, bool use_graph) {
  const std::vector<std::size_t>& offset = memory.offset;
  const std::vector<bool>& needed = memory.needed;
  step_launches_ += static_cast<std::int64_t>(launches.size());
  upload_dyn(ops, dref);
  if (use_graph) {
    if (plan_count_ >= kMaxGraphs) {
      TF_CK(cudaStreamSynchronize(stream_));
      clear_graphs();
    }
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    TF_CK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    try {
      for (auto& l : launches) l.run(stream_);
    } catch (...) {
      cudaStreamEndCapture(stream_, &graph);
      if (graph) cudaGraphDestroy(graph);
      throw;
    }
    TF_CK(cudaStreamEndCapture(stream_, &graph));
    TF_CK(cudaGraphInstantiate(&exec, graph, 0));
    cudaGraphDestroy(graph);
    Plan plan;
    plan.sig = sig_;
    push_buffers(plan.sig);  // the buffers as they are now (planning may have grown them)
    plan.offset = offset;
    plan.needed = needed;
    plan.exec = exec;
    plan.launches = static_cast<std::int64_t>(launches.size());
    plans_[hash_words(plan.sig)].push_back(std::move(plan));
    ++plan_count_;
    ++stats_.graph_captures;
    TF_CK(cudaGraphLaunch(exec, stream_));
  } else {
    ++stats_.eager_flushes;
    // A prefill tape's launches without programmatic dependent launch (cuda::PdlScope says why);
    // TF_CUDA_PREFILL_PDL=1 keeps it (A/B runs).
    static const bool prefill_pdl = env_i64("TF_CUDA_PREFILL_PDL", 0) != 0;
    const cuda::PdlScope pdl(prefill_pdl || decode_tape(ops));
    for (auto& l : launches) l.run(stream_);
  }
  finish(ops);
}

void TapeRunner::signature(const std::vector<Op>& ops, std::vector<std::uint64_t>& sig, std::vector<char>& escapes) {
  const std::size_t n = ops.size();
  sig.clear();
  sig.reserve(n * 34 + 8);
  escapes = tape_escapes(ops);
  auto P = [](const void* p) { return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p)); };
  auto F = [](float f) {
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    return static_cast<std::uint64_t>(b);
  };
  for (std::size_t i = 0; i < n; ++i) {
    const Op& op = ops[i];
    const auto computed = op_descriptor(op.kind).signature_word;
    sig.insert(sig.end(), {static_cast<std::uint64_t>(op.kind), static_cast<std::uint64_t>(op.out->rows),
                           static_cast<std::uint64_t>(op.out->cols), static_cast<std::uint64_t>(escapes[i])});
    for (const ActP* in : {&op.a, &op.b, &op.c}) {
      const Act* a = in->get();
      sig.push_back(a == nullptr ? 0 : (a->pending ? (1ull << 63) | static_cast<std::uint64_t>(a->tape_index) : P(a->ptr)));
    }
    sig.insert(sig.end(), {P(op.w.data), P(op.w.scales), P(op.w.biases), static_cast<std::uint64_t>(op.w.rows),
                           static_cast<std::uint64_t>(op.w.cols), static_cast<std::uint64_t>(op.w.bits),
                           static_cast<std::uint64_t>(op.w.group), static_cast<std::uint64_t>(op.w.dtype), P(op.norm),
                           F(op.eps), static_cast<std::uint64_t>(op.heads), static_cast<std::uint64_t>(op.head_dim),
                           P(op.inv_freq), op.interleaved ? 1u : 0u, static_cast<std::uint64_t>(op.first),
                           static_cast<std::uint64_t>(op.layer), computed ? computed(op) : 0,
                           static_cast<std::uint64_t>(op.attn.heads),
                           static_cast<std::uint64_t>(op.attn.kv_heads), static_cast<std::uint64_t>(op.attn.head_dim),
                           F(op.attn.scale), static_cast<std::uint64_t>(op.rotary),
                           static_cast<std::uint64_t>(op.col_offset), static_cast<std::uint64_t>(op.col_width),
                           static_cast<std::uint64_t>(op.gdn.k_heads), static_cast<std::uint64_t>(op.gdn.v_heads),
                           static_cast<std::uint64_t>(op.gdn.k_dim), static_cast<std::uint64_t>(op.gdn.v_dim),
                           static_cast<std::uint64_t>(op.gdn.conv_kernel), op.gdn.tiled_value_heads ? 1u : 0u,
                           P(op.a_log), P(op.dt_bias)});
  }
}

void TapeRunner::push_buffers(std::vector<std::uint64_t>& sig) const {
  for (const void* p : {arena_, dyn_dev_, attn_work_, imma_scratch_})
    sig.push_back(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p)));
}

std::uint64_t TapeRunner::hash_words(const std::vector<std::uint64_t>& v) {
  std::uint64_t h = 1469598103934665603ull;
  for (auto w : v) h = (h ^ w) * 1099511628211ull;
  return h;
}

std::vector<DynRefs> TapeRunner::build_dyn(const std::vector<Op>& ops) {
  dyn_.clear();
  DynWriter dyn(dyn_);
  std::vector<DynRefs> dref(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (auto put = op_descriptor(ops[i].kind).put_dyn) put(ops[i], dyn, dref[i]);
  return dref;
}

void TapeRunner::upload_dyn(const std::vector<Op>& ops, const std::vector<DynRefs>& dref) {
  if (dyn_.empty()) return;
  const int slot = host_slot_;
  host_slot_ = (host_slot_ + 1) % kDynSlots;
  void* host = static_cast<char*>(dyn_host_) + static_cast<std::size_t>(slot) * dyn_bytes_;
  TF_CK(cudaEventSynchronize(dyn_copied_[static_cast<std::size_t>(slot)]));  // run long ago, as a rule
  std::memcpy(host, dyn_.data(), dyn_.size());
  TF_CK(cudaMemcpyAsync(dyn_dev_, host, dyn_.size(), cudaMemcpyHostToDevice, stream_));
  TF_CK(cudaEventRecord(dyn_copied_[static_cast<std::size_t>(slot)], stream_));
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (auto copy = op_descriptor(ops[i].kind).copy_device_dyn) copy(ops[i], dref[i], dyn_dev_, stream_);
}

void TapeRunner::finish(std::vector<Op>& ops) {
  stats_.plan_us += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - flush_start_).count();
  // The outputs are ready in stream order; whoever reads them on the host waits first (wait()).
  if (wait_) wait();
  for (auto& op : ops) {
    op.out->pending = false;
    op.out->tape_index = -1;
  }
}

void TapeRunner::wait() {
  const auto t0 = std::chrono::steady_clock::now();
  TF_CK(cudaStreamSynchronize(stream_));
  end_step();
  stats_.wait_us += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

void TapeRunner::end_step() {
  if (step_launches_ > 0) stats_.launches = step_launches_;
  step_launches_ = 0;
}

void TapeRunner::clear_graphs() {
  for (auto& [h, entries] : plans_)
    for (auto& e : entries) cudaGraphExecDestroy(e.exec);
  plans_.clear();
  plan_count_ = 0;
}

void TapeRunner::reserve_imma_scratch(std::size_t need) {
  if (need > imma_scratch_bytes_) {
    cudaFree(imma_scratch_);
    imma_scratch_ = nullptr;
    imma_scratch_bytes_ = 0;
    TF_CK(cudaMalloc(&imma_scratch_, 2 * need));  // two of `need` (LaunchBuffers::imma_scratch_alt)
    imma_scratch_bytes_ = need;
  }
}

}  // namespace tf::cuda_internal
