// RmsNorm: rms_norm(x) * weight per row. It takes the residual add that feeds it into its launch (an AddNorm
// step, which writes the sum too); in decode tapes it can move into the linear group that reads it (the
// group's prologue computes it), or write that group's x terms for the integer kernel instead of its rows.
// Those rules live here: each is about the norm, whichever op is on the other side.
#include "backends/cuda/cuda_launches.h"
#include "backends/cuda/ops/op_descriptor.h"

namespace tf::cuda_internal {
namespace {

OpShape out_shape(const Op& op) { return {op.a->rows, op.a->cols}; }

// add(p) + rms_norm(i), when the norm is the add's first reader.
void fuse_producers(FusionState& f, int i) {
  const std::vector<Op>& ops = f.ops;
  std::vector<int>& absorbed_by = f.absorbed_by;
  std::vector<Step>& step_of_leader = f.step_of_leader;
  std::vector<bool>& is_leader = f.is_leader;
  const std::vector<std::vector<int>>& readers = f.readers;
  const Op& op = ops[static_cast<std::size_t>(i)];
  const int p = f.prod(op.a);
  if (p >= 0 && ops[static_cast<std::size_t>(p)].kind == Kind::Add && absorbed_by[static_cast<std::size_t>(p)] < 0 &&
      is_leader[static_cast<std::size_t>(p)] && readers[static_cast<std::size_t>(p)].front() == i) {
    // add(p) + rms_norm(i): one launch at i; p's output is written there as the sum.
    absorbed_by[static_cast<std::size_t>(p)] = i;
    is_leader[static_cast<std::size_t>(p)] = false;
    step_of_leader[static_cast<std::size_t>(i)].type = Step::AddNorm;
    step_of_leader[static_cast<std::size_t>(i)].ops = {i, p};
  }
}

// The one decode linear group step (after it) that reads the (add +) rms_norm step `sn`'s normed rows, and
// nothing else does; -1 if there is none. The two norm rules below start from it.
int sole_group_reader(const FusionState& f, int sn) {
  const std::vector<Op>& ops = f.ops;
  const std::vector<Step>& steps = f.steps;
  const std::vector<int>& step_index = f.step_index;
  const std::vector<std::vector<int>>& readers = f.readers;
  const std::vector<char>& esc = f.esc;
  const Step& ns = steps[static_cast<std::size_t>(sn)];
  if (ns.dead || (ns.type != Step::AddNorm &&
                  !(ns.type == Step::Single && ops[static_cast<std::size_t>(ns.ops[0])].kind == Kind::RmsNorm)))
    return -1;
  const int ni = ns.ops[0];
  const auto& rd = readers[static_cast<std::size_t>(ni)];
  if (esc[static_cast<std::size_t>(ni)] || rd.empty()) return -1;
  const int sg = step_index[static_cast<std::size_t>(rd.front())];
  for (int r : rd)
    if (step_index[static_cast<std::size_t>(r)] != sg) return -1;
  const Step& gs = steps[static_cast<std::size_t>(sg)];
  const bool group = (gs.type == Step::LinearGroup || gs.type == Step::SwigluGroup) && gs.norm_step < 0 && !gs.dead;
  return sg > sn && group ? sg : -1;
}

// An rms_norm (with its residual add) read only by one decode linear group of small width is computed
// inside that group's launch: it moves to the group's step and its normed output is never written.
void fuse_into_reader(FusionState& f, int sn, std::int64_t fuse_norm_max) {
  const std::vector<Op>& ops = f.ops;
  std::vector<Step>& steps = f.steps;
  std::vector<int>& step_index = f.step_index;
  const std::vector<std::vector<int>>& readers = f.readers;
  Step& ns = steps[static_cast<std::size_t>(sn)];
  const int ni = ns.ops[0];
  const int sg = sole_group_reader(f, sn);
  if (sg < 0) return;
  const Step& gs = steps[static_cast<std::size_t>(sg)];
  // The untiled kernel re-reads x per warp, so it fuses only narrow norms; the tiled one, any. Every
  // block of a fused launch reads x (and the residual) twice over and redoes the norm, which costs
  // more than the launch it saves once rows x cols passes ~2k (H200: the 8B shape decodes 198 tok/s
  // unfused vs 187 fused, the 27B's 8-row verify 1.05x vs 1.34x a step; SmolLM2's one row 1,013 vs
  // 919 tok/s fused). Fused and standalone norms give the same bits (norm_part_sum's order).
  const auto& nout = *ops[static_cast<std::size_t>(ni)].out;
  bool ok = cuda::decode_linear_takes_norm(ops[static_cast<std::size_t>(gs.ops.front())].w) &&
            nout.rows * nout.cols <= fuse_norm_max;
  if (ns.type == Step::AddNorm) {  // the residual sum moves to step sg: nobody may read it before
    for (int r : readers[static_cast<std::size_t>(ns.ops[1])])
      if (r != ni && step_index[static_cast<std::size_t>(r)] <= sg) ok = false;
  }
  if (!ok) return;
  steps[static_cast<std::size_t>(sg)].norm_step = sn;
  ns.dead = true;
  for (int o : ns.ops) step_index[static_cast<std::size_t>(o)] = sg;
}

// An rms_norm (with its residual add) read only by the very next step, a decode linear group on the
// integer kernel, in a call of a few rows, writes that group's x terms itself (rms_norm_imma_prepare): the
// group skips its prepare launch and the normed rows are never written (same bits, one launch fewer; 8B:
// 64 a token, 27B: 128). Nothing runs between them, so nothing else touches the scratch holding the terms.
void prepare_next(FusionState& f, int sn) {
  const std::vector<Op>& ops = f.ops;
  std::vector<Step>& steps = f.steps;
  if (sole_group_reader(f, sn) != sn + 1) return;
  Step& ns = steps[static_cast<std::size_t>(sn)];
  Step& gs = steps[static_cast<std::size_t>(sn + 1)];
  const auto& nout = *ops[static_cast<std::size_t>(ns.ops[0])].out;
  if (!cuda::imma_norm_fusable(ops[static_cast<std::size_t>(gs.ops.front())].w, nout.rows, nout.cols)) return;
  ns.prepares_next = true;
  gs.x_prepared = true;
}

// A norm that writes the next step's x terms (prepare_next) never writes its normed rows.
void step_outputs(const std::vector<Op>&, const Step& st, std::vector<bool>& needed) {
  if (st.prepares_next) needed[static_cast<std::size_t>(st.ops[0])] = false;
}

// An (add +) rms_norm that writes the next step's x terms (Step::prepares_next) instead of its rows.
void emit_norm_prepare(const LaunchContext& c, const Step& st, const float* a, const float* b, float* sum) {
  const Op& nrm = c.ops[static_cast<std::size_t>(st.ops[0])];
  const Step& gs = c.next(st);
  const WeightView w = c.ops[static_cast<std::size_t>(gs.ops.front())].w;
  const float* nw = nrm.norm;
  const int rows = static_cast<int>(nrm.out->rows);
  const std::int64_t cols = nrm.out->cols;
  const float eps = nrm.eps;
  void* scratch = c.buffers.imma_scratch;
  const std::size_t bytes = c.buffers.imma_scratch_bytes;
  c.launches.push_back({[=](cudaStream_t s) {
    cuda::rms_norm_imma_prepare(a, b, sum, nw, rows, cols, eps, w.group, scratch, bytes, s);
  }});
}

// The norm alone, or with its residual add (AddNorm: the sum written as well).
void launch(const LaunchContext& c, const Step& st) {
  const Op& op = c.ops[static_cast<std::size_t>(st.ops.front())];
  // An Add fused in front: the norm reads a + b and also writes that sum; alone it reads its input.
  const float *a = nullptr, *b = nullptr;
  float* sum = nullptr;
  if (st.type == Step::AddNorm) {
    const Op& addop = c.ops[static_cast<std::size_t>(st.ops[1])];
    a = c.in_ptr(addop.a);
    b = c.in_ptr(addop.b);
    sum = addop.out->ptr;
  } else {
    a = c.in_ptr(op.a);
  }
  if (st.prepares_next) {
    emit_norm_prepare(c, st, a, b, sum);
    return;
  }
  float* out = op.out->ptr;
  const float* w = op.norm;
  const std::int64_t rows = op.out->rows, cols = op.out->cols;
  const float eps = op.eps;
  c.launches.push_back({[=](cudaStream_t s) { cuda::rms_norm(a, b, sum, out, w, rows, cols, eps, s); }});
}

}  // namespace

constinit const OpDescriptor rms_norm_op{.kind = Kind::RmsNorm,
                                         .name = "rms_norm",
                                         .out_shape = out_shape,
                                         .fuse_producers = fuse_producers,
                                         .fuse_into_reader = fuse_into_reader,
                                         .prepare_next = prepare_next,
                                         .step_outputs = step_outputs,
                                         .launch = launch};

}  // namespace tf::cuda_internal
