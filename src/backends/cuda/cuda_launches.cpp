#include "backends/cuda/cuda_launches.h"

#include <stdexcept>

#include "backends/cuda/ops/op_descriptor.h"

namespace tf::cuda_internal {

const float* LaunchContext::in_ptr(const ActP& a) const {
  if (a->ptr == nullptr) throw std::logic_error("CUDA backend: input not materialized");
  return a->ptr;
}

std::vector<Launch> build_launches(const std::vector<Op>& ops, const std::vector<Step>& steps,
                                   const std::vector<DynRefs>& dref, const LaunchBuffers& buffers) {
  std::vector<Launch> launches;
  const LaunchContext c{.ops = ops,
                        .steps = steps,
                        .dref = dref,
                        .buffers = buffers,
                        .dyn_dev = static_cast<char*>(buffers.dyn_dev),
                        .launches = launches};
  // Each step's launches are its leader's (a fused step's first op: OpDescriptor::launch).
  for (const Step& st : steps) {
    if (st.dead) continue;
    op_descriptor(ops[static_cast<std::size_t>(st.ops.front())].kind).launch(c, st);
  }
  return launches;
}

}  // namespace tf::cuda_internal
