#pragma once
// Host-side entry points of the CUDA kernels (one job per .cu file in this folder). Plain C++: no CUDA
// syntax here, so the backend, the tests and the benchmarks include it from ordinary .cpp files.
//
// Activations are float32 [rows, cols] row-major with a row stride in elements. Weights are affine
// group-quantized (MLX layout: uint32 words, codes LSB-first, one bitstream per row; a scale and a bias per
// group; w = scale * q + bias) or dense (f32 / f16 / bf16 elements). Accumulation is float32 everywhere.
// Every kernel here is compiled with -fmad=false and states its fused multiply-adds explicitly, so the
// arithmetic of one row is what the source says, whatever the instantiation or launch shape.
#include <cstddef>
#include <cstdint>

struct CUstream_st;
using cudaStream_t = CUstream_st*;

namespace tf::cuda {

enum class ElemType : int { F32 = 0, F16 = 1, BF16 = 2 };

// While an instance lives, this thread's launches use programmatic dependent launch (the default) or not.
// The tape runner turns it off for prefill tapes: their grids run several waves, and without it a 2k
// prompt prefills 6.5% faster on the 8B shape and 4.8% on the 27B-class one (H200, docs/benchmarks.md),
// while decode needs it (18% slower without). TF_CUDA_PDL=0 turns it off everywhere.
class PdlScope {
 public:
  explicit PdlScope(bool on);
  ~PdlScope();
  PdlScope(const PdlScope&) = delete;
  PdlScope& operator=(const PdlScope&) = delete;

 private:
  bool prev_;
};

std::size_t elem_bytes(ElemType t);

// A weight on the device as the kernels see it: [rows (out), cols (in)].
struct WeightView {
  const void* data = nullptr;    // packed codes (bits > 0) or dense elements of `dtype`
  const void* scales = nullptr;  // [rows, cols / group] of `dtype` (affine only)
  const void* biases = nullptr;
  int bits = 0;                  // 0: dense
  int group = 0;
  ElemType dtype = ElemType::F32;  // dense element type, or the scale/bias type
  std::int64_t rows = 0, cols = 0;
  // Affine codes in the tiled layout of tiled_layout.h (rows padded to 16) rather than MLX's row-major
  // bitstreams: the tensor-core decode kernel needs it; prefill and embedding read either.
  bool tiled = false;
  // The integer streaming kernel's copy of the scales and biases in the tiled order of tiled_layout.h
  // (tiled_scale_index), or null: see tile_scale_bias.
  const void* sb_tiled = nullptr;
};

// ---- linear: y[r, n] = sum_k x[r, k] * w[n, k] ----------------------------------------------------------
// The decode kernel (1..16 rows). Each output element is reduced in an order fixed by the weight's shape
// alone (chunk c of a weight row goes to thread c % T, T a function of cols; a fixed shuffle tree, then the
// warps in order), so a row's result is bit-identical whatever the number of rows in the call.
// Up to 3 weights that read the same x (same cols, bits, group, dtype) run in one launch; with
// `swiglu_out` set, segment 0 is the gate and segment 1 the up projection (same rows) and the kernel also
// writes silu(gate) * up. A segment's `out` may be null (not materialized).
constexpr int kMaxDecodeRows = 16;
struct LinearSegment {
  WeightView w;
  float* out = nullptr;
  std::int64_t out_stride = 0;
};
struct DecodeLinearArgs {
  const float* x = nullptr;
  std::int64_t x_stride = 0;
  int rows = 0;  // 1..16
  LinearSegment seg[3];
  int segments = 1;
  float* swiglu_out = nullptr;
  std::int64_t swiglu_stride = 0;
  // Fused RMSNorm (used for small cols): the kernel's input is rms_norm(x (+ norm_b)) * norm_w, formed per
  // row in the kernel (a fixed-order sum of squares per row); the first warp of the grid also writes
  // x + norm_b to norm_sum (the residual stream) when it is set. norm_b/norm_sum share x's stride.
  const float* norm_w = nullptr;
  const float* norm_b = nullptr;
  float* norm_sum = nullptr;
  float norm_eps = 0.0f;
  // Device scratch of decode_linear_scratch_bytes(weight) bytes, or null: with it, the integer tensor-core
  // kernel prepares x once for the launch (a small kernel first) instead of once per block (same bits).
  // Launches on one stream may share it.
  void* imma_scratch = nullptr;
  std::size_t imma_scratch_bytes = 0;
  // The integer kernel's x terms are in imma_scratch already (rms_norm_imma_prepare wrote them): no prepare
  // launch, and x is not read.
  bool x_prepared = false;
  // With the SwiGLU epilogue (swiglu_prepare_fusable): the next matmul's x terms (groups of 64) made from
  // swiglu_out are also written here, a scratch other than imma_scratch (this launch reads that one); the
  // next matmul runs with x_prepared on it. swiglu_out is written all the same.
  void* swiglu_prepare = nullptr;
  std::size_t swiglu_prepare_bytes = 0;
};
// The widest input for which decode_linear fuses an RMSNorm into an untiled weight (every warp re-reads its
// rows of x); tiled weights on the bf16 tensor-core kernel fuse it at any width (once per block).
constexpr std::int64_t kMaxFusedNormCols = 2048;
bool decode_linear_supported(const WeightView& w);
// Whether decode_linear can compute an RMSNorm of x in its prologue for this weight: tiled weights on the
// bf16 tensor-core kernel, untiled ones up to kMaxFusedNormCols; never the integer tensor-core kernel
// (tiled 4-bit, groups of 32/64, K > kMaxFusedNormCols), whose x terms are made per warp.
bool decode_linear_takes_norm(const WeightView& w);
// The scratch a decode_linear call of this weight can use (DecodeLinearArgs::imma_scratch); 0: none.
std::size_t decode_linear_scratch_bytes(const WeightView& w);
// An RMSNorm (with its residual add) read only by a decode_linear of weight w on the integer tensor-core
// kernel, in a call of at most kMaxImmaNormRows rows, can write that matmul's x terms itself
// (rms_norm_imma_prepare): one launch instead of two, the same bits. More rows: every block of the fused
// kernel reads whole rows for the norm, which costs more than the launch it saves.
constexpr int kMaxImmaNormRows = 4;
// The integer kernel streams a weight's scales and biases from a tiled copy (tiled_layout.h,
// tiled_scale_index: per 16-row tile and group, [r][s_r, b_r, s_r+8, b_r+8] for r = 0..7), so that a lane
// loads its rows' four values at once and a tile's run along K is contiguous. Its size in bytes for this
// weight (0: the weight is not on the integer kernel), and the copy made on the device from the row-major
// scales and biases into `out` (padding rows take the last real row's values, as the kernels read them).
std::size_t tiled_scale_bias_bytes(const WeightView& w);
void tile_scale_bias(const WeightView& w, void* out, cudaStream_t s);
bool imma_norm_fusable(const WeightView& w, std::int64_t rows, std::int64_t cols);
// Whether a decode_linear of gate/up weights `gate` with the SwiGLU epilogue, in a call of `rows` rows, can
// write the x terms of the decode_linear of weight `down` that reads its swiglu_out (and nothing else does):
// both on the integer kernel, `down` in groups of 64, gate rows a multiple of 64 (whole pairs a block). The
// streaming kernel's blocks then hold four units (64 outputs) and prepare their pair after their stores:
// one launch a layer fewer, the same bits (the same prepare function on the same float values); other
// launches of it run the prepare kernel after the matmul. TF_CUDA_SWIGLU_PREPARE=0 turns it off (A/B).
bool swiglu_prepare_fusable(const WeightView& gate, const WeightView& down, std::int64_t rows);
// sum_out = a + b (when asked), and the x terms of rms_norm(a + b) * weight for the integer kernel in
// imma_scratch (groups of `group`), instead of the normed rows; then decode_linear with x_prepared. The
// norm is rms_norm's (norm_part_sum order), so the terms are those decode_linear would make from its output.
void rms_norm_imma_prepare(const float* a, const float* b, float* sum_out, const float* weight, int rows,
                           std::int64_t cols, float eps, int group, void* imma_scratch, std::size_t scratch_bytes,
                           cudaStream_t s);
void decode_linear(const DecodeLinearArgs& a, cudaStream_t s);
// The number of threads that share one weight row in decode_linear (a function of the weight shape only).
int decode_linear_threads(const WeightView& w);

// The prefill GEMM (any number of rows; tiled, float32 accumulation, weights dequantized into shared
// memory). Not row-invariant across row counts, and need not be: the chunk plan fixes its shapes.
void prefill_linear(const float* x, std::int64_t x_stride, std::int64_t rows, const WeightView& w, float* y,
                    std::int64_t y_stride, cudaStream_t s);
// The prefill GEMM on the bf16 tensor cores (prefill_linear_mma.cu) for affine 2/4/8-bit weights (groups of
// 32/64/128, K a multiple of 64): x as bf16 terms and each group's sum of them (in `scratch`,
// prefill_mma_scratch_bytes), the codes as bf16 integers, scale and bias once a group in float32. The first
// choice for prefill rows; TF_CUDA_PREFILL_MMA=0 leaves them to the kernels below (A/B runs).
// Bf16: one term, x rounded once to bf16 (one tensor-core pass); TwoTerms: hi = bf16(x) and lo = bf16(x - hi),
// 16 significant bits (two passes). tf::PromptPrecision's Bf16 and Full (backends/prompt_precision.h).
enum class PrefillX { Bf16, TwoTerms };
bool prefill_linear_mma_takes(const WeightView& w);
std::size_t prefill_mma_scratch_bytes(std::int64_t rows, std::int64_t cols);
void prefill_linear_mma(const float* x, std::int64_t x_stride, std::int64_t rows, const WeightView& w, float* y,
                        std::int64_t y_stride, void* scratch, std::size_t scratch_bytes, PrefillX x_terms,
                        cudaStream_t s);
// The A/B baseline of the bf16 GEMM (taken only with TF_CUDA_PREFILL_MMA=0): the prefill GEMM on the
// integer tensor cores (prefill_linear_imma.cu) for the weights the integer decode
// kernel takes: x's terms go to `scratch` (prefill_imma_scratch_bytes), then the decode kernels' arithmetic
// and summation order, so every row gets the bits a decode or verify call would give it.
// TF_CUDA_PREFILL_IMMA=0 keeps every weight on prefill_linear (A/B runs).
bool prefill_linear_imma_takes(const WeightView& w);
std::size_t prefill_imma_scratch_bytes(std::int64_t rows, std::int64_t cols);
void prefill_linear_imma(const float* x, std::int64_t x_stride, std::int64_t rows, const WeightView& w, float* y,
                         std::int64_t y_stride, void* scratch, std::size_t scratch_bytes, cudaStream_t s);

// ---- elementwise and norms --------------------------------------------------------------------------
// out = rms_norm(a (+ b)) * weight; when b is set, also sum_out = a + b (the residual stream).
void rms_norm(const float* a, const float* b, float* sum_out, float* out, const float* weight, std::int64_t rows,
              std::int64_t cols, float eps, cudaStream_t s);
void add(const float* a, const float* b, float* out, std::int64_t n, cudaStream_t s);
void swiglu(const float* gate, const float* up, float* out, std::int64_t n, cudaStream_t s);
// Copies rows [first, first + n) of x [*, cols] into out [n, cols].
void copy_rows(const float* x, std::int64_t first, std::int64_t n, std::int64_t cols, float* out, cudaStream_t s);
// out [*, cols] row rows[j] = values[j * cols ..) for j < n (an image's embeddings over its placeholder rows);
// the other rows of out are left as they are.
void scatter_rows(const float* values, const std::int32_t* rows, std::int64_t n, std::int64_t cols, float* out,
                  cudaStream_t s);
// out = x * sigmoid(gate), elementwise (output-gated attention).
void sigmoid_gate(const float* x, const float* gate, float* out, std::int64_t n, cudaStream_t s);
// out [rows, heads * width]: columns offset .. offset + width - 1 of each of the `heads` blocks of `block`
// columns of x [rows, heads * block].
void head_columns(const float* x, float* out, std::int64_t rows, int heads, int block, int offset, int width,
                  cudaStream_t s);
// out [rows, a_cols + b_cols]: each row of a, then the same row of b.
void concat_columns(const float* a, std::int64_t a_cols, const float* b, std::int64_t b_cols, float* out,
                    std::int64_t rows, cudaStream_t s);

// ---- embedding: out[r] = dequantized row ids[r] of the table (ids on the device) --------------------------
void embed(const WeightView& table, const std::int32_t* ids, std::int64_t rows, float* out, cudaStream_t s);

// ---- RoPE ---------------------------------------------------------------------------------------------
// Rotates x [rows, heads * head_dim] by positions pos[r] (on the device). Only each head's first `rotary`
// dims turn (partial RoPE: Qwen3.5 turns a quarter of them), the rest are copied; inv_freq[i] (device,
// rotary/2 values) is the angle per position of pair i, freq factors folded in. Pairs (2i, 2i+1) when
// interleaved, else (i, i + rotary/2).
// M-RoPE (mrope.axes == 3): pos holds (t, h, w) for each row and pair i turns with h where i % 3 == 1 and
// i < 3 * mrope.h, with w where i % 3 == 2 and i < 3 * mrope.w, else with t (RopeSpec::mrope_section).
struct MropeSections {
  int axes = 1;  // 1: one position a row; 3: (t, h, w)
  int h = 0, w = 0;
};
void rope(const float* x, float* out, std::int64_t rows, int heads, int head_dim, int rotary, const std::int64_t* pos,
          const float* inv_freq, bool interleaved, cudaStream_t s, MropeSections mrope = {});

// ---- Gated DeltaNet (Qwen3.5's linear-attention layers; gated_delta.cu) ---------------------------------
// A layer's shape: value heads share key heads in consecutive groups; the conv spans conv_kernel positions.
struct GdnShape {
  int k_heads = 0, v_heads = 0, k_dim = 0, v_dim = 0, conv_kernel = 4;
  // Value head h reads key head h % k_heads (llama.cpp's GGUF files tile the value heads over the key heads),
  // else h / (v_heads / k_heads) (the checkpoints' order).
  bool tiled_value_heads = false;
  constexpr std::int64_t channels() const { return 2LL * k_heads * k_dim + static_cast<std::int64_t>(v_heads) * v_dim; }
  bool operator==(const GdnShape& o) const {  // written out: the CUDA files compile as C++17
    return k_heads == o.k_heads && v_heads == o.v_heads && k_dim == o.k_dim && v_dim == o.v_dim &&
           conv_kernel == o.conv_kernel && tiled_value_heads == o.tiled_value_heads;
  }
};
constexpr int kGdnMaxConv = 8;
// Whether the kernels take this shape (k_dim 16, 32, 64 or 128: a lane holds a state column in registers; conv_kernel 1..8; v_heads a multiple
// of k_heads).
bool gdn_supported(const GdnShape& s);
// One row slot of a call: the run of one stream that starts at this row (`rows` > 0), or nothing (0; the
// run's later rows). Given for every row, so the grid is a function of the call's row count alone and a
// graph replays whatever streams share its rows. The state is read from the *_in buffers and left in the
// *_out ones (other buffers: the state before the call stays intact for a rollback). `save`, when set,
// receives the run's inputs for a replay: qkv rows at save[t * channels], a at save[save_rows * channels
// + t * v_heads], b after a's save_rows rows.
struct GdnRow {
  const float* conv_in = nullptr;  // [conv_kernel - 1, channels], oldest input first
  float* conv_out = nullptr;
  const float* state_in = nullptr;  // [v_heads, k_dim, v_dim]
  float* state_out = nullptr;
  float* save = nullptr;
  std::int32_t rows = 0;
  std::int32_t save_rows = 0;
};
// The causal depthwise conv and SiLU: y [n, channels] from qkv [n, channels] (conv_w [channels,
// conv_kernel] of conv_t), a thread per channel walking its run's rows in order.
void gdn_conv(const GdnRow* rows, std::int64_t n, const float* qkv, const void* conv_w, ElemType conv_t,
              const GdnShape& s, float* y, cudaStream_t st);
// The recurrence over y's q|k|v (q, k L2-normalised per key head, q also by k_dim^-0.5), beta =
// sigmoid(b), decay = exp(-exp(a_log) * softplus(a + dt_bias)); per value head S = decay S,
// S += k (beta (v - S^T k))^T, out = S^T q: out [n, v_heads * v_dim]. A warp per (row slot, value head, 32
// columns of S), its columns in registers, the run's rows in order: a row's bits depend on the state before
// it and its inputs alone, whatever the call (prefill, decode, verify, replay).
void gdn_recurrence(const GdnRow* rows, std::int64_t n, const float* y, const float* a, const float* b,
                    const float* a_log, const float* dt_bias, const GdnShape& s, float* out, cudaStream_t st);

// ---- KV cache and attention -------------------------------------------------------------------------
// One query row's view of its stream's cache for one layer: K and V are [kv_heads, cap, head_dim] float32.
struct AttnRow {
  float* k = nullptr;
  float* v = nullptr;
  std::int32_t len = 0;  // positions this row attends over (0 .. len - 1)
  std::int32_t cap = 0;
  std::int32_t write_pos = 0;  // where kv_write stores this row's k and v
  // The position of the first row of this row's stream in the call (its rows are consecutive in the call,
  // at consecutive positions new_from, new_from + 1, ...). Read only by decode_attention with k_new set.
  std::int32_t new_from = 0;
};
// Stores k, v [rows, kv_heads * head_dim] at rows[r].write_pos.
void kv_write(const AttnRow* rows, const float* k, const float* v, std::int64_t n_rows, int kv_heads, int head_dim,
              cudaStream_t s);

// RoPE of q and k fused with kv_write: q_out = rope(q); the cache of rows[r] gets rope(k[r]) and v[r] at
// rows[r].write_pos. The same rotation as rope(), bit for bit. The backend uses it for prefill calls only
// (decode_attention with k_new does the same for decode calls).
void rope_kv_write(const float* q, const float* k, const float* v, float* q_out, const AttnRow* rows,
                   const std::int64_t* pos, const float* inv_freq, bool interleaved, std::int64_t n_rows, int heads,
                   int kv_heads, int head_dim, cudaStream_t s);

// Decode attention: each query row attends over its own cache, split along the cache into splits of
// attn_split_size(len, kv_heads) positions (a function of the row's own length), the splits combined in
// split order by a second kernel; the result of a row depends on its query, its cache and its length
// only. `max_splits` sizes the grid (decode_attention_max_splits(cap, kv_heads) over the rows); blocks past a
// row's splits exit. One block serves all the query heads of a kv head (keys and values read once per kv
// head). `work` holds max_splits partials per (row, head).
//
// With k_new set (at most kMaxDecodeRows rows) the kernel also does rope_kv_write's job, one launch instead
// of two: q is the raw query, rotated in the kernel at pos[r]; positions new_from .. len - 1 of a row (its
// stream's rows in this call) are read from the raw k_new / v_new rows, the keys rotated at their rows'
// positions, instead of from the cache; and the cache of rows[r] gets rope(k_new[r]) and v_new[r] at
// write_pos. Output and cache equal rope_kv_write + decode_attention bit for bit (the rotation is
// rope_math.cuh's in both). Rows must then have len = write_pos + 1, their stream's rows consecutive.
//
// The split size: a decode step reads a few MB of cache a layer, and one SM streams only ~25 GB/s of it
// (H200, session 9), so the cache is spread over about kAttnTargetBlocks blocks (all SMs once) rather than
// over fixed 64-position splits (a 27B-class layer at 300 positions had used 20 SMs). Splits stay between
// kAttnMinSplit positions (short caches: fewer partials to combine) and kAttnMaxSplit (long caches: the
// block's registers). The size is a function of len, so a row's bits are the same alone, in a verify call
// and after a resume: every exact path attends a position at the same length.
// (Plain constexpr: the kernels call them too, through --expt-relaxed-constexpr.)
constexpr int kAttnMaxSplit = 64, kAttnMinSplit = 16, kAttnTargetBlocks = 128;
constexpr int attn_split_size(int len, int kv_heads) {
  const int target = (kAttnTargetBlocks + kv_heads - 1) / kv_heads;  // splits a row aims at
  const int s = (len + target - 1) / target;
  return s < kAttnMinSplit ? kAttnMinSplit : s > kAttnMaxSplit ? kAttnMaxSplit : s;
}
// The splits of a row of `len` positions.
constexpr int attn_split_count(int len, int kv_heads) {
  const int s = attn_split_size(len, kv_heads);
  return (len + s - 1) / s;
}
// An upper bound of attn_split_count(len) over 1 <= len <= cap: ceil(cap / 64) past 64 splits
// of the target, else at most the target (and at most ceil(cap / 16)).
constexpr int decode_attention_max_splits(int cap, int kv_heads) {
  const int target = (kAttnTargetBlocks + kv_heads - 1) / kv_heads;
  const int by_max = (cap + kAttnMaxSplit - 1) / kAttnMaxSplit, by_min = (cap + kAttnMinSplit - 1) / kAttnMinSplit;
  const int small = target < by_min ? target : by_min;
  return by_max > small ? by_max : small;
}
struct DecodeAttnArgs {
  const float* q = nullptr;  // [rows, heads * head_dim]
  float* out = nullptr;      // [rows, heads * head_dim]
  const AttnRow* rows = nullptr;
  int n_rows = 0, heads = 0, kv_heads = 0, head_dim = 0;
  float scale = 1.0f;
  int max_splits = 1;
  float* work = nullptr;      // n_rows * heads * max_splits * (head_dim + 2) floats
  // The fused RoPE and cache write (null k_new: q is rotated already and the cache written).
  const float* k_new = nullptr;       // raw k [rows, kv_heads * head_dim]
  const float* v_new = nullptr;       // v [rows, kv_heads * head_dim]
  const std::int64_t* pos = nullptr;  // RoPE position of each row (device)
  const float* inv_freq = nullptr;    // head_dim / 2 angles per position (rope())
  bool interleaved = false;
  // The next matmul's x terms (attention_prepare_fusable): with prepare_x set, the combine kernel also
  // writes every row's output as the integer kernel's terms (groups of 64 when prepare_g64, else 32) into
  // this scratch; that matmul then runs with DecodeLinearArgs::x_prepared. `out` is written all the same.
  void* prepare_x = nullptr;
  std::size_t prepare_bytes = 0;
  bool prepare_g64 = true;
};
void decode_attention(const DecodeAttnArgs& a, cudaStream_t s);
// Whether a decode attention with these heads can write the x terms of the decode_linear of weight w that
// reads its output (and nothing else does): w on the integer kernel, K = heads * head_dim, whole pairs of 64
// in a head. One launch a layer fewer (the prepare kernel), the same bits (the same prepare function on
// the same float values). TF_CUDA_ATTN_PREPARE=0 turns it off (A/B runs).
bool attention_prepare_fusable(const WeightView& w, int heads, int head_dim);
// Sets kernel attributes (shared memory limits) once; the backend calls it before any graph capture.
void prepare_decode_attention();
std::size_t decode_attention_work_floats(int n_rows, int heads, int head_dim, int max_splits);

// Prefill attention (flash-style, causal, GQA) for one stream: query row i (position start + i) attends
// over cache positions 0 .. start + i. K/V [kv_heads, cap, head_dim]; `start` on the device.
struct PrefillAttnArgs {
  const float* q = nullptr;
  float* out = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  int cap = 0;
  const std::int64_t* start = nullptr;
  int n_rows = 0, heads = 0, kv_heads = 0, head_dim = 0;
  float scale = 1.0f;
};
void prefill_attention(const PrefillAttnArgs& a, cudaStream_t s);

// ---- sampling (the engine's sample_token on the device) -------------------------------------------------
struct SampleArgs {
  float temperature = 1.0f;
  int top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  std::uint64_t seed = 0;
  std::int64_t position = 0;
};
// Each row's token (sampler.h's sample_token under its args, bit for bit; temperature <= 0: greedy_token) into
// out_dev[rows]; asynchronous, no allocation, one launch per 64 rows (sample.cu).
void sample_rows(const float* logits, std::int64_t rows, std::int64_t vocab, const SampleArgs* args, std::int32_t* out_dev,
                 cudaStream_t s);
// The same into `out_host`, synchronously (tests).
void sample_tokens(const float* logits, std::int64_t rows, std::int64_t vocab, const SampleArgs* args,
                   std::int32_t* out_host, cudaStream_t s);
// Each row's greedy token (sampler.h's greedy_token, bit for bit) into out_dev[rows]; asynchronous
// (greedy.cu). `scratch`: greedy_rows_scratch_bytes(rows) of device memory, zeroed before its first use and
// left as found; one launch at a time may use it.
std::size_t greedy_rows_scratch_bytes(std::int64_t rows);
void greedy_rows(const float* logits, std::int64_t rows, std::int64_t vocab, std::int32_t* out_dev, void* scratch,
                 cudaStream_t s);
// Gumbel noise for (seed, position, token) computed on the device, for bit-exactness tests.
void gumbel_noise_device(std::uint64_t seed, std::int64_t position, const std::int32_t* tokens_dev, std::int64_t n,
                         double* out_dev, cudaStream_t s);

// ---- misc -------------------------------------------------------------------------------------------
void convert_to_f32(const void* in, ElemType t, float* out, std::int64_t n, cudaStream_t s);
void fill_random_bits(void* p, std::size_t bytes, std::uint64_t seed, cudaStream_t s);
// Fills n elements of type t with uniform values in [lo, hi).
void fill_random_uniform(void* p, ElemType t, std::int64_t n, float lo, float hi, std::uint64_t seed, cudaStream_t s);

}  // namespace tf::cuda
