// Linear: y = x w^T. Decode-sized linears (decode_linear_op) run on the decode matmul, which takes up to three
// of them sharing x in one launch (a LinearGroup step), a SwiGLU of two of them as its epilogue (a
// SwigluGroup step, formed by swiglu.cpp), an rms_norm in its prologue (Step::norm_step, rms_norm.cpp) and x
// terms another step wrote (Step::x_prepared); every other linear runs on a prefill GEMM.
#include <algorithm>

#include "backends/cuda/cuda_launches.h"
#include "backends/cuda/ops/linear.h"
#include "backends/cuda/ops/op_descriptor.h"

namespace tf::cuda_internal {
namespace {

OpShape out_shape(const Op& op) { return {op.a->rows, op.w.rows}; }

void need_buffers(const Op& op, LaunchBufferNeeds& need) {
  if (op.a->rows <= cuda::kMaxDecodeRows) return;
  if (cuda::prefill_linear_mma_takes(op.w))
    need.prefill_need = std::max(need.prefill_need, cuda::prefill_mma_scratch_bytes(op.a->rows, op.w.cols));
  else if (cuda::prefill_linear_imma_takes(op.w))
    need.prefill_need = std::max(need.prefill_need, cuda::prefill_imma_scratch_bytes(op.a->rows, op.w.cols));
}

// Linears sharing an input (decode): up to 3 per launch, at the first one's place.
void fuse_siblings(FusionState& f, int i) {
  const std::vector<Op>& ops = f.ops;
  const int n_ops = static_cast<int>(ops.size());
  std::vector<int>& absorbed_by = f.absorbed_by;
  std::vector<Step>& step_of_leader = f.step_of_leader;
  std::vector<bool>& is_leader = f.is_leader;
  const Op& op = ops[static_cast<std::size_t>(i)];
  if (!decode_linear_op(op)) return;
  Step st;
  st.type = Step::LinearGroup;
  st.ops = {i};
  for (int j = i + 1; j < n_ops && st.ops.size() < 3; ++j) {
    const Op& o = ops[static_cast<std::size_t>(j)];
    if (!is_leader[static_cast<std::size_t>(j)] || !step_of_leader[static_cast<std::size_t>(j)].ops.empty()) continue;
    if (decode_linear_op(o) && o.a == op.a && same_format(o.w, op.w)) {
      st.ops.push_back(j);
      absorbed_by[static_cast<std::size_t>(j)] = i;
      is_leader[static_cast<std::size_t>(j)] = false;
    }
  }
  step_of_leader[static_cast<std::size_t>(i)] = st;
}

// Here rather than on Swiglu: a SwiGLU group is a step of linears (gate and up with decode_linear's SwiGLU
// epilogue), led by the gate.
// A SwiGLU group whose output is read only by the very next step, a linear group on the integer kernel
// (the down projection), writes that group's x terms after its stores (swiglu_prepare_fusable: the same
// prepare function on the same values, the same bits) into the second scratch, and the group skips its
// prepare launch (8B: 32 a token, 27B: 64). The group still writes its rows (the terms come besides them).
void prepare_next(FusionState& f, int sg) {
  const std::vector<Op>& ops = f.ops;
  std::vector<Step>& steps = f.steps;
  const std::vector<int>& step_index = f.step_index;
  const std::vector<std::vector<int>>& readers = f.readers;
  Step& gs = steps[static_cast<std::size_t>(sg)];
  Step& ds = steps[static_cast<std::size_t>(sg + 1)];
  if (gs.type != Step::SwigluGroup || gs.dead || gs.prepares_next || ds.type != Step::LinearGroup || ds.dead ||
      ds.norm_step >= 0 || ds.x_prepared)
    return;
  const int si = gs.swiglu_op;
  const auto& rd = readers[static_cast<std::size_t>(si)];
  const bool sole = !rd.empty() && std::all_of(rd.begin(), rd.end(), [&](int r) {
    return step_index[static_cast<std::size_t>(r)] == sg + 1;
  });
  const Op& gate = ops[static_cast<std::size_t>(gs.ops.front())];
  const Op& down = ops[static_cast<std::size_t>(ds.ops.front())];
  if (!sole || !cuda::swiglu_prepare_fusable(gate.w, down.w, ops[static_cast<std::size_t>(si)].out->rows)) return;
  gs.prepares_next = true;
  ds.x_prepared = true;
  ds.x_in_alt = true;
}

// decode_linear skips outputs nobody reads.
bool output_optional(const Op& op, bool) { return decode_linear_op(op); }

// A linear or SwiGLU group: one decode_linear launch.
void launch_group(const LaunchContext& c, const Step& st) {
  const Op& op = c.ops[static_cast<std::size_t>(st.ops.front())];
  cuda::DecodeLinearArgs args;
  args.x = st.norm_step >= 0 || st.x_prepared ? nullptr : c.in_ptr(op.a);
  args.x_prepared = st.x_prepared;
  args.x_stride = op.a->cols;
  args.rows = static_cast<int>(op.a->rows);
  args.segments = static_cast<int>(st.ops.size());
  for (std::size_t s = 0; s < st.ops.size(); ++s) {
    const Op& o = c.ops[static_cast<std::size_t>(st.ops[s])];
    args.seg[s].w = o.w;
    args.seg[s].out = o.out->ptr;
    args.seg[s].out_stride = o.out->cols;
  }
  if (st.type == Step::SwigluGroup) {
    const Op& sw = c.ops[static_cast<std::size_t>(st.swiglu_op)];
    args.swiglu_out = sw.out->ptr;
    args.swiglu_stride = sw.out->cols;
  }
  if (st.norm_step >= 0) {
    const Step& ns = c.steps[static_cast<std::size_t>(st.norm_step)];
    const Op& nrm = c.ops[static_cast<std::size_t>(ns.ops[0])];
    args.norm_w = nrm.norm;
    args.norm_eps = nrm.eps;
    if (ns.type == Step::AddNorm) {
      const Op& addop = c.ops[static_cast<std::size_t>(ns.ops[1])];
      args.x = c.in_ptr(addop.a);
      args.norm_b = c.in_ptr(addop.b);
      args.norm_sum = addop.out->ptr;
    } else {
      args.x = c.in_ptr(nrm.a);
    }
  }
  args.imma_scratch = st.x_in_alt ? c.buffers.imma_scratch_alt : c.buffers.imma_scratch;
  args.imma_scratch_bytes = c.buffers.imma_scratch_bytes;
  if (st.type == Step::SwigluGroup && st.prepares_next) {  // the down projection's terms (Step::x_in_alt)
    args.swiglu_prepare = c.buffers.imma_scratch_alt;
    args.swiglu_prepare_bytes = c.buffers.imma_scratch_bytes;
  }
  c.launches.push_back({[=](cudaStream_t s) { cuda::decode_linear(args, s); }});
}

// A linear alone: the prefill GEMM, on the bf16 tensor cores where it takes the weight (x as the prompt
// precision says: LaunchBuffers::prefill_x), else on the integer ones where they take it, else the SIMT GEMM
// (both float32-close whatever the precision).
void launch_alone(const LaunchContext& c, const Step& st) {
  const Op& op = c.ops[static_cast<std::size_t>(st.ops.front())];
  const float* x = c.in_ptr(op.a);
  const std::int64_t rows = op.a->rows, xs = op.a->cols;
  const WeightView w = op.w;
  float* out = op.out->ptr;
  if (out == nullptr) return;  // nobody reads it
  void* const scratch = c.buffers.prefill_scratch;
  const std::size_t scratch_bytes = c.buffers.prefill_scratch_bytes;
  const cuda::PrefillX x_terms = c.buffers.prefill_x;
  if (rows > cuda::kMaxDecodeRows && cuda::prefill_linear_mma_takes(w) &&
      scratch_bytes >= cuda::prefill_mma_scratch_bytes(rows, w.cols) && xs % 4 == 0 &&
      reinterpret_cast<std::uintptr_t>(x) % 16 == 0) {
    c.launches.push_back({[=](cudaStream_t s) {
      cuda::prefill_linear_mma(x, xs, rows, w, out, w.rows, scratch, scratch_bytes, x_terms, s);
    }});
    return;
  }
  if (rows > cuda::kMaxDecodeRows && cuda::prefill_linear_imma_takes(w) &&
      scratch_bytes >= cuda::prefill_imma_scratch_bytes(rows, w.cols)) {
    c.launches.push_back(
        {[=](cudaStream_t s) { cuda::prefill_linear_imma(x, xs, rows, w, out, w.rows, scratch, scratch_bytes, s); }});
    return;
  }
  c.launches.push_back({[=](cudaStream_t s) { cuda::prefill_linear(x, xs, rows, w, out, w.rows, s); }});
}

void launch(const LaunchContext& c, const Step& st) {
  if (st.type == Step::LinearGroup || st.type == Step::SwigluGroup)
    launch_group(c, st);
  else
    launch_alone(c, st);
}

}  // namespace

constinit const OpDescriptor linear_op{.kind = Kind::Linear,
                                       .name = "linear",
                                       .out_shape = out_shape,
                                       .need_buffers = need_buffers,
                                       .fuse_siblings = fuse_siblings,
                                       .prepare_next = prepare_next,
                                       .output_optional = output_optional,
                                       .launch = launch};

}  // namespace tf::cuda_internal
