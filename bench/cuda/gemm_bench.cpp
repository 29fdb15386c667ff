// `tf_cuda_bench --section prefill_gemm`: the prefill GEMM alone (issue 32) against cuBLAS on the same shapes,
// to know how far from the tensor cores' reach our prefill is. One layer of llama-3-8B's linears (q, k, v,
// o, gate, up, down; 4-bit g64 codes, the integer kernel's weights) at M = 512 rows (a prefill chunk) and
// M = 2048: ours (prefill_linear_mma, the bf16 GEMM over the codes, with x as one bf16 term (the default prompt
// precision) and as two (--precision full); the bf16 form on the wgmma kernel (prefill_linear_wgmma.cu,
// sm_90a builds); and the integer prefill_linear_imma, or
// prefill_linear where the integer kernel does not take a weight) against cuBLAS bf16 x bf16 -> f32 on dense
// bf16 weights of the same shapes (2x our weight bytes, tensor-core peak ~990 TFLOPS dense on the H200).
// TFLOPS count 2 * M * N * K.
#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/kernels/prefill_linear_wgmma.h"
#include "bench/cuda/bench_common.h"

namespace tf::bench {

void bench_prefill_gemm(CudaBackend& be) {
  const std::int64_t H = 4096, F = 14336, KV = 1024;
  struct Shape {
    std::int64_t n, k;
  };
  const std::vector<Shape> shapes = {{H, H}, {KV, H}, {KV, H}, {H, H}, {F, H}, {F, H}, {H, F}};
  cudaStream_t s = be.stream();
  std::vector<DeviceWeight> q4, dense;
  double flops_per_row = 0;
  for (const auto& sh : shapes) {
    q4.push_back(be.random_weight(sh.n, sh.k, 4, 64, HostDType::BF16, 100 + q4.size()));
    dense.push_back(be.random_weight(sh.n, sh.k, 0, 0, HostDType::BF16, 200 + dense.size()));
    flops_per_row += 2.0 * static_cast<double>(sh.n * sh.k);
  }
  const std::int64_t max_rows = 2048;
  float *x = nullptr, *y = nullptr;
  __nv_bfloat16* xb = nullptr;
  ck(cudaMalloc(reinterpret_cast<void**>(&x), max_rows * F * 4), "malloc");
  ck(cudaMalloc(reinterpret_cast<void**>(&y), max_rows * F * 4), "malloc");
  ck(cudaMalloc(reinterpret_cast<void**>(&xb), max_rows * F * 2), "malloc");
  cuda::fill_random_uniform(x, cuda::ElemType::F32, max_rows * F, -1.0f, 1.0f, 5, s);
  cuda::fill_random_uniform(xb, cuda::ElemType::BF16, max_rows * F, -1.0f, 1.0f, 6, s);
  std::size_t scratch_bytes =
      std::max(cuda::prefill_imma_scratch_bytes(max_rows, F), cuda::prefill_mma_scratch_bytes(max_rows, F));
  void* scratch = nullptr;
  ck(cudaMalloc(&scratch, scratch_bytes), "malloc");
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate");
  cublasSetStream(h, s);
  for (const std::int64_t rows : {std::int64_t{512}, max_rows}) {
    const auto mma = [&](cuda::PrefillX form) {
      return [&, form] {
        for (const auto& w : q4)
          cuda::prefill_linear_mma(x, w.cols, rows, be.weight_view(w), y, w.rows, scratch, scratch_bytes, form, s);
      };
    };
    const auto wgmma = [&] {
      for (const auto& w : q4)
        cuda::prefill_linear_wgmma(x, w.cols, rows, be.weight_view(w), y, w.rows, scratch, scratch_bytes, s);
    };
    const auto ours = [&] {
      for (const auto& w : q4) {
        const auto v = be.weight_view(w);
        if (cuda::prefill_linear_imma_takes(v))
          cuda::prefill_linear_imma(x, w.cols, rows, v, y, w.rows, scratch, scratch_bytes, s);
        else
          cuda::prefill_linear(x, w.cols, rows, v, y, w.rows, s);
      }
    };
    const auto cublas = [&] {
      for (const auto& w : dense) cublas_bf16_linear(h, be.weight_view(w), xb, rows, y);
    };
    const std::string tag = "prefill_gemm.llama8b_layer_rows" + std::to_string(rows);
    const double flops = flops_per_row * static_cast<double>(rows);
    const double ms_mma = time_ms(s, 2, 7, mma(cuda::PrefillX::Bf16)),
                 ms_full = time_ms(s, 2, 7, mma(cuda::PrefillX::TwoTerms)), ms_ours = time_ms(s, 2, 7, ours),
                 ms_cublas = time_ms(s, 2, 7, cublas);
    result(tag + ".mma_bf16x_q4g64_ms", ms_mma, "ms");
    result(tag + ".mma_bf16x_q4g64_tflops", flops / (ms_mma * 1e9), "TFLOPS");
    result(tag + ".mma_bf16x_over_cublas", ms_mma / ms_cublas, "x");
    result(tag + ".mma_fullx_q4g64_ms", ms_full, "ms");
    result(tag + ".mma_fullx_q4g64_tflops", flops / (ms_full * 1e9), "TFLOPS");
    result(tag + ".mma_fullx_over_cublas", ms_full / ms_cublas, "x");
    result(tag + ".ours_q4g64_ms", ms_ours, "ms");
    result(tag + ".ours_q4g64_tflops", flops / (ms_ours * 1e9), "TFLOPS");
    result(tag + ".cublas_bf16_ms", ms_cublas, "ms");
    result(tag + ".cublas_bf16_tflops", flops / (ms_cublas * 1e9), "TFLOPS");
    result(tag + ".ours_over_cublas", ms_ours / ms_cublas, "x");
    // Last: the kernel that is new on the device.
    if (cuda::prefill_wgmma_takes(be.weight_view(q4.front()))) {
      const double ms_wgmma = time_ms(s, 2, 7, wgmma);
      result(tag + ".wgmma_bf16x_q4g64_ms", ms_wgmma, "ms");
      result(tag + ".wgmma_bf16x_q4g64_tflops", flops / (ms_wgmma * 1e9), "TFLOPS");
      result(tag + ".wgmma_over_mma_bf16x", ms_wgmma / ms_mma, "x");
    }
  }
  cublasDestroy(h);
  for (void* p : {static_cast<void*>(x), static_cast<void*>(y), static_cast<void*>(xb), scratch}) cudaFree(p);
}

}  // namespace tf::bench
