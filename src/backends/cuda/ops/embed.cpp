// Embed: rows of an embedding table picked by token ids. The ids are dyn values: from the host, or already on
// the device (Backend::embed of DeviceIds: placeholders in the block, the ids copied over them there).
#include "backends/cuda/cuda_launches.h"
#include "backends/cuda/ops/op_descriptor.h"

namespace tf::cuda_internal {
namespace {

OpShape out_shape(const Op& op) { return {static_cast<std::int64_t>(op.ids.size()), op.w.cols}; }

void put_dyn(const Op& op, DynWriter& dyn, DynRefs& ref) { ref.ids = dyn.put(op.ids.data(), op.ids.size() * 4); }

void copy_device_dyn(const Op& op, const DynRefs& ref, void* dyn_dev, cudaStream_t stream) {
  if (op.ids_dev != nullptr)
    TF_CK(cudaMemcpyAsync(static_cast<char*>(dyn_dev) + ref.ids, op.ids_dev, op.ids.size() * 4,
                          cudaMemcpyDeviceToDevice, stream));
}

void launch(const LaunchContext& c, const Step& st) {
  const int i = st.ops.front();
  const Op& op = c.ops[static_cast<std::size_t>(i)];
  const WeightView w = op.w;
  const auto* ids = reinterpret_cast<const std::int32_t*>(c.dyn_dev + c.dref[static_cast<std::size_t>(i)].ids);
  float* out = op.out->ptr;
  const std::int64_t rows = op.out->rows;
  c.launches.push_back({[=](cudaStream_t s) { cuda::embed(w, ids, rows, out, s); }});
}

}  // namespace

constinit const OpDescriptor embed_op{.kind = Kind::Embed,
                                      .name = "embed",
                                      .out_shape = out_shape,
                                      .put_dyn = put_dyn,
                                      .copy_device_dyn = copy_device_dyn,
                                      .launch = launch};

}  // namespace tf::cuda_internal
