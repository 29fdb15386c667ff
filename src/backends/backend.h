#pragma once
// The small set of tensor operations a model family's forward pass is written against (ARCHITECTURE §2).
// Each backend (src/backends/mlx, src/backends/cuda) implements it with its own kernels. Activations are
// float32 [rows, features] matrices; weights are uploaded once from backend-neutral HostWeights.
#include <unistd.h>

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backends/prompt_precision.h"
#include "backends/state_image.h"
#include "backends/token_choice.h"
#include "checkpoint/host_weight.h"

namespace tf {

// A backend-owned tensor. Cheap to copy (shared handle); the backend knows what is inside.
class Tensor {
 public:
  struct Impl {
    virtual ~Impl() = default;
  };
  Tensor() = default;
  explicit Tensor(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  Impl* impl() const { return impl_.get(); }
  explicit operator bool() const { return impl_ != nullptr; }

 private:
  std::shared_ptr<Impl> impl_;
};

// A weight on the device: dense, or affine group-quantized (w = scale * q + bias per group).
struct DeviceWeight {
  Tensor data;            // dense values, or packed codes
  Tensor scales, biases;  // affine only
  int bits = 0;           // 0: dense
  int group_size = 0;
  std::int64_t rows = 0, cols = 0;  // logical [out, in]
  std::size_t bytes = 0;            // memory it holds, where the backend says (0: estimated from the shape)
  bool quantized() const { return bits != 0; }
};

// How tensor parallelism (backends/tensor_parallel/) divides a weight among its ranks. A block says it where it
// loads the weight; a backend of one rank uploads the whole weight whatever it says.
struct WeightSplit {
  enum class Kind {
    Whole,    // every rank holds all of it (norms, embeddings, the output projection)
    Outputs,  // each rank holds a part of the output features (rows; a 1-D weight's values): its heads
    Inputs,   // each rank holds a part of the input features (columns); the ranks' products are summed
  };
  // Outputs: the output features as consecutive sections (q, k and v of a fused projection), each divided into
  // equal consecutive parts, rank r taking part r of every section. `unit` is a section's rows per head: a
  // part that would cut a head is refused. rows 0: the section is the whole weight.
  struct Section {
    std::int64_t rows = 0, unit = 1;
  };
  Kind kind = Kind::Whole;
  std::vector<Section> sections;
  static WeightSplit outputs(std::int64_t unit = 1) { return {Kind::Outputs, {{0, unit}}}; }
  static WeightSplit outputs(std::vector<Section> sections) { return {Kind::Outputs, std::move(sections)}; }
  static WeightSplit inputs() { return {Kind::Inputs, {}}; }
};

struct RopeSpec {
  float base = 10000.0f;
  bool interleaved = false;         // pairs (2i, 2i+1) as in GGUF's permuted llama weights; else (i, i + d/2)
  std::vector<float> freq_factors;  // optional per-pair divisors (llama3 rope scaling, rope_freqs.weight)
  // Partial RoPE: only each head's first `rotary_dims` dimensions rotate (pairs within them), the rest pass
  // through; frequencies are base^(-2i/rotary_dims). 0: the whole head.
  int rotary_dims = 0;
  // M-RoPE (Qwen2/3-VL, Qwen3.5): where a run carries 3-D positions (StreamRows::mrope), rotary frequency i
  // turns with the row's height position when i % 3 == 1 and i < 3 * mrope_section[1], with its width position
  // when i % 3 == 2 and i < 3 * mrope_section[2], else with its temporal one (transformers' interleaved layout).
  // Runs without 3-D positions rotate by start + row as always (text alone: the three are equal).
  std::array<int, 3> mrope_section{0, 0, 0};
};

struct AttentionSpec {
  int heads = 0, kv_heads = 0, head_dim = 0;
  float scale = 1.0f;  // usually 1/sqrt(head_dim)
  // Sliding-window attention: a query at position p attends positions p - window + 1 .. p only (transformers'
  // sliding_window). 0: every earlier position.
  int window = 0;
};

// What one stream keeps for a group of layers of one kind, held where the backend computes. Layers of a
// kind are numbered 0.. within their store (a model's layer plan maps its layers onto them); a forward
// writes them in that order, and the store's length follows its last layer.
class StateStore {
 public:
  virtual ~StateStore() = default;
  virtual std::int64_t length() const = 0;  // positions consumed (all layers agree after a forward)
  // Back to `length`, which may be any position from the start of the last forward call on (a verify
  // window's rejected rows); the state is then bit for bit what running only the first `length` positions
  // would have left. Attention caches can go back further; recurrent states only into a last call of at
  // most 16 rows (a decode step or a verify window: longer ones, prefill chunks, keep no inputs to replay).
  virtual void truncate(std::int64_t length) = 0;
  virtual std::size_t bytes() const = 0;  // memory held
  // The state at its length as bytes, and back (the prompt cache; a restored store continues exactly as the
  // one saved). restore() throws std::invalid_argument for bytes of another shape.
  virtual std::vector<std::uint8_t> snapshot() const = 0;
  virtual void restore(std::span<const std::uint8_t> bytes) = 0;
  // The same as an image kept where the backend computes (state_image.h; the default: snapshot()'s bytes),
  // and back from one; restore_image() takes any image of this shape, its own kind without the host.
  virtual std::shared_ptr<const StateImage> image() const { return std::make_shared<HostStateImage>(snapshot()); }
  virtual void restore_image(const StateImage& image) { restore_from_bytes(*this, image); }
};

// Keys and values of a stream's attention layers (`layers` of kv_heads x head_dim), one row per position.
// Truncation is how drafts roll back.
class KvCache : public StateStore {};

// Keys and values of a stream's sliding-window attention layers: only the positions a later row can still attend
// (the last window - 1) and the current call's rows, so a fixed size whatever the stream's length. It rolls back
// inside its last call only (as a RecurrentState does) and a snapshot holds the last window - 1 positions.
class WindowKvCache : public KvCache {};

// The shape of a Gated DeltaNet mixer (Qwen3-Next / Qwen3.5): value heads share key heads, v_heads / k_heads
// each; the causal conv spans `conv_kernel` positions of the q|k|v projection. Hugging Face checkpoints group
// the value heads by key head (value head h reads key head h / (v_heads / k_heads)); llama.cpp's GGUF files
// tile them (value head h reads key head h % k_heads: convert_hf_to_gguf reorders the value heads' rows and
// columns so that ggml broadcasts the key heads), `tiled_value_heads`.
struct GatedDeltaSpec {
  int k_heads = 0, v_heads = 0, k_dim = 0, v_dim = 0, conv_kernel = 4;
  bool tiled_value_heads = false;
  // Kimi delta attention (blocks/kda.h): one decay per key channel, from a and dt_bias of v_heads * k_dim values
  // (k_heads == v_heads): log-decay g = decay_lower_bound * sigmoid(exp(a_log) * (a + dt_bias)) where the bound
  // is negative, else -exp(a_log) * softplus(a + dt_bias). Only where Backend::has_channel_decay().
  bool channel_decay = false;
  float decay_lower_bound = 0.0f;
  std::int64_t conv_channels() const { return 2LL * k_heads * k_dim + static_cast<std::int64_t>(v_heads) * v_dim; }
  // One layer's recurrent bytes: float32 state [v_heads, k_dim, v_dim] and the last conv_kernel - 1 inputs.
  std::size_t layer_bytes() const {
    return 4 * (static_cast<std::size_t>(v_heads) * k_dim * v_dim +
                static_cast<std::size_t>(conv_kernel - 1) * conv_channels());
  }
};

// Conv windows and recurrent states of a stream's linear-attention layers: a fixed size whatever the length.
class RecurrentState : public StateStore {};

// The shape of a Mamba-2 selective state-space mixer (families-and-formats §1.4): `heads` heads of `head_dim`
// channels (inner = heads * head_dim), B and C in `groups` groups of `state_size` shared by consecutive heads,
// a causal depthwise conv of `conv_kernel` positions over x|B|C, and dt clamped to [dt_min, dt_max].
struct Mamba2Spec {
  int heads = 0, head_dim = 0, groups = 1, state_size = 0, conv_kernel = 4;
  float dt_min = 0.0f, dt_max = std::numeric_limits<float>::infinity();
  std::int64_t inner() const { return static_cast<std::int64_t>(heads) * head_dim; }
  std::int64_t conv_channels() const { return inner() + 2LL * groups * state_size; }
  // One layer's recurrent bytes: float32 state [heads, head_dim, state_size] and the last conv_kernel - 1 inputs.
  std::size_t layer_bytes() const {
    return 4 * (static_cast<std::size_t>(inner()) * static_cast<std::size_t>(state_size) +
                static_cast<std::size_t>(conv_kernel - 1) * static_cast<std::size_t>(conv_channels()));
  }
};

// One stream's rows inside a call: `rows` consecutive rows at positions start .. start + rows - 1 of the
// stream's state (`cache` for attention layers, `recurrent` for linear-attention ones; rope reads neither).
// Runs follow each other in the call's row order.
struct StreamRows {
  KvCache* cache = nullptr;
  std::int64_t start = 0;
  std::int64_t rows = 0;
  RecurrentState* recurrent = nullptr;
  KvCache* window_cache = nullptr;  // the sliding-window layers' store, where the model has such layers
  // Blocks that keep their state on the host (blocks/host_row_log.h: sparse attention, n-gram embeddings) find
  // it here, and the run's token ids (the n-gram windows hash them).
  StateStore* host_rows = nullptr;
  std::span<const std::int32_t> tokens;
  // Empty, or the rows' M-RoPE positions (t, h, w) x rows: rope turns by these instead of start + row (a
  // stream with images: families/stream_images.h).
  std::span<const std::int32_t> mrope;
};

// Greedy ids the device may still be computing (Backend::argmax_rows_async). A later step's embedding can
// read them where they are (Backend::embed of DeviceIds), so the device runs step t + 1 while the host is
// still on its way to token t: no idle gap between greedy steps.
class DeviceIds {
 public:
  virtual ~DeviceIds() = default;
  virtual std::int64_t rows() const = 0;
  // Waits for the ids (argmax_rows' values, bit for bit) and returns them.
  virtual const std::vector<std::int32_t>& get() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;

  virtual DeviceWeight upload(const HostWeight& w) = 0;
  // upload() of a weight that tensor parallelism divides as `split` says (one rank: the whole weight).
  virtual DeviceWeight upload_split(const HostWeight& w, const WeightSplit& /*split*/) { return upload(w); }
  virtual std::unique_ptr<KvCache> new_kv_cache(int layers, int kv_heads, int head_dim) = 0;
  // Whether this backend runs the linear-attention ops below (new_recurrent_state, gated_delta,
  // rms_norm_gated); families that need them refuse other backends at load.
  virtual bool has_linear_attention() const { return false; }
  virtual std::unique_ptr<RecurrentState> new_recurrent_state(int /*layers*/, const GatedDeltaSpec& /*spec*/) {
    throw std::logic_error("new_recurrent_state: this backend has no linear-attention layers");
  }
  // Whether gated_delta takes GatedDeltaSpec::channel_decay (Kimi delta attention).
  virtual bool has_channel_decay() const { return false; }

  // [n, cols] rows of `table` for `ids` (dequantized when quantized).
  virtual Tensor embed(const DeviceWeight& table, std::span<const std::int32_t> ids) = 0;
  virtual Tensor rms_norm(const Tensor& x, const DeviceWeight& weight, float eps) = 0;
  // x [n, in] times w^T -> [n, out]
  virtual Tensor linear(const Tensor& x, const DeviceWeight& w) = 0;
  virtual Tensor add(const Tensor& a, const Tensor& b) = 0;
  virtual Tensor swiglu(const Tensor& gate, const Tensor& up) = 0;  // silu(gate) * up
  // gelu(gate) * up with GELU's tanh approximation (Gemma's MLPs and experts).
  virtual Tensor gelu_tanh_glu(const Tensor& /*gate*/, const Tensor& /*up*/) {
    throw std::logic_error("gelu_tanh_glu: not on this backend");
  }
  // x * s (Gemma's embedding scale and per-layer scalars).
  virtual Tensor scale(const Tensor& /*x*/, float /*s*/) { throw std::logic_error("scale: not on this backend"); }
  // cap * tanh(x / cap) (final logit soft-capping).
  virtual Tensor softcap(const Tensor& /*x*/, float /*cap*/) { throw std::logic_error("softcap: not on this backend"); }
  // ---- ops of Mamba-2 and mixture-of-experts layers (where has_state_space(); the defaults throw)
  // Whether this backend runs the ops below (new_mamba2_state, mamba2_scan, rms_norm_groups, relu_squared);
  // families that need them refuse other backends at load.
  virtual bool has_state_space() const { return false; }
  // Whether this backend runs sliding-window attention (AttentionSpec::window, over new_window_cache's store)
  // and gelu_tanh_glu, scale and softcap: Gemma 4's ops.
  virtual bool has_sliding_window() const { return false; }
  // The store of `layers` sliding-window layers attending `window` positions, sized for calls of up to
  // `call_rows` rows (the family's prefill chunk; longer calls grow it).
  virtual std::unique_ptr<WindowKvCache> new_window_cache(int /*layers*/, int /*kv_heads*/, int /*head_dim*/,
                                                          int /*window*/, std::int64_t /*call_rows*/) {
    throw std::logic_error("new_window_cache: this backend has no sliding-window attention");
  }
  // What new_window_cache's store holds once calls of up to call_rows rows have filled its window.
  virtual std::size_t window_cache_bytes(int /*layers*/, int /*kv_heads*/, int /*head_dim*/, int /*window*/,
                                         std::int64_t /*call_rows*/) const {
    return 0;
  }
  virtual std::unique_ptr<RecurrentState> new_mamba2_state(int /*layers*/, const Mamba2Spec& /*spec*/) {
    throw std::logic_error("new_mamba2_state: this backend has no Mamba-2 layers");
  }
  // The Mamba-2 scan over each run's rows, in position order, continuing runs[r].recurrent's `layer`:
  // xbc [n, conv_channels] (before the conv), dt [n, heads]. Per position: depthwise causal conv (conv_weight
  // [conv_channels, conv_kernel], plus conv_bias [conv_channels] where it has values) over the last conv_kernel
  // inputs, SiLU, x|B|C split; per head dt' = clamp(softplus(dt + dt_bias), dt_min, dt_max), A = -exp(a_log),
  // S = exp(dt' A) S + dt' x B^T, y = S C + d x. Returns [n, inner]. Each row is computed the same whatever rows
  // share the call.
  virtual Tensor mamba2_scan(std::span<const StreamRows> /*runs*/, int /*layer*/, const Tensor& /*xbc*/,
                             const Tensor& /*dt*/, const DeviceWeight& /*conv_weight*/,
                             const DeviceWeight& /*conv_bias*/, const DeviceWeight& /*a_log*/,
                             const DeviceWeight& /*dt_bias*/, const DeviceWeight& /*d*/, const Mamba2Spec& /*spec*/) {
    throw std::logic_error("mamba2_scan: not on this backend");
  }
  // RMSNorm of each of `groups` equal consecutive column groups of x [n, cols], times weight [cols].
  virtual Tensor rms_norm_groups(const Tensor& /*x*/, const DeviceWeight& /*weight*/, int /*groups*/, float /*eps*/) {
    throw std::logic_error("rms_norm_groups: not on this backend");
  }
  // max(x, 0)^2, elementwise (Nemotron's MLPs and experts).
  virtual Tensor relu_squared(const Tensor& /*x*/) { throw std::logic_error("relu_squared: not on this backend"); }
  // ---- ops of gated attention and linear-attention layers (where has_linear_attention(); the defaults throw)
  // RMSNorm of each head's `head_dim` values of x [n, heads * head_dim], times weight [head_dim] (q/k norms).
  virtual Tensor rms_norm_heads(const Tensor& /*x*/, const DeviceWeight& /*weight*/, int /*heads*/, float /*eps*/) {
    throw std::logic_error("rms_norm_heads: not on this backend");
  }
  // Columns offset .. offset + width - 1 of each of the `heads` blocks of `block` columns of x, as
  // [n, heads * width] (a query and its output gate interleaved per head, say).
  virtual Tensor head_columns(const Tensor& /*x*/, int /*heads*/, int /*block*/, int /*offset*/, int /*width*/) {
    throw std::logic_error("head_columns: not on this backend");
  }
  // x * sigmoid(gate), elementwise (output-gated attention).
  virtual Tensor sigmoid_gate(const Tensor& /*x*/, const Tensor& /*gate*/) {
    throw std::logic_error("sigmoid_gate: not on this backend");
  }
  // ---- ops of image inputs (vision; the defaults throw)
  // x with row rows[i] replaced by values[i * cols .. (i + 1) * cols) (an image's embeddings at its placeholder
  // tokens' rows).
  virtual Tensor replace_rows(const Tensor& /*x*/, std::span<const std::int64_t> /*rows*/,
                              std::span<const float> /*values*/) {
    throw std::logic_error("replace_rows: this backend takes no image inputs");
  }
  // Whether rope takes StreamRows::mrope positions and replace_rows works here.
  virtual bool has_image_inputs() const { return false; }
  // y [rows, out] = x [rows, in] . w [out, in]^T on host memory, with the backend's host kernels (an image
  // encoder's products: blocks/vision_tower.h); a pure function of x and w. Only where has_image_inputs().
  virtual void host_matmul(const float* /*x*/, std::int64_t /*rows*/, const float* /*w*/, std::int64_t /*out*/,
                           std::int64_t /*in*/, float* /*y*/) {
    throw std::logic_error("host_matmul: this backend takes no image inputs");
  }
  // ---- ops of draft heads (MTP; the defaults throw)
  // [rows, cols] float32 from host values, row-major (hidden rows a forward returned, fed to a draft head).
  virtual Tensor from_host(std::span<const float> /*values*/, std::int64_t /*rows*/, std::int64_t /*cols*/) {
    throw std::logic_error("from_host: not on this backend");
  }
  // [n, a_cols + b_cols]: each row of a followed by the same row of b.
  virtual Tensor concat_columns(const Tensor& /*a*/, const Tensor& /*b*/) {
    throw std::logic_error("concat_columns: not on this backend");
  }
  // Gated DeltaNet over each run's rows, in position order, continuing runs[r].recurrent's `layer`:
  // qkv [n, conv_channels] (before the conv), a and b [n, v_heads] (a [n, v_heads * k_dim] with channel_decay,
  // each key channel its own decay as GatedDeltaSpec says). Per position: depthwise causal conv
  // (conv_weight [conv_channels, conv_kernel]) over the last conv_kernel inputs, SiLU, q|k|v split, q and k
  // L2-normalised per head (q also scaled by k_dim^-0.5), beta = sigmoid(b), decay = exp(-exp(a_log) *
  // softplus(a + dt_bias)); per value head S = decay * S, S += k (beta (v - S^T k))^T, out = S^T q.
  // Returns [n, v_heads * v_dim]. Each row is computed the same whatever rows share the call.
  virtual Tensor gated_delta(std::span<const StreamRows> /*runs*/, int /*layer*/, const Tensor& /*qkv*/,
                             const Tensor& /*a*/, const Tensor& /*b*/, const DeviceWeight& /*conv_weight*/,
                             const DeviceWeight& /*a_log*/, const DeviceWeight& /*dt_bias*/,
                             const GatedDeltaSpec& /*spec*/) {
    throw std::logic_error("gated_delta: not on this backend");
  }
  // RMSNorm of each head's values of x [n, heads * d] times weight [d], times silu(z) (the GDN output norm).
  virtual Tensor rms_norm_gated(const Tensor& /*x*/, const DeviceWeight& /*weight*/, const Tensor& /*z*/, int /*heads*/,
                                float /*eps*/) {
    throw std::logic_error("rms_norm_gated: not on this backend");
  }
  // Rotates x [n, heads * head_dim]: the rows of each run in turn, run r's rows at absolute positions
  // runs[r].start .. start + rows - 1 (one run for one stream; one per stream in a shared round).
  virtual Tensor rope(const Tensor& x, int heads, int head_dim, std::span<const StreamRows> runs,
                      const RopeSpec& spec) = 0;
  // Each run's rows of q, k, v [n, heads * head_dim] belong to one stream: its k and v are written into
  // `layer` of runs[r].cache at positions start.., and its queries attend causally over that cache's
  // positions 0 .. start + rows - 1. A row's result depends on its own stream only. Returns [n, heads * head_dim].
  virtual Tensor attend(std::span<const StreamRows> runs, int layer, const Tensor& q, const Tensor& k, const Tensor& v,
                        const AttentionSpec& spec) = 0;
  // Calls with at most this many rows compute every row with the same bits whatever the rows beside it
  // (decode and verify kernels; longer calls may take faster prefill paths). 1: no such guarantee.
  virtual std::int64_t invariant_rows() const { return 1; }
  // Whether this backend has a prompt path whose precision set_prompt_precision() chooses (prompt_precision.h),
  // and which is in force; a backend without one computes prompt rows as it always does.
  virtual bool has_prompt_precision() const { return false; }
  virtual void set_prompt_precision(PromptPrecision /*p*/) {
    throw std::logic_error("set_prompt_precision: this backend has no prompt path to choose");
  }
  virtual PromptPrecision prompt_precision() const { return PromptPrecision::Full; }
  // The last `n` rows of x.
  virtual Tensor last_rows(const Tensor& x, std::int64_t n) = 0;
  // Evaluates x and copies it to the host as float32, row-major.
  virtual std::vector<float> to_host(const Tensor& x) = 0;
  // Whether argmax_rows runs where the tensors live (then greedy decoding moves ids, not logits, to the host).
  virtual bool has_argmax_rows() const { return false; }
  // Each row's greedy token: the first index of its largest value, NaNs never winning and a NaN at index 0
  // giving 0 (the engine's greedy_token, bit for bit). Only where has_argmax_rows().
  virtual std::vector<std::int32_t> argmax_rows(const Tensor& /*x*/) {
    throw std::logic_error("argmax_rows: this backend leaves greedy sampling to the host");
  }
  // Whether argmax_rows_async and embedding DeviceIds work here.
  virtual bool has_device_ids() const { return false; }
  // argmax_rows queued without waiting: the ids stay on the device until get().
  virtual std::shared_ptr<DeviceIds> argmax_rows_async(const Tensor& /*x*/) {
    throw std::logic_error("argmax_rows_async: this backend has no device ids");
  }
  // Whether sample_rows_async works here (then sampled decoding moves ids, not logits, to the host too).
  virtual bool has_sample_rows() const { return false; }
  // Each row's token under its TokenChoice (token_choice.h), chosen where the logits live, queued without
  // waiting: one launch for every row of a shared round or a verify window.
  virtual std::shared_ptr<DeviceIds> sample_rows_async(const Tensor& /*x*/, std::span<const TokenChoice> /*rows*/) {
    throw std::logic_error("sample_rows_async: this backend leaves sampling to the host");
  }
  // [ids.rows(), cols] rows of `table` for ids still on the device, read there: the same values as embed of
  // ids.get() (an id out of range reads row 0; argmax ids never are).
  virtual Tensor embed(const DeviceWeight& /*table*/, const std::shared_ptr<DeviceIds>& /*ids*/) {
    throw std::logic_error("embed: this backend has no device ids");
  }
  // Gives memory the backend keeps for reuse (freed buffers it caches) back to the system; the engine calls it
  // when no stream runs, so that an idle server returns to its idle footprint.
  virtual void release_cached_memory() {}
  // The memory this process may use for weights and streams together (ARCHITECTURE §5), asked after the
  // weights are loaded. The default is 70% of physical memory: a backend computing in host memory shares it
  // with the OS and other processes.
  virtual std::size_t memory_budget_bytes() const {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0) return 0;
    return static_cast<std::size_t>(static_cast<double>(pages) * static_cast<double>(page) * 0.7);
  }
};

}  // namespace tf
