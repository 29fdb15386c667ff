// LastRows: the last rows of an activation (rows first .. end), copied.
#include "backends/cuda/cuda_launches.h"
#include "backends/cuda/ops/op_descriptor.h"

namespace tf::cuda_internal {
namespace {

OpShape out_shape(const Op& op) { return {op.a->rows - op.first, op.a->cols}; }

void launch(const LaunchContext& c, const Step& st) {
  const Op& op = c.ops[static_cast<std::size_t>(st.ops.front())];
  const float* a = c.in_ptr(op.a);
  float* out = op.out->ptr;
  const std::int64_t first = op.first, n = op.out->rows, cols = op.out->cols;
  c.launches.push_back({[=](cudaStream_t s) { cuda::copy_rows(a, first, n, cols, out, s); }});
}

}  // namespace

constinit const OpDescriptor last_rows_op{
    .kind = Kind::LastRows, .name = "last_rows", .out_shape = out_shape, .launch = launch};

}  // namespace tf::cuda_internal
