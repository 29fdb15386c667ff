#pragma once
// The launch that Add and Swiglu share: one elementwise kernel over two inputs of the output's shape.
#include "backends/cuda/cuda_launches.h"

namespace tf::cuda_internal {

using ElementwiseKernel = void (*)(const float* a, const float* b, float* out, std::int64_t n, cudaStream_t s);

inline void launch_elementwise(const LaunchContext& c, const Step& st, ElementwiseKernel fn) {
  const Op& op = c.ops[static_cast<std::size_t>(st.ops.front())];
  const float* a = c.in_ptr(op.a);
  const float* b = c.in_ptr(op.b);
  float* out = op.out->ptr;
  const std::int64_t n = op.out->rows * op.out->cols;
  c.launches.push_back({[=](cudaStream_t s) { fn(a, b, out, n, s); }});
}

}  // namespace tf::cuda_internal
