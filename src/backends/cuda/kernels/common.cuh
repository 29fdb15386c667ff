#pragma once
// Device helpers shared by the kernels. Compiled with -fmad=false: every fused multiply-add is written out
// (__fmaf_rn), every other float operation rounds on its own.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>

#include "backends/cuda/kernels/kernels.h"

namespace tf::cuda {

inline void check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA kernel ") + what + ": " + cudaGetErrorString(e));
}

template <typename T>
__device__ __forceinline__ float to_float(T v);
template <>
__device__ __forceinline__ float to_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ float to_float<__half>(__half v) { return __half2float(v); }
template <>
__device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <ElemType E>
struct ElemOf;
template <>
struct ElemOf<ElemType::F32> { using type = float; };
template <>
struct ElemOf<ElemType::F16> { using type = __half; };
template <>
struct ElemOf<ElemType::BF16> { using type = __nv_bfloat16; };

template <ElemType E>
__device__ __forceinline__ float load_elem(const void* p, std::int64_t i) {
  return to_float(static_cast<const typename ElemOf<E>::type*>(p)[i]);
}

// A 16-byte load from p + OFF bytes (OFF an immediate of the instruction) that bypasses L1 allocation:
// weights are streamed once per token.
template <int OFF>
__device__ __forceinline__ uint4 ldg_stream_at(const void* p) {
  uint4 r;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4+%5];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p), "n"(OFF));
  return r;
}
__device__ __forceinline__ uint4 ldg_stream(const void* p) { return ldg_stream_at<0>(p); }

// Sum over the 32 lanes by the xor butterfly 16, 8, 4, 2, 1: every lane ends with the same bits.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// The RMSNorm's sum of squares, in the one order every decode kernel uses (the standalone norm and the
// norms fused into the matmuls), so a norm fused at one width and launched on its own at another gives
// the same bits: the row's float4s are cut into kNormParts contiguous parts (a function of the width
// alone); in a part, lane l takes float4s l, l + 32, ... in order (four fmas each), then the butterfly;
// the parts' sums are added in part order. `load(i)` returns float4 i of the row (after any residual add).
constexpr int kNormParts = 16;
template <typename Load>
__device__ __forceinline__ float norm_part_sum(Load load, int part, std::int64_t n4, int lane) {
  const std::int64_t begin = part * n4 / kNormParts, end = (part + 1) * n4 / kNormParts;
  float ss = 0.0f;
  for (std::int64_t i = begin + lane; i < end; i += 32) {
    const float4 v = load(i);
    ss = __fmaf_rn(v.x, v.x, ss);
    ss = __fmaf_rn(v.y, v.y, ss);
    ss = __fmaf_rn(v.z, v.z, ss);
    ss = __fmaf_rn(v.w, v.w, ss);
  }
  return warp_sum(ss);
}
// Float4 i of row a, plus float4 i of row b when there is one (the residual add in front of a norm).
__device__ __forceinline__ float4 load_sum4(const float4* a, const float4* b, std::int64_t i) {
  float4 v = a[i];
  if (b != nullptr) {
    const float4 c = b[i];
    v = make_float4(__fadd_rn(v.x, c.x), __fadd_rn(v.y, c.y), __fadd_rn(v.z, c.z), __fadd_rn(v.w, c.w));
  }
  return v;
}
// 1 / rms from the parts' sums (parts[0] .. parts[kNormParts - 1], added in order).
__device__ __forceinline__ float norm_inv_rms(const float* parts, std::int64_t stride, std::int64_t cols, float eps) {
  float ss = parts[0];
#pragma unroll
  for (int p = 1; p < kNormParts; ++p) ss = __fadd_rn(ss, parts[p * stride]);
  return rsqrtf(__fadd_rn(__fdiv_rn(ss, static_cast<float>(cols)), eps));
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Code i (0-based) of a row's LSB-first bitstream of `bits`-bit codes in uint32 words.
__device__ __forceinline__ unsigned int code_at(const std::uint32_t* row, std::int64_t i, int bits) {
  const std::int64_t bit = i * bits;
  const std::int64_t w = bit >> 5;
  const int sh = static_cast<int>(bit & 31);
  unsigned int v = row[w] >> sh;
  if (sh + bits > 32) v |= row[w + 1] << (32 - sh);
  return v & ((1u << bits) - 1u);
}

// Raises Kernel's dynamic shared memory limit to `bytes`, once on each device: a function's attributes
// belong to the device's context, so every device that launches it (tensor-parallel ranks on several GPUs,
// docs/tensor-parallel.md) must raise it; a process-wide "once" left the second device's launches failing.
template <auto Kernel>
void raise_smem_limit(int bytes, const char* what) {
  static std::atomic<std::uint64_t> raised{0};  // a bit a device
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device > 63)
    throw std::runtime_error(std::string(what) + ": no current CUDA device");
  const std::uint64_t bit = std::uint64_t{1} << device;
  if ((raised.load(std::memory_order_acquire) & bit) != 0) return;
  const cudaError_t e = cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": cannot raise the shared memory limit: " + cudaGetErrorString(e));
  raised.fetch_or(bit, std::memory_order_release);
}

// Knobs read once from the environment (A/B measurements).
inline int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != 0 ? std::atoi(v) : fallback;
}

__host__ __device__ inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Programmatic dependent launch (sm_90): kernels are launched with programmatic stream serialization, so
// the next kernel's blocks may start while this one drains. pdl_launch() lets the next kernel start;
// pdl_wait() blocks until every earlier kernel has finished and its writes are visible. Every kernel calls
// pdl_wait() before it reads an activation or writes anything; only reads of weights (never written) may
// come before it. Without the launch attribute (or before sm_90) both are no-ops.
__device__ __forceinline__ void pdl_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Programmatic dependent launch is on unless TF_CUDA_PDL=0 (for A/B measurements) or a PdlScope (kernels.h)
// of this thread turned it off.
bool pdl_enabled();

// Launches `kernel` with programmatic stream serialization allowed.
template <typename... KArgs, typename... Args>
void launch_pdl(void (*kernel)(KArgs...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t s, Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = pdl_enabled() ? 1 : 0;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  const cudaError_t e = cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA launch: ") + cudaGetErrorString(e));
}

}  // namespace tf::cuda
