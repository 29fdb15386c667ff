// AllReduce: a sum over tensor-parallel ranks (CudaBackend::all_reduce_sum): the op's StreamReduce (NCCL's
// all-reduce) queued on the stream like a kernel, so it is captured into the decode graphs with the rest.
#include "backends/cuda/cuda_launches.h"
#include "backends/cuda/ops/op_descriptor.h"

namespace tf::cuda_internal {
namespace {

OpShape out_shape(const Op& op) { return {op.a->rows, op.a->cols}; }

// Which communicator sums is part of what the launch does.
std::uint64_t signature_word(const Op& op) {
  return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(op.reduce.get()));
}

void launch(const LaunchContext& c, const Step& st) {
  const Op& op = c.ops[static_cast<std::size_t>(st.ops.front())];
  const float* in = c.in_ptr(op.a);
  float* out = op.out->ptr;
  const auto count = static_cast<std::size_t>(op.out->rows * op.out->cols);
  c.launches.push_back({[=, reduce = op.reduce](cudaStream_t s) { reduce->sum(in, out, count, s); }});
}

}  // namespace

constinit const OpDescriptor all_reduce_op{.kind = Kind::AllReduce,
                                           .name = "all_reduce",
                                           .out_shape = out_shape,
                                           .signature_word = signature_word,
                                           .launch = launch};

}  // namespace tf::cuda_internal
