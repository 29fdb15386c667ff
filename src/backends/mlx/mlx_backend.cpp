#include "backends/mlx/mlx_backend.h"

#include <mlx/mlx.h>

#include "backends/mlx/host_kv_cache.h"
#include "backends/mlx/host_recurrent_state.h"
#include "backends/mlx/host_window_cache.h"
#include "backends/mlx/kernels/gated_delta.h"
#include "backends/mlx/kernels/invariant_attention.h"
#include "backends/mlx/kernels/invariant_matmul.h"
#include "backends/mlx/kernels/mamba2_scan.h"
#include "backends/mlx/kernels/prefill_gemm.h"
#include "backends/mlx/kernels/quantized_matrix.h"
#include "backends/mlx/kernels/row_ops.h"
#include "backends/mlx/mlx_arrays.h"
#include "backends/mlx/mlx_kv_cache.h"
#include "checkpoint/weight_forms.h"

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <stdexcept>

namespace tf {
namespace mx = mlx::core;

namespace {

// A quantized weight on the CPU, in its checkpoint's packing; the kernels in kernels/quantized_matrix.h read it.
struct CpuQuantized final : Tensor::Impl {
  explicit CpuQuantized(QuantizedMatrix m) : matrix(std::move(m)) {}
  QuantizedMatrix matrix;
};

const QuantizedMatrix* cpu_quantized(const DeviceWeight& w) {
  auto* impl = dynamic_cast<CpuQuantized*>(w.data.impl());
  return impl != nullptr ? &impl->matrix : nullptr;
}

// The CPU kernel's shape of a Gated DeltaNet layer.
GatedDeltaShape host_shape(const GatedDeltaSpec& s) {
  return {.k_heads = s.k_heads,
          .v_heads = s.v_heads,
          .k_dim = s.k_dim,
          .v_dim = s.v_dim,
          .conv_kernel = s.conv_kernel,
          .tiled_value_heads = s.tiled_value_heads,
          .channel_decay = s.channel_decay,
          .decay_lower_bound = s.decay_lower_bound};
}

// Calls of up to this many rows (decode, verify windows, shared rounds) take the row-invariant products
// (kernels/), so a row's logits are the same bits alone and inside a window; longer (prefill) chunks take
// the BLAS products (kernels/prefill_gemm.h). Every other op is row-invariant at any row count.
constexpr int kInvariantRows = 16;

// RoPE of one stream's rows [n, heads * head_dim] at positions start ...
mx::array rope_run(const mx::array& a, int heads, int head_dim, std::int64_t start, const RopeSpec& spec) {
  const int n = a.shape(0);
  auto h = mx::transpose(mx::reshape(a, {1, n, heads, head_dim}), {0, 2, 1, 3});  // [1, heads, n, d]
  const int dims = spec.rotary_dims > 0 ? spec.rotary_dims : head_dim;            // partial RoPE: the first dims rotate
  std::optional<mx::array> freqs;
  std::optional<float> base = spec.base;
  if (!spec.freq_factors.empty()) {
    // MLX takes explicit frequencies (as periods); fold the per-pair factors into base^(2i/d) * factor.
    std::vector<float> f(spec.freq_factors.size());
    for (std::size_t i = 0; i < f.size(); ++i)
      f[i] = std::pow(spec.base, 2.0f * static_cast<float>(i) / static_cast<float>(dims)) * spec.freq_factors[i];
    freqs = mx::array(f.begin(), {static_cast<int>(f.size())}, mx::float32);
    base = std::nullopt;
  }
  auto r = mx::fast::rope(h, dims, spec.interleaved, base, 1.0f, static_cast<int>(start), freqs);
  return mx::reshape(mx::transpose(r, {0, 2, 1, 3}), {n, heads * head_dim});
}

// Rows computed on the host. On the CPU every call keeps its activations here from the embedding to the
// logits and every op is a host kernel (kernels/): MLX's graph would add an evaluation round trip to its
// stream thread per op (most of a decode step's time, docs/benchmarks.md), and its CPU elementwise ops
// (exp, sigmoid) were most of a prefill chunk's time besides the products. Metal keeps MLX arrays.
struct HostRows final : Tensor::Impl {
  HostRows(std::int64_t r, std::int64_t c) : rows(r), cols(c), values(static_cast<std::size_t>(r * c)) {}
  std::int64_t rows, cols;
  std::vector<float> values;
};

const HostRows* host_rows(const Tensor& t) { return dynamic_cast<const HostRows*>(t.impl()); }

// New rows and the tensor that holds them.
std::pair<Tensor, float*> new_rows(std::int64_t rows, std::int64_t cols) {
  auto h = std::make_shared<HostRows>(rows, cols);
  float* p = h->values.data();
  return {Tensor(std::move(h)), p};
}

// Any activation as an MLX array (host rows copied into one).
mx::array mlx_of(const Tensor& t) {
  if (const auto* h = host_rows(t)) {
    auto* copy = new float[h->values.size()];
    std::memcpy(copy, h->values.data(), h->values.size() * sizeof(float));
    return adopt(copy, {static_cast<int>(h->rows), static_cast<int>(h->cols)});
  }
  return arr(t);
}

// An activation's values on the host, row-major float32: host rows as they are, an MLX array evaluated.
struct HostView {
  const float* data = nullptr;
  std::int64_t rows = 0, cols = 0;
  std::optional<mx::array> keep;  // the evaluated array `data` points into
};

HostView host_view(const Tensor& t) {
  if (const auto* h = host_rows(t)) return {h->values.data(), h->rows, h->cols, std::nullopt};
  auto a = host_f32(arr(t));
  const float* p = a.data<float>();
  return {p, a.shape(0), a.shape(1), std::move(a)};
}

// A dense float32 weight's values (norm weights and other vectors are held so on the CPU, evaluated at upload).
const float* dense_values(const DeviceWeight& w) { return arr(w.data).data<float>(); }

// One stream's attention on the CPU: writes k, v [n, kv_heads * head_dim] at `start` of its cache, attends
// q over it into out [n, heads * head_dim], each row computed alone (prefill rows as decode rows).
void attend_host(HostKvCache& cache, int layer, const float* q, const float* k, const float* v, std::int64_t n,
                 std::int64_t start, const AttentionSpec& spec, float* out) {
  cache.write(layer, k, v, n, start);
  invariant_attention(q, n, start, cache.keys(layer), cache.values(layer), cache.capacity(layer),
                      AttentionShape{spec.heads, spec.kv_heads, spec.head_dim, spec.scale, 0}, out);
}

// The same for a sliding-window layer, over its window store (which keeps only the positions rows still attend).
void attend_host(HostWindowCache& cache, int layer, const float* q, const float* k, const float* v, std::int64_t n,
                 std::int64_t start, const AttentionSpec& spec, float* out) {
  if (spec.window != cache.window()) throw std::invalid_argument("attend: a window store of another window");
  cache.write(layer, k, v, n, start);
  invariant_attention(q, n, start, cache.keys(layer), cache.values(layer), cache.capacity(layer),
                      AttentionShape{spec.heads, spec.kv_heads, spec.head_dim, spec.scale, spec.window}, out,
                      cache.held_from(layer));
}

// One stream's attention on Metal: writes k, v [n, kv_heads * head_dim] at `start` of its cache, attends q over it.
mx::array attend_run(KvCache& cache, int layer, const mx::array& q, const mx::array& k, const mx::array& v,
                     std::int64_t start, const AttentionSpec& spec) {
  if (spec.window > 0) throw std::logic_error("attend: sliding-window layers run on the MLX CPU path only");
  auto& c = dynamic_cast<MlxKvCache&>(cache);
  const int n = q.shape(0);
  auto heads_first = [n](const mx::array& a, int heads, int d) {
    return mx::transpose(mx::reshape(a, {1, n, heads, d}), {0, 2, 1, 3});
  };
  auto [K, V] =
      c.write(layer, heads_first(k, spec.kv_heads, spec.head_dim), heads_first(v, spec.kv_heads, spec.head_dim), start);
  auto qh = heads_first(q, spec.heads, spec.head_dim);
  auto o = mx::fast::scaled_dot_product_attention(qh, K, V, spec.scale, n > 1 ? "causal" : "");
  return mx::reshape(mx::transpose(o, {0, 2, 1, 3}), {n, spec.heads * spec.head_dim});
}

class MlxBackend final : public Backend {
 public:
  // On the CPU, quantized weights stay in their checkpoint's packing and run on kernels/quantized_matrix.h's
  // row-invariant kernels (MLX's own CPU quantized matmul is tens of times slower than float BLAS and not
  // row-invariant), and decode rows run on host kernels end to end (HostRows). Metal takes MLX's ops.
  MlxBackend() : cpu_(!mx::is_available(mx::Device::gpu)) {}

  std::string name() const override { return "mlx"; }

  DeviceWeight upload(const HostWeight& given) override {
    DeviceWeight d;
    d.rows = given.rows;
    d.cols = given.cols;
    if (cpu_ && given.bits != 0) {
      if (auto q = cpu_matrix(given)) {
        d.bits = q->bits;
        d.group_size = q->group;
        d.bytes = q->bytes();
        d.data = Tensor(std::make_shared<CpuQuantized>(std::move(*q)));
        return d;
      }
    }
    const HostWeight w = portable_weight(given);
    const int rows = static_cast<int>(w.rows), cols = static_cast<int>(w.cols);
    if (w.bits == 0) {
      // Dense weights are held as float32: activations are float32 and MLX's CPU path is fastest there.
      d.data = wrap(mx::astype(from_bytes(w.data, {rows, cols}, mlx_dtype(w.dtype)), mx::float32));
    } else {
      const int groups = cols / w.group_size;
      auto packed = from_bytes(w.data, {rows, cols * w.bits / 32}, mx::uint32);
      auto scales = from_bytes(w.scales, {rows, groups}, mlx_dtype(w.dtype));
      auto biases = from_bytes(w.biases, {rows, groups}, mlx_dtype(w.dtype));
      if (cpu_) {
        // A layout without a CPU kernel (quantized_matrix() says which): dequantized once, in the scales' own
        // type as MLX computes it, then widened to float32 exactly.
        d.data = wrap(mx::astype(mx::dequantize(packed, scales, biases, w.group_size, w.bits), mx::float32));
      } else {
        scales = mx::astype(scales, mx::float32);
        biases = mx::astype(biases, mx::float32);
        d.bits = w.bits;
        d.group_size = w.group_size;
        d.data = wrap(packed);
        d.scales = wrap(scales);
        d.biases = wrap(biases);
      }
    }
    std::vector<mx::array> to_eval = {arr(d.data)};
    if (d.quantized()) to_eval.insert(to_eval.end(), {arr(d.scales), arr(d.biases)});
    mx::eval(to_eval);
    for (const auto& a : to_eval) d.bytes += a.nbytes();
    return d;
  }

  std::unique_ptr<KvCache> new_kv_cache(int layers, int kv_heads, int head_dim) override {
    if (cpu_) return std::make_unique<HostKvCache>(layers, kv_heads, head_dim);
    return std::make_unique<MlxKvCache>(layers, kv_heads, head_dim);
  }

  Tensor embed(const DeviceWeight& table, std::span<const std::int32_t> ids) override {
    const auto n = static_cast<std::int64_t>(ids.size());
    if (const auto* q = cpu_quantized(table)) {
      auto [t, rows] = new_rows(n, q->cols);
      dequantize_rows(*q, ids, rows);
      return t;
    }
    if (cpu_) {
      auto [t, rows] = new_rows(n, table.cols);
      const float* all = dense_values(table);
      for (std::int64_t i = 0; i < n; ++i) {
        const std::int64_t id = ids[static_cast<std::size_t>(i)];
        if (id < 0 || id >= table.rows) throw std::invalid_argument("embed: token id out of range");
        std::memcpy(rows + i * table.cols, all + id * table.cols, static_cast<std::size_t>(table.cols) * sizeof(float));
      }
      return t;
    }
    mx::array idx(ids.begin(), {static_cast<int>(ids.size())}, mx::int32);
    if (!table.quantized()) return wrap(mx::take(arr(table.data), idx, 0));
    auto rows = mx::take(arr(table.data), idx, 0);
    auto s = mx::take(arr(table.scales), idx, 0);
    auto b = mx::take(arr(table.biases), idx, 0);
    return wrap(mx::dequantize(rows, s, b, table.group_size, table.bits));
  }

  Tensor rms_norm(const Tensor& x, const DeviceWeight& weight, float eps) override {
    if (const auto* h = host_rows(x)) {
      auto [t, y] = new_rows(h->rows, h->cols);
      rms_norm_rows(h->values.data(), h->rows, h->cols, dense_values(weight), eps, y);
      return t;
    }
    return wrap(mx::fast::rms_norm(arr(x), mx::reshape(arr(weight.data), {static_cast<int>(weight.cols)}), eps));
  }

  Tensor linear(const Tensor& x, const DeviceWeight& w) override {
    if (cpu_) {
      const HostView in = host_view(x);
      if (in.cols != w.cols) throw std::invalid_argument("linear: shapes");
      auto [out, y] = new_rows(in.rows, w.rows);
      const auto* q = cpu_quantized(w);
      if (in.rows <= kInvariantRows) {
        if (q != nullptr)
          quantized_matmul(in.data, in.rows, *q, y);
        else
          invariant_matmul(in.data, in.rows, dense_values(w), w.rows, w.cols, y);
      } else {
        if (q != nullptr)
          quantized_gemm(in.data, in.rows, *q, y);
        else
          dense_gemm(in.data, in.rows, dense_values(w), w.rows, w.cols, y);
      }
      return out;
    }
    if (!w.quantized()) return wrap(mx::matmul(arr(x), mx::transpose(arr(w.data))));
    return wrap(mx::quantized_matmul(arr(x), arr(w.data), arr(w.scales), arr(w.biases), /*transpose=*/true,
                                     w.group_size, w.bits));
  }

  Tensor add(const Tensor& a, const Tensor& b) override {
    if (const auto* ha = host_rows(a); ha != nullptr && host_rows(b) != nullptr) {
      const auto* hb = host_rows(b);
      if (ha->values.size() != hb->values.size()) throw std::invalid_argument("add: shapes differ");
      auto [t, y] = new_rows(ha->rows, ha->cols);
      add_rows(ha->values.data(), hb->values.data(), static_cast<std::int64_t>(ha->values.size()), y);
      return t;
    }
    return wrap(mx::add(mlx_of(a), mlx_of(b)));
  }

  Tensor swiglu(const Tensor& gate, const Tensor& up) override {
    if (const auto* g = host_rows(gate); g != nullptr && host_rows(up) != nullptr) {
      const auto* u = host_rows(up);
      if (g->values.size() != u->values.size()) throw std::invalid_argument("swiglu: shapes differ");
      auto [t, y] = new_rows(g->rows, g->cols);
      swiglu_rows(g->values.data(), u->values.data(), static_cast<std::int64_t>(g->values.size()), y);
      return t;
    }
    const auto g = mlx_of(gate);
    return wrap(mx::multiply(mx::multiply(g, mx::sigmoid(g)), mlx_of(up)));
  }

  Tensor gelu_tanh_glu(const Tensor& gate, const Tensor& up) override {
    if (const auto* g = host_rows(gate); g != nullptr && host_rows(up) != nullptr) {
      const auto* u = host_rows(up);
      if (g->values.size() != u->values.size()) throw std::invalid_argument("gelu_tanh_glu: shapes differ");
      auto [t, y] = new_rows(g->rows, g->cols);
      gelu_tanh_glu_rows(g->values.data(), u->values.data(), static_cast<std::int64_t>(g->values.size()), y);
      return t;
    }
    const auto g = mlx_of(gate);
    const auto inner =
        mx::multiply(mx::array(0.7978845608028654f),
                     mx::add(g, mx::multiply(mx::array(0.044715f), mx::multiply(g, mx::multiply(g, g)))));
    const auto gelu = mx::multiply(mx::multiply(mx::array(0.5f), g), mx::add(mx::array(1.0f), mx::tanh(inner)));
    return wrap(mx::multiply(gelu, mlx_of(up)));
  }

  Tensor scale(const Tensor& x, float s) override {
    if (const auto* h = host_rows(x)) {
      auto [t, y] = new_rows(h->rows, h->cols);
      for (std::size_t i = 0; i < h->values.size(); ++i) y[i] = h->values[i] * s;
      return t;
    }
    return wrap(mx::multiply(mlx_of(x), mx::array(s)));
  }

  Tensor softcap(const Tensor& x, float cap) override {
    if (const auto* h = host_rows(x)) {
      auto [t, y] = new_rows(h->rows, h->cols);
      for (std::size_t i = 0; i < h->values.size(); ++i) y[i] = cap * std::tanh(h->values[i] / cap);
      return t;
    }
    return wrap(mx::multiply(mx::tanh(mx::divide(mlx_of(x), mx::array(cap))), mx::array(cap)));
  }

  bool has_linear_attention() const override { return true; }

  std::unique_ptr<RecurrentState> new_recurrent_state(int layers, const GatedDeltaSpec& spec) override {
    if (spec.k_heads <= 0 || spec.v_heads % spec.k_heads != 0 || spec.k_dim <= 0 || spec.v_dim <= 0 ||
        spec.conv_kernel < 1)
      throw std::invalid_argument("new_recurrent_state: a Gated DeltaNet shape needs v_heads a multiple of k_heads");
    if (spec.channel_decay && spec.k_heads != spec.v_heads)
      throw std::invalid_argument("new_recurrent_state: a per-channel decay needs as many key heads as value heads");
    const GatedDeltaShape shape = host_shape(spec);
    return std::make_unique<HostRecurrentState>(layers, shape.conv_floats() + shape.state_floats(),
                                                static_cast<std::int64_t>(spec.v_heads) * spec.v_dim);
  }

  bool has_channel_decay() const override { return true; }

  bool has_state_space() const override { return true; }
  // On the CPU only: the window store is host memory (HostWindowCache); Metal's is not written yet.
  bool has_sliding_window() const override { return cpu_; }
  std::unique_ptr<WindowKvCache> new_window_cache(int layers, int kv_heads, int head_dim, int window,
                                                  std::int64_t call_rows) override {
    if (!cpu_) throw std::logic_error("new_window_cache: sliding-window layers run on the MLX CPU path only");
    return std::make_unique<HostWindowCache>(layers, kv_heads, head_dim, window, call_rows);
  }
  std::size_t window_cache_bytes(int layers, int kv_heads, int head_dim, int window,
                                 std::int64_t call_rows) const override {
    return HostWindowCache::steady_bytes(layers, kv_heads, head_dim, window, call_rows);
  }

  std::unique_ptr<RecurrentState> new_mamba2_state(int layers, const Mamba2Spec& spec) override {
    if (spec.heads <= 0 || spec.groups <= 0 || spec.heads % spec.groups != 0 || spec.head_dim <= 0 ||
        spec.state_size <= 0 || spec.conv_kernel < 1)
      throw std::invalid_argument("new_mamba2_state: a Mamba-2 shape needs heads a multiple of groups");
    return std::make_unique<HostRecurrentState>(layers, mamba2_state_floats(spec), spec.inner());
  }

  Tensor mamba2_scan(std::span<const StreamRows> runs, int layer, const Tensor& xbc, const Tensor& dt,
                     const DeviceWeight& conv_weight, const DeviceWeight& conv_bias, const DeviceWeight& a_log,
                     const DeviceWeight& dt_bias, const DeviceWeight& d, const Mamba2Spec& spec) override {
    const HostView x = host_view(xbc), tv = host_view(dt);
    const std::int64_t n = x.rows, C = spec.conv_channels(), H = spec.heads;
    const bool bias = static_cast<bool>(conv_bias.data);
    if (x.cols != C || tv.rows != n || tv.cols != H || conv_weight.rows != C || conv_weight.cols != spec.conv_kernel ||
        (bias && conv_bias.cols != C) || a_log.cols != H || dt_bias.cols != H || d.cols != H)
      throw std::invalid_argument("mamba2_scan: shapes");
    const Mamba2Weights w{dense_values(conv_weight), bias ? dense_values(conv_bias) : nullptr, dense_values(a_log),
                          dense_values(dt_bias), dense_values(d)};
    const auto step = [w, spec](std::span<const HostRecurrentState::Input> in, std::int64_t rows, const float* before,
                                float* after, float* result) {
      mamba2_rows(in[0].data, in[1].data, rows, w, spec, before, after, result);
    };
    auto [out, y] = new_rows(n, spec.inner());
    std::int64_t row = 0;
    for (const auto& run : runs) {
      auto* st = dynamic_cast<HostRecurrentState*>(run.recurrent);
      if (st == nullptr) throw std::invalid_argument("mamba2_scan: a run without a host recurrent state");
      if (row + run.rows > n) throw std::invalid_argument("mamba2_scan: the runs do not cover the rows");
      const HostRecurrentState::Input inputs[] = {{x.data + row * C, C}, {tv.data + row * H, H}};
      st->run(layer, run.start, run.rows, inputs, step, y + row * spec.inner());
      row += run.rows;
    }
    if (row != n) throw std::invalid_argument("mamba2_scan: the runs do not cover the rows");
    return out;
  }

  Tensor rms_norm_groups(const Tensor& x, const DeviceWeight& weight, int groups, float eps) override {
    const HostView in = host_view(x);
    if (groups < 1 || in.cols % groups != 0 || weight.cols != in.cols)
      throw std::invalid_argument("rms_norm_groups: shape");
    const std::int64_t width = in.cols / groups;
    const float* wv = dense_values(weight);
    auto [t, y] = new_rows(in.rows, in.cols);
    for (std::int64_t r = 0; r < in.rows; ++r)
      for (int g = 0; g < groups; ++g) {
        const std::int64_t at = r * in.cols + g * width;
        rms_norm_rows(in.data + at, 1, width, wv + g * width, eps, y + at);
      }
    return t;
  }

  Tensor relu_squared(const Tensor& x) override {
    const HostView in = host_view(x);
    auto [t, y] = new_rows(in.rows, in.cols);
    for (std::int64_t i = 0; i < in.rows * in.cols; ++i) {
      const float v = in.data[i] > 0.0f ? in.data[i] : 0.0f;
      y[i] = v * v;
    }
    return t;
  }

  Tensor rms_norm_heads(const Tensor& x, const DeviceWeight& weight, int heads, float eps) override {
    const int d = static_cast<int>(weight.cols);
    if (const auto* h = host_rows(x)) {
      if (h->cols != static_cast<std::int64_t>(heads) * d) throw std::invalid_argument("rms_norm_heads: shape");
      auto [t, y] = new_rows(h->rows, h->cols);
      rms_norm_rows(h->values.data(), h->rows * heads, d, dense_values(weight), eps, y);
      return t;
    }
    const auto& a = arr(x);
    const int n = a.shape(0);
    if (a.shape(1) != heads * d) throw std::invalid_argument("rms_norm_heads: shape");
    auto y = mx::fast::rms_norm(mx::reshape(a, {n * heads, d}), mx::reshape(arr(weight.data), {d}), eps);
    return wrap(mx::reshape(y, {n, heads * d}));
  }

  Tensor head_columns(const Tensor& x, int heads, int block, int offset, int width) override {
    if (cols_of(x) != static_cast<std::int64_t>(heads) * block || offset < 0 || width < 1 || offset + width > block)
      throw std::invalid_argument("head_columns: shape");
    if (const auto* h = host_rows(x)) {
      auto [t, y] = new_rows(h->rows, static_cast<std::int64_t>(heads) * width);
      for (std::int64_t r = 0; r < h->rows * heads; ++r)
        std::memcpy(y + r * width, h->values.data() + r * block + offset,
                    static_cast<std::size_t>(width) * sizeof(float));
      return t;
    }
    const auto& a = arr(x);
    const int n = a.shape(0);
    auto part = mx::slice(mx::reshape(a, {n, heads, block}), {0, 0, offset}, {n, heads, offset + width});
    return wrap(mx::reshape(mx::contiguous(part), {n, heads * width}));
  }

  Tensor sigmoid_gate(const Tensor& x, const Tensor& gate) override {
    if (const auto* hx = host_rows(x); hx != nullptr && host_rows(gate) != nullptr) {
      const auto* hg = host_rows(gate);
      if (hx->values.size() != hg->values.size()) throw std::invalid_argument("sigmoid_gate: shapes differ");
      auto [t, y] = new_rows(hx->rows, hx->cols);
      sigmoid_gate_rows(hx->values.data(), hg->values.data(), static_cast<std::int64_t>(hx->values.size()), y);
      return t;
    }
    return wrap(mx::multiply(mlx_of(x), mx::sigmoid(mlx_of(gate))));
  }

  bool has_image_inputs() const override { return cpu_; }
  void host_matmul(const float* x, std::int64_t rows, const float* w, std::int64_t out, std::int64_t in,
                   float* y) override {
    // An image's hundreds of patch rows take BLAS (a pure function of x and w on a machine, as prefill chunks).
    if (rows > kInvariantRows)
      dense_gemm(x, rows, w, out, in, y);
    else
      invariant_matmul(x, rows, w, out, in, y);
  }

  Tensor replace_rows(const Tensor& x, std::span<const std::int64_t> rows, std::span<const float> values) override {
    if (!cpu_) throw std::logic_error("replace_rows: image inputs run on the CPU path only");
    const HostView v = host_view(x);
    if (values.size() != rows.size() * static_cast<std::size_t>(v.cols))
      throw std::invalid_argument("replace_rows: values are not one row of x's width per row index");
    auto [t, y] = new_rows(v.rows, v.cols);
    std::memcpy(y, v.data, static_cast<std::size_t>(v.rows * v.cols) * sizeof(float));
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (rows[i] < 0 || rows[i] >= v.rows) throw std::invalid_argument("replace_rows: a row index out of range");
      std::memcpy(y + rows[i] * v.cols, values.data() + i * static_cast<std::size_t>(v.cols),
                  static_cast<std::size_t>(v.cols) * sizeof(float));
    }
    return t;
  }

  Tensor from_host(std::span<const float> values, std::int64_t rows, std::int64_t cols) override {
    if (rows < 1 || cols < 1 || static_cast<std::int64_t>(values.size()) != rows * cols)
      throw std::invalid_argument("from_host: shape");
    if (cpu_) {
      auto [t, y] = new_rows(rows, cols);
      std::memcpy(y, values.data(), values.size() * sizeof(float));
      return t;
    }
    auto* copy = new float[values.size()];
    std::memcpy(copy, values.data(), values.size() * sizeof(float));
    return wrap(adopt(copy, {static_cast<int>(rows), static_cast<int>(cols)}));
  }

  Tensor concat_columns(const Tensor& a, const Tensor& b) override {
    if (rows_of(a) != rows_of(b)) throw std::invalid_argument("concat_columns: row counts differ");
    if (const auto* ha = host_rows(a); ha != nullptr && host_rows(b) != nullptr) {
      const auto* hb = host_rows(b);
      auto [t, y] = new_rows(ha->rows, ha->cols + hb->cols);
      for (std::int64_t r = 0; r < ha->rows; ++r) {
        std::memcpy(y + r * (ha->cols + hb->cols), ha->values.data() + r * ha->cols,
                    static_cast<std::size_t>(ha->cols) * sizeof(float));
        std::memcpy(y + r * (ha->cols + hb->cols) + ha->cols, hb->values.data() + r * hb->cols,
                    static_cast<std::size_t>(hb->cols) * sizeof(float));
      }
      return t;
    }
    return wrap(mx::concatenate({mlx_of(a), mlx_of(b)}, 1));
  }

  Tensor gated_delta(std::span<const StreamRows> runs, int layer, const Tensor& qkv, const Tensor& a, const Tensor& b,
                     const DeviceWeight& conv_weight, const DeviceWeight& a_log, const DeviceWeight& dt_bias,
                     const GatedDeltaSpec& spec) override {
    const HostView x = host_view(qkv), av = host_view(a), bv = host_view(b);
    const std::int64_t n = x.rows;
    const auto C = spec.conv_channels();
    const std::int64_t decays =
        spec.channel_decay ? static_cast<std::int64_t>(spec.v_heads) * spec.k_dim : spec.v_heads;
    if (x.cols != C || av.rows != n || bv.rows != n || av.cols != decays || bv.cols != spec.v_heads ||
        conv_weight.rows != C || conv_weight.cols != spec.conv_kernel || a_log.cols != spec.v_heads ||
        dt_bias.cols != decays || (spec.channel_decay && spec.k_heads != spec.v_heads))
      throw std::invalid_argument("gated_delta: shapes");
    const GatedDeltaWeights w{dense_values(conv_weight), dense_values(a_log), dense_values(dt_bias)};
    const std::int64_t width = static_cast<std::int64_t>(spec.v_heads) * spec.v_dim;
    auto [out, y] = new_rows(n, width);
    const GatedDeltaShape shape = host_shape(spec);
    // The layer's state is [conv window | recurrent state] (the prompt cache's layout).
    const auto step = [w, shape](std::span<const HostRecurrentState::Input> in, std::int64_t rows, const float* before,
                                 float* after, float* result) {
      gated_delta_rows(in[0].data, in[1].data, in[2].data, rows, w, shape, before, before + shape.conv_floats(), after,
                       after + shape.conv_floats(), result);
    };
    const std::int64_t H = spec.v_heads;
    std::int64_t row = 0;
    for (const auto& run : runs) {
      auto* st = dynamic_cast<HostRecurrentState*>(run.recurrent);
      if (st == nullptr) throw std::invalid_argument("gated_delta: a run without a host recurrent state");
      if (row + run.rows > n) throw std::invalid_argument("gated_delta: the runs do not cover the rows");
      const HostRecurrentState::Input inputs[] = {
          {x.data + row * C, C}, {av.data + row * decays, decays}, {bv.data + row * H, H}};
      st->run(layer, run.start, run.rows, inputs, step, y + row * width);
      row += run.rows;
    }
    if (row != n) throw std::invalid_argument("gated_delta: the runs do not cover the rows");
    return out;
  }

  Tensor rms_norm_gated(const Tensor& x, const DeviceWeight& weight, const Tensor& z, int heads, float eps) override {
    const int d = static_cast<int>(weight.cols);
    if (cols_of(x) != static_cast<std::int64_t>(heads) * d || cols_of(z) != static_cast<std::int64_t>(heads) * d)
      throw std::invalid_argument("rms_norm_gated: shape");
    if (const auto* h = host_rows(x); h != nullptr && host_rows(z) != nullptr) {
      auto [t, y] = new_rows(h->rows, h->cols);
      rms_norm_rows(h->values.data(), h->rows * heads, d, dense_values(weight), eps, y);
      swiglu_rows(host_rows(z)->values.data(), y, static_cast<std::int64_t>(h->values.size()), y);  // silu(z) * norm
      return t;
    }
    const auto a = mlx_of(x);
    const int n = a.shape(0);
    auto y = mx::reshape(mx::fast::rms_norm(mx::reshape(a, {n * heads, d}), mx::reshape(arr(weight.data), {d}), eps),
                         {n, heads * d});
    const auto g = mlx_of(z);
    return wrap(mx::multiply(y, mx::multiply(g, mx::sigmoid(g))));
  }

  Tensor rope(const Tensor& x, int heads, int head_dim, std::span<const StreamRows> runs,
              const RopeSpec& spec) override {
    if (const auto* h = host_rows(x)) {
      auto [t, y] = new_rows(h->rows, h->cols);
      std::memcpy(y, h->values.data(), h->values.size() * sizeof(float));
      std::int64_t row = 0;
      for (const auto& run : runs) {
        if (!run.mrope.empty() && run.mrope.size() != static_cast<std::size_t>(3 * run.rows))
          throw std::invalid_argument("rope: a run's M-RoPE positions are not 3 per row");
        rope_rows(y + row * h->cols, run.rows, heads, head_dim, run.start, spec,
                  run.mrope.empty() ? nullptr : run.mrope.data());
        row += run.rows;
      }
      return t;
    }
    return wrap(per_run(arr(x), runs, [&](const mx::array& a, const StreamRows& run) {
      if (!run.mrope.empty()) throw std::logic_error("rope: M-RoPE positions are computed on the CPU path only");
      return rope_run(a, heads, head_dim, run.start, spec);
    }));
  }

  Tensor attend(std::span<const StreamRows> runs, int layer, const Tensor& q, const Tensor& k, const Tensor& v,
                const AttentionSpec& spec) override {
    if (cpu_) {
      const HostView qv = host_view(q), kv = host_view(k), vv = host_view(v);
      const std::int64_t width = static_cast<std::int64_t>(spec.heads) * spec.head_dim, kw = kv.cols;
      auto [out, y] = new_rows(qv.rows, width);
      std::int64_t row = 0;
      for (const auto& run : runs) {
        const float *qr = qv.data + row * qv.cols, *kr = kv.data + row * kw, *vr = vv.data + row * kw;
        if (spec.window > 0)
          attend_host(dynamic_cast<HostWindowCache&>(*run.cache), layer, qr, kr, vr, run.rows, run.start, spec,
                      y + row * width);
        else
          attend_host(dynamic_cast<HostKvCache&>(*run.cache), layer, qr, kr, vr, run.rows, run.start, spec,
                      y + row * width);
        row += run.rows;
      }
      return out;
    }
    if (runs.size() == 1) return wrap(attend_run(*runs[0].cache, layer, arr(q), arr(k), arr(v), runs[0].start, spec));
    std::vector<mx::array> out;
    int row = 0;
    for (const auto& run : runs) {
      const int n = static_cast<int>(run.rows);
      out.push_back(attend_run(*run.cache, layer, row_slice(arr(q), row, n), row_slice(arr(k), row, n),
                               row_slice(arr(v), row, n), run.start, spec));
      row += n;
    }
    return wrap(mx::concatenate(out, 0));
  }

  std::int64_t invariant_rows() const override { return cpu_ ? kInvariantRows : 1; }

  Tensor last_rows(const Tensor& x, std::int64_t n) override {
    if (const auto* h = host_rows(x)) {
      if (n == h->rows) return x;
      auto [t, y] = new_rows(n, h->cols);
      std::memcpy(y, h->values.data() + (h->rows - n) * h->cols, static_cast<std::size_t>(n * h->cols) * sizeof(float));
      return t;
    }
    const auto& a = arr(x);
    const int rows = a.shape(0);
    return wrap(mx::slice(a, {rows - static_cast<int>(n), 0}, {rows, a.shape(1)}));
  }

  std::vector<float> to_host(const Tensor& x) override {
    if (const auto* h = host_rows(x)) return h->values;
    auto a = mx::astype(arr(x), mx::float32);
    a = mx::contiguous(a);
    mx::eval(a);
    const float* p = a.data<float>();
    return std::vector<float>(p, p + a.size());
  }

  void release_cached_memory() override { mx::clear_cache(); }

  // 70% of physical memory: on the Linux CPU arrays live in host RAM, and on Apple silicon Metal shares the
  // same unified memory with the OS (TENSORFOLD_MEMORY_LIMIT_GB overrides it in the engine).
  std::size_t memory_budget_bytes() const override {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0) return 0;
    return static_cast<std::size_t>(static_cast<double>(pages) * static_cast<double>(page) * 0.7);
  }

 private:
  // The weight for the CPU kernels, or nullopt for a layout they do not cover.
  static std::optional<QuantizedMatrix> cpu_matrix(const HostWeight& w) {
    try {
      return quantized_matrix(w);
    } catch (const std::invalid_argument&) {
      if (w.ggml_blocks()) throw;  // every GGUF block type the reader passes on has a kernel
      return std::nullopt;
    }
  }

  static std::int64_t rows_of(const Tensor& t) {
    if (const auto* h = host_rows(t)) return h->rows;
    return arr(t).shape(0);
  }
  static std::int64_t cols_of(const Tensor& t) {
    if (const auto* h = host_rows(t)) return h->cols;
    return arr(t).shape(1);
  }

  bool cpu_;
};

}  // namespace

std::unique_ptr<Backend> make_mlx_backend() { return std::make_unique<MlxBackend>(); }

}  // namespace tf
