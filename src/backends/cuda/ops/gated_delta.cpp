// GdnConv and GdnRecurrence: the two launches of a Gated DeltaNet layer's core (Backend::gated_delta records
// both). GdnConv: the causal depthwise conv and SiLU of the q|k|v projection, [n, channels]; GdnRecurrence:
// the delta-rule recurrence over it, [n, v_heads * v_dim]. Each row slot's state buffers are dyn values
// (Op::gdn_rows, which cuda_recurrent_state.h chooses when the call is recorded), so a decode graph replays
// for any stream and either of a stream's two buffers.
#include "backends/cuda/cuda_launches.h"
#include "backends/cuda/ops/op_descriptor.h"

namespace tf::cuda_internal {
namespace {

void put_dyn(const Op& op, DynWriter& dyn, DynRefs& ref) {
  ref.rows = dyn.put(op.gdn_rows.data(), op.gdn_rows.size() * sizeof(cuda::GdnRow));
}

const cuda::GdnRow* row_slots(const LaunchContext& c, int i) {
  return reinterpret_cast<const cuda::GdnRow*>(c.dyn_dev + c.dref[static_cast<std::size_t>(i)].rows);
}

OpShape conv_shape(const Op& op) { return {op.a->rows, op.gdn.channels()}; }

void launch_conv(const LaunchContext& c, const Step& st) {
  const int i = st.ops.front();
  const Op& op = c.ops[static_cast<std::size_t>(i)];
  const cuda::GdnRow* rows = row_slots(c, i);
  const float* qkv = c.in_ptr(op.a);
  float* y = op.out->ptr;
  const std::int64_t n = op.out->rows;
  const void* w = op.w.data;
  const cuda::ElemType t = op.w.dtype;
  const cuda::GdnShape shape = op.gdn;
  c.launches.push_back({[=](cudaStream_t s) { cuda::gdn_conv(rows, n, qkv, w, t, shape, y, s); }});
}

OpShape recurrence_shape(const Op& op) {
  return {op.a->rows, static_cast<std::int64_t>(op.gdn.v_heads) * op.gdn.v_dim};
}

void launch_recurrence(const LaunchContext& c, const Step& st) {
  const int i = st.ops.front();
  const Op& op = c.ops[static_cast<std::size_t>(i)];
  const cuda::GdnRow* rows = row_slots(c, i);
  const float* y = c.in_ptr(op.a);
  const float* a = c.in_ptr(op.b);
  const float* b = c.in_ptr(op.c);
  float* out = op.out->ptr;
  const std::int64_t n = op.out->rows;
  const float* a_log = op.a_log;
  const float* dt_bias = op.dt_bias;
  const cuda::GdnShape shape = op.gdn;
  c.launches.push_back(
      {[=](cudaStream_t s) { cuda::gdn_recurrence(rows, n, y, a, b, a_log, dt_bias, shape, out, s); }});
}

}  // namespace

constinit const OpDescriptor gdn_conv_op{
    .kind = Kind::GdnConv, .name = "gdn_conv", .out_shape = conv_shape, .put_dyn = put_dyn, .launch = launch_conv};

constinit const OpDescriptor gdn_recurrence_op{.kind = Kind::GdnRecurrence,
                                               .name = "gdn_recurrence",
                                               .out_shape = recurrence_shape,
                                               .put_dyn = put_dyn,
                                               .launch = launch_recurrence};

}  // namespace tf::cuda_internal
