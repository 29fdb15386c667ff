// RmsNormHeads: RMSNorm of each head's head_dim values, times one weight vector (Qwen3.5's q/k norms, and the
// Gated DeltaNet output norm that Backend::rms_norm_gated records before its silu(z) gate). The norm kernel
// over rows * heads rows of head_dim: each head is a row of its own, so the bits never depend on the call.
#include "backends/cuda/cuda_launches.h"
#include "backends/cuda/ops/op_descriptor.h"

namespace tf::cuda_internal {
namespace {

OpShape out_shape(const Op& op) { return {op.a->rows, op.a->cols}; }

void launch(const LaunchContext& c, const Step& st) {
  const Op& op = c.ops[static_cast<std::size_t>(st.ops.front())];
  const float* a = c.in_ptr(op.a);
  float* out = op.out->ptr;
  const float* w = op.norm;
  const std::int64_t rows = op.out->rows * op.heads, cols = op.head_dim;
  const float eps = op.eps;
  c.launches.push_back({[=](cudaStream_t s) { cuda::rms_norm(a, nullptr, nullptr, out, w, rows, cols, eps, s); }});
}

}  // namespace

constinit const OpDescriptor rms_norm_heads_op{
    .kind = Kind::RmsNormHeads, .name = "rms_norm_heads", .out_shape = out_shape, .launch = launch};

}  // namespace tf::cuda_internal
