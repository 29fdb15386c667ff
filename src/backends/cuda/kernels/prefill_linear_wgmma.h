#pragma once
// The prefill GEMM on Hopper's warpgroup tensor-core instruction (wgmma, sm_90a) for x rounded once to bf16
// (the bf16 prompt precision): the same arithmetic as prefill_linear_mma.cu's Bf16 form (codes as bf16
// integers on the tensor cores, scale and bias once a group in float32, float32 accumulation), another
// instruction. Internal to the kernels: prefill_linear_mma.cu calls it after its split kernel, on the same
// scratch (x~ as bf16 [M, K], X the groups' sums [K / group, M]). Plain C++: the tests and the probe include it.
#include <cstddef>
#include <cstdint>

#include "backends/cuda/kernels/kernels.h"

namespace tf::cuda {

// Whether this build has the sm_90a kernel and this weight's format is one it takes (4-bit codes, tiled or
// not, groups of 32/64/128, K a multiple of 64). Says nothing of the switch (prefill_wgmma_on).
bool prefill_wgmma_takes(const WeightView& w);
// Whether prompt rows use it: TF_CUDA_PREFILL_WGMMA=1 on a device of compute capability 9.x. Off by default
// until its device run (docs/cuda.md, "The wgmma GEMM").
bool prefill_wgmma_on();
// y [M, w.rows] (row stride y_stride) from x~ (bf16, [M, w.cols]) and X (float, [w.cols / w.group, M]).
void prefill_wgmma(const void* xh, const float* xsum, std::int64_t M, const WeightView& w, float* y,
                   std::int64_t y_stride, cudaStream_t s);
// prefill_linear_mma's Bf16 form on this kernel whatever the switch says (tests, benchmarks): its split kernel
// into `scratch` (prefill_mma_scratch_bytes), then prefill_wgmma. Throws where prefill_wgmma_takes(w) is false.
void prefill_linear_wgmma(const float* x, std::int64_t x_stride, std::int64_t rows, const WeightView& w, float* y,
                          std::int64_t y_stride, void* scratch, std::size_t scratch_bytes, cudaStream_t s);

}  // namespace tf::cuda
