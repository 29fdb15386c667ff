// A standalone check and timing of the wgmma prefill GEMM (kernels/prefill_linear_wgmma.cu), built with nvcc
// alone (no CMake, seconds instead of the backend's build): scripts/device/wgmma-probe.sh builds it here and
// runs it on the device. It compiles the kernel's file into itself, so it can also try the descriptor's other
// reading of its strides (leading = the K step, stride = the row step, as the kernel uses; swapped only when
// that one fails).
//
// Checks, per weight format (4-bit codes, groups of 32/64/128, scales f32/f16/bf16, tiled or not) and x rows
// 40, 17 and 200: every output written (the output is poisoned first), the norm-wise error against float64's
// sum_k w x~ (x~ = bf16(x)) under 3e-5 (float32 accumulation), a second run bit-equal, the first 40 rows of
// the 200-row call equal to the 40-row call's. Timing: one llama-3-8B layer's seven linears (as
// tf_cuda_bench --section prefill_gemm), 4-bit g64 bf16 scales and g32 f16 scales (GGUF Q4_0's form),
// M = 512 and 2048, CUDA events, median of 9 after 2 warm-ups.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "backends/cuda/kernels/prefill_linear_wgmma.cu"

namespace tf::cuda {
bool pdl_enabled() { return false; }
}  // namespace tf::cuda

using namespace tf::cuda;

namespace {

void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

std::uint16_t bf16_bits(float f) {  // round to nearest even
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}
float bf16_float(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct HostWeight {
  std::int64_t n, k;
  int group;
  ElemType se;
  bool tiled;
  std::vector<std::uint32_t> words;  // device layout
  std::vector<std::uint32_t> row_words;
  std::vector<double> s, b;  // as the device holds them
  std::vector<unsigned char> s_dev, b_dev;
};

HostWeight make_weight(std::int64_t n, std::int64_t k, int group, ElemType se, bool tiled, std::mt19937& rng) {
  HostWeight w{n, k, group, se, tiled, {}, {}, {}, {}, {}, {}};
  const std::int64_t wpr = k / 8, groups = k / group;
  w.row_words.resize(static_cast<std::size_t>(n * wpr));
  for (auto& v : w.row_words) v = rng();
  w.words = tiled ? tile_words(w.row_words.data(), n, wpr) : w.row_words;
  std::uniform_real_distribution<float> us(0.002f, 0.03f), ub(-0.2f, 0.2f);
  const std::size_t cnt = static_cast<std::size_t>(n * groups);
  const std::size_t eb = se == ElemType::F32 ? 4 : 2;
  w.s.resize(cnt);
  w.b.resize(cnt);
  w.s_dev.resize(cnt * eb);
  w.b_dev.resize(cnt * eb);
  for (std::size_t i = 0; i < cnt; ++i) {
    for (int which = 0; which < 2; ++which) {
      const float v = which == 0 ? us(rng) : ub(rng);
      double held;
      unsigned char* dst = (which == 0 ? w.s_dev.data() : w.b_dev.data()) + i * eb;
      if (se == ElemType::F32) {
        std::memcpy(dst, &v, 4);
        held = v;
      } else if (se == ElemType::BF16) {
        const std::uint16_t h = bf16_bits(v);
        std::memcpy(dst, &h, 2);
        held = bf16_float(h);
      } else {
        const __half h = __float2half_rn(v);
        std::memcpy(dst, &h, 2);
        held = __half2float(h);
      }
      (which == 0 ? w.s : w.b)[i] = held;
    }
  }
  return w;
}

struct DeviceWeight {
  WeightView view;
  void *d = nullptr, *s = nullptr, *b = nullptr;
  explicit DeviceWeight(const HostWeight& h) {
    ck(cudaMalloc(&d, h.words.size() * 4), "malloc");
    ck(cudaMalloc(&s, h.s_dev.size()), "malloc");
    ck(cudaMalloc(&b, h.b_dev.size()), "malloc");
    ck(cudaMemcpy(d, h.words.data(), h.words.size() * 4, cudaMemcpyHostToDevice), "copy");
    ck(cudaMemcpy(s, h.s_dev.data(), h.s_dev.size(), cudaMemcpyHostToDevice), "copy");
    ck(cudaMemcpy(b, h.b_dev.data(), h.b_dev.size(), cudaMemcpyHostToDevice), "copy");
    view.data = d;
    view.scales = s;
    view.biases = b;
    view.bits = 4;
    view.group = h.group;
    view.dtype = h.se;
    view.rows = h.n;
    view.cols = h.k;
    view.tiled = h.tiled;
  }
  ~DeviceWeight() {
    cudaFree(d);
    cudaFree(s);
    cudaFree(b);
  }
};

// x~ as bf16 bits [M, K] and X [K / group, M].
void round_x(const std::vector<float>& x, std::int64_t M, std::int64_t K, int group, std::vector<std::uint16_t>& xh,
             std::vector<float>& xsum) {
  xh.resize(static_cast<std::size_t>(M * K));
  xsum.assign(static_cast<std::size_t>(M * (K / group)), 0.0f);
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t k = 0; k < K; ++k) {
      const std::uint16_t h = bf16_bits(x[static_cast<std::size_t>(m * K + k)]);
      xh[static_cast<std::size_t>(m * K + k)] = h;
      xsum[static_cast<std::size_t>((k / group) * M + m)] += bf16_float(h);
    }
}

template <int GROUP, ElemType SE, bool TILED>
void run_kernel(const void* xh, const float* xsum, std::int64_t M, const WeightView& w, float* y, std::uint32_t lead,
                std::uint32_t stride) {
  launch_wgmma<GROUP, SE, TILED>(static_cast<const __nv_bfloat16*>(xh), xsum, M, w, y, w.rows, nullptr, lead, stride);
}
template <int GROUP, bool TILED>
void run_se(const void* xh, const float* xsum, std::int64_t M, const WeightView& w, float* y, std::uint32_t lead,
            std::uint32_t stride) {
  if (w.dtype == ElemType::F32)
    run_kernel<GROUP, ElemType::F32, TILED>(xh, xsum, M, w, y, lead, stride);
  else if (w.dtype == ElemType::F16)
    run_kernel<GROUP, ElemType::F16, TILED>(xh, xsum, M, w, y, lead, stride);
  else
    run_kernel<GROUP, ElemType::BF16, TILED>(xh, xsum, M, w, y, lead, stride);
}
void run(const void* xh, const float* xsum, std::int64_t M, const WeightView& w, float* y, std::uint32_t lead,
         std::uint32_t stride) {
  const auto go = [&](auto tiled) {
    constexpr bool T = decltype(tiled)::value;
    if (w.group == 32)
      run_se<32, T>(xh, xsum, M, w, y, lead, stride);
    else if (w.group == 64)
      run_se<64, T>(xh, xsum, M, w, y, lead, stride);
    else
      run_se<128, T>(xh, xsum, M, w, y, lead, stride);
  };
  if (w.tiled)
    go(std::true_type{});
  else
    go(std::false_type{});
  ck(cudaGetLastError(), "launch");
}

// Returns the worst norm-wise error over the rows; fails (returns 1e30) on any unwritten output.
double check_case(const HostWeight& hw, std::uint32_t lead, std::uint32_t stride, bool& bits_ok, std::mt19937& rng) {
  DeviceWeight dw(hw);
  const std::int64_t K = hw.k, N = hw.n;
  std::vector<float> x(static_cast<std::size_t>(200 * K));
  std::uniform_real_distribution<float> ux(-1.0f, 1.0f);
  for (auto& v : x) v = ux(rng) * (1.0f + static_cast<float>(rng() % 4));
  const std::int64_t checked_max = std::max<std::int64_t>(4, 60000000 / (N * K));
  double worst = 0.0;
  std::vector<float> first40;
  bits_ok = true;
  for (std::int64_t M : {40, 17, 200}) {
    std::vector<std::uint16_t> xh;
    std::vector<float> xs;
    round_x(x, M, K, hw.group, xh, xs);
    void *dx = nullptr, *dxs = nullptr, *dy = nullptr, *dy2 = nullptr;
    ck(cudaMalloc(&dx, xh.size() * 2), "malloc");
    ck(cudaMalloc(&dxs, xs.size() * 4), "malloc");
    ck(cudaMalloc(&dy, static_cast<std::size_t>(M * N) * 4), "malloc");
    ck(cudaMalloc(&dy2, static_cast<std::size_t>(M * N) * 4), "malloc");
    ck(cudaMemcpy(dx, xh.data(), xh.size() * 2, cudaMemcpyHostToDevice), "copy");
    ck(cudaMemcpy(dxs, xs.data(), xs.size() * 4, cudaMemcpyHostToDevice), "copy");
    ck(cudaMemset(dy, 0xFF, static_cast<std::size_t>(M * N) * 4), "poison");  // NaN
    ck(cudaMemset(dy2, 0xFF, static_cast<std::size_t>(M * N) * 4), "poison");
    run(dx, static_cast<float*>(dxs), M, dw.view, static_cast<float*>(dy), lead, stride);
    run(dx, static_cast<float*>(dxs), M, dw.view, static_cast<float*>(dy2), lead, stride);
    ck(cudaDeviceSynchronize(), "sync");
    std::vector<float> got(static_cast<std::size_t>(M * N)), again(got.size());
    ck(cudaMemcpy(got.data(), dy, got.size() * 4, cudaMemcpyDeviceToHost), "copy");
    ck(cudaMemcpy(again.data(), dy2, again.size() * 4, cudaMemcpyDeviceToHost), "copy");
    cudaFree(dx);
    cudaFree(dxs);
    cudaFree(dy);
    cudaFree(dy2);
    if (std::memcmp(got.data(), again.data(), got.size() * 4) != 0) bits_ok = false;
    if (M == 40) first40 = got;
    if (M == 200 && std::memcmp(first40.data(), got.data(), first40.size() * 4) != 0) bits_ok = false;
    std::int64_t unwritten = 0;
    for (float v : got) unwritten += std::isfinite(v) ? 0 : 1;
    const std::int64_t checked = std::min(M, checked_max);
    double num = 0.0, den = 0.0;
    std::vector<double> ref_head;  // rows 0-1, weight rows 0-7: printed when the case fails
    const std::int64_t wpr = K / 8, gpr = K / hw.group;
    for (std::int64_t m = 0; m < checked; ++m)
      for (std::int64_t n = 0; n < N; ++n) {
        double acc = 0.0;
        for (std::int64_t k = 0; k < K; ++k) {
          const std::uint32_t q = (hw.row_words[static_cast<std::size_t>(n * wpr + k / 8)] >> (4 * (k % 8))) & 15u;
          const std::size_t g = static_cast<std::size_t>(n * gpr + k / hw.group);
          acc += (hw.s[g] * q + hw.b[g]) * bf16_float(xh[static_cast<std::size_t>(m * K + k)]);
        }
        if (m < 2 && n < 8) ref_head.push_back(acc);
        const double d = got[static_cast<std::size_t>(m * N + n)] - acc;
        num += d * d;
        den += acc * acc;
      }
    const double e = unwritten > 0 ? 1e30 : std::sqrt(num / den);
    if (!(e < 3e-5)) {  // what a wrong layout looks like: the first outputs beside float64
      std::printf("  M %lld: %lld of %lld outputs unwritten; rows 0-1, weight rows 0-7 (got / float64):\n",
                  static_cast<long long>(M), static_cast<long long>(unwritten), static_cast<long long>(M * N));
      for (std::size_t i = 0; i < ref_head.size(); ++i)
        std::printf("   [%zu,%zu] %.5g / %.5g\n", i / 8, i % 8, static_cast<double>(got[(i / 8) * N + i % 8]),
                    ref_head[i]);
      return e;
    }
    worst = std::max(worst, e);
  }
  return worst;
}

const char* se_name(ElemType e) { return e == ElemType::F32 ? "f32" : e == ElemType::F16 ? "f16" : "bf16"; }

}  // namespace

int main() {
  cudaDeviceProp prop{};
  ck(cudaGetDeviceProperties(&prop, 0), "props");
  std::printf("device %s, %d SMs, cc %d.%d\n", prop.name, prop.multiProcessorCount, prop.major, prop.minor);
  std::mt19937 rng(53);
  struct C {
    std::int64_t n, k;
    int group;
    ElemType se;
    bool tiled;
  };
  const std::vector<C> cases = {
      {384, 576, 32, ElemType::F16, true},   {384, 576, 32, ElemType::F16, false},
      {1536, 576, 32, ElemType::F32, true},  {256, 1024, 64, ElemType::BF16, true},
      {200, 512, 64, ElemType::BF16, false}, {208, 512, 128, ElemType::F32, false},
      {256, 1024, 128, ElemType::F16, true}, {4096, 4096, 64, ElemType::BF16, true},
      {1024, 4096, 32, ElemType::F16, true},
  };
  // The descriptor's two readings: (leading, stride) = (K step, row step) as the kernel has it, and swapped.
  const std::uint32_t readings[2][2] = {{kLeadingBytes, kStrideBytes}, {kStrideBytes, kLeadingBytes}};
  int good_reading = -1;
  bool all_ok = true;
  for (int r = 0; r < 2; ++r) {
    bool reading_ok = true;
    for (const auto& c : cases) {
      const HostWeight hw = make_weight(c.n, c.k, c.group, c.se, c.tiled, rng);
      bool bits_ok = false;
      const double e = check_case(hw, readings[r][0], readings[r][1], bits_ok, rng);
      const bool ok = e < 3e-5 && bits_ok;
      reading_ok = reading_ok && ok;
      std::printf(
          "[ wgmma ] reading %d (leading %u, stride %u) %5lld x %5lld g%-3d %-4s %-7s: rel err %.3g, "
          "repeat/rows %s -> %s\n",
          r, readings[r][0], readings[r][1], static_cast<long long>(c.n), static_cast<long long>(c.k), c.group,
          se_name(c.se), c.tiled ? "tiled" : "rows", e, bits_ok ? "bit-equal" : "DIFFER", ok ? "ok" : "FAIL");
      if (r == 1 && e > 1.0) break;  // a wrong reading: one case says enough
    }
    if (reading_ok && good_reading < 0) good_reading = r;
    if (r == 0) all_ok = reading_ok;
    if (reading_ok) break;  // the swapped reading is tried only when the kernel's fails (it may read past the stages)
  }
  std::printf("[ wgmma ] correct: kernel's reading %s%s\n", all_ok ? "PASS" : "FAIL",
              all_ok              ? ""
              : good_reading == 1 ? "; swapped reading PASS"
                                  : "; swapped reading fails");
  if (good_reading < 0) return 1;

  // Timing: one 8B layer.
  const std::int64_t H = 4096, F = 14336, KV = 1024;
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {{H, H}, {KV, H}, {KV, H}, {H, H},
                                                                     {F, H}, {F, H},  {H, F}};
  double flops_per_row = 0.0;
  for (const auto& s : shapes) flops_per_row += 2.0 * static_cast<double>(s.first * s.second);
  const std::int64_t max_rows = 2048;
  void *dx = nullptr, *dxs = nullptr, *dy = nullptr;
  ck(cudaMalloc(&dx, static_cast<std::size_t>(max_rows * F) * 2), "malloc");
  ck(cudaMalloc(&dxs, static_cast<std::size_t>(max_rows * (F / 32)) * 4), "malloc");
  ck(cudaMalloc(&dy, static_cast<std::size_t>(max_rows * F) * 4), "malloc");
  {
    std::vector<std::uint16_t> hx(static_cast<std::size_t>(max_rows * F));
    std::uniform_real_distribution<float> ux(-1.0f, 1.0f);
    for (auto& v : hx) v = bf16_bits(ux(rng));
    std::vector<float> hs(static_cast<std::size_t>(max_rows * (F / 32)));
    for (auto& v : hs) v = ux(rng);
    ck(cudaMemcpy(dx, hx.data(), hx.size() * 2, cudaMemcpyHostToDevice), "copy");
    ck(cudaMemcpy(dxs, hs.data(), hs.size() * 4, cudaMemcpyHostToDevice), "copy");
  }
  const std::uint32_t lead = readings[good_reading][0], stride = readings[good_reading][1];
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (const auto& form : std::vector<std::pair<int, ElemType>>{{64, ElemType::BF16}, {32, ElemType::F16}}) {
    std::vector<HostWeight> hws;
    std::vector<std::unique_ptr<DeviceWeight>> dws;
    for (const auto& s : shapes) {
      hws.push_back(make_weight(s.first, s.second, form.first, form.second, true, rng));
      dws.push_back(std::make_unique<DeviceWeight>(hws.back()));
      hws.back() = HostWeight{};  // host copies not needed any more
    }
    for (const std::int64_t M : {std::int64_t{512}, max_rows}) {
      std::vector<float> ms;
      for (int rep = 0; rep < 11; ++rep) {
        cudaEventRecord(e0);
        for (const auto& w : dws) run(dx, static_cast<float*>(dxs), M, w->view, static_cast<float*>(dy), lead, stride);
        cudaEventRecord(e1);
        ck(cudaEventSynchronize(e1), "sync");
        float t = 0.0f;
        cudaEventElapsedTime(&t, e0, e1);
        if (rep >= 2) ms.push_back(t);
      }
      std::sort(ms.begin(), ms.end());
      const double med = ms[ms.size() / 2];
      std::printf("RESULT wgmma.llama8b_layer_rows%lld.q4g%d_%s_ms %.4f ms (%.1f TFLOPS; min %.4f max %.4f)\n",
                  static_cast<long long>(M), form.first, se_name(form.second), med,
                  flops_per_row * static_cast<double>(M) / (med * 1e9), ms.front(), ms.back());
    }
  }
  return all_ok ? 0 : 1;
}
