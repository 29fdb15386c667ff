// ConcatColumns: each row of a, then the same row of b (an MTP head's embedding and hidden state, side by
// side before its projection).
#include "backends/cuda/cuda_launches.h"
#include "backends/cuda/ops/op_descriptor.h"

namespace tf::cuda_internal {
namespace {

OpShape out_shape(const Op& op) { return {op.a->rows, op.a->cols + op.b->cols}; }

void launch(const LaunchContext& c, const Step& st) {
  const Op& op = c.ops[static_cast<std::size_t>(st.ops.front())];
  const float* a = c.in_ptr(op.a);
  const float* b = c.in_ptr(op.b);
  float* out = op.out->ptr;
  const std::int64_t rows = op.out->rows, ac = op.a->cols, bc = op.b->cols;
  c.launches.push_back({[=](cudaStream_t s) { cuda::concat_columns(a, ac, b, bc, out, rows, s); }});
}

}  // namespace

constinit const OpDescriptor concat_columns_op{
    .kind = Kind::ConcatColumns, .name = "concat_columns", .out_shape = out_shape, .launch = launch};

}  // namespace tf::cuda_internal
