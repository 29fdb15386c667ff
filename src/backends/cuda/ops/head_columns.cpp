// HeadColumns: the same columns of every head's block (a query and its output gate, interleaved per head in
// Qwen3.5's q projection, taken apart).
#include "backends/cuda/cuda_launches.h"
#include "backends/cuda/ops/op_descriptor.h"

namespace tf::cuda_internal {
namespace {

OpShape out_shape(const Op& op) { return {op.a->rows, static_cast<std::int64_t>(op.heads) * op.col_width}; }

void launch(const LaunchContext& c, const Step& st) {
  const Op& op = c.ops[static_cast<std::size_t>(st.ops.front())];
  const float* a = c.in_ptr(op.a);
  float* out = op.out->ptr;
  const std::int64_t rows = op.out->rows;
  const int heads = op.heads, block = op.head_dim, offset = op.col_offset, width = op.col_width;
  c.launches.push_back(
      {[=](cudaStream_t s) { cuda::head_columns(a, out, rows, heads, block, offset, width, s); }});
}

}  // namespace

constinit const OpDescriptor head_columns_op{
    .kind = Kind::HeadColumns, .name = "head_columns", .out_shape = out_shape, .launch = launch};

}  // namespace tf::cuda_internal
