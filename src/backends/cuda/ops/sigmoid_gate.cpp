// SigmoidGate: x * sigmoid(gate), elementwise (the output gate of Qwen3.5's attention).
#include "backends/cuda/ops/elementwise.h"
#include "backends/cuda/ops/op_descriptor.h"

namespace tf::cuda_internal {
namespace {

OpShape out_shape(const Op& op) { return {op.a->rows, op.a->cols}; }

void launch(const LaunchContext& c, const Step& st) { launch_elementwise(c, st, &cuda::sigmoid_gate); }

}  // namespace

constinit const OpDescriptor sigmoid_gate_op{
    .kind = Kind::SigmoidGate, .name = "sigmoid_gate", .out_shape = out_shape, .launch = launch};

}  // namespace tf::cuda_internal
