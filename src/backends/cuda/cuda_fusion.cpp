#include "backends/cuda/cuda_fusion.h"

#include "backends/cuda/ops/op_descriptor.h"

namespace tf::cuda_internal {

FusionState::FusionState(const std::vector<Op>& ops_, const std::vector<char>& esc_, bool decode_)
    : ops(ops_), esc(esc_), decode(decode_) {
  const int n_ops = static_cast<int>(ops.size());
  // Producer of each pending activation.
  for (int i = 0; i < n_ops; ++i) producer[ops[static_cast<std::size_t>(i)].out.get()] = i;
  // Readers of each op's output, in tape order.
  readers.resize(static_cast<std::size_t>(n_ops));
  for (int i = 0; i < n_ops; ++i)
    for (const ActP* in : {&ops[static_cast<std::size_t>(i)].a, &ops[static_cast<std::size_t>(i)].b, &ops[static_cast<std::size_t>(i)].c})
      if (int p = prod(*in); p >= 0) readers[static_cast<std::size_t>(p)].push_back(i);
  absorbed_by.assign(static_cast<std::size_t>(n_ops), -1);
  step_of_leader.resize(static_cast<std::size_t>(n_ops));
  is_leader.assign(static_cast<std::size_t>(n_ops), true);
}

Fusion fuse(const std::vector<Op>& ops, const std::vector<char>& esc, bool decode, bool fuse_norm,
            std::int64_t fuse_norm_max) {
  const int n_ops = static_cast<int>(ops.size());
  FusionState f(ops, esc, decode);
  auto of_op = [&](int i) -> const OpDescriptor& { return op_descriptor(ops[static_cast<std::size_t>(i)].kind); };
  // 1. fusion: each op with its producers (an add into its rms_norm, ropes into their attend, a swiglu's
  // linears into one group), then ops with their siblings (linears sharing an input).
  for (int i = 0; i < n_ops; ++i)
    if (auto rule = of_op(i).fuse_producers) rule(f, i);
  for (int i = 0; i < n_ops; ++i) {
    if (!f.is_leader[static_cast<std::size_t>(i)] || !f.step_of_leader[static_cast<std::size_t>(i)].ops.empty())
      continue;
    if (auto rule = of_op(i).fuse_siblings) rule(f, i);
  }
  std::vector<Step>& steps = f.steps;
  std::vector<int>& step_index = f.step_index;
  step_index.assign(static_cast<std::size_t>(n_ops), -1);
  for (int i = 0; i < n_ops; ++i) {
    if (!f.is_leader[static_cast<std::size_t>(i)]) continue;
    Step st = f.step_of_leader[static_cast<std::size_t>(i)];
    if (st.ops.empty()) st.ops = {i};
    for (int o : st.ops) step_index[static_cast<std::size_t>(o)] = static_cast<int>(steps.size());
    if (st.swiglu_op >= 0) step_index[static_cast<std::size_t>(st.swiglu_op)] = static_cast<int>(steps.size());
    steps.push_back(std::move(st));
  }
  // Steps into the steps that read them (an rms_norm into its linear group's prologue), then steps that write
  // the next step's x terms. Each rule is its leader's (the step's first op).
  auto of_step = [&](int s) -> const OpDescriptor& { return of_op(steps[static_cast<std::size_t>(s)].ops[0]); };
  if (decode && fuse_norm) {
    for (int sn = 0; sn < static_cast<int>(steps.size()); ++sn)
      if (auto rule = of_step(sn).fuse_into_reader) rule(f, sn, fuse_norm_max);
  }
  if (decode) {
    for (int s = 0; s + 1 < static_cast<int>(steps.size()); ++s)
      if (auto rule = of_step(s).prepare_next) rule(f, s);
  }
  return {std::move(steps), std::move(step_index), std::move(f.absorbed_by), std::move(f.readers)};
}

}  // namespace tf::cuda_internal
