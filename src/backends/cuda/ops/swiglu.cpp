// Swiglu: silu(gate) * up elementwise. In a decode tape, a swiglu of two decode linears that share x becomes
// their epilogue: one SwigluGroup step, launched by Linear's descriptor (linear.cpp).
#include <algorithm>

#include "backends/cuda/ops/elementwise.h"
#include "backends/cuda/ops/linear.h"
#include "backends/cuda/ops/op_descriptor.h"

namespace tf::cuda_internal {
namespace {

OpShape out_shape(const Op& op) { return {op.a->rows, op.a->cols}; }

// The swiglu's gate and up linears (decode, same x, same format and rows) and the swiglu: one launch at the
// first linear's place.
void fuse_producers(FusionState& f, int i) {
  if (!f.decode) return;
  const std::vector<Op>& ops = f.ops;
  std::vector<int>& absorbed_by = f.absorbed_by;
  std::vector<Step>& step_of_leader = f.step_of_leader;
  std::vector<bool>& is_leader = f.is_leader;
  const Op& op = ops[static_cast<std::size_t>(i)];
  const int g = f.prod(op.a), u = f.prod(op.b);
  if (g >= 0 && u >= 0 && g != u && is_leader[static_cast<std::size_t>(g)] && is_leader[static_cast<std::size_t>(u)] &&
      absorbed_by[static_cast<std::size_t>(g)] < 0 && absorbed_by[static_cast<std::size_t>(u)] < 0 &&
      step_of_leader[static_cast<std::size_t>(g)].ops.empty() &&
      step_of_leader[static_cast<std::size_t>(u)].ops.empty() && decode_linear_op(ops[static_cast<std::size_t>(g)]) &&
      decode_linear_op(ops[static_cast<std::size_t>(u)]) &&
      ops[static_cast<std::size_t>(g)].a == ops[static_cast<std::size_t>(u)].a &&
      same_format(ops[static_cast<std::size_t>(g)].w, ops[static_cast<std::size_t>(u)].w) &&
      ops[static_cast<std::size_t>(g)].w.rows == ops[static_cast<std::size_t>(u)].w.rows) {
    const int lead = std::min(g, u);
    Step st;
    st.type = Step::SwigluGroup;
    st.ops = {g, u};  // gate first
    st.swiglu_op = i;
    for (int o : {g, u, i}) {
      if (o != lead) {
        absorbed_by[static_cast<std::size_t>(o)] = lead;
        is_leader[static_cast<std::size_t>(o)] = false;
      }
    }
    step_of_leader[static_cast<std::size_t>(lead)] = st;
  }
}

void launch(const LaunchContext& c, const Step& st) { launch_elementwise(c, st, &cuda::swiglu); }

}  // namespace

constinit const OpDescriptor swiglu_op{
    .kind = Kind::Swiglu, .name = "swiglu", .out_shape = out_shape, .fuse_producers = fuse_producers, .launch = launch};

}  // namespace tf::cuda_internal
