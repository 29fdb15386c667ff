// ReplaceRows: x with some rows replaced by host values (an image's embeddings over its placeholder tokens'
// rows, Backend::replace_rows). The values and the row indices travel in the dyn block; x is copied, then the
// rows are written over it.
#include "backends/cuda/cuda_launches.h"
#include "backends/cuda/ops/op_descriptor.h"

namespace tf::cuda_internal {
namespace {

OpShape out_shape(const Op& op) { return {op.a->rows, op.a->cols}; }

void put_dyn(const Op& op, DynWriter& dyn, DynRefs& ref) {
  ref.ids = dyn.put(op.ids.data(), op.ids.size() * 4);
  ref.pos = dyn.put(op.host.data(), op.host.size() * 4);
}

// The number of rows replaced fixes the launch (and the dyn block's layout); their indices and values are dyn.
std::uint64_t signature_word(const Op& op) { return op.ids.size(); }

void launch(const LaunchContext& c, const Step& st) {
  const int i = st.ops.front();
  const Op& op = c.ops[static_cast<std::size_t>(i)];
  const float* a = c.in_ptr(op.a);
  float* out = op.out->ptr;
  const std::int64_t rows = op.out->rows, cols = op.out->cols, n = static_cast<std::int64_t>(op.ids.size());
  const auto* idx = reinterpret_cast<const std::int32_t*>(c.dyn_dev + c.dref[static_cast<std::size_t>(i)].ids);
  const auto* values = reinterpret_cast<const float*>(c.dyn_dev + c.dref[static_cast<std::size_t>(i)].pos);
  c.launches.push_back({[=](cudaStream_t s) {
    cuda::copy_rows(a, 0, rows, cols, out, s);
    cuda::scatter_rows(values, idx, n, cols, out, s);
  }});
}

}  // namespace

constinit const OpDescriptor replace_rows_op{.kind = Kind::ReplaceRows,
                                             .name = "replace_rows",
                                             .out_shape = out_shape,
                                             .put_dyn = put_dyn,
                                             .signature_word = signature_word,
                                             .launch = launch};

}  // namespace tf::cuda_internal
