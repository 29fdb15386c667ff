// What the CUDA benchmark sections share (bench/cuda/*.cpp, one tf_cuda_bench binary): the error check, the
// RESULT lines and their JSON, medians, event timing and the copy bandwidth of the run.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/kernels/kernels.h"

namespace tf::bench {

inline void ck(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

inline nlohmann::json g_results = nlohmann::json::object();
inline void result(const std::string& name, double value, const std::string& unit) {
  std::printf("RESULT %-44s %12.4f %s\n", name.c_str(), value, unit.c_str());
  std::fflush(stdout);
  g_results[name] = {{"value", value}, {"unit", unit}};
}

// n token ids below `vocab`, a fixed pattern per salt (prompts of the random models).
inline std::vector<std::int32_t> ids(std::int64_t n, std::int64_t vocab, std::uint64_t salt) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((i * 7919 + salt * 104729 + 13) % vocab);
  return v;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Milliseconds of fn on `s`, median of `reps` after `warm` warm-ups, by CUDA events.
inline double time_ms(cudaStream_t s, int warm, int reps, const std::function<void()>& fn) {
  cudaEvent_t a, b;
  ck(cudaEventCreate(&a), "event");
  ck(cudaEventCreate(&b), "event");
  for (int i = 0; i < warm; ++i) fn();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    ck(cudaEventRecord(a, s), "record");
    fn();
    ck(cudaEventRecord(b, s), "record");
    ck(cudaEventSynchronize(b), "sync");
    float ms = 0;
    ck(cudaEventElapsedTime(&ms, a, b), "elapsed");
    t.push_back(ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return median(t);
}

inline double copy_bandwidth(cudaStream_t s) {
  const std::size_t bytes = std::size_t{2} << 30;  // 2 GiB each way, far past the 60 MB L2
  void *src = nullptr, *dst = nullptr;
  ck(cudaMalloc(reinterpret_cast<void**>(&src), bytes), "malloc");
  ck(cudaMalloc(reinterpret_cast<void**>(&dst), bytes), "malloc");
  tf::cuda::fill_random_bits(src, bytes, 1, s);
  const double ms =
      time_ms(s, 2, 10, [&] { ck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s), "copy"); });
  cudaFree(src);
  cudaFree(dst);
  return 2.0 * static_cast<double>(bytes) / (ms * 1e-3);  // read + written
}

// cuBLAS's y [rows, w.rows] (f32) = x [rows, w.cols] (bf16) w^T for a dense bf16 weight view: the reference
// the benchmarks hold our matmuls against. Column-major, that is C [n, rows] = (W as [k, n])^T X [k, rows].
inline void cublas_bf16_linear(cublasHandle_t h, const cuda::WeightView& w, const void* x_bf16, std::int64_t rows,
                               float* y) {
  const float alpha = 1.0f, beta = 0.0f;
  const int n = static_cast<int>(w.rows), k = static_cast<int>(w.cols);
  if (cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, static_cast<int>(rows), k, &alpha, w.data, CUDA_R_16BF, k, x_bf16,
                   CUDA_R_16BF, k, &beta, y, CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                   CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error("cublasGemmEx");
}

// Prefill attention alone (the tensor-core kernel of kernels/prefill_attention.cu) on the 8B and 27B-class
// head shapes: one 512-row chunk at the end of prompts of 2k to 32k tokens, and a whole 2k prompt as four
// chunks; tokens/s and TFLOPS (4 * d flops per (query, key) pair, causal pairs only). attention_bench.cpp.
void bench_prefill_attention();
// The prefill GEMM against cuBLAS bf16 on one 8B layer's linears at 512 and 2048 rows. gemm_bench.cpp.
void bench_prefill_gemm(CudaBackend& be);
// One-stream decode of the 27B-class qwen3_5 shape on one rank, on one rank through the tensor-parallel path,
// and on `tp` ranks (issue 38). tp_bench.cpp.
void bench_qwen27b_tp(double bw, bool quick, int tp);

}  // namespace tf::bench
