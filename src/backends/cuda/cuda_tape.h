#pragma once
// The tape's data: float32 activations (Act), the pool that holds those outliving their tape, and the
// recorded ops (Op). CudaBackend records ops (cuda_backend.cpp); TapeRunner runs them (cuda_tape_runner.h).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "backends/backend.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_kv_cache.h"
#include "backends/cuda/cuda_support.h"
#include "backends/cuda/kernels/kernels.h"

namespace tf::cuda_internal {

using cuda::WeightView;

// Memory for activations that outlive their tape: exact-size free lists, last in first out.
class Pool {
 public:
  ~Pool() {
    for (auto& [size, v] : free_)
      for (void* p : v) cudaFree(p);
  }
  void* get(std::size_t bytes) {
    auto& v = free_[bytes];
    if (!v.empty()) {
      void* p = v.back();
      v.pop_back();
      return p;
    }
    void* p = nullptr;
    TF_CK(cudaMalloc(&p, bytes));
    return p;
  }
  void put(void* p, std::size_t bytes) { free_[bytes].push_back(p); }

 private:
  std::unordered_map<std::size_t, std::vector<void*>> free_;
};

// A float32 activation [rows, cols].
struct Act final : Tensor::Impl, std::enable_shared_from_this<Act> {
  Act(std::shared_ptr<Pool> p, std::int64_t r, std::int64_t c) : pool(std::move(p)), rows(r), cols(c) {}
  ~Act() override {
    if (pooled) pool->put(ptr, pool_bytes);
  }
  std::size_t bytes() const { return align_up(static_cast<std::size_t>(rows * cols) * 4); }
  std::shared_ptr<Pool> pool;
  std::int64_t rows, cols;
  float* ptr = nullptr;
  bool pooled = false;
  std::size_t pool_bytes = 0;
  bool pending = false;  // produced by an op of the current tape
  int tape_index = -1;   // its op's index in the tape while pending
};
using ActP = std::shared_ptr<Act>;

// ---- the tape ----
// What each kind does, in every file that runs a tape, is its descriptor's (ops/op_descriptor.h).
// Count is no kind: the number of kinds (the descriptor table's size).
enum class Kind {
  Embed, RmsNorm, Linear, Add, Swiglu, Rope, Attend, LastRows, Upload,
  // the ops of Qwen3.5's gated attention and Gated DeltaNet layers, and of draft heads
  RmsNormHeads, HeadColumns, SigmoidGate, ConcatColumns, GdnConv, GdnRecurrence,
  // tensor parallelism: a sum over the ranks (CudaBackend::all_reduce_sum)
  AllReduce,
  // image inputs: an image's embeddings over its placeholder rows (Backend::replace_rows)
  ReplaceRows,
  Count
};

struct Op {
  explicit Op(Kind k) : kind(k) {}
  Kind kind;
  ActP out;
  ActP a, b, c;
  WeightView w;
  const float* norm = nullptr;
  std::vector<std::int32_t> ids;
  // Embed fed on the device: the ids are read from here (Backend::embed of DeviceIds) over `ids`, which then
  // hold placeholders; `fed` keeps them alive.
  const std::int32_t* ids_dev = nullptr;
  std::shared_ptr<const void> fed;
  std::vector<float> host;  // Upload; ReplaceRows: the new rows' values (its `ids`: their row indices)
  std::shared_ptr<const StreamReduce> reduce;  // AllReduce
  float eps = 0.0f;
  int heads = 0, head_dim = 0;
  const float* inv_freq = nullptr;
  bool interleaved = false;
  int rotary = 0;  // Rope: the dims of a head that turn (partial RoPE); 0: all of them
  // Rope with M-RoPE positions (a stream with images): (t, h, w) of every row in row order (a dyn value), and
  // which pairs turn with h and w; empty: every row at its run's start + i.
  std::vector<std::int64_t> mrope;
  cuda::MropeSections mrope_sections;
  int col_offset = 0, col_width = 0;  // HeadColumns: head_dim holds the block of columns a head has
  // GdnConv and GdnRecurrence: the layer's shape and parameters, and each row slot's state buffers (dyn
  // values: which of a stream's two buffers a call reads is decided when it is recorded); `holds` keeps the
  // streams' state memory alive until the tape has run.
  cuda::GdnShape gdn;
  const float* a_log = nullptr;
  const float* dt_bias = nullptr;
  std::vector<cuda::GdnRow> gdn_rows;
  std::vector<std::shared_ptr<const void>> holds;
  std::int64_t first = 0;
  // Rope and Attend: each stream's rows in turn (Rope leaves kv empty).
  struct Run {
    std::shared_ptr<KvStorage> kv;
    std::int64_t start = 0, rows = 0;
    bool operator==(const Run& o) const { return start == o.start && rows == o.rows; }
  };
  std::vector<Run> runs;
  int layer = 0;
  AttentionSpec attn;
  // The position of every row, in row order.
  std::vector<std::int64_t> positions() const {
    std::vector<std::int64_t> p;
    for (const Run& r : runs)
      for (std::int64_t i = 0; i < r.rows; ++i) p.push_back(r.start + i);
    return p;
  }
};

// A decode tape: every op at most kMaxDecodeRows rows (row-invariant kernels, CUDA graphs, pieces).
inline bool decode_tape(const std::vector<Op>& ops) {
  for (const auto& op : ops)
    if (op.out->rows > cuda::kMaxDecodeRows) return false;
  return true;
}

// Which outputs of a tape escape it: the caller still holds them (more references than the op's own and its
// readers' in the tape), so they need memory that outlives the tape. One definition for the runner (pool
// memory, the signature) and for the backend (where a decode step may be cut into pieces).
inline std::vector<char> tape_escapes(const std::vector<Op>& ops) {
  std::vector<int> reads(ops.size(), 0);
  for (const auto& op : ops)
    for (const ActP* in : {&op.a, &op.b, &op.c})
      if (*in && (*in)->pending && (*in)->tape_index >= 0) ++reads[static_cast<std::size_t>((*in)->tape_index)];
  std::vector<char> escapes(ops.size(), 0);
  for (std::size_t i = 0; i < ops.size(); ++i) escapes[i] = ops[i].out.use_count() > 1 + reads[i] ? 1 : 0;
  return escapes;
}

}  // namespace tf::cuda_internal
