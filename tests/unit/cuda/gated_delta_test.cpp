// Gated DeltaNet on the GPU (kernels/gated_delta.cu, cuda_recurrent_state.cpp) and the small ops of Qwen3.5's
// layers through the CUDA backend: the kernels against the CPU recurrence (backends/mlx/kernels/gated_delta.cpp,
// compiled into this target), the bits of a row whatever the call (one call, one row a call, two streams), the
// kept inputs and their replay, and the backend's recurrent state (rollback by replay, snapshot and restore).
// Runs only on a machine with a GPU.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "backends/mlx/kernels/gated_delta.h"
#include "cuda_test_util.h"

namespace tf::cuda::test {
namespace {

// Relative error (max |diff| / max |ref|) allowed against the CPU recurrence: the same float32 steps, in
// other summation orders (warp butterflies) and with the device's expf / log1pf.
constexpr double kGdnTol = 1e-4;

struct GdnCase {
  const char* name;
  GdnShape s;
};
std::vector<GdnCase> gdn_cases() {
  return {{"tiny", {2, 4, 32, 32, 4}},
          {"27b", {16, 48, 128, 128, 4}},
          {"vdim40", {2, 4, 64, 40, 4}},        // v_dim not a multiple of 32: a partial warp of columns
          {"tiled", {2, 6, 32, 32, 4, true}}};  // value heads tiled over the key heads (llama.cpp's GGUF order)
}

std::int64_t conv_floats(const GdnShape& s) { return static_cast<std::int64_t>(s.conv_kernel - 1) * s.channels(); }
std::int64_t state_floats(const GdnShape& s) { return static_cast<std::int64_t>(s.v_heads) * s.k_dim * s.v_dim; }
std::int64_t out_cols(const GdnShape& s) { return static_cast<std::int64_t>(s.v_heads) * s.v_dim; }
std::size_t sz(std::int64_t n) { return static_cast<std::size_t>(n); }
GatedDeltaShape cpu_shape(const GdnShape& s) {
  GatedDeltaShape c{s.k_heads, s.v_heads, s.k_dim, s.v_dim, s.conv_kernel};
  c.tiled_value_heads = s.tiled_value_heads;
  return c;
}

// max |got - ref| / max |ref|; a non-finite value in got gives +inf.
double max_rel(const float* got, const float* ref, std::size_t n) {
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double g = static_cast<double>(got[i]), r = static_cast<double>(ref[i]);
    if (!std::isfinite(g)) return INFINITY;
    num = std::max(num, std::abs(g - r));
    den = std::max(den, std::abs(r));
  }
  return num / std::max(den, 1e-30);
}
double max_rel(const std::vector<float>& got, const std::vector<float>& ref) {
  if (got.size() != ref.size()) return INFINITY;
  return max_rel(got.data(), ref.data(), got.size());
}
bool same(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && same_bits(a.data(), b.data(), a.size());
}
// Rows [first, first + n) of a [*, cols] matrix.
std::vector<float> rows_of(const std::vector<float>& m, std::int64_t cols, std::int64_t first, std::int64_t n) {
  return {m.begin() + first * cols, m.begin() + (first + n) * cols};
}

// A layer's parameters: conv [channels, conv_kernel] (the values the kernels see: rounded to bf16 first when
// stored as bf16), a_log and dt_bias [v_heads].
struct GdnParams {
  ElemType conv_t = ElemType::F32;
  std::vector<float> conv, a_log, dt_bias;
  std::vector<std::uint8_t> conv_bytes;  // conv as conv_t elements
};
GdnParams make_params(const GdnShape& s, ElemType t) {
  GdnParams p;
  p.conv_t = t;
  p.conv = random_floats(sz(s.channels() * s.conv_kernel), -0.5f, 0.5f);
  if (t == ElemType::BF16)
    for (auto& x : p.conv) x = bf16_to_f32(f32_to_bf16(x));
  p.conv_bytes = encode(p.conv, t);
  p.a_log = random_floats(sz(s.v_heads), -1.0f, 1.0f);
  p.dt_bias = random_floats(sz(s.v_heads), -1.0f, 1.0f);
  return p;
}
struct DevParams {
  DevBuf<std::uint8_t> conv;
  DevBuf<float> a_log, dt_bias;
  ElemType t;
  explicit DevParams(const GdnParams& p) : conv(p.conv_bytes), a_log(p.a_log), dt_bias(p.dt_bias), t(p.conv_t) {}
};

// One run's inputs: qkv [n, channels] before the conv, a and b [n, v_heads].
struct GdnInputs {
  std::int64_t n = 0;
  std::vector<float> qkv, a, b;
};
GdnInputs make_inputs(const GdnShape& s, std::int64_t n) {
  GdnInputs in;
  in.n = n;
  in.qkv = random_floats(sz(n * s.channels()), -1.0f, 1.0f);
  in.a = random_floats(sz(n * s.v_heads), -2.0f, 2.0f);
  in.b = random_floats(sz(n * s.v_heads), -2.0f, 2.0f);
  return in;
}
struct DevInputs {
  DevBuf<float> qkv, a, b;
  explicit DevInputs(const GdnInputs& in) : qkv(in.qkv), a(in.a), b(in.b) {}
};

// A stream's state: the conv window [conv_kernel - 1, channels] (past qkv inputs, oldest first) and the
// recurrent state [v_heads, k_dim, v_dim].
struct GdnState {
  std::vector<float> conv, state;
};
GdnState make_state(const GdnShape& s) {
  return {random_floats(sz(conv_floats(s)), -1.0f, 1.0f), random_floats(sz(state_floats(s)), -0.1f, 0.1f)};
}
struct DevState {
  DevBuf<float> conv, state;
  explicit DevState(const GdnShape& s) : conv(sz(conv_floats(s))), state(sz(state_floats(s))) {
    conv.poison();
    state.poison();
  }
  DevState(const GdnShape& s, const GdnState& h) : DevState(s) { set(h); }
  void set(const GdnState& h) {
    conv.upload(h.conv);
    state.upload(h.state);
  }
  GdnState get() const { return {conv.download(), state.download()}; }
};

// The row slot of a run that reads its state from `in` and leaves it in `out`.
GdnRow slot(const DevState& in, DevState& out, std::int64_t rows, float* save = nullptr, int save_rows = 0) {
  GdnRow r;
  r.conv_in = in.conv.p;
  r.conv_out = out.conv.p;
  r.state_in = in.state.p;
  r.state_out = out.state.p;
  r.save = save;
  r.rows = static_cast<std::int32_t>(rows);
  r.save_rows = save_rows;
  return r;
}

// One call of the two kernels over the row slots `rows` (one per row of the call): qkv, a, b and out on the
// device, [rows.size(), *]. Waits for the kernels.
void run_gdn(const std::vector<GdnRow>& rows, const float* qkv, const float* a, const float* b, const DevParams& p,
             const GdnShape& s, float* out) {
  const auto n = static_cast<std::int64_t>(rows.size());
  DevBuf<GdnRow> drows(rows);
  DevBuf<float> y(sz(n * s.channels()));
  y.poison();
  gdn_conv(drows.p, n, qkv, p.conv.p, p.t, s, y.p, nullptr);
  gdn_recurrence(drows.p, n, y.p, a, b, p.a_log.p, p.dt_bias.p, s, out, nullptr);
  ck(cudaDeviceSynchronize(), "gated delta kernels");
}

// The kernels over one run of in.n rows from `start`: its outputs and the state after it.
struct RunResult {
  std::vector<float> out;
  GdnState end;
};
RunResult run_one(const GdnShape& s, const DevParams& p, const GdnState& start, const GdnInputs& in) {
  DevState from(s, start), to(s);
  DevInputs d(in);
  DevBuf<float> out(sz(in.n * out_cols(s)));
  out.poison();
  std::vector<GdnRow> rows(sz(in.n));
  rows[0] = slot(from, to, in.n);
  run_gdn(rows, d.qkv.p, d.a.p, d.b.p, p, s, out.p);
  return {out.download(), to.get()};
}

// The CPU recurrence over the same run.
RunResult run_cpu(const GdnShape& s, const GdnParams& p, const GdnState& start, const GdnInputs& in) {
  RunResult r;
  r.out.assign(sz(in.n * out_cols(s)), 0.0f);
  r.end.conv.assign(sz(conv_floats(s)), 0.0f);
  r.end.state.assign(sz(state_floats(s)), 0.0f);
  const GatedDeltaWeights w{p.conv.data(), p.a_log.data(), p.dt_bias.data()};
  gated_delta_rows(in.qkv.data(), in.a.data(), in.b.data(), in.n, w, cpu_shape(s), start.conv.data(),
                   start.state.data(), r.end.conv.data(), r.end.state.data(), r.out.data());
  return r;
}

// ---- 1. the kernels against the CPU recurrence ------------------------------------------------------------

TEST(CudaGatedDelta, KernelsMatchCpuRecurrence) {
  TF_NEED_GPU();
  for (const auto& c : gdn_cases()) {
    ASSERT_TRUE(gdn_supported(c.s)) << c.name;
    for (ElemType t : {ElemType::F32, ElemType::BF16}) {
      const char* tn = t == ElemType::F32 ? "f32" : "bf16";
      const GdnParams hp = make_params(c.s, t);
      const DevParams p(hp);
      double worst_out = 0.0, worst_conv = 0.0, worst_state = 0.0;
      for (std::int64_t n : {1, 3, 16, 40}) {
        SCOPED_TRACE(std::string(c.name) + " conv " + tn + " rows " + std::to_string(n));
        const GdnState start = make_state(c.s);
        const GdnInputs in = make_inputs(c.s, n);
        DevState from(c.s, start), to(c.s);
        DevInputs d(in);
        DevBuf<float> out(sz(n * out_cols(c.s)));
        out.poison();
        std::vector<GdnRow> rows(sz(n));
        rows[0] = slot(from, to, n);
        run_gdn(rows, d.qkv.p, d.a.p, d.b.p, p, c.s, out.p);
        const RunResult ref = run_cpu(c.s, hp, start, in);
        const GdnState end = to.get();
        const double e_out = max_rel(out.download(), ref.out);
        const double e_conv = max_rel(end.conv, ref.end.conv);
        const double e_state = max_rel(end.state, ref.end.state);
        EXPECT_LT(e_out, kGdnTol) << "outputs";
        EXPECT_LT(e_state, kGdnTol) << "state";
        // The window is the last inputs, copied: exact.
        EXPECT_TRUE(same(end.conv, ref.end.conv)) << "conv window (max rel diff " << e_conv << ")";
        // The state before the call is left as it was (the rollback reads it).
        const GdnState kept = from.get();
        EXPECT_TRUE(same(kept.conv, start.conv) && same(kept.state, start.state)) << "the input state changed";
        worst_out = std::max(worst_out, e_out);
        worst_conv = std::max(worst_conv, e_conv);
        worst_state = std::max(worst_state, e_state);
      }
      std::printf("[ gdn ] %-6s conv %-4s: worst max|diff|/max|ref| out %.3g, conv window %.3g, state %.3g\n", c.name,
                  tn, worst_out, worst_conv, worst_state);
    }
  }
}

// ---- 2. a row's bits whatever the call ------------------------------------------------------------------

TEST(CudaGatedDelta, OneCallOneRowCallsAndTwoStreamsGiveTheSameBits) {
  TF_NEED_GPU();
  for (const auto& c : gdn_cases()) {
    const GdnShape& s = c.s;
    const GdnParams hp = make_params(s, ElemType::F32);
    const DevParams p(hp);
    const std::int64_t C = s.channels(), H = s.v_heads, W = out_cols(s);
    for (std::int64_t n : {5, 16}) {
      SCOPED_TRACE(std::string(c.name) + " rows " + std::to_string(n));
      const GdnState start_a = make_state(s), start_b = make_state(s);
      const GdnInputs in_a = make_inputs(s, n), in_b = make_inputs(s, 3);
      // (1) one call of n rows.
      const RunResult one = run_one(s, p, start_a, in_a);
      // (2) n calls of one row, the state passed between two buffers.
      DevState buf[2] = {DevState(s, start_a), DevState(s)};
      DevInputs da(in_a);
      DevBuf<float> out_rows(sz(n * W));
      out_rows.poison();
      for (std::int64_t t = 0; t < n; ++t) {
        const std::vector<GdnRow> rows = {slot(buf[t % 2], buf[(t + 1) % 2], 1)};
        run_gdn(rows, da.qkv.p + t * C, da.a.p + t * H, da.b.p + t * H, p, s, out_rows.p + t * W);
      }
      const GdnState end_rows = buf[n % 2].get();
      EXPECT_TRUE(same(out_rows.download(), one.out)) << "one row a call: outputs";
      EXPECT_TRUE(same(end_rows.conv, one.end.conv)) << "one row a call: conv window";
      EXPECT_TRUE(same(end_rows.state, one.end.state)) << "one row a call: state";
      // (3) two streams in one call: b's 3 rows in slots 0..2, a's n rows after them, each with its own buffers.
      const RunResult alone_b = run_one(s, p, start_b, in_b);
      GdnInputs both;
      both.n = 3 + n;
      for (const GdnInputs* in : {&in_b, &in_a}) {
        both.qkv.insert(both.qkv.end(), in->qkv.begin(), in->qkv.end());
        both.a.insert(both.a.end(), in->a.begin(), in->a.end());
        both.b.insert(both.b.end(), in->b.begin(), in->b.end());
      }
      DevState from_a(s, start_a), to_a(s), from_b(s, start_b), to_b(s);
      DevInputs d2(both);
      DevBuf<float> out2(sz(both.n * W));
      out2.poison();
      std::vector<GdnRow> rows(sz(both.n));
      rows[0] = slot(from_b, to_b, 3);
      rows[3] = slot(from_a, to_a, n);
      run_gdn(rows, d2.qkv.p, d2.a.p, d2.b.p, p, s, out2.p);
      const auto o2 = out2.download();
      const GdnState end_a = to_a.get(), end_b = to_b.get();
      EXPECT_TRUE(same(rows_of(o2, W, 3, n), one.out)) << "two streams: stream a's outputs";
      EXPECT_TRUE(same(end_a.conv, one.end.conv) && same(end_a.state, one.end.state)) << "two streams: a's state";
      EXPECT_TRUE(same(rows_of(o2, W, 0, 3), alone_b.out)) << "two streams: stream b's outputs";
      EXPECT_TRUE(same(end_b.conv, alone_b.end.conv) && same(end_b.state, alone_b.end.state))
          << "two streams: b's state";
    }
  }
}

// ---- 3. the kept inputs and their replay ----------------------------------------------------------------

TEST(CudaGatedDelta, SavedInputsReplayToTheSameBits) {
  TF_NEED_GPU();
  constexpr int kSaveRows = kMaxDecodeRows;  // as the backend's recurrent state keeps them
  for (const auto& c : gdn_cases()) {
    const GdnShape& s = c.s;
    const GdnParams hp = make_params(s, ElemType::F32);
    const DevParams p(hp);
    const std::int64_t C = s.channels(), H = s.v_heads, W = out_cols(s);
    const auto save_floats = sz(kSaveRows * (C + 2 * H));
    for (std::int64_t n : {5, 16}) {
      SCOPED_TRACE(std::string(c.name) + " rows " + std::to_string(n));
      // Two streams in one call, each keeping its inputs: b's 2 rows first, then a's n rows.
      const GdnState start_a = make_state(s), start_b = make_state(s);
      const GdnInputs in_a = make_inputs(s, n), in_b = make_inputs(s, 2);
      GdnInputs both;
      both.n = 2 + n;
      for (const GdnInputs* in : {&in_b, &in_a}) {
        both.qkv.insert(both.qkv.end(), in->qkv.begin(), in->qkv.end());
        both.a.insert(both.a.end(), in->a.begin(), in->a.end());
        both.b.insert(both.b.end(), in->b.begin(), in->b.end());
      }
      DevState from_a(s, start_a), to_a(s), from_b(s, start_b), to_b(s);
      DevBuf<float> save_a(save_floats), save_b(save_floats);
      save_a.poison();
      save_b.poison();
      DevInputs d(both);
      DevBuf<float> out(sz(both.n * W));
      out.poison();
      std::vector<GdnRow> rows(sz(both.n));
      rows[0] = slot(from_b, to_b, 2, save_b.p, kSaveRows);
      rows[2] = slot(from_a, to_a, n, save_a.p, kSaveRows);
      run_gdn(rows, d.qkv.p, d.a.p, d.b.p, p, s, out.p);
      const auto o = out.download();
      const GdnState end_a = to_a.get();
      // Keeping the inputs changes nothing else.
      const RunResult plain = run_one(s, p, start_a, in_a);
      EXPECT_TRUE(same(rows_of(o, W, 2, n), plain.out)) << "outputs with save set";
      EXPECT_TRUE(same(end_a.conv, plain.end.conv) && same(end_a.state, plain.end.state)) << "state with save set";
      // The layout of kernels.h: qkv rows at t * channels, a after save_rows rows of qkv, b after save_rows of a.
      for (const auto& [buf, in] : {std::pair{&save_a, &in_a}, std::pair{&save_b, &in_b}}) {
        const auto v = buf->download();
        const std::size_t a_at = sz(kSaveRows * C), b_at = sz(kSaveRows * (C + H));
        EXPECT_TRUE(same_bits(v.data(), in->qkv.data(), in->qkv.size())) << "saved qkv, run of " << in->n;
        EXPECT_TRUE(same_bits(v.data() + a_at, in->a.data(), in->a.size())) << "saved a, run of " << in->n;
        EXPECT_TRUE(same_bits(v.data() + b_at, in->b.data(), in->b.size())) << "saved b, run of " << in->n;
      }
      // Replaying k rows from the kept inputs and the state before the call: the first k rows' bits.
      for (std::int64_t k : {std::int64_t{1}, std::int64_t{2}, n - 1, n}) {
        SCOPED_TRACE("replay of " + std::to_string(k) + " rows");
        GdnInputs first;
        first.n = k;
        first.qkv = rows_of(in_a.qkv, C, 0, k);
        first.a = rows_of(in_a.a, H, 0, k);
        first.b = rows_of(in_a.b, H, 0, k);
        const RunResult want = run_one(s, p, start_a, first);
        DevState to(s);
        DevBuf<float> rout(sz(k * W));
        rout.poison();
        std::vector<GdnRow> rr(sz(k));
        rr[0] = slot(from_a, to, k);
        const float* kept = save_a.p;
        run_gdn(rr, kept, kept + kSaveRows * C, kept + kSaveRows * (C + H), p, s, rout.p);
        const GdnState got = to.get();
        const auto ro = rout.download();
        EXPECT_TRUE(same(ro, want.out)) << "replayed outputs";
        EXPECT_TRUE(same(ro, rows_of(o, W, 2, k))) << "replayed outputs against the saved call's";
        EXPECT_TRUE(same(got.conv, want.end.conv)) << "replayed conv window";
        EXPECT_TRUE(same(got.state, want.end.state)) << "replayed state";
        if (k == n) {
          EXPECT_TRUE(same(got.state, end_a.state)) << "replay of the whole call";
        }
      }
    }
  }
}

// ---- 4. the backend's recurrent state ---------------------------------------------------------------------

HostWeight host_weight(const std::vector<std::uint8_t>& bytes, std::int64_t rows, std::int64_t cols, HostDType t) {
  HostWeight w;
  w.shape = rows == 1 ? std::vector<std::int64_t>{cols} : std::vector<std::int64_t>{rows, cols};
  w.rows = rows;
  w.cols = cols;
  w.dtype = t;
  w.data = bytes;
  return w;
}
HostWeight host_weight(const std::vector<float>& v, std::int64_t rows, std::int64_t cols) {
  return host_weight(encode(v, ElemType::F32), rows, cols, HostDType::F32);
}

GatedDeltaSpec tiny_spec() { return {2, 4, 32, 32, 4}; }
GdnShape shape_of(const GatedDeltaSpec& g) { return {g.k_heads, g.v_heads, g.k_dim, g.v_dim, g.conv_kernel}; }

// Two linear-attention layers on a CudaBackend (layer 0's conv float32, layer 1's bf16), with the inputs of
// kRows rows per layer (independent random values: the layers' inputs need not come from each other here).
struct BackendGdn {
  static constexpr int kLayers = 2;
  static constexpr std::int64_t kRows = 12;
  std::unique_ptr<CudaBackend> be = make_cuda_backend();
  GatedDeltaSpec spec = tiny_spec();
  GdnShape s = shape_of(spec);
  std::vector<GdnParams> hp;
  std::vector<DeviceWeight> conv, a_log, dt_bias;
  std::vector<GdnInputs> in;

  BackendGdn() {
    for (int l = 0; l < kLayers; ++l) {
      const ElemType t = l == 0 ? ElemType::F32 : ElemType::BF16;
      hp.push_back(make_params(s, t));
      const GdnParams& p = hp.back();
      conv.push_back(be->upload(host_weight(p.conv_bytes, s.channels(), s.conv_kernel,
                                            t == ElemType::F32 ? HostDType::F32 : HostDType::BF16)));
      a_log.push_back(be->upload(host_weight(p.a_log, 1, s.v_heads)));
      dt_bias.push_back(be->upload(host_weight(p.dt_bias, 1, s.v_heads)));
      in.push_back(make_inputs(s, kRows));
    }
  }
  std::unique_ptr<RecurrentState> state() { return be->new_recurrent_state(kLayers, spec); }

  // Records both layers over input rows `rows` (indices into `in`) at the state's length, one call; returns
  // the outputs per layer (not yet computed).
  std::vector<Tensor> record(RecurrentState& st, const std::vector<std::int64_t>& rows) {
    const std::int64_t C = s.channels(), H = s.v_heads, n = static_cast<std::int64_t>(rows.size());
    StreamRows run;
    run.start = st.length();
    run.rows = n;
    run.recurrent = &st;
    std::vector<Tensor> outs;
    for (int l = 0; l < kLayers; ++l) {
      const GdnInputs& x = in[sz(l)];
      std::vector<float> qkv, a, b;
      for (std::int64_t r : rows) {
        qkv.insert(qkv.end(), x.qkv.begin() + r * C, x.qkv.begin() + (r + 1) * C);
        a.insert(a.end(), x.a.begin() + r * H, x.a.begin() + (r + 1) * H);
        b.insert(b.end(), x.b.begin() + r * H, x.b.begin() + (r + 1) * H);
      }
      outs.push_back(be->gated_delta(std::span<const StreamRows>(&run, 1), l, be->from_host(qkv, n, C),
                                     be->from_host(a, n, H), be->from_host(b, n, H), conv[sz(l)], a_log[sz(l)],
                                     dt_bias[sz(l)], spec));
    }
    return outs;
  }
  // The same, computed: [layer][n * v_heads * v_dim].
  std::vector<std::vector<float>> feed(RecurrentState& st, const std::vector<std::int64_t>& rows) {
    std::vector<std::vector<float>> got;
    for (const Tensor& t : record(st, rows)) got.push_back(be->to_host(t));
    return got;
  }
  // Input rows fed one a call; the outputs of every call, in order, per layer.
  std::vector<std::vector<float>> feed_one_by_one(RecurrentState& st, const std::vector<std::int64_t>& rows) {
    std::vector<std::vector<Tensor>> calls;
    for (std::int64_t r : rows) calls.push_back(record(st, {r}));  // one tape for all of them
    std::vector<std::vector<float>> got(kLayers);
    for (const auto& outs : calls)
      for (int l = 0; l < kLayers; ++l) {
        const auto v = be->to_host(outs[sz(l)]);
        got[sz(l)].insert(got[sz(l)].end(), v.begin(), v.end());
      }
    return got;
  }
};

std::vector<std::int64_t> iota_rows(std::int64_t first, std::int64_t n) {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back(first + i);
  return v;
}

// A 6-row prefix fed one row a call, a 4-row verify window, a truncation inside it (the replay), one more
// row: the outputs and the state bytes of a stream that decoded the kept rows one at a time, bit for bit.
TEST(CudaBackendGatedDelta, TruncationReplaysToSerialDecodingBits) {
  TF_NEED_GPU();
  BackendGdn g;
  const std::int64_t W = out_cols(g.s);
  constexpr std::int64_t kPrefix = 6, kWindow = 4, kNext = 11;  // kNext: the input row fed after the rollback
  // keep 4: no truncation; -1: truncate to prefix + 3, then to prefix + 1 (a second replay from the same call).
  for (std::int64_t keep : {0, 1, 2, 3, 4, -1}) {
    SCOPED_TRACE("keep " + std::to_string(keep));
    auto st = g.state();
    g.feed_one_by_one(*st, iota_rows(0, kPrefix));
    ASSERT_EQ(st->length(), kPrefix);
    const auto window = g.feed(*st, iota_rows(kPrefix, kWindow));
    ASSERT_EQ(st->length(), kPrefix + kWindow);
    std::int64_t kept = keep;
    if (keep == -1) {
      st->truncate(kPrefix + 3);
      EXPECT_EQ(st->length(), kPrefix + 3);
      kept = 1;
    }
    st->truncate(kPrefix + kept);
    EXPECT_EQ(st->length(), kPrefix + kept);
    const auto next = g.feed(*st, {kNext});
    // The reference stream: the prefix and the kept rows one a call, then the same row.
    auto ref = g.state();
    const auto serial = g.feed_one_by_one(*ref, iota_rows(0, kPrefix + kept));
    const auto ref_next = g.feed(*ref, {kNext});
    for (int l = 0; l < BackendGdn::kLayers; ++l) {
      EXPECT_TRUE(same(next[sz(l)], ref_next[sz(l)])) << "layer " << l << ": the row after the rollback";
      // The window's rows are the serial rows' bits (each row the same whatever the call).
      EXPECT_TRUE(same(rows_of(window[sz(l)], W, 0, kept), rows_of(serial[sz(l)], W, kPrefix, kept)))
          << "layer " << l << ": the verify window's kept rows";
    }
    EXPECT_EQ(st->length(), ref->length());
    EXPECT_TRUE(st->snapshot() == ref->snapshot()) << "state bytes";
  }
}

// The backend's outputs and state against the CPU recurrence (the wiring of qkv, a, b, the weights and the
// bf16 conv of layer 1), over a stream fed one row a call, then a window of 3.
TEST(CudaBackendGatedDelta, MatchesCpuRecurrence) {
  TF_NEED_GPU();
  BackendGdn g;
  auto st = g.state();
  auto got = g.feed_one_by_one(*st, iota_rows(0, 5));
  const auto win = g.feed(*st, iota_rows(5, 3));
  const auto snap = st->snapshot();
  const std::int64_t cf = conv_floats(g.s), sf = state_floats(g.s);
  ASSERT_EQ(snap.size(), 8 + BackendGdn::kLayers * sz(cf + sf) * 4);
  std::int64_t length = 0;
  std::memcpy(&length, snap.data(), 8);
  EXPECT_EQ(length, 8);
  for (int l = 0; l < BackendGdn::kLayers; ++l) {
    SCOPED_TRACE("layer " + std::to_string(l));
    got[sz(l)].insert(got[sz(l)].end(), win[sz(l)].begin(), win[sz(l)].end());
    GdnInputs in = g.in[sz(l)];
    in.n = 8;
    in.qkv.resize(sz(8 * g.s.channels()));
    in.a.resize(sz(8 * g.s.v_heads));
    in.b.resize(sz(8 * g.s.v_heads));
    const GdnState zero{std::vector<float>(sz(cf), 0.0f), std::vector<float>(sz(sf), 0.0f)};
    const RunResult ref = run_cpu(g.s, g.hp[sz(l)], zero, in);
    std::vector<float> conv(sz(cf)), state(sz(sf));
    const std::size_t at = 8 + sz(l) * sz(cf + sf) * 4;
    std::memcpy(conv.data(), snap.data() + at, conv.size() * 4);
    std::memcpy(state.data(), snap.data() + at + conv.size() * 4, state.size() * 4);
    const double e_out = max_rel(got[sz(l)], ref.out), e_state = max_rel(state, ref.end.state);
    EXPECT_LT(e_out, kGdnTol) << "outputs";
    EXPECT_LT(e_state, kGdnTol) << "state";
    EXPECT_TRUE(same(conv, ref.end.conv)) << "conv window";
    std::printf("[ gdn backend ] layer %d: max|diff|/max|ref| out %.3g, state %.3g\n", l, e_out, e_state);
  }
}

// A state of g after 7 rows: 3 one call each, then 4 in one call (both paths behind the saved state).
auto fed_state(BackendGdn& g) {
  auto st = g.state();
  g.feed_one_by_one(*st, iota_rows(0, 3));
  g.feed(*st, iota_rows(3, 4));
  return st;
}

// Both states take the same next row and give every layer the same bits.
void expect_same_next_rows(BackendGdn& g, RecurrentState& a_state, RecurrentState& b_state) {
  const auto a = g.feed(a_state, {9});
  const auto b = g.feed(b_state, {9});
  for (int l = 0; l < BackendGdn::kLayers; ++l) EXPECT_TRUE(same(a[sz(l)], b[sz(l)])) << "layer " << l;
}

TEST(CudaBackendGatedDelta, SnapshotRestoreContinuesTheSame) {
  TF_NEED_GPU();
  BackendGdn g;
  auto st = fed_state(g);
  const auto snap = st->snapshot();
  auto other = g.state();
  EXPECT_THROW(other->restore(std::span<const std::uint8_t>(snap.data(), snap.size() - 4)), std::invalid_argument);
  other->restore(snap);
  EXPECT_EQ(other->length(), st->length());
  EXPECT_TRUE(other->snapshot() == snap);
  expect_same_next_rows(g, *st, *other);
  EXPECT_TRUE(st->snapshot() == other->snapshot());
  // A restored state has no call to roll back into.
  auto third = g.state();
  third->restore(snap);
  EXPECT_THROW(third->truncate(6), std::invalid_argument);
}

// The same through a device image (the prompt cache's entries): its host bytes are the snapshot's, and a
// state restored from it on the device continues with the same bits.
TEST(CudaBackendGatedDelta, DeviceImageRestoresTheSame) {
  TF_NEED_GPU();
  BackendGdn g;
  auto st = fed_state(g);
  const auto image = st->image();
  EXPECT_TRUE(image->host_bytes() == st->snapshot());
  EXPECT_EQ(image->bytes(), st->snapshot().size());
  auto other = g.state();
  other->restore_image(*image);
  EXPECT_EQ(other->length(), st->length());
  EXPECT_TRUE(other->snapshot() == st->snapshot());
  expect_same_next_rows(g, *st, *other);
}

TEST(CudaBackendGatedDelta, RejectsCallsOffTheStateAndTruncationBeforeTheCall) {
  TF_NEED_GPU();
  BackendGdn g;
  auto st = g.state();
  const std::int64_t C = g.s.channels(), H = g.s.v_heads;
  const std::vector<float> qkv(sz(C), 0.5f), ab(sz(H), 0.5f);
  auto call = [&](std::int64_t start) {
    StreamRows run;
    run.start = start;
    run.rows = 1;
    run.recurrent = st.get();
    return g.be->gated_delta(std::span<const StreamRows>(&run, 1), 0, g.be->from_host(qkv, 1, C),
                             g.be->from_host(ab, 1, H), g.be->from_host(ab, 1, H), g.conv[0], g.a_log[0], g.dt_bias[0],
                             g.spec);
  };
  EXPECT_THROW(call(1), std::invalid_argument);  // length 0
  EXPECT_EQ(st->length(), 0);
  g.feed_one_by_one(*st, iota_rows(0, 3));
  g.feed(*st, iota_rows(3, 4));  // the last call starts at 3
  ASSERT_EQ(st->length(), 7);
  EXPECT_THROW(call(6), std::invalid_argument);
  EXPECT_THROW(call(8), std::invalid_argument);
  EXPECT_THROW(st->truncate(2), std::invalid_argument);  // before the last call's start
  EXPECT_THROW(st->truncate(8), std::invalid_argument);  // past the length
  EXPECT_EQ(st->length(), 7);
  // The state is intact after the refusals: a rollback into the window still replays.
  st->truncate(3);
  EXPECT_EQ(st->length(), 3);
  auto ref = g.state();
  g.feed_one_by_one(*ref, iota_rows(0, 3));
  EXPECT_TRUE(st->snapshot() == ref->snapshot());
}

// ---- 5. the small ops of Qwen3.5's layers through the backend ----------------------------------------------

TEST(CudaBackendOps, HeadColumnsSigmoidGateConcatColumns) {
  TF_NEED_GPU();
  auto be = make_cuda_backend();
  // head_columns: a query and its gate interleaved per head, and an odd window of columns.
  const std::int64_t rows = 3;
  const int heads = 4, block = 64;
  const auto x = random_floats(sz(rows * heads * block));
  const Tensor tx = be->from_host(x, rows, heads * block);
  for (const auto& [offset, width] : {std::pair{0, 32}, std::pair{32, 32}, std::pair{5, 7}, std::pair{0, 64}}) {
    const auto got = be->to_host(be->head_columns(tx, heads, block, offset, width));
    std::vector<float> want;
    for (std::int64_t r = 0; r < rows; ++r)
      for (int h = 0; h < heads; ++h)
        for (int c = 0; c < width; ++c) want.push_back(x[sz(r * heads * block + h * block + offset + c)]);
    EXPECT_TRUE(same(got, want)) << "head_columns offset " << offset << " width " << width;
  }
  EXPECT_THROW(be->head_columns(tx, heads, block, 60, 8), std::invalid_argument);
  // sigmoid_gate: x / (1 + exp(-g)), elementwise.
  const std::int64_t n = 5, cols = 300;
  const auto v = random_floats(sz(n * cols)), gate = random_floats(sz(n * cols), -8.0f, 8.0f);
  const auto sg = be->to_host(be->sigmoid_gate(be->from_host(v, n, cols), be->from_host(gate, n, cols)));
  ASSERT_EQ(sg.size(), v.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double want = static_cast<double>(v[i]) / (1.0 + std::exp(-static_cast<double>(gate[i])));
    const double e = std::abs(static_cast<double>(sg[i]) - want) / std::max(std::abs(want), 1e-30);
    worst = std::max(worst, std::isfinite(sg[i]) ? e : INFINITY);
  }
  EXPECT_LT(worst, 1e-6) << "sigmoid_gate";
  // concat_columns: exact.
  const auto ca = random_floats(sz(n * 100)), cb = random_floats(sz(n * 37));
  const auto cat = be->to_host(be->concat_columns(be->from_host(ca, n, 100), be->from_host(cb, n, 37)));
  std::vector<float> want_cat;
  for (std::int64_t r = 0; r < n; ++r) {
    want_cat.insert(want_cat.end(), ca.begin() + r * 100, ca.begin() + (r + 1) * 100);
    want_cat.insert(want_cat.end(), cb.begin() + r * 37, cb.begin() + (r + 1) * 37);
  }
  EXPECT_TRUE(same(cat, want_cat)) << "concat_columns";
  std::printf("[ ops ] sigmoid_gate worst relative error %.3g\n", worst);
}

TEST(CudaBackendOps, RmsNormHeadsMatchesFloat64) {
  TF_NEED_GPU();
  auto be = make_cuda_backend();
  for (const auto& [heads, head_dim] : {std::pair{8, 128}, std::pair{24, 256}, std::pair{4, 32}}) {
    const std::int64_t rows = 4;
    const float eps = 1e-6f;
    const auto x = random_floats(sz(rows * heads * head_dim), -2.0f, 2.0f);
    const auto w = random_floats(sz(head_dim), 0.5f, 1.5f);
    const DeviceWeight dw = be->upload(host_weight(w, 1, head_dim));
    const auto got = be->to_host(be->rms_norm_heads(be->from_host(x, rows, heads * head_dim), dw, heads, eps));
    std::vector<double> want(x.size());
    for (std::int64_t r = 0; r < rows * heads; ++r) {
      double ss = 0.0;
      for (int i = 0; i < head_dim; ++i) ss += static_cast<double>(x[sz(r * head_dim + i)]) * x[sz(r * head_dim + i)];
      const double inv = 1.0 / std::sqrt(ss / head_dim + static_cast<double>(eps));
      for (int i = 0; i < head_dim; ++i)
        want[sz(r * head_dim + i)] = static_cast<double>(x[sz(r * head_dim + i)]) * inv * static_cast<double>(w[sz(i)]);
    }
    double num = 0.0, den = 0.0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      num = std::max(num, std::isfinite(got[i]) ? std::abs(static_cast<double>(got[i]) - want[i]) : INFINITY);
      den = std::max(den, std::abs(want[i]));
    }
    EXPECT_LT(num / den, 1e-5) << "heads " << heads << " head_dim " << head_dim;
    std::printf("[ ops ] rms_norm_heads %d x %d: max|diff|/max|ref| %.3g\n", heads, head_dim, num / den);
  }
}

// Partial RoPE (a quarter of each head turns, as in Qwen3.5): rotated dims against float64, the rest exact.
TEST(CudaBackendOps, PartialRopeRotatesOnlyTheRotaryDims) {
  TF_NEED_GPU();
  auto be = make_cuda_backend();
  for (const int head_dim : {32, 256})
    for (const bool interleaved : {false, true}) {
      SCOPED_TRACE("head_dim " + std::to_string(head_dim) + (interleaved ? " interleaved" : " rotate-half"));
      const int heads = 4, rotary = head_dim / 4, half = rotary / 2;
      RopeSpec spec;
      spec.base = 10000000.0f;
      spec.interleaved = interleaved;
      spec.rotary_dims = rotary;
      // Two runs: positions 0..2 and 90..98 (below 100).
      StreamRows runs[2];
      runs[0].start = 0;
      runs[0].rows = 3;
      runs[1].start = 90;
      runs[1].rows = 9;
      std::vector<std::int64_t> pos;
      for (const auto& r : runs)
        for (std::int64_t i = 0; i < r.rows; ++i) pos.push_back(r.start + i);
      const auto rows = static_cast<std::int64_t>(pos.size());
      const std::int64_t cols = static_cast<std::int64_t>(heads) * head_dim;
      const auto x = random_floats(sz(rows * cols));
      const auto got = be->to_host(be->rope(be->from_host(x, rows, cols), heads, head_dim, runs, spec));
      ASSERT_EQ(got.size(), x.size());
      double worst = 0.0;
      bool pass_through = true;
      for (std::int64_t r = 0; r < rows; ++r)
        for (int h = 0; h < heads; ++h) {
          const std::size_t at = sz(r * cols + static_cast<std::int64_t>(h) * head_dim);
          for (int j = rotary; j < head_dim; ++j)
            pass_through = pass_through && same_bits(&got[at + sz(j)], &x[at + sz(j)], 1);
          for (int i = 0; i < half; ++i) {
            const double inv = std::pow(static_cast<double>(spec.base), -2.0 * i / rotary);
            const double ang = static_cast<double>(pos[sz(r)]) * inv;
            const int i0 = interleaved ? 2 * i : i, i1 = interleaved ? 2 * i + 1 : i + half;
            const double a = x[at + sz(i0)], b = x[at + sz(i1)];
            const double y0 = a * std::cos(ang) - b * std::sin(ang), y1 = a * std::sin(ang) + b * std::cos(ang);
            for (const auto& [g, w] : {std::pair{got[at + sz(i0)], y0}, std::pair{got[at + sz(i1)], y1}})
              worst = std::max(worst, std::isfinite(g) ? std::abs(static_cast<double>(g) - w) : INFINITY);
          }
        }
      EXPECT_TRUE(pass_through) << "the dims past rotary_dims must pass through unchanged";
      EXPECT_LT(worst, 1e-4) << "rotated dims";
      std::printf("[ ops ] partial rope head_dim %d rotary %d %s: max abs diff %.3g\n", head_dim, rotary,
                  interleaved ? "interleaved" : "rotate-half", worst);
    }
}

}  // namespace
}  // namespace tf::cuda::test
