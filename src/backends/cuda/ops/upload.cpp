// Upload: float32 values from the host (Backend::from_host), carried in the dyn block and copied out of it.
#include "backends/cuda/cuda_launches.h"
#include "backends/cuda/ops/op_descriptor.h"

namespace tf::cuda_internal {
namespace {

void put_dyn(const Op& op, DynWriter& dyn, DynRefs& ref) { ref.ids = dyn.put(op.host.data(), op.host.size() * 4); }

void launch(const LaunchContext& c, const Step& st) {
  const int i = st.ops.front();
  const Op& op = c.ops[static_cast<std::size_t>(i)];
  float* out = op.out->ptr;
  // Uploads go through the dyn block (copied before the launches).
  char* dyn_dev = c.dyn_dev;
  const std::size_t off = c.dref[static_cast<std::size_t>(i)].ids;
  const std::size_t bytes = op.host.size() * 4;
  c.launches.push_back(
      {[=](cudaStream_t s) { TF_CK(cudaMemcpyAsync(out, dyn_dev + off, bytes, cudaMemcpyDeviceToDevice, s)); }});
}

}  // namespace

// No shape rule: the values are flat, from_host gives their rows and cols.
constinit const OpDescriptor upload_op{
    .kind = Kind::Upload, .name = "upload", .out_shape = nullptr, .put_dyn = put_dyn, .launch = launch};

}  // namespace tf::cuda_internal
