// The CUDA backend. Ops are recorded on a tape, not launched: a tape runs when its result is needed
// (to_host) or before the KV cache must grow. Running a tape:
//  1. fusion: an add feeding an rms_norm becomes one launch (the residual add fused into the norm); in
//     decode tapes (every op <= 16 rows), linears that read the same input run as one launch, and a swiglu of
//     two such linears becomes their epilogue;
//  2. memory: tensors nobody holds after the tape live in an arena at offsets planned from the tape alone
//     (first fit over their live ranges); tensors still held by the caller get pool memory;
//  3. values that change from step to step (token ids, positions, cache rows) go to a small "dyn" block that
//     is copied to a fixed device buffer before the launches; the kernels read them from there;
//  4. a decode tape is keyed by its launches (kernels and every argument, pointers included): a key seen
//     before replays its CUDA graph after the dyn copy; a new key is captured into one. Prefill tapes launch
//     kernel by kernel.
// Every kernel a decode tape uses computes a row the same whatever the rows beside it (docs/cuda.md).
#include "backends/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "backends/cuda/kernels/tiled_layout.h"
#include "checkpoint/half_float.h"

namespace tf {
namespace {

using cuda::ElemType;
using cuda::WeightView;

void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
}
#define TF_CK(x) ck((x), #x)

constexpr std::size_t kAlign = 256;
std::size_t align_up(std::size_t n, std::size_t a = kAlign) { return (n + a - 1) / a * a; }

ElemType elem_type(HostDType d) {
  switch (d) {
    case HostDType::F32: return ElemType::F32;
    case HostDType::F16: return ElemType::F16;
    case HostDType::BF16: return ElemType::BF16;
  }
  return ElemType::F32;
}

// ---- host-side float conversions (exact, for upload; checkpoint/half_float.h does the bits) ----
// f32 -> f16 when exact (returns false otherwise).
bool f32_to_f16_exact(float f, std::uint16_t& out) {
  if (std::isnan(f)) return false;
  const std::uint16_t h = f32_to_f16(f);
  if (std::bit_cast<std::uint32_t>(f16_to_f32(h)) != std::bit_cast<std::uint32_t>(f)) return false;
  out = h;
  return true;
}

std::vector<float> host_to_f32(const std::vector<std::uint8_t>& bytes, HostDType d, std::size_t n) {
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (d) {
      case HostDType::F32: std::memcpy(&out[i], bytes.data() + 4 * i, 4); break;
      case HostDType::F16: {
        std::uint16_t h;
        std::memcpy(&h, bytes.data() + 2 * i, 2);
        out[i] = f16_to_f32(h);
        break;
      }
      case HostDType::BF16: {
        std::uint16_t h;
        std::memcpy(&h, bytes.data() + 2 * i, 2);
        out[i] = bf16_to_f32(h);
        break;
      }
    }
  }
  return out;
}

// ---- device memory ----
struct DeviceBlob final : Tensor::Impl {
  DeviceBlob(std::size_t n, ElemType t) : bytes(n), dtype(t) { TF_CK(cudaMalloc(&ptr, std::max<std::size_t>(n, 16))); }
  ~DeviceBlob() override { cudaFree(ptr); }
  void* ptr = nullptr;
  std::size_t bytes;
  ElemType dtype;
};

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

// ---- KV cache: one allocation, [layer][k|v][kv_heads][cap][head_dim] float32 ----
struct KvStorage {
  ~KvStorage() { cudaFree(buf); }
  float* buf = nullptr;
  int layers = 0, kv_heads = 0, head_dim = 0, cap = 0;
  float* k(int layer) const { return buf + (static_cast<std::size_t>(layer) * 2) * kv_heads * cap * head_dim; }
  float* v(int layer) const { return buf + (static_cast<std::size_t>(layer) * 2 + 1) * kv_heads * cap * head_dim; }
  std::size_t bytes() const { return static_cast<std::size_t>(layers) * 2 * kv_heads * cap * head_dim * 4; }
};

class CudaKvCache final : public KvCache {
 public:
  CudaKvCache(int layers, int kv_heads, int head_dim) : st(std::make_shared<KvStorage>()) {
    st->layers = layers;
    st->kv_heads = kv_heads;
    st->head_dim = head_dim;
  }
  std::int64_t length() const override { return length_; }
  void truncate(std::int64_t length) override {
    if (length < 0 || length > length_) throw std::invalid_argument("kv cache truncate past its length");
    length_ = length;
  }
  std::size_t bytes() const override { return st->bytes(); }
  std::shared_ptr<KvStorage> st;
  std::int64_t length_ = 0;
};

// ---- the tape ----
enum class Kind { Embed, RmsNorm, Linear, Add, Swiglu, Rope, Attend, LastRows, Upload };

struct Op {
  explicit Op(Kind k) : kind(k) {}
  Kind kind;
  ActP out;
  ActP a, b, c;
  WeightView w;
  const float* norm = nullptr;
  std::vector<std::int32_t> ids;
  std::vector<float> host;  // Upload
  float eps = 0.0f;
  int heads = 0, head_dim = 0;
  const float* inv_freq = nullptr;
  bool interleaved = false;
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
  // Attend: the decode attention's splits along the cache, enough for the largest cache of the call.
  int attn_splits() const {
    std::int64_t cap = 0;
    for (const Run& r : runs) cap = std::max<std::int64_t>(cap, r.kv ? r.kv->cap : 0);
    return static_cast<int>((cap + cuda::kAttnSplit - 1) / cuda::kAttnSplit);
  }
};

struct Launch {
  std::function<void(cudaStream_t)> run;
};

class CudaBackendImpl final : public CudaBackend {
 public:
  CudaBackendImpl() : pool_(std::make_shared<Pool>()) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) throw std::runtime_error("no CUDA device is visible");
    TF_CK(cudaSetDevice(0));
    TF_CK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    cuda::prepare_decode_attention();  // kernel attributes are set outside any graph capture
  }
  ~CudaBackendImpl() override {
    try {
      flush();
    } catch (...) {
    }
    cudaStreamSynchronize(stream_);
    clear_graphs();
    cudaFree(arena_);
    cudaFree(dyn_dev_);
    cudaFreeHost(dyn_host_);
    cudaFreeHost(stage_);
    cudaFree(argmax_dev_);
    cudaFree(imma_scratch_);
    cudaFree(attn_work_);
    cudaFree(attn_counters_);
    for (auto& [k, p] : rope_tables_) cudaFree(p);
    cudaStreamDestroy(stream_);
  }

  std::string name() const override { return "cuda"; }
  void set_graphs(bool on) override { graphs_ = on; }
  CudaBackendStats stats() const override { return stats_; }
  std::size_t weight_bytes() const override { return weight_bytes_; }
  cudaStream_t stream() const override { return stream_; }

  // ---- weights ----
  DeviceWeight upload(const HostWeight& w) override { return counted(upload_impl(w)); }
  DeviceWeight random_weight(std::int64_t rows, std::int64_t cols, int bits, int group, HostDType dtype,
                             std::uint64_t seed) override {
    return counted(random_weight_impl(rows, cols, bits, group, dtype, seed));
  }

  DeviceWeight upload_impl(const HostWeight& w) {
    DeviceWeight d;
    d.rows = w.rows;
    d.cols = w.cols;
    const auto elems = static_cast<std::size_t>(w.rows * w.cols);
    const bool fast_affine = (w.bits == 4 || w.bits == 8) && w.group_size % 32 == 0 && w.cols % w.group_size == 0;
    if (w.bits != 0 && !fast_affine) {
      // Bit widths without a kernel yet: dequantized at load (reference rounding: scale*q, then + bias).
      const auto groups = static_cast<std::size_t>(w.rows * (w.cols / w.group_size));
      const auto sc = host_to_f32(w.scales, w.dtype, groups), bi = host_to_f32(w.biases, w.dtype, groups);
      std::vector<float> dense(elems);
      const auto* words = reinterpret_cast<const std::uint32_t*>(w.data.data());
      const std::int64_t wpr = w.cols * w.bits / 32;
      for (std::int64_t r = 0; r < w.rows; ++r)
        for (std::int64_t k = 0; k < w.cols; ++k) {
          const std::int64_t bit = k * w.bits;
          const std::uint32_t* row = words + r * wpr;
          std::uint64_t v = row[bit >> 5];
          if ((bit & 31) + w.bits > 32) v |= static_cast<std::uint64_t>(row[(bit >> 5) + 1]) << 32;
          const auto q = static_cast<float>((v >> (bit & 31)) & ((1u << w.bits) - 1u));
          const std::size_t g = static_cast<std::size_t>(r * (w.cols / w.group_size) + k / w.group_size);
          const float sq = sc[g] * q;
          dense[static_cast<std::size_t>(r * w.cols + k)] = sq + bi[g];
        }
      return dense_weight(dense, w.rows, w.cols);
    }
    if (w.bits == 0) {
      if (w.rows == 1 || w.dtype == HostDType::F32) return dense_weight(host_to_f32(w.data, w.dtype, elems), w.rows, w.cols);
      auto blob = std::make_shared<DeviceBlob>(w.data.size(), elem_type(w.dtype));
      TF_CK(cudaMemcpy(blob->ptr, w.data.data(), w.data.size(), cudaMemcpyHostToDevice));
      d.data = Tensor(blob);
      return d;
    }
    d.data = upload_codes(w);
    d.bits = w.bits;
    d.group_size = w.group_size;
    // Scales and biases: float32 from GGUF (converted from f16) go back to f16 when every value is exact
    // there, halving their bytes; other types stay as they are.
    const auto groups = static_cast<std::size_t>(w.rows * (w.cols / w.group_size));
    std::vector<std::uint8_t> s = w.scales, b = w.biases;
    ElemType t = elem_type(w.dtype);
    if (w.dtype == HostDType::F32) {
      std::vector<std::uint8_t> s16(groups * 2), b16(groups * 2);
      bool exact = true;
      for (std::size_t i = 0; i < groups && exact; ++i) {
        float fs, fb;
        std::memcpy(&fs, s.data() + 4 * i, 4);
        std::memcpy(&fb, b.data() + 4 * i, 4);
        std::uint16_t hs, hb;
        exact = f32_to_f16_exact(fs, hs) && f32_to_f16_exact(fb, hb);
        if (exact) {
          std::memcpy(s16.data() + 2 * i, &hs, 2);
          std::memcpy(b16.data() + 2 * i, &hb, 2);
        }
      }
      if (exact) {
        s = std::move(s16);
        b = std::move(b16);
        t = ElemType::F16;
      }
    }
    auto sblob = std::make_shared<DeviceBlob>(s.size(), t), bblob = std::make_shared<DeviceBlob>(b.size(), t);
    TF_CK(cudaMemcpy(sblob->ptr, s.data(), s.size(), cudaMemcpyHostToDevice));
    TF_CK(cudaMemcpy(bblob->ptr, b.data(), b.size(), cudaMemcpyHostToDevice));
    d.scales = Tensor(sblob);
    d.biases = Tensor(bblob);
    return d;
  }

  // Affine codes go to the device in the tiled layout when the format allows (tiled_layout.h: the
  // tensor-core decode kernel reads it), else as the checkpoint stores them.
  Tensor upload_codes(const HostWeight& w) {
    const std::int64_t wpr = w.cols * w.bits / 32;
    if (!cuda::tileable(w.bits, w.group_size, w.cols)) {
      auto codes = std::make_shared<DeviceBlob>(w.data.size(), ElemType::F32);
      TF_CK(cudaMemcpy(codes->ptr, w.data.data(), w.data.size(), cudaMemcpyHostToDevice));
      return Tensor(codes);
    }
    std::vector<std::uint32_t> words(static_cast<std::size_t>(w.rows * wpr));
    std::memcpy(words.data(), w.data.data(), words.size() * 4);
    const std::vector<std::uint32_t> tiled = cuda::tile_words(words.data(), w.rows, wpr);
    auto codes = std::make_shared<DeviceBlob>(tiled.size() * 4, ElemType::F32);
    TF_CK(cudaMemcpy(codes->ptr, tiled.data(), tiled.size() * 4, cudaMemcpyHostToDevice));
    return Tensor(codes);
  }

  DeviceWeight random_weight_impl(std::int64_t rows, std::int64_t cols, int bits, int group, HostDType dtype,
                                  std::uint64_t seed) {
    DeviceWeight d;
    d.rows = rows;
    d.cols = cols;
    const auto elems = static_cast<std::size_t>(rows * cols);
    if (bits == 0) {
      const ElemType t = rows == 1 ? ElemType::F32 : elem_type(dtype);
      auto blob = std::make_shared<DeviceBlob>(elems * cuda::elem_bytes(t), t);
      const float a = rows == 1 ? 0.1f : 1.0f / std::sqrt(static_cast<float>(cols));
      cuda::fill_random_uniform(blob->ptr, t, static_cast<std::int64_t>(elems), rows == 1 ? 1.0f - a : -a,
                                rows == 1 ? 1.0f + a : a, seed, stream_);
      TF_CK(cudaStreamSynchronize(stream_));
      d.data = Tensor(blob);
      return d;
    }
    if ((bits != 4 && bits != 8) || group % 32 != 0 || cols % group != 0)
      throw std::invalid_argument("random_weight: bits 4 or 8, group a multiple of 32 dividing cols");
    // Random codes: the tiled layout is a permutation of words, so only its padding rows need room.
    const std::int64_t code_rows = cuda::tileable(bits, group, cols) ? cuda::tiled_rows(rows) : rows;
    auto codes = std::make_shared<DeviceBlob>(static_cast<std::size_t>(code_rows * cols * bits / 8), ElemType::F32);
    cuda::fill_random_bits(codes->ptr, codes->bytes, seed, stream_);
    const auto groups = static_cast<std::int64_t>(rows * (cols / group));
    const ElemType t = elem_type(dtype);
    auto s = std::make_shared<DeviceBlob>(static_cast<std::size_t>(groups) * cuda::elem_bytes(t), t);
    auto b = std::make_shared<DeviceBlob>(static_cast<std::size_t>(groups) * cuda::elem_bytes(t), t);
    // w = s*q + b with q in [0, 2^bits): values of order 1/sqrt(cols), centred.
    const float range = 1.0f / std::sqrt(static_cast<float>(cols));
    const float levels = static_cast<float>((1 << bits) - 1);
    cuda::fill_random_uniform(s->ptr, t, groups, 0.5f * range / levels, 1.5f * range / levels, seed + 1, stream_);
    cuda::fill_random_uniform(b->ptr, t, groups, -1.1f * range, -0.9f * range, seed + 2, stream_);
    TF_CK(cudaStreamSynchronize(stream_));
    d.data = Tensor(codes);
    d.scales = Tensor(s);
    d.biases = Tensor(b);
    d.bits = bits;
    d.group_size = group;
    return d;
  }

  DeviceWeight counted(DeviceWeight d) {
    for (const Tensor* t : {&d.data, &d.scales, &d.biases})
      if (*t) weight_bytes_ += blob(*t)->bytes;
    // The integer matmul's x scratch grows with the widest K seen, here at load rather than inside a tape
    // (graphs hold the pointer: it is part of their key, so a graph made before a regrowth never replays).
    if (const std::size_t need = cuda::decode_linear_scratch_bytes(weight_view(d)); need > imma_scratch_bytes_) {
      cudaFree(imma_scratch_);
      imma_scratch_ = nullptr;
      imma_scratch_bytes_ = 0;
      TF_CK(cudaMalloc(&imma_scratch_, need));
      imma_scratch_bytes_ = need;
    }
    return d;
  }

  WeightView weight_view(const DeviceWeight& d) const override {
    WeightView v;
    auto* data = blob(d.data);
    v.data = data->ptr;
    v.rows = d.rows;
    v.cols = d.cols;
    v.bits = d.bits;
    v.group = d.group_size;
    if (d.quantized()) {
      auto* s = blob(d.scales);
      v.scales = s->ptr;
      v.biases = blob(d.biases)->ptr;
      v.dtype = s->dtype;
      v.tiled = cuda::tileable(d.bits, d.group_size, d.cols);
    } else {
      v.dtype = data->dtype;
    }
    return v;
  }

  std::unique_ptr<KvCache> new_kv_cache(int layers, int kv_heads, int head_dim) override {
    return std::make_unique<CudaKvCache>(layers, kv_heads, head_dim);
  }

  // ---- ops (recorded) ----
  Tensor from_host(std::span<const float> data, std::int64_t rows, std::int64_t cols) override {
    if (static_cast<std::int64_t>(data.size()) != rows * cols) throw std::invalid_argument("from_host: size");
    Op op(Kind::Upload);
    op.host.assign(data.begin(), data.end());
    return record(std::move(op), rows, cols);
  }

  Tensor embed(const DeviceWeight& table, std::span<const std::int32_t> ids) override {
    for (auto id : ids)
      if (id < 0 || id >= table.rows) throw std::out_of_range("embed: token id " + std::to_string(id) + " out of range");
    Op op(Kind::Embed);
    op.w = weight_view(table);
    op.ids.assign(ids.begin(), ids.end());
    return record(std::move(op), static_cast<std::int64_t>(ids.size()), table.cols);
  }

  Tensor rms_norm(const Tensor& x, const DeviceWeight& weight, float eps) override {
    auto a = act(x);
    if (weight.cols != a->cols || weight.quantized()) throw std::invalid_argument("rms_norm: weight shape");
    Op op(Kind::RmsNorm);
    op.a = a;
    op.norm = static_cast<const float*>(blob(weight.data)->ptr);
    op.eps = eps;
    return record(std::move(op), a->rows, a->cols);
  }

  Tensor linear(const Tensor& x, const DeviceWeight& w) override {
    auto a = act(x);
    if (w.cols != a->cols) throw std::invalid_argument("linear: x has " + std::to_string(a->cols) + " cols, weight " +
                                                       std::to_string(w.cols));
    Op op(Kind::Linear);
    op.a = a;
    op.w = weight_view(w);
    return record(std::move(op), a->rows, w.rows);
  }

  Tensor add(const Tensor& x, const Tensor& y) override {
    auto a = act(x), b = act(y);
    if (a->rows != b->rows || a->cols != b->cols) throw std::invalid_argument("add: shapes differ");
    Op op(Kind::Add);
    op.a = a;
    op.b = b;
    return record(std::move(op), a->rows, a->cols);
  }

  Tensor swiglu(const Tensor& gate, const Tensor& up) override {
    auto a = act(gate), b = act(up);
    if (a->rows != b->rows || a->cols != b->cols) throw std::invalid_argument("swiglu: shapes differ");
    Op op(Kind::Swiglu);
    op.a = a;
    op.b = b;
    return record(std::move(op), a->rows, a->cols);
  }

  Tensor rope(const Tensor& x, int heads, int head_dim, std::span<const StreamRows> runs,
              const RopeSpec& spec) override {
    auto a = act(x);
    if (a->cols != static_cast<std::int64_t>(heads) * head_dim) throw std::invalid_argument("rope: shape");
    Op op(Kind::Rope);
    std::int64_t rows = 0;
    for (const auto& r : runs) {
      if (r.rows < 1 || r.start < 0) throw std::invalid_argument("rope: a run without rows");
      op.runs.push_back({nullptr, r.start, r.rows});
      rows += r.rows;
    }
    if (rows != a->rows) throw std::invalid_argument("rope: the runs do not cover the rows");
    op.a = a;
    op.heads = heads;
    op.head_dim = head_dim;
    op.inv_freq = rope_table(head_dim, spec);
    op.interleaved = spec.interleaved;
    return record(std::move(op), a->rows, a->cols);
  }

  Tensor attend(std::span<const StreamRows> runs, int layer, const Tensor& q, const Tensor& k, const Tensor& v,
                const AttentionSpec& spec) override {
    auto aq = act(q), ak = act(k), av = act(v);
    const std::int64_t n = aq->rows;
    if (aq->cols != static_cast<std::int64_t>(spec.heads) * spec.head_dim ||
        ak->cols != static_cast<std::int64_t>(spec.kv_heads) * spec.head_dim || av->cols != ak->cols ||
        ak->rows != n || av->rows != n)
      throw std::invalid_argument("attend: shapes");
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
    return record(std::move(op), n, aq->cols);
  }

  std::int64_t invariant_rows() const override { return cuda::kMaxDecodeRows; }

  Tensor last_rows(const Tensor& x, std::int64_t n) override {
    auto a = act(x);
    if (n < 1 || n > a->rows) throw std::invalid_argument("last_rows: n");
    Op op(Kind::LastRows);
    op.a = a;
    op.first = a->rows - n;
    return record(std::move(op), n, a->cols);
  }

  std::vector<float> to_host(const Tensor& x) override {
    auto a = act(x);
    if (a->pending) flush();
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
    std::size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) return weight_bytes_;
    constexpr std::size_t kFloor = std::size_t{1} << 30;
    return (free > kFloor ? free - kFloor : 0) + weight_bytes_;
  }
  std::vector<std::int32_t> argmax_rows(const Tensor& x) override {
    auto a = act(x);
    if (a->pending) flush();
    const auto rows = static_cast<std::size_t>(a->rows);
    if (rows * sizeof(std::int32_t) > argmax_bytes_) {
      cudaFree(argmax_dev_);
      argmax_dev_ = nullptr;
      argmax_bytes_ = align_up(rows * sizeof(std::int32_t), 4096);
      TF_CK(cudaMalloc(&argmax_dev_, argmax_bytes_));
    }
    ensure_stage(rows * sizeof(std::int32_t));
    cuda::greedy_rows(a->ptr, a->rows, a->cols, static_cast<std::int32_t*>(argmax_dev_), stream_);
    TF_CK(cudaMemcpyAsync(stage_, argmax_dev_, rows * sizeof(std::int32_t), cudaMemcpyDeviceToHost, stream_));
    TF_CK(cudaStreamSynchronize(stream_));
    std::vector<std::int32_t> out(rows);
    std::memcpy(out.data(), stage_, rows * sizeof(std::int32_t));
    return out;
  }

  std::vector<std::int32_t> sample(const Tensor& logits, std::span<const cuda::SampleArgs> args) override {
    auto a = act(logits);
    if (a->pending) flush();
    if (static_cast<std::int64_t>(args.size()) != a->rows) throw std::invalid_argument("sample: one args per row");
    std::vector<std::int32_t> out(args.size());
    cuda::sample_tokens(a->ptr, a->rows, a->cols, args.data(), out.data(), stream_);
    return out;
  }

 private:
  static DeviceBlob* blob(const Tensor& t) {
    auto* b = dynamic_cast<DeviceBlob*>(t.impl());
    if (b == nullptr) throw std::logic_error("weight does not belong to the CUDA backend");
    return b;
  }
  static ActP act(const Tensor& t) {
    auto* raw = dynamic_cast<Act*>(t.impl());
    if (raw == nullptr) throw std::logic_error("tensor does not belong to the CUDA backend");
    return raw->shared_from_this();
  }

  DeviceWeight dense_weight(const std::vector<float>& v, std::int64_t rows, std::int64_t cols) {
    DeviceWeight d;
    d.rows = rows;
    d.cols = cols;
    auto blob = std::make_shared<DeviceBlob>(v.size() * 4, ElemType::F32);
    TF_CK(cudaMemcpy(blob->ptr, v.data(), v.size() * 4, cudaMemcpyHostToDevice));
    d.data = Tensor(blob);
    return d;
  }

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
      if (static_cast<std::size_t>(i) < spec.freq_factors.size()) f = f / spec.freq_factors[static_cast<std::size_t>(i)];
      inv[static_cast<std::size_t>(i)] = f;
    }
    float* p = nullptr;
    TF_CK(cudaMalloc(reinterpret_cast<void**>(&p), inv.size() * 4));
    TF_CK(cudaMemcpy(p, inv.data(), inv.size() * 4, cudaMemcpyHostToDevice));
    rope_tables_[key] = p;
    return p;
  }

  void grow(CudaKvCache& c, std::int64_t need) {
    KvStorage& s = *c.st;
    // Writes of the pending tape must land in the old buffer first (an empty cache has no pending writes).
    if (s.buf != nullptr) flush();
    const int new_cap = static_cast<int>(std::max<std::int64_t>(align_up(static_cast<std::size_t>(need), 256),
                                                                2 * static_cast<std::int64_t>(s.cap)));
    KvStorage next;
    next.layers = s.layers;
    next.kv_heads = s.kv_heads;
    next.head_dim = s.head_dim;
    next.cap = new_cap;
    TF_CK(cudaMalloc(reinterpret_cast<void**>(&next.buf), next.bytes()));
    if (s.buf != nullptr && c.length_ > 0) {
      const std::size_t row = static_cast<std::size_t>(s.head_dim) * 4;
      for (int l = 0; l < s.layers; ++l)
        for (int kv = 0; kv < 2; ++kv) {
          float* src = kv == 0 ? s.k(l) : s.v(l);
          float* dst = kv == 0 ? next.k(l) : next.v(l);
          TF_CK(cudaMemcpy2DAsync(dst, row * static_cast<std::size_t>(new_cap), src, row * static_cast<std::size_t>(s.cap),
                                  row * static_cast<std::size_t>(c.length_), static_cast<std::size_t>(s.kv_heads),
                                  cudaMemcpyDeviceToDevice, stream_));
        }
    }
    TF_CK(cudaStreamSynchronize(stream_));
    cudaFree(s.buf);
    s.buf = next.buf;
    s.cap = new_cap;
    next.buf = nullptr;
  }

  void ensure_stage(std::size_t bytes) {
    if (bytes <= stage_bytes_) return;
    cudaFreeHost(stage_);
    stage_bytes_ = align_up(bytes, 1 << 20);
    TF_CK(cudaMallocHost(&stage_, stage_bytes_));
  }

  void clear_graphs() {
    for (auto& [h, entries] : plans_)
      for (auto& e : entries) cudaGraphExecDestroy(e.exec);
    plans_.clear();
    plan_count_ = 0;
  }

  // ---- running a tape ----
  struct Step {
    std::vector<int> ops;   // the ops this launch covers (first is the leader)
    enum { Single, AddNorm, LinearGroup, SwigluGroup, RopeAttend } type = Single;
    int swiglu_op = -1;
    int norm_step = -1;  // a linear group: the (add +) rms_norm step it computes in its prologue
    bool dead = false;   // fused into a later step
  };

  // The tape's structure in words: everything the launches depend on except the dyn values (ids,
  // positions), plus which outputs escape. Equal signatures give equal plans and equal launches.
  static void signature(const std::vector<Op>& ops, std::vector<std::uint64_t>& sig, std::vector<char>& escapes) {
    const std::size_t n = ops.size();
    std::vector<int> reads(n, 0);
    for (const auto& op : ops)
      for (const ActP* in : {&op.a, &op.b, &op.c})
        if (*in && (*in)->pending && (*in)->tape_index >= 0) ++reads[static_cast<std::size_t>((*in)->tape_index)];
    sig.clear();
    sig.reserve(n * 24 + 8);
    escapes.assign(n, 0);
    auto P = [](const void* p) { return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p)); };
    auto F = [](float f) {
      std::uint32_t b;
      std::memcpy(&b, &f, 4);
      return static_cast<std::uint64_t>(b);
    };
    for (std::size_t i = 0; i < n; ++i) {
      const Op& op = ops[i];
      escapes[i] = op.out.use_count() > 1 + reads[i] ? 1 : 0;
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
                             static_cast<std::uint64_t>(op.layer), static_cast<std::uint64_t>(op.attn_splits()),
                             static_cast<std::uint64_t>(op.attn.heads),
                             static_cast<std::uint64_t>(op.attn.kv_heads), static_cast<std::uint64_t>(op.attn.head_dim),
                             F(op.attn.scale)});
    }
  }
  void push_buffers(std::vector<std::uint64_t>& sig) const {
    for (const void* p : {arena_, dyn_dev_, attn_work_, attn_counters_})
      sig.push_back(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p)));
  }
  static std::uint64_t hash_words(const std::vector<std::uint64_t>& v) {
    std::uint64_t h = 1469598103934665603ull;
    for (auto w : v) h = (h ^ w) * 1099511628211ull;
    return h;
  }

  // Lays out and fills the dyn block (ids, positions, cache rows, uploads) in tape order.
  struct DynRefs {
    std::size_t ids = 0, pos = 0, rows = 0, start = 0;
  };
  std::vector<DynRefs> build_dyn(const std::vector<Op>& ops) {
    dyn_.clear();
    auto put = [&](const void* data, std::size_t bytes) {
      const std::size_t off = align_up(dyn_.size(), 16);
      dyn_.resize(off + bytes);
      std::memcpy(dyn_.data() + off, data, bytes);
      return off;
    };
    std::vector<DynRefs> dref(ops.size());
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      if (op.kind == Kind::Embed) dref[i].ids = put(op.ids.data(), op.ids.size() * 4);
      if (op.kind == Kind::Upload) dref[i].ids = put(op.host.data(), op.host.size() * 4);
      if (op.kind == Kind::Rope) {
        std::int64_t pos[cuda::kMaxDecodeRows];
        std::vector<std::int64_t> big;
        std::int64_t* p = pos;
        if (op.out->rows > cuda::kMaxDecodeRows) {
          big.resize(static_cast<std::size_t>(op.out->rows));
          p = big.data();
        }
        const auto positions = op.positions();
        std::copy(positions.begin(), positions.end(), p);
        dref[i].pos = put(p, static_cast<std::size_t>(op.out->rows) * 8);
      }
      if (op.kind == Kind::Attend) {
        std::vector<cuda::AttnRow> rows;
        std::vector<std::int64_t> starts;
        for (const Op::Run& run : op.runs) {
          for (std::int64_t r = 0; r < run.rows; ++r) {
            cuda::AttnRow row;
            row.k = run.kv->k(op.layer);
            row.v = run.kv->v(op.layer);
            row.len = static_cast<std::int32_t>(run.start + r + 1);
            row.cap = run.kv->cap;
            row.write_pos = static_cast<std::int32_t>(run.start + r);
            rows.push_back(row);
          }
          starts.push_back(run.start);
        }
        dref[i].rows = put(rows.data(), rows.size() * sizeof(cuda::AttnRow));
        // Each stream's start, for the prefill kernel only. A decode tape's dyn layout must depend on its rows
        // alone (a graph replays for every tape of the same signature, whatever streams share its rows).
        if (op.out->rows > cuda::kMaxDecodeRows) dref[i].start = put(starts.data(), starts.size() * 8);
      }
    }
    return dref;
  }

  void finish(std::vector<Op>& ops) {
    const auto t0 = std::chrono::steady_clock::now();
    stats_.plan_us += std::chrono::duration<double, std::micro>(t0 - flush_start_).count();
    TF_CK(cudaStreamSynchronize(stream_));
    stats_.wait_us += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    for (auto& op : ops) {
      op.out->pending = false;
      op.out->tape_index = -1;
    }
  }

  void flush() {
    if (ops_.empty()) return;
    flush_start_ = std::chrono::steady_clock::now();
    std::vector<Op> ops = std::move(ops_);
    ops_.clear();
    const int n_ops = static_cast<int>(ops.size());
    bool decode = true;
    for (const auto& op : ops)
      if (op.out->rows > cuda::kMaxDecodeRows) decode = false;
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
    if (use_graph) {
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
            build_dyn(ops);
            if (!dyn_.empty()) {
              std::memcpy(dyn_host_, dyn_.data(), dyn_.size());
              TF_CK(cudaMemcpyAsync(dyn_dev_, dyn_host_, dyn_.size(), cudaMemcpyHostToDevice, stream_));
            }
            TF_CK(cudaGraphLaunch(plan.exec, stream_));
            ++stats_.graph_replays;
            stats_.launches = plan.launches;
            finish(ops);
            return;
          }
    }

    // Producer of each pending activation.
    std::unordered_map<const Act*, int> producer;
    for (int i = 0; i < n_ops; ++i) producer[ops[static_cast<std::size_t>(i)].out.get()] = i;
    auto prod = [&](const ActP& a) -> int {
      if (!a) return -1;
      auto it = producer.find(a.get());
      return it == producer.end() ? -1 : it->second;
    };
    // Readers of each op's output, in tape order.
    std::vector<std::vector<int>> readers(static_cast<std::size_t>(n_ops));
    for (int i = 0; i < n_ops; ++i)
      for (const ActP* in : {&ops[static_cast<std::size_t>(i)].a, &ops[static_cast<std::size_t>(i)].b, &ops[static_cast<std::size_t>(i)].c})
        if (int p = prod(*in); p >= 0) readers[static_cast<std::size_t>(p)].push_back(i);

    // 1. fusion
    std::vector<int> absorbed_by(static_cast<std::size_t>(n_ops), -1);  // op -> the op whose step runs it
    std::vector<Step> step_of_leader(static_cast<std::size_t>(n_ops));
    std::vector<bool> is_leader(static_cast<std::size_t>(n_ops), true);
    auto linear_ok = [&](const Op& op) { return op.kind == Kind::Linear && decode && cuda::decode_linear_supported(op.w); };
    auto same_format = [](const WeightView& x, const WeightView& y) {
      return x.cols == y.cols && x.bits == y.bits && x.group == y.group && x.dtype == y.dtype;
    };
    for (int i = 0; i < n_ops; ++i) {
      Op& op = ops[static_cast<std::size_t>(i)];
      if (op.kind == Kind::RmsNorm) {
        const int p = prod(op.a);
        if (p >= 0 && ops[static_cast<std::size_t>(p)].kind == Kind::Add && absorbed_by[static_cast<std::size_t>(p)] < 0 &&
            is_leader[static_cast<std::size_t>(p)] && readers[static_cast<std::size_t>(p)].front() == i) {
          // add(p) + rms_norm(i): one launch at i; p's output is written there as the sum.
          absorbed_by[static_cast<std::size_t>(p)] = i;
          is_leader[static_cast<std::size_t>(p)] = false;
          step_of_leader[static_cast<std::size_t>(i)].type = Step::AddNorm;
          step_of_leader[static_cast<std::size_t>(i)].ops = {i, p};
        }
      }
      if (op.kind == Kind::Attend) {
        // rope(q), rope(k) read only by this attend: one launch rotates both and writes the cache.
        const int rq = prod(op.a), rk = prod(op.b);
        auto U = [](int x) { return static_cast<std::size_t>(x); };
        if (rq >= 0 && rk >= 0 && rq != rk && ops[U(rq)].kind == Kind::Rope && ops[U(rk)].kind == Kind::Rope &&
            is_leader[U(rq)] && is_leader[U(rk)] && step_of_leader[U(rq)].ops.empty() && step_of_leader[U(rk)].ops.empty() &&
            readers[U(rq)].size() == 1 && readers[U(rk)].size() == 1 && !esc[U(rq)] && !esc[U(rk)] &&
            ops[U(rq)].runs == op.runs && ops[U(rk)].runs == op.runs && ops[U(rq)].inv_freq == ops[U(rk)].inv_freq &&
            ops[U(rq)].interleaved == ops[U(rk)].interleaved && ops[U(rq)].head_dim == op.attn.head_dim &&
            ops[U(rk)].head_dim == op.attn.head_dim && ops[U(rq)].heads == op.attn.heads &&
            ops[U(rk)].heads == op.attn.kv_heads) {
          Step st;
          st.type = Step::RopeAttend;
          st.ops = {i, rq, rk};
          for (int o : {rq, rk}) {
            absorbed_by[U(o)] = i;
            is_leader[U(o)] = false;
          }
          step_of_leader[U(i)] = st;
        }
      }
      if (op.kind == Kind::Swiglu && decode) {
        const int g = prod(op.a), u = prod(op.b);
        if (g >= 0 && u >= 0 && g != u && is_leader[static_cast<std::size_t>(g)] && is_leader[static_cast<std::size_t>(u)] &&
            absorbed_by[static_cast<std::size_t>(g)] < 0 && absorbed_by[static_cast<std::size_t>(u)] < 0 &&
            step_of_leader[static_cast<std::size_t>(g)].ops.empty() && step_of_leader[static_cast<std::size_t>(u)].ops.empty() &&
            linear_ok(ops[static_cast<std::size_t>(g)]) && linear_ok(ops[static_cast<std::size_t>(u)]) &&
            ops[static_cast<std::size_t>(g)].a == ops[static_cast<std::size_t>(u)].a &&
            same_format(ops[static_cast<std::size_t>(g)].w, ops[static_cast<std::size_t>(u)].w) &&
            ops[static_cast<std::size_t>(g)].w.rows == ops[static_cast<std::size_t>(u)].w.rows) {
          const int lead = std::min(g, u);
          Step st;
          st.type = Step::SwigluGroup;
          st.ops = {g, u};  // gate first
          st.swiglu_op = i;
          for (int o : {g, u, i}) {
            if (o != lead) {
              absorbed_by[static_cast<std::size_t>(o)] = lead;
              is_leader[static_cast<std::size_t>(o)] = false;
            }
          }
          step_of_leader[static_cast<std::size_t>(lead)] = st;
        }
      }
    }
    // Linears sharing an input (decode): up to 3 per launch, at the first one's place.
    for (int i = 0; i < n_ops; ++i) {
      if (!is_leader[static_cast<std::size_t>(i)] || !step_of_leader[static_cast<std::size_t>(i)].ops.empty()) continue;
      const Op& op = ops[static_cast<std::size_t>(i)];
      if (!linear_ok(op)) continue;
      Step st;
      st.type = Step::LinearGroup;
      st.ops = {i};
      for (int j = i + 1; j < n_ops && st.ops.size() < 3; ++j) {
        const Op& o = ops[static_cast<std::size_t>(j)];
        if (!is_leader[static_cast<std::size_t>(j)] || !step_of_leader[static_cast<std::size_t>(j)].ops.empty()) continue;
        if (linear_ok(o) && o.a == op.a && same_format(o.w, op.w)) {
          st.ops.push_back(j);
          absorbed_by[static_cast<std::size_t>(j)] = i;
          is_leader[static_cast<std::size_t>(j)] = false;
        }
      }
      step_of_leader[static_cast<std::size_t>(i)] = st;
    }
    std::vector<Step> steps;
    std::vector<int> step_index(static_cast<std::size_t>(n_ops), -1);
    for (int i = 0; i < n_ops; ++i) {
      if (!is_leader[static_cast<std::size_t>(i)]) continue;
      Step st = step_of_leader[static_cast<std::size_t>(i)];
      if (st.ops.empty()) st.ops = {i};
      for (int o : st.ops) step_index[static_cast<std::size_t>(o)] = static_cast<int>(steps.size());
      if (st.swiglu_op >= 0) step_index[static_cast<std::size_t>(st.swiglu_op)] = static_cast<int>(steps.size());
      steps.push_back(std::move(st));
    }

    // An rms_norm (with its residual add) read only by one decode linear group of small width is computed
    // inside that group's launch: it moves to the group's step and its normed output is never written.
    if (decode && fuse_norm_) {
      for (int sn = 0; sn < static_cast<int>(steps.size()); ++sn) {
        Step& ns = steps[static_cast<std::size_t>(sn)];
        if (ns.type != Step::AddNorm && !(ns.type == Step::Single && ops[static_cast<std::size_t>(ns.ops[0])].kind == Kind::RmsNorm))
          continue;
        const int ni = ns.ops[0];
        const auto& rd = readers[static_cast<std::size_t>(ni)];
        if (esc[static_cast<std::size_t>(ni)] || rd.empty()) continue;
        const int sg = step_index[static_cast<std::size_t>(rd.front())];
        bool ok = sg > sn;
        for (int r : rd) ok = ok && step_index[static_cast<std::size_t>(r)] == sg;
        const Step& gs = steps[static_cast<std::size_t>(sg)];
        ok = ok && (gs.type == Step::LinearGroup || gs.type == Step::SwigluGroup) && gs.norm_step < 0;
        // The untiled kernel re-reads x per warp, so it fuses only narrow norms; the tiled one, any. Every
        // block of a fused launch reads x (and the residual) twice over and redoes the norm, which costs
        // more than the launch it saves once rows x cols passes ~2k (H200: the 8B shape decodes 198 tok/s
        // unfused vs 187 fused, the 27B's 8-row verify 1.05x vs 1.34x a step; SmolLM2's one row 1,013 vs
        // 919 tok/s fused). Fused and standalone norms give the same bits (norm_part_sum's order).
        const auto& nout = *ops[static_cast<std::size_t>(ni)].out;
        ok = ok && cuda::decode_linear_takes_norm(ops[static_cast<std::size_t>(gs.ops.front())].w);
        ok = ok && nout.rows * nout.cols <= fuse_norm_max_;
        if (ns.type == Step::AddNorm) {  // the residual sum moves to step sg: nobody may read it before
          for (int r : readers[static_cast<std::size_t>(ns.ops[1])])
            if (r != ni && step_index[static_cast<std::size_t>(r)] <= sg) ok = false;
        }
        if (!ok) continue;
        steps[static_cast<std::size_t>(sg)].norm_step = sn;
        ns.dead = true;
        for (int o : ns.ops) step_index[static_cast<std::size_t>(o)] = sg;
      }
    }

    // 2. memory: which outputs are needed, and where they live.
    const int n_steps = static_cast<int>(steps.size());
    std::vector<int> last_use(static_cast<std::size_t>(n_ops), -1);
    for (int i = 0; i < n_ops; ++i)
      for (int r : readers[static_cast<std::size_t>(i)]) {
        // A reader absorbed into its producer's own step reads nothing from memory (the swiglu epilogue).
        if (step_index[static_cast<std::size_t>(r)] == step_index[static_cast<std::size_t>(i)]) continue;
        last_use[static_cast<std::size_t>(i)] = std::max(last_use[static_cast<std::size_t>(i)], step_index[static_cast<std::size_t>(r)]);
      }
    std::vector<bool> escapes(static_cast<std::size_t>(n_ops), false), needed(static_cast<std::size_t>(n_ops), false);
    for (int i = 0; i < n_ops; ++i) {
      escapes[static_cast<std::size_t>(i)] = esc[static_cast<std::size_t>(i)] != 0;
      needed[static_cast<std::size_t>(i)] = escapes[static_cast<std::size_t>(i)] || last_use[static_cast<std::size_t>(i)] >= 0;
    }
    // Outputs that some kernel must write even when nobody reads them.
    for (int i = 0; i < n_ops; ++i) {
      const Op& op = ops[static_cast<std::size_t>(i)];
      const bool optional = op.kind == Kind::Linear && decode && cuda::decode_linear_supported(op.w);
      const bool optional_sum = op.kind == Kind::Add && absorbed_by[static_cast<std::size_t>(i)] >= 0;
      if (!optional && !optional_sum) needed[static_cast<std::size_t>(i)] = true;
    }
    // A norm fused into a linear group is never written (its sum, when needed, is).
    for (const Step& st : steps)
      if (st.dead) needed[static_cast<std::size_t>(st.ops[0])] = false;
    // A fused rope+attend step writes the rotated q (read in the same step) and never the rotated k.
    for (const Step& st : steps)
      if (st.type == Step::RopeAttend) {
        needed[static_cast<std::size_t>(st.ops[1])] = true;
        needed[static_cast<std::size_t>(st.ops[2])] = false;
      }
    // Arena plan: first fit over [def step, last use step] of non-escaping outputs.
    std::vector<std::size_t> offset(static_cast<std::size_t>(n_ops), 0);
    std::size_t arena_need = 0;
    {
      struct Block {
        std::size_t off, size;
      };
      std::vector<Block> live_free;  // free ranges, sorted by offset
      std::size_t top = 0;
      std::vector<std::vector<int>> frees_after(static_cast<std::size_t>(n_steps));
      std::vector<std::vector<int>> defs(static_cast<std::size_t>(n_steps));
      for (int i = 0; i < n_ops; ++i) {
        if (!needed[static_cast<std::size_t>(i)] || escapes[static_cast<std::size_t>(i)]) continue;
        const int d = step_index[static_cast<std::size_t>(i)];
        defs[static_cast<std::size_t>(d)].push_back(i);
        frees_after[static_cast<std::size_t>(std::max(d, last_use[static_cast<std::size_t>(i)]))].push_back(i);
      }
      auto release = [&](std::size_t off, std::size_t size) {
        live_free.push_back({off, size});
        std::sort(live_free.begin(), live_free.end(), [](const Block& x, const Block& y) { return x.off < y.off; });
        std::vector<Block> merged;
        for (const auto& b : live_free) {
          if (!merged.empty() && merged.back().off + merged.back().size == b.off) merged.back().size += b.size;
          else merged.push_back(b);
        }
        live_free = std::move(merged);
      };
      for (int s = 0; s < n_steps; ++s) {
        for (int i : defs[static_cast<std::size_t>(s)]) {
          const std::size_t size = ops[static_cast<std::size_t>(i)].out->bytes();
          bool placed = false;
          for (auto it = live_free.begin(); it != live_free.end(); ++it) {
            if (it->size >= size) {
              offset[static_cast<std::size_t>(i)] = it->off;
              it->off += size;
              it->size -= size;
              if (it->size == 0) live_free.erase(it);
              placed = true;
              break;
            }
          }
          if (!placed) {
            offset[static_cast<std::size_t>(i)] = top;
            top += size;
          }
        }
        for (int i : frees_after[static_cast<std::size_t>(s)]) release(offset[static_cast<std::size_t>(i)], ops[static_cast<std::size_t>(i)].out->bytes());
      }
      arena_need = top;
    }
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

    // 3. dyn block layout and launches.
    std::vector<Launch> launches;
    std::vector<std::uint64_t> key;
    const std::vector<DynRefs> dref = build_dyn(ops);
    std::int64_t max_attn_rows = 0;
    int max_splits = 1, max_heads = 0, max_dim = 0;
    for (const Op& op : ops) {
      if (op.kind == Kind::Attend && op.out->rows <= cuda::kMaxDecodeRows) {
        max_attn_rows = std::max(max_attn_rows, op.out->rows);
        max_splits = std::max(max_splits, op.attn_splits());
        max_heads = std::max(max_heads, op.attn.heads);
        max_dim = std::max(max_dim, op.attn.head_dim);
      }
    }
    if (dyn_.size() > dyn_bytes_) {
      TF_CK(cudaStreamSynchronize(stream_));
      clear_graphs();
      cudaFree(dyn_dev_);
      cudaFreeHost(dyn_host_);
      dyn_bytes_ = align_up(dyn_.size(), 1 << 16);
      TF_CK(cudaMalloc(&dyn_dev_, dyn_bytes_));
      TF_CK(cudaMallocHost(&dyn_host_, dyn_bytes_));
    }
    if (max_attn_rows > 0) {
      const std::size_t work = cuda::decode_attention_work_floats(static_cast<int>(max_attn_rows), max_heads, max_dim, max_splits);
      const std::size_t counters = static_cast<std::size_t>(max_attn_rows) * static_cast<std::size_t>(max_heads);
      if (work * 4 > attn_work_bytes_ || counters * 4 > attn_counter_bytes_) {
        TF_CK(cudaStreamSynchronize(stream_));
        clear_graphs();
        cudaFree(attn_work_);
        cudaFree(attn_counters_);
        attn_work_bytes_ = align_up(std::max(work * 4, attn_work_bytes_), 1 << 20);
        attn_counter_bytes_ = align_up(std::max(counters * 4, attn_counter_bytes_), 4096);
        TF_CK(cudaMalloc(&attn_work_, attn_work_bytes_));
        TF_CK(cudaMalloc(&attn_counters_, attn_counter_bytes_));
        TF_CK(cudaMemset(attn_counters_, 0, attn_counter_bytes_));
      }
    }
    char* dyn_dev = static_cast<char*>(dyn_dev_);
    auto K = [&](std::initializer_list<std::uint64_t> words) { key.insert(key.end(), words); };
    auto P = [](const void* p) { return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p)); };
    auto in_ptr = [&](const ActP& a) -> const float* {
      if (a->ptr == nullptr) throw std::logic_error("CUDA backend: input not materialized");
      return a->ptr;
    };

    // The attention launch of attend op `ia` over query q (the cache is written already).
    auto emit_attention = [&](int ia, const float* q) {
      const Op& at = ops[static_cast<std::size_t>(ia)];
      float* out = at.out->ptr;
      const auto* rows = reinterpret_cast<const cuda::AttnRow*>(dyn_dev + dref[static_cast<std::size_t>(ia)].rows);
      const auto* start = reinterpret_cast<const std::int64_t*>(dyn_dev + dref[static_cast<std::size_t>(ia)].start);
      const std::int64_t n = at.out->rows;
      const AttentionSpec sp = at.attn;
      if (n <= cuda::kMaxDecodeRows) {
        cuda::DecodeAttnArgs da;
        da.q = q;
        da.out = out;
        da.rows = rows;
        da.n_rows = static_cast<int>(n);
        da.heads = sp.heads;
        da.kv_heads = sp.kv_heads;
        da.head_dim = sp.head_dim;
        da.scale = sp.scale;
        da.max_splits = at.attn_splits();
        da.work = static_cast<float*>(attn_work_);
        da.counters = static_cast<unsigned int*>(attn_counters_);
        launches.push_back({[=](cudaStream_t s) { cuda::decode_attention(da, s); }});
      } else {
        // One launch per stream: the prefill kernel attends one cache.
        std::int64_t row = 0;
        for (std::size_t r = 0; r < at.runs.size(); ++r) {
          const Op::Run& run = at.runs[r];
          const std::int64_t at_row = row * at.out->cols;
          cuda::PrefillAttnArgs pa;
          pa.q = q + at_row;
          pa.out = out + at_row;
          pa.k = run.kv->k(at.layer);
          pa.v = run.kv->v(at.layer);
          pa.cap = run.kv->cap;
          pa.start = start + r;
          pa.n_rows = static_cast<int>(run.rows);
          pa.heads = sp.heads;
          pa.kv_heads = sp.kv_heads;
          pa.head_dim = sp.head_dim;
          pa.scale = sp.scale;
          launches.push_back({[=](cudaStream_t s) { cuda::prefill_attention(pa, s); }});
          row += run.rows;
        }
      }
    };
    for (const Step& st : steps) {
      if (st.dead) continue;
      const int i = st.ops.front();
      const Op& op = ops[static_cast<std::size_t>(i)];
      switch (st.type) {
        case Step::AddNorm: {
          const Op& addop = ops[static_cast<std::size_t>(st.ops[1])];
          const float* a = in_ptr(addop.a);
          const float* b = in_ptr(addop.b);
          float* sum = addop.out->ptr;
          float* out = op.out->ptr;
          const float* w = op.norm;
          const std::int64_t rows = op.out->rows, cols = op.out->cols;
          const float eps = op.eps;
          launches.push_back({[=](cudaStream_t s) { cuda::rms_norm(a, b, sum, out, w, rows, cols, eps, s); }});
          std::uint32_t e;
          std::memcpy(&e, &eps, 4);
          K({1, P(a), P(b), P(sum), P(out), P(w), static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols), e});
          break;
        }
        case Step::LinearGroup:
        case Step::SwigluGroup: {
          cuda::DecodeLinearArgs args;
          args.x = st.norm_step >= 0 ? nullptr : in_ptr(op.a);
          args.x_stride = op.a->cols;
          args.rows = static_cast<int>(op.a->rows);
          args.segments = static_cast<int>(st.ops.size());
          for (std::size_t s = 0; s < st.ops.size(); ++s) {
            const Op& o = ops[static_cast<std::size_t>(st.ops[s])];
            args.seg[s].w = o.w;
            args.seg[s].out = o.out->ptr;
            args.seg[s].out_stride = o.out->cols;
          }
          if (st.type == Step::SwigluGroup) {
            const Op& sw = ops[static_cast<std::size_t>(st.swiglu_op)];
            args.swiglu_out = sw.out->ptr;
            args.swiglu_stride = sw.out->cols;
          }
          if (st.norm_step >= 0) {
            const Step& ns = steps[static_cast<std::size_t>(st.norm_step)];
            const Op& nrm = ops[static_cast<std::size_t>(ns.ops[0])];
            args.norm_w = nrm.norm;
            args.norm_eps = nrm.eps;
            if (ns.type == Step::AddNorm) {
              const Op& addop = ops[static_cast<std::size_t>(ns.ops[1])];
              args.x = in_ptr(addop.a);
              args.norm_b = in_ptr(addop.b);
              args.norm_sum = addop.out->ptr;
            } else {
              args.x = in_ptr(nrm.a);
            }
          }
          args.imma_scratch = imma_scratch_;
          args.imma_scratch_bytes = imma_scratch_bytes_;
          launches.push_back({[=](cudaStream_t s) { cuda::decode_linear(args, s); }});
          K({2, P(args.x), static_cast<std::uint64_t>(args.rows), static_cast<std::uint64_t>(args.segments),
             P(args.swiglu_out), P(args.imma_scratch)});
          for (int s = 0; s < args.segments; ++s)
            K({P(args.seg[s].w.data), P(args.seg[s].w.scales), P(args.seg[s].out), static_cast<std::uint64_t>(args.seg[s].w.rows)});
          break;
        }
        case Step::RopeAttend: {
          const Op& rq = ops[static_cast<std::size_t>(st.ops[1])];
          const Op& rk = ops[static_cast<std::size_t>(st.ops[2])];
          const float* qin = in_ptr(rq.a);
          const float* kin = in_ptr(rk.a);
          const float* vin = in_ptr(op.c);
          float* qout = rq.out->ptr;
          const auto* rows = reinterpret_cast<const cuda::AttnRow*>(dyn_dev + dref[static_cast<std::size_t>(i)].rows);
          const auto* pos = reinterpret_cast<const std::int64_t*>(dyn_dev + dref[static_cast<std::size_t>(st.ops[1])].pos);
          const float* inv = rq.inv_freq;
          const bool il = rq.interleaved;
          const std::int64_t n = op.out->rows;
          const AttentionSpec sp = op.attn;
          launches.push_back({[=](cudaStream_t s) {
            cuda::rope_kv_write(qin, kin, vin, qout, rows, pos, inv, il, n, sp.heads, sp.kv_heads, sp.head_dim, s);
          }});
          emit_attention(i, qout);
          break;
        }
        case Step::Single: {
          switch (op.kind) {
            case Kind::Upload: {
              float* out = op.out->ptr;
              // Uploads go through the dyn block (copied before the launches).
              const std::size_t off = dref[static_cast<std::size_t>(i)].ids;
              const std::size_t bytes = op.host.size() * 4;
              launches.push_back({[=](cudaStream_t s) {
                TF_CK(cudaMemcpyAsync(out, dyn_dev + off, bytes, cudaMemcpyDeviceToDevice, s));
              }});
              K({3, P(out), off, bytes});
              break;
            }
            case Kind::Embed: {
              const WeightView w = op.w;
              const auto* ids = reinterpret_cast<const std::int32_t*>(dyn_dev + dref[static_cast<std::size_t>(i)].ids);
              float* out = op.out->ptr;
              const std::int64_t rows = op.out->rows;
              launches.push_back({[=](cudaStream_t s) { cuda::embed(w, ids, rows, out, s); }});
              K({4, P(w.data), P(ids), P(out), static_cast<std::uint64_t>(rows)});
              break;
            }
            case Kind::RmsNorm: {
              const float* a = in_ptr(op.a);
              float* out = op.out->ptr;
              const float* w = op.norm;
              const std::int64_t rows = op.out->rows, cols = op.out->cols;
              const float eps = op.eps;
              launches.push_back({[=](cudaStream_t s) { cuda::rms_norm(a, nullptr, nullptr, out, w, rows, cols, eps, s); }});
              std::uint32_t e;
              std::memcpy(&e, &eps, 4);
              K({5, P(a), P(out), P(w), static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols), e});
              break;
            }
            case Kind::Linear: {
              const float* x = in_ptr(op.a);
              const std::int64_t rows = op.a->rows, xs = op.a->cols;
              const WeightView w = op.w;
              float* out = op.out->ptr;
              if (out == nullptr) break;  // nobody reads it
              launches.push_back({[=](cudaStream_t s) { cuda::prefill_linear(x, xs, rows, w, out, w.rows, s); }});
              K({6, P(x), static_cast<std::uint64_t>(rows), P(w.data), P(out)});
              break;
            }
            case Kind::Add: {
              const float* a = in_ptr(op.a);
              const float* b = in_ptr(op.b);
              float* out = op.out->ptr;
              const std::int64_t n = op.out->rows * op.out->cols;
              launches.push_back({[=](cudaStream_t s) { cuda::add(a, b, out, n, s); }});
              K({7, P(a), P(b), P(out), static_cast<std::uint64_t>(n)});
              break;
            }
            case Kind::Swiglu: {
              const float* a = in_ptr(op.a);
              const float* b = in_ptr(op.b);
              float* out = op.out->ptr;
              const std::int64_t n = op.out->rows * op.out->cols;
              launches.push_back({[=](cudaStream_t s) { cuda::swiglu(a, b, out, n, s); }});
              K({8, P(a), P(b), P(out), static_cast<std::uint64_t>(n)});
              break;
            }
            case Kind::Rope: {
              const float* a = in_ptr(op.a);
              float* out = op.out->ptr;
              const std::int64_t rows = op.out->rows;
              const int heads = op.heads, hd = op.head_dim;
              const auto* pos = reinterpret_cast<const std::int64_t*>(dyn_dev + dref[static_cast<std::size_t>(i)].pos);
              const float* inv = op.inv_freq;
              const bool il = op.interleaved;
              launches.push_back({[=](cudaStream_t s) { cuda::rope(a, out, rows, heads, hd, pos, inv, il, s); }});
              K({9, P(a), P(out), static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(heads),
                 static_cast<std::uint64_t>(hd), P(pos), P(inv), il ? 1u : 0u});
              break;
            }
            case Kind::Attend: {
              const Op& at = op;
              const float* k = in_ptr(at.b);
              const float* v = in_ptr(at.c);
              const auto* rows = reinterpret_cast<const cuda::AttnRow*>(dyn_dev + dref[static_cast<std::size_t>(i)].rows);
              const std::int64_t n = at.out->rows;
              const AttentionSpec sp = at.attn;
              launches.push_back({[=](cudaStream_t s) { cuda::kv_write(rows, k, v, n, sp.kv_heads, sp.head_dim, s); }});
              emit_attention(i, in_ptr(at.a));
              break;
            }
            case Kind::LastRows: {
              const float* a = in_ptr(op.a);
              float* out = op.out->ptr;
              const std::int64_t first = op.first, n = op.out->rows, cols = op.out->cols;
              launches.push_back({[=](cudaStream_t s) { cuda::copy_rows(a, first, n, cols, out, s); }});
              K({13, P(a), P(out), static_cast<std::uint64_t>(first), static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(cols)});
              break;
            }
          }
          break;
        }
      }
    }
    // 4. run
    stats_.launches = static_cast<std::int64_t>(launches.size());
    if (!dyn_.empty()) {
      std::memcpy(dyn_host_, dyn_.data(), dyn_.size());
      TF_CK(cudaMemcpyAsync(dyn_dev_, dyn_host_, dyn_.size(), cudaMemcpyHostToDevice, stream_));
    }
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
      for (auto& l : launches) l.run(stream_);
    }
    finish(ops);
  }

  static constexpr int kMaxGraphs = 64;
  struct Plan {
    std::vector<std::uint64_t> sig;
    std::vector<std::size_t> offset;
    std::vector<bool> needed;
    cudaGraphExec_t exec = nullptr;
    std::int64_t launches = 0;
  };

  std::shared_ptr<Pool> pool_;
  std::size_t weight_bytes_ = 0;
  cudaStream_t stream_ = nullptr;
  bool graphs_ = true;
  // RMSNorm fused into the next decode matmul (one launch less per norm); TF_CUDA_FUSE_NORM=0 turns it off
  // for A/B measurements (docs/benchmarks.md).
  bool fuse_norm_ = [] {
    const char* v = std::getenv("TF_CUDA_FUSE_NORM");
    return v == nullptr || std::string(v) != "0";
  }();
  // The widest norm (rows x cols) fused into a matmul; TF_CUDA_FUSE_NORM_MAX overrides it for A/B runs.
  std::int64_t fuse_norm_max_ = [] {
    const char* v = std::getenv("TF_CUDA_FUSE_NORM_MAX");
    return v != nullptr && *v != 0 ? std::atoll(v) : std::int64_t{2048};
  }();
  CudaBackendStats stats_;
  std::vector<Op> ops_;
  void* arena_ = nullptr;
  std::size_t arena_bytes_ = 0;
  std::vector<char> dyn_;
  void* dyn_dev_ = nullptr;
  void* dyn_host_ = nullptr;
  std::size_t dyn_bytes_ = 0;
  void* stage_ = nullptr;
  void* imma_scratch_ = nullptr;  // the integer matmul's x terms, prepared once per launch (DecodeLinearArgs::imma_scratch)
  std::size_t imma_scratch_bytes_ = 0;
  void* argmax_dev_ = nullptr;  // argmax_rows' ids on the device
  std::size_t argmax_bytes_ = 0;
  std::size_t stage_bytes_ = 0;
  void* attn_work_ = nullptr;
  void* attn_counters_ = nullptr;
  std::size_t attn_work_bytes_ = 0, attn_counter_bytes_ = 0;
  std::map<std::string, float*> rope_tables_;
  std::unordered_map<std::uint64_t, std::vector<Plan>> plans_;
  int plan_count_ = 0;
  std::vector<std::uint64_t> sig_;
  std::chrono::steady_clock::time_point flush_start_;
};

}  // namespace

bool cuda_device_available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

std::unique_ptr<CudaBackend> make_cuda_backend() { return std::make_unique<CudaBackendImpl>(); }

}  // namespace tf
