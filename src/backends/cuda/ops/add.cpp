// Add: a + b elementwise (the residual adds). An add read first by an rms_norm is fused into it
// (rms_norm.cpp: the AddNorm step, whose launch writes the sum).
#include "backends/cuda/ops/elementwise.h"
#include "backends/cuda/ops/op_descriptor.h"

namespace tf::cuda_internal {
namespace {

OpShape out_shape(const Op& op) { return {op.a->rows, op.a->cols}; }

// Fused into its rms_norm, the add's sum is written only when someone reads it (else the norm's launch gets a
// null sum).
bool output_optional(const Op&, bool absorbed) { return absorbed; }

void launch(const LaunchContext& c, const Step& st) { launch_elementwise(c, st, &cuda::add); }

}  // namespace

constinit const OpDescriptor add_op{
    .kind = Kind::Add, .name = "add", .out_shape = out_shape, .output_optional = output_optional, .launch = launch};

}  // namespace tf::cuda_internal
