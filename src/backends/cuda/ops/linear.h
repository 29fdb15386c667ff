#pragma once
// What the Linear op's rules (linear.cpp) share with the SwiGLU fusion (swiglu.cpp).
#include "backends/cuda/cuda_tape.h"

namespace tf::cuda_internal {

// A linear that runs on the decode matmul (decode_linear), in any tape: at most kMaxDecodeRows rows of a
// weight format it takes. In a prefill tape that is the lm_head over each stream's last row, which then gets
// a decode row's bits (and ~0.08 ms instead of the SIMT GEMM's 3.7 ms a chunk on the 8B shape).
inline bool decode_linear_op(const Op& op) {
  return op.kind == Kind::Linear && op.a->rows <= cuda::kMaxDecodeRows && cuda::decode_linear_supported(op.w);
}

// Whether two weights can share one decode_linear launch (its segments read the same x in one format).
inline bool same_format(const WeightView& x, const WeightView& y) {
  return x.cols == y.cols && x.bits == y.bits && x.group == y.group && x.dtype == y.dtype;
}

}  // namespace tf::cuda_internal
