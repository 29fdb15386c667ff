// The CUDA backend: tf::Backend's ops are recorded on a tape (cuda_tape.h), not launched; a TapeRunner runs
// the tape when a result is needed (to_host) or before a KV cache must grow (cuda_tape_runner.cpp describes
// fusion, memory, dyn values and graphs). Weights: cuda_weights.cpp; the KV cache: cuda_kv_cache.cpp.
#include "backends/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cuda/cuda_device_ids.h"
#include "backends/cuda/cuda_kv_cache.h"
#include "backends/cuda/cuda_recurrent_state.h"
#include "backends/cuda/cuda_support.h"
#include "backends/cuda/cuda_tape.h"
#include "backends/cuda/cuda_tape_runner.h"
#include "backends/cuda/cuda_weights.h"
#include "backends/cuda/ops/op_descriptor.h"

namespace tf {
namespace cuda_internal {
namespace {

class CudaBackendImpl final : public CudaBackend {
 public:
  explicit CudaBackendImpl(int device) : pool_(std::make_shared<Pool>()), device_(device) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) throw std::runtime_error("no CUDA device is visible");
    if (device < 0 || device >= n)
      throw std::runtime_error("CUDA device " + std::to_string(device) + " is not visible (" + std::to_string(n) +
                               " are)");
    TF_CK(cudaSetDevice(device_));
    TF_CK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    cuda::prepare_decode_attention();  // kernel attributes are set outside any graph capture
    runner_ = std::make_unique<TapeRunner>(stream_, pool_);
  }
  ~CudaBackendImpl() override {
    try {
      use_device();
      flush();
    } catch (...) {
    }
    cudaStreamSynchronize(stream_);
    runner_.reset();  // its graphs and buffers, before the stream goes
    cudaFreeHost(stage_);
    cudaFree(greedy_scratch_);
    for (auto& [k, p] : rope_tables_) cudaFree(p);
    host_mm_x_.reset();
    host_mm_w_.reset();
    host_mm_y_.reset();
    if (host_matmul_stream_ != nullptr) cudaStreamDestroy(host_matmul_stream_);
    cudaStreamDestroy(stream_);
  }

  std::string name() const override { return "cuda"; }
  void set_graphs(bool on) override { runner_->set_graphs(on); }
  CudaBackendStats stats() const override { return runner_->stats(); }
  std::size_t weight_bytes() const override { return weight_bytes_; }
  cudaStream_t stream() const override { return stream_; }
  int device() const override { return device_; }

  // ---- weights ----
  DeviceWeight upload(const HostWeight& w) override {
    use_device();
    return counted(upload_weight(w));
  }
  DeviceWeight random_weight(std::int64_t rows, std::int64_t cols, int bits, int group, HostDType dtype,
                             std::uint64_t seed) override {
    use_device();
    return counted(random_device_weight(rows, cols, bits, group, dtype, seed, stream_));
  }

  DeviceWeight counted(DeviceWeight d) {
    for (const Tensor* t : {&d.data, &d.scales, &d.biases})
      if (*t) weight_bytes_ += blob(*t)->bytes;
    // The integer matmul's x scratch grows with the widest K seen, here at load rather than inside a tape
    // (graphs hold the pointer: it is part of their key, so a graph made before a regrowth never replays).
    runner_->reserve_imma_scratch(cuda::decode_linear_scratch_bytes(weight_view(d)));
    return d;
  }

  WeightView weight_view(const DeviceWeight& d) const override { return device_weight_view(d); }

  std::unique_ptr<KvCache> new_kv_cache(int layers, int kv_heads, int head_dim) override {
    use_device();
    return std::make_unique<CudaKvCache>(layers, kv_heads, head_dim, [this] {
      use_device();
      flush();
      return stream_;
    });
  }

  bool has_linear_attention() const override { return true; }
  std::unique_ptr<RecurrentState> new_recurrent_state(int layers, const GatedDeltaSpec& spec) override {
    use_device();
    const cuda::GdnShape shape{spec.k_heads, spec.v_heads,     spec.k_dim,
                               spec.v_dim,   spec.conv_kernel, spec.tiled_value_heads};
    if (!cuda::gdn_supported(shape))
      throw std::invalid_argument(
          "new_recurrent_state: the CUDA kernels take key heads of 16, 32, 64 or 128 dims, "
          "v_heads a multiple of k_heads and a conv of at most 8 positions");
    return std::make_unique<CudaRecurrentState>(layers, shape, [this] {
      use_device();
      flush();
      return stream_;
    });
  }

  // ---- ops (recorded) ----
  Tensor from_host(std::span<const float> data, std::int64_t rows, std::int64_t cols) override {
    use_device();
    if (static_cast<std::int64_t>(data.size()) != rows * cols) throw std::invalid_argument("from_host: size");
    Op op(Kind::Upload);
    op.host.assign(data.begin(), data.end());
    return record(std::move(op), rows, cols);
  }

  Tensor embed(const DeviceWeight& table, std::span<const std::int32_t> ids) override {
    use_device();
    for (auto id : ids)
      if (id < 0 || id >= table.rows)
        throw std::out_of_range("embed: token id " + std::to_string(id) + " out of range");
    Op op(Kind::Embed);
    op.w = weight_view(table);
    op.ids.assign(ids.begin(), ids.end());
    return record(std::move(op));
  }

  Tensor embed(const DeviceWeight& table, const std::shared_ptr<DeviceIds>& ids) override {
    use_device();
    auto* d = dynamic_cast<CudaDeviceIds*>(ids.get());
    if (d == nullptr) throw std::invalid_argument("embed: ids from another backend");
    Op op(Kind::Embed);
    op.w = weight_view(table);
    op.ids.assign(static_cast<std::size_t>(d->rows()), 0);  // placeholders; the dyn block gets d's ids on the device
    op.ids_dev = d->device();
    op.fed = ids;
    return record(std::move(op));
  }

  Tensor rms_norm(const Tensor& x, const DeviceWeight& weight, float eps) override {
    use_device();
    maybe_launch_piece(x);
    auto a = act(x);
    if (weight.cols != a->cols || weight.quantized()) throw std::invalid_argument("rms_norm: weight shape");
    Op op(Kind::RmsNorm);
    op.a = a;
    op.norm = static_cast<const float*>(blob(weight.data)->ptr);
    op.eps = eps;
    return record(std::move(op));
  }

  Tensor linear(const Tensor& x, const DeviceWeight& w) override {
    use_device();
    auto a = act(x);
    if (w.cols != a->cols)
      throw std::invalid_argument("linear: x has " + std::to_string(a->cols) + " cols, weight " +
                                  std::to_string(w.cols));
    Op op(Kind::Linear);
    op.a = a;
    op.w = weight_view(w);
    return record(std::move(op));
  }

  Tensor add(const Tensor& x, const Tensor& y) override {
    use_device();
    auto a = act(x), b = act(y);
    if (a->rows != b->rows || a->cols != b->cols) throw std::invalid_argument("add: shapes differ");
    Op op(Kind::Add);
    op.a = a;
    op.b = b;
    return record(std::move(op));
  }

  Tensor swiglu(const Tensor& gate, const Tensor& up) override {
    use_device();
    auto a = act(gate), b = act(up);
    if (a->rows != b->rows || a->cols != b->cols) throw std::invalid_argument("swiglu: shapes differ");
    Op op(Kind::Swiglu);
    op.a = a;
    op.b = b;
    return record(std::move(op));
  }

  Tensor rms_norm_heads(const Tensor& x, const DeviceWeight& weight, int heads, float eps) override {
    use_device();
    auto a = act(x);
    if (weight.quantized() || weight.rows != 1 || heads < 1 || a->cols != heads * weight.cols)
      throw std::invalid_argument("rms_norm_heads: shape");
    Op op(Kind::RmsNormHeads);
    op.a = a;
    op.norm = static_cast<const float*>(blob(weight.data)->ptr);
    op.eps = eps;
    op.heads = heads;
    op.head_dim = static_cast<int>(weight.cols);
    return record(std::move(op));
  }

  Tensor head_columns(const Tensor& x, int heads, int block, int offset, int width) override {
    use_device();
    auto a = act(x);
    if (heads < 1 || a->cols != static_cast<std::int64_t>(heads) * block || offset < 0 || width < 1 ||
        offset + width > block)
      throw std::invalid_argument("head_columns: shape");
    Op op(Kind::HeadColumns);
    op.a = a;
    op.heads = heads;
    op.head_dim = block;
    op.col_offset = offset;
    op.col_width = width;
    return record(std::move(op));
  }

  Tensor sigmoid_gate(const Tensor& x, const Tensor& gate) override {
    use_device();
    auto a = act(x), b = act(gate);
    if (a->rows != b->rows || a->cols != b->cols) throw std::invalid_argument("sigmoid_gate: shapes differ");
    Op op(Kind::SigmoidGate);
    op.a = a;
    op.b = b;
    return record(std::move(op));
  }

  Tensor concat_columns(const Tensor& x, const Tensor& y) override {
    use_device();
    auto a = act(x), b = act(y);
    if (a->rows != b->rows) throw std::invalid_argument("concat_columns: row counts differ");
    Op op(Kind::ConcatColumns);
    op.a = a;
    op.b = b;
    return record(std::move(op));
  }

  // Two ops: the conv (GdnConv, [n, channels]) and the recurrence over it (GdnRecurrence). Every run is
  // checked before any stream's state is touched.
  Tensor gated_delta(std::span<const StreamRows> runs, int layer, const Tensor& qkv, const Tensor& a, const Tensor& b,
                     const DeviceWeight& conv_weight, const DeviceWeight& a_log, const DeviceWeight& dt_bias,
                     const GatedDeltaSpec& spec) override {
    use_device();
    auto x = act(qkv), av = act(a), bv = act(b);
    const std::int64_t n = x->rows;
    const cuda::GdnShape shape{spec.k_heads, spec.v_heads,     spec.k_dim,
                               spec.v_dim,   spec.conv_kernel, spec.tiled_value_heads};
    if (x->cols != shape.channels() || av->rows != n || bv->rows != n || av->cols != spec.v_heads ||
        bv->cols != spec.v_heads || conv_weight.quantized() || conv_weight.rows != shape.channels() ||
        conv_weight.cols != spec.conv_kernel || a_log.cols != spec.v_heads || dt_bias.cols != spec.v_heads ||
        a_log.quantized() || dt_bias.quantized())
      throw std::invalid_argument("gated_delta: shapes");
    const WeightView conv = weight_view(conv_weight), al = weight_view(a_log), dt = weight_view(dt_bias);
    if (al.dtype != cuda::ElemType::F32 || dt.dtype != cuda::ElemType::F32)
      throw std::invalid_argument("gated_delta: a_log and dt_bias must be float32 vectors");
    std::vector<CudaRecurrentState*> states;
    std::int64_t rows = 0;
    for (const auto& run : runs) {
      auto* st = dynamic_cast<CudaRecurrentState*>(run.recurrent);
      if (st == nullptr) throw std::invalid_argument("gated_delta: a run without a CUDA recurrent state");
      if (!(st->shape() == shape)) throw std::invalid_argument("gated_delta: the state has another shape");
      for (const auto* other : states)
        if (other == st) throw std::invalid_argument("gated_delta: one state twice in a call");
      st->check_call(layer, run.start, run.rows);
      states.push_back(st);
      rows += run.rows;
    }
    if (rows != n) throw std::invalid_argument("gated_delta: the runs do not cover the rows");
    Op conv_op(Kind::GdnConv);
    conv_op.a = x;
    conv_op.w = conv;
    conv_op.gdn = shape;
    for (std::size_t r = 0; r < runs.size(); ++r) {
      conv_op.gdn_rows.push_back(states[r]->record(layer, runs[r].start, runs[r].rows, conv,
                                                   static_cast<const float*>(al.data),
                                                   static_cast<const float*>(dt.data)));
      conv_op.gdn_rows.resize(conv_op.gdn_rows.size() + static_cast<std::size_t>(runs[r].rows - 1));
      conv_op.holds.push_back(states[r]->storage());
    }
    Op rec(Kind::GdnRecurrence);
    rec.gdn = shape;
    rec.gdn_rows = conv_op.gdn_rows;
    rec.holds = conv_op.holds;
    rec.a_log = static_cast<const float*>(al.data);
    rec.dt_bias = static_cast<const float*>(dt.data);
    rec.a = act(record(std::move(conv_op)));
    rec.b = av;
    rec.c = bv;
    return record(std::move(rec));
  }

  // RMSNorm of each head times silu(z): a RmsNormHeads, then a Swiglu with z as the gate (the same steps as
  // the MLX backend's).
  Tensor rms_norm_gated(const Tensor& x, const DeviceWeight& weight, const Tensor& z, int heads, float eps) override {
    use_device();
    const Tensor normed = rms_norm_heads(x, weight, heads, eps);
    return swiglu(z, normed);
  }

  Tensor rope(const Tensor& x, int heads, int head_dim, std::span<const StreamRows> runs,
              const RopeSpec& spec) override {
    use_device();
    auto a = act(x);
    if (a->cols != static_cast<std::int64_t>(heads) * head_dim) throw std::invalid_argument("rope: shape");
    const int rotary = spec.rotary_dims == 0 ? head_dim : spec.rotary_dims;
    if (rotary <= 0 || rotary > head_dim || rotary % 2 != 0) throw std::invalid_argument("rope: rotary dims");
    Op op(Kind::Rope);
    op.rotary = rotary == head_dim ? 0 : rotary;
    std::int64_t rows = 0;
    const bool mrope = std::any_of(runs.begin(), runs.end(), [](const StreamRows& r) { return !r.mrope.empty(); });
    for (const auto& r : runs) {
      if (r.rows < 1 || r.start < 0) throw std::invalid_argument("rope: a run without rows");
      op.runs.push_back({nullptr, r.start, r.rows});
      rows += r.rows;
      if (!mrope) continue;
      // M-RoPE: a run with images brings (t, h, w) for each row; a text-only run beside it is at (p, p, p).
      if (!r.mrope.empty() && r.mrope.size() != static_cast<std::size_t>(3 * r.rows))
        throw std::invalid_argument("rope: M-RoPE positions are not three a row");
      for (std::int64_t i = 0; i < 3 * r.rows; ++i)
        op.mrope.push_back(r.mrope.empty() ? r.start + i / 3 : r.mrope[static_cast<std::size_t>(i)]);
    }
    if (rows != a->rows) throw std::invalid_argument("rope: the runs do not cover the rows");
    if (mrope) op.mrope_sections = {3, spec.mrope_section[1], spec.mrope_section[2]};
    op.a = a;
    op.heads = heads;
    op.head_dim = head_dim;
    op.inv_freq = rope_table(rotary, spec);  // base^(-2i / rotary dims)
    op.interleaved = spec.interleaved;
    return record(std::move(op));
  }

  // ---- image inputs ----
  bool has_image_inputs() const override { return true; }

  Tensor replace_rows(const Tensor& x, std::span<const std::int64_t> rows, std::span<const float> values) override {
    use_device();
    auto a = act(x);
    if (values.size() != rows.size() * static_cast<std::size_t>(a->cols))
      throw std::invalid_argument("replace_rows: values are not one row of x's width per row index");
    Op op(Kind::ReplaceRows);
    op.a = a;
    for (const std::int64_t r : rows) {
      if (r < 0 || r >= a->rows) throw std::invalid_argument("replace_rows: a row index out of range");
      op.ids.push_back(static_cast<std::int32_t>(r));
    }
    op.host.assign(values.begin(), values.end());
    return record(std::move(op));
  }

  // An image encoder's products (blocks/vision_tower.h) on the device's float32 GEMM (the dense prefill
  // kernel: a pure function of x and w), outside the tape: its own stream and buffers (kept, grown to the
  // largest product seen), so the server's HTTP threads can encode images while the engine's thread decodes.
  // w comes from the host each call: the tower's weights stay in host memory (27B's tower sends ~1.6 GB an
  // image), and so do the attention's scores between its two products (docs/vision.md).
  void host_matmul(const float* x, std::int64_t rows, const float* w, std::int64_t out, std::int64_t in,
                   float* y) override {
    use_device();
    if (rows < 1 || out < 1 || in < 1) throw std::invalid_argument("host_matmul: shape");
    const std::lock_guard<std::mutex> lock(host_matmul_mutex_);
    if (host_matmul_stream_ == nullptr) TF_CK(cudaStreamCreateWithFlags(&host_matmul_stream_, cudaStreamNonBlocking));
    const cudaStream_t s = host_matmul_stream_;
    auto room = [](std::unique_ptr<DeviceBlob>& b, std::int64_t floats) {
      const auto bytes = static_cast<std::size_t>(floats) * 4;
      if (!b || b->bytes < bytes) b = std::make_unique<DeviceBlob>(bytes, cuda::ElemType::F32);
      return b->ptr;
    };
    // The GEMM steps through k 16 at a time: x and w go to the device with their rows padded by zeros to a
    // multiple of 16 (a head's 72 dims, an image's patch count), which add exact zeros to every sum.
    const std::int64_t kp = (in + 15) / 16 * 16;
    void* dx = room(host_mm_x_, rows * kp);
    void* dw = room(host_mm_w_, out * kp);
    void* dy = room(host_mm_y_, rows * out);
    const auto pitch = static_cast<std::size_t>(kp) * 4, width = static_cast<std::size_t>(in) * 4;
    if (kp != in) {
      TF_CK(cudaMemsetAsync(dx, 0, static_cast<std::size_t>(rows) * pitch, s));
      TF_CK(cudaMemsetAsync(dw, 0, static_cast<std::size_t>(out) * pitch, s));
    }
    TF_CK(cudaMemcpy2DAsync(dx, pitch, x, width, width, static_cast<std::size_t>(rows), cudaMemcpyHostToDevice, s));
    TF_CK(cudaMemcpy2DAsync(dw, pitch, w, width, width, static_cast<std::size_t>(out), cudaMemcpyHostToDevice, s));
    WeightView v;
    v.data = dw;
    v.rows = out;
    v.cols = kp;
    v.dtype = cuda::ElemType::F32;
    cuda::prefill_linear(static_cast<const float*>(dx), kp, rows, v, static_cast<float*>(dy), out, s);
    TF_CK(cudaMemcpyAsync(y, dy, static_cast<std::size_t>(rows * out) * 4, cudaMemcpyDeviceToHost, s));
    TF_CK(cudaStreamSynchronize(s));
  }

  Tensor attend(std::span<const StreamRows> runs, int layer, const Tensor& q, const Tensor& k, const Tensor& v,
                const AttentionSpec& spec) override {
    use_device();
    auto aq = act(q), ak = act(k), av = act(v);
    const std::int64_t n = aq->rows;
    if (aq->cols != static_cast<std::int64_t>(spec.heads) * spec.head_dim ||
        ak->cols != static_cast<std::int64_t>(spec.kv_heads) * spec.head_dim || av->cols != ak->cols || ak->rows != n ||
        av->rows != n)
      throw std::invalid_argument("attend: shapes");
    // Sliding windows are not in the CUDA attention kernels yet: no family that needs one loads on CUDA.
    if (spec.window > 0) throw std::invalid_argument("attend: sliding-window attention does not run on CUDA yet");
    Op op(Kind::Attend);
    std::int64_t rows = 0;
    for (const auto& r : runs) {
      auto& c = dynamic_cast<CudaKvCache&>(*r.cache);
      if (spec.head_dim != c.st->head_dim || spec.kv_heads != c.st->kv_heads || layer < 0 || layer >= c.st->layers)
        throw std::invalid_argument("attend: cache does not match");
      if (r.rows < 1 || r.start < 0 || r.start > c.length_) throw std::invalid_argument("attend: start past the cache");
      for (const auto& other : op.runs)
        if (other.kv == c.st) throw std::invalid_argument("attend: one cache twice in a call");
      if (r.start + r.rows > c.st->cap) grow(c, r.start + r.rows);
      op.runs.push_back({c.st, r.start, r.rows});
      rows += r.rows;
    }
    if (rows != n) throw std::invalid_argument("attend: the runs do not cover the rows");
    op.a = aq;
    op.b = ak;
    op.c = av;
    op.layer = layer;
    op.attn = spec;
    for (const auto& r : runs) {
      auto& c = dynamic_cast<CudaKvCache&>(*r.cache);
      if (layer == c.st->layers - 1) c.length_ = r.start + r.rows;
    }
    return record(std::move(op));
  }

  std::int64_t invariant_rows() const override { return cuda::kMaxDecodeRows; }
  // Prompt rows (more than kMaxDecodeRows) on the bf16 prefill GEMM: x as one bf16 term or two. Ops already
  // recorded run in the mode they were recorded in.
  bool has_prompt_precision() const override { return true; }
  void set_prompt_precision(PromptPrecision p) override {
    use_device();
    flush();
    runner_->set_prefill_x(p == PromptPrecision::Full ? cuda::PrefillX::TwoTerms : cuda::PrefillX::Bf16);
  }
  PromptPrecision prompt_precision() const override {
    return runner_->prefill_x() == cuda::PrefillX::TwoTerms ? PromptPrecision::Full : PromptPrecision::Bf16;
  }

  Tensor last_rows(const Tensor& x, std::int64_t n) override {
    use_device();
    auto a = act(x);
    if (n < 1 || n > a->rows) throw std::invalid_argument("last_rows: n");
    Op op(Kind::LastRows);
    op.a = a;
    op.first = a->rows - n;
    return record(std::move(op));
  }

  std::vector<float> to_host(const Tensor& x) override {
    use_device();
    auto a = act(x);
    if (a->pending) flush();
    pieces_ = 0;
    const std::size_t bytes = static_cast<std::size_t>(a->rows * a->cols) * 4;
    ensure_stage(bytes);
    TF_CK(cudaMemcpyAsync(stage_, a->ptr, bytes, cudaMemcpyDeviceToHost, stream_));
    TF_CK(cudaStreamSynchronize(stream_));
    std::vector<float> out(static_cast<std::size_t>(a->rows * a->cols));
    std::memcpy(out.data(), stage_, bytes);
    return out;
  }

  bool has_argmax_rows() const override { return true; }
  // Device memory free now (after loading) less a 1 GiB floor for the runtime, the activation pool and graphs,
  // plus the weights this backend holds: the engine's budget covers weights and streams together.
  std::size_t memory_budget_bytes() const override {
    use_device();
    std::size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) return weight_bytes_;
    constexpr std::size_t kFloor = std::size_t{1} << 30;
    return (free > kFloor ? free - kFloor : 0) + weight_bytes_;
  }
  // The tape's launches, then the argmax and the ids' copy, queued back to back with one wait at the end:
  // waiting for the tape first left the GPU idle while the host woke up and launched the argmax.
  std::vector<std::int32_t> argmax_rows(const Tensor& x) override {
    use_device();
    auto ids = argmax_rows_async(x);
    runner_->wait();  // counted in the stats' wait time, as a tape's wait is
    return ids->get();
  }

  bool has_device_ids() const override { return true; }
  std::shared_ptr<DeviceIds> argmax_rows_async(const Tensor& x) override {
    use_device();
    auto a = act(x);
    queue_tape_of(a);
    void* scratch = greedy_scratch(a->rows);
    auto ids = std::make_shared<CudaDeviceIds>(id_slots_, id_slots_->take(a->rows), a->rows);
    cuda::greedy_rows(a->ptr, a->rows, a->cols, ids->device(), scratch, stream_);
    TF_CK(cudaMemcpyAsync(ids->host(), ids->device(), static_cast<std::size_t>(a->rows) * sizeof(std::int32_t),
                          cudaMemcpyDeviceToHost, stream_));
    TF_CK(cudaEventRecord(ids->copied(), stream_));
    runner_->end_step();
    return ids;
  }

  bool has_sample_rows() const override { return true; }
  // As argmax_rows_async, each row chosen by the sampler kernel under its TokenChoice (sample.cu: one launch
  // for every row, greedy rows included, nothing allocated).
  std::shared_ptr<DeviceIds> sample_rows_async(const Tensor& x, std::span<const TokenChoice> rows) override {
    use_device();
    auto a = act(x);
    if (static_cast<std::int64_t>(rows.size()) != a->rows)
      throw std::invalid_argument("sample_rows_async: one choice per row");
    queue_tape_of(a);
    std::vector<cuda::SampleArgs> args;
    args.reserve(rows.size());
    for (const auto& c : rows) args.push_back({c.temperature, c.top_k, c.top_p, c.min_p, c.seed, c.position});
    auto ids = std::make_shared<CudaDeviceIds>(id_slots_, id_slots_->take(a->rows), a->rows);
    cuda::sample_rows(a->ptr, a->rows, a->cols, args.data(), ids->device(), stream_);
    TF_CK(cudaMemcpyAsync(ids->host(), ids->device(), static_cast<std::size_t>(a->rows) * sizeof(std::int32_t),
                          cudaMemcpyDeviceToHost, stream_));
    TF_CK(cudaEventRecord(ids->copied(), stream_));
    runner_->end_step();
    return ids;
  }

  Tensor all_reduce_sum(const Tensor& x, std::shared_ptr<const StreamReduce> reduce) override {
    Op op(Kind::AllReduce);
    op.a = act(x);
    op.reduce = std::move(reduce);
    return record(std::move(op));
  }

  std::vector<std::int32_t> sample(const Tensor& logits, std::span<const cuda::SampleArgs> args) override {
    use_device();
    auto a = act(logits);
    if (a->pending) flush();
    if (static_cast<std::int64_t>(args.size()) != a->rows) throw std::invalid_argument("sample: one args per row");
    std::vector<std::int32_t> out(args.size());
    cuda::sample_tokens(a->ptr, a->rows, a->cols, args.data(), out.data(), stream_);
    return out;
  }

 private:
  // Makes this backend's device the calling thread's current one (tensor-parallel ranks run on their own
  // threads, or one thread drives several devices; either way a call may arrive with another device current).
  void use_device() const {
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess || current != device_) TF_CK(cudaSetDevice(device_));
  }

  static ActP act(const Tensor& t) {
    auto* raw = dynamic_cast<Act*>(t.impl());
    if (raw == nullptr) throw std::logic_error("tensor does not belong to the CUDA backend");
    return raw->shared_from_this();
  }

  // Records `op` with the output shape its kind's rule gives (OpDescriptor::out_shape).
  Tensor record(Op op) {
    const OpShape shape = op_descriptor(op.kind).out_shape(op);
    return record(std::move(op), shape.rows, shape.cols);
  }
  // Records `op` with an output of `rows` x `cols` (Upload's shape is the caller's).
  Tensor record(Op op, std::int64_t rows, std::int64_t cols) {
    auto out = std::make_shared<Act>(pool_, rows, cols);
    out->pending = true;
    out->tape_index = static_cast<int>(ops_.size());
    op.out = out;
    ops_.push_back(std::move(op));
    return Tensor(out);
  }

  const float* rope_table(int head_dim, const RopeSpec& spec) {
    auto bits = [](float f) {
      std::uint32_t b;
      std::memcpy(&b, &f, 4);
      return std::to_string(b);
    };
    std::string key = std::to_string(head_dim);
    key += '/';
    key += bits(spec.base);
    for (float f : spec.freq_factors) {  // appended piecewise: GCC 12 misreads "/" + string (-Wrestrict)
      key += '/';
      key += bits(f);
    }
    auto it = rope_tables_.find(key);
    if (it != rope_tables_.end()) return it->second;
    const int half = head_dim / 2;
    std::vector<float> inv(static_cast<std::size_t>(half));
    for (int i = 0; i < half; ++i) {
      // base^(-2i/d), as float32 like the reference (HF computes inv_freq in float32), then / factor.
      float f = 1.0f / std::pow(spec.base, static_cast<float>(2 * i) / static_cast<float>(head_dim));
      if (static_cast<std::size_t>(i) < spec.freq_factors.size())
        f = f / spec.freq_factors[static_cast<std::size_t>(i)];
      inv[static_cast<std::size_t>(i)] = f;
    }
    float* p = nullptr;
    TF_CK(cudaMalloc(reinterpret_cast<void**>(&p), inv.size() * 4));
    TF_CK(cudaMemcpy(p, inv.data(), inv.size() * 4, cudaMemcpyHostToDevice));
    rope_tables_[key] = p;
    return p;
  }

  void grow(CudaKvCache& c, std::int64_t need) {
    // Writes of the pending tape must land in the old buffer first (an empty cache has no pending writes).
    if (c.st->buf != nullptr) flush();
    grow_kv_cache(c, need, stream_);
  }

  void ensure_stage(std::size_t bytes) {
    if (bytes <= stage_bytes_) return;
    cudaFreeHost(stage_);
    stage_bytes_ = align_up(bytes, 1 << 20);
    TF_CK(cudaMallocHost(&stage_, stage_bytes_));
  }

  void flush() {
    runner_->run(ops_);
    pieces_ = 0;
  }

  // Queues the tape that computes `a` (the last piece of a step) without waiting.
  void queue_tape_of(const ActP& a) {
    if (a->pending) runner_->run(ops_, /*wait=*/false);
    pieces_ = 0;
  }

  // The greedy kernel's scratch for `rows` rows (a decode step's at least): zeroed when made, and every launch
  // leaves it zeroed, so one serves every argmax in stream order.
  void* greedy_scratch(std::int64_t rows) {
    const std::size_t need = cuda::greedy_rows_scratch_bytes(std::max<std::int64_t>(rows, cuda::kMaxDecodeRows));
    if (need > greedy_scratch_bytes_) {
      TF_CK(cudaStreamSynchronize(stream_));  // an earlier argmax may still use the old one
      cudaFree(greedy_scratch_);
      greedy_scratch_ = nullptr;
      greedy_scratch_bytes_ = align_up(need, 4096);
      TF_CK(cudaMalloc(&greedy_scratch_, greedy_scratch_bytes_));
      TF_CK(cudaMemsetAsync(greedy_scratch_, 0, greedy_scratch_bytes_, stream_));
    }
    return greedy_scratch_;
  }

  // A decode tape goes to the GPU in pieces while the model records the rest of the step: the host records
  // ~0.4 µs an op, ~200 µs a step of the 8B shape, and the GPU idled through all of it (session 9). A piece
  // ends before an rms_norm whose input is the one output of the tape that the caller holds: a layer
  // boundary, where the model holds only the residual stream. So the pieces' memory and graphs repeat
  // step after step, and no fusion is cut but the residual add's into that norm (the same bits: the add is
  // one rounded addition either way). TF_CUDA_PIECE_OPS sets the least ops of a step's first piece (0: whole
  // tapes), and each later piece is at least TF_CUDA_PIECE_GROWTH (default 4) times the one before: the host
  // records an op ~15x faster than the GPU runs it, so once the first piece runs the host stays ahead with
  // few, large pieces, and every boundary costs the GPU a few µs (no PDL across graphs, the add launched alone).
  void maybe_launch_piece(const Tensor& x) {
    if (piece_ops_ <= 0) return;
    std::int64_t least = piece_ops_;
    for (int i = 0; i < pieces_ && least < (std::int64_t{1} << 40); ++i) least *= piece_growth_;
    if (static_cast<std::int64_t>(ops_.size()) < least) return;
    auto* xa = dynamic_cast<Act*>(x.impl());
    if (xa == nullptr || !xa->pending) return;
    if (!decode_tape(ops_)) return;  // a prefill tape: one piece
    // A step fed on the device is recorded while the step before it runs: one piece, no boundary to pay.
    if (ops_.front().ids_dev != nullptr) return;
    const std::vector<char> escapes = tape_escapes(ops_);
    for (std::size_t i = 0; i < ops_.size(); ++i)
      if (escapes[i] && ops_[i].out.get() != xa) return;  // the caller holds more than x
    runner_->run(ops_, /*wait=*/false);
    ++pieces_;
  }
  const std::int64_t piece_ops_ = env_i64("TF_CUDA_PIECE_OPS", 64);
  const std::int64_t piece_growth_ = std::max<std::int64_t>(1, env_i64("TF_CUDA_PIECE_GROWTH", 4));

  std::shared_ptr<Pool> pool_;
  int device_ = 0;
  std::size_t weight_bytes_ = 0;
  cudaStream_t stream_ = nullptr;
  std::vector<Op> ops_;
  void* stage_ = nullptr;
  std::size_t stage_bytes_ = 0;
  void* greedy_scratch_ = nullptr;
  std::size_t greedy_scratch_bytes_ = 0;
  std::shared_ptr<DeviceIdSlots> id_slots_ = std::make_shared<DeviceIdSlots>();
  int pieces_ = 0;  // pieces of the step being recorded queued so far
  std::map<std::string, float*> rope_tables_;
  std::mutex host_matmul_mutex_;  // host_matmul's stream and buffers (image encoders on the server's threads)
  cudaStream_t host_matmul_stream_ = nullptr;
  std::unique_ptr<DeviceBlob> host_mm_x_, host_mm_w_, host_mm_y_;
  std::unique_ptr<TapeRunner> runner_;  // runs the tapes; reset in the destructor before stream_ goes
};

}  // namespace
}  // namespace cuda_internal

bool cuda_device_available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

std::unique_ptr<CudaBackend> make_cuda_backend(int device) {
  return std::make_unique<cuda_internal::CudaBackendImpl>(device);
}

}  // namespace tf
