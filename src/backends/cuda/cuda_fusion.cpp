#include "backends/cuda/cuda_fusion.h"

#include <algorithm>
#include <unordered_map>

namespace tf::cuda_internal {

Fusion fuse(const std::vector<Op>& ops, const std::vector<char>& esc, bool decode, bool fuse_norm,
            std::int64_t fuse_norm_max) {
  const int n_ops = static_cast<int>(ops.size());
  // Producer of each pending activation.
  std::unordered_map<const Act*, int> producer;
  for (int i = 0; i < n_ops; ++i) producer[ops[static_cast<std::size_t>(i)].out.get()] = i;
  auto prod = [&](const ActP& a) -> int {
    if (!a) return -1;
    auto it = producer.find(a.get());
    return it == producer.end() ? -1 : it->second;
  };
  // Readers of each op's output, in tape order.
  std::vector<std::vector<int>> readers(static_cast<std::size_t>(n_ops));
  for (int i = 0; i < n_ops; ++i)
    for (const ActP* in : {&ops[static_cast<std::size_t>(i)].a, &ops[static_cast<std::size_t>(i)].b, &ops[static_cast<std::size_t>(i)].c})
      if (int p = prod(*in); p >= 0) readers[static_cast<std::size_t>(p)].push_back(i);

  // 1. fusion
  std::vector<int> absorbed_by(static_cast<std::size_t>(n_ops), -1);  // op -> the op whose step runs it
  std::vector<Step> step_of_leader(static_cast<std::size_t>(n_ops));
  std::vector<bool> is_leader(static_cast<std::size_t>(n_ops), true);
  auto linear_ok = [](const Op& op) { return decode_linear_op(op); };
  auto same_format = [](const WeightView& x, const WeightView& y) {
    return x.cols == y.cols && x.bits == y.bits && x.group == y.group && x.dtype == y.dtype;
  };
  for (int i = 0; i < n_ops; ++i) {
    const Op& op = ops[static_cast<std::size_t>(i)];
    if (op.kind == Kind::RmsNorm) {
      const int p = prod(op.a);
      if (p >= 0 && ops[static_cast<std::size_t>(p)].kind == Kind::Add && absorbed_by[static_cast<std::size_t>(p)] < 0 &&
          is_leader[static_cast<std::size_t>(p)] && readers[static_cast<std::size_t>(p)].front() == i) {
        // add(p) + rms_norm(i): one launch at i; p's output is written there as the sum.
        absorbed_by[static_cast<std::size_t>(p)] = i;
        is_leader[static_cast<std::size_t>(p)] = false;
        step_of_leader[static_cast<std::size_t>(i)].type = Step::AddNorm;
        step_of_leader[static_cast<std::size_t>(i)].ops = {i, p};
      }
    }
    if (op.kind == Kind::Attend) {
      // rope(q), rope(k) read only by this attend: in a decode call the attention kernel rotates both and
      // writes the cache itself (one launch); in a prefill call rope_kv_write does, then the attention.
      const int rq = prod(op.a), rk = prod(op.b);
      auto U = [](int x) { return static_cast<std::size_t>(x); };
      if (rq >= 0 && rk >= 0 && rq != rk && ops[U(rq)].kind == Kind::Rope && ops[U(rk)].kind == Kind::Rope &&
          is_leader[U(rq)] && is_leader[U(rk)] && step_of_leader[U(rq)].ops.empty() && step_of_leader[U(rk)].ops.empty() &&
          readers[U(rq)].size() == 1 && readers[U(rk)].size() == 1 && !esc[U(rq)] && !esc[U(rk)] &&
          ops[U(rq)].runs == op.runs && ops[U(rk)].runs == op.runs && ops[U(rq)].inv_freq == ops[U(rk)].inv_freq &&
          ops[U(rq)].interleaved == ops[U(rk)].interleaved && ops[U(rq)].head_dim == op.attn.head_dim &&
          ops[U(rk)].head_dim == op.attn.head_dim && ops[U(rq)].heads == op.attn.heads &&
          ops[U(rk)].heads == op.attn.kv_heads) {
        Step st;
        st.type = Step::RopeAttend;
        st.ops = {i, rq, rk};
        for (int o : {rq, rk}) {
          absorbed_by[U(o)] = i;
          is_leader[U(o)] = false;
        }
        step_of_leader[U(i)] = st;
      }
    }
    if (op.kind == Kind::Swiglu && decode) {
      const int g = prod(op.a), u = prod(op.b);
      if (g >= 0 && u >= 0 && g != u && is_leader[static_cast<std::size_t>(g)] && is_leader[static_cast<std::size_t>(u)] &&
          absorbed_by[static_cast<std::size_t>(g)] < 0 && absorbed_by[static_cast<std::size_t>(u)] < 0 &&
          step_of_leader[static_cast<std::size_t>(g)].ops.empty() && step_of_leader[static_cast<std::size_t>(u)].ops.empty() &&
          linear_ok(ops[static_cast<std::size_t>(g)]) && linear_ok(ops[static_cast<std::size_t>(u)]) &&
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
  }
  // Linears sharing an input (decode): up to 3 per launch, at the first one's place.
  for (int i = 0; i < n_ops; ++i) {
    if (!is_leader[static_cast<std::size_t>(i)] || !step_of_leader[static_cast<std::size_t>(i)].ops.empty()) continue;
    const Op& op = ops[static_cast<std::size_t>(i)];
    if (!linear_ok(op)) continue;
    Step st;
    st.type = Step::LinearGroup;
    st.ops = {i};
    for (int j = i + 1; j < n_ops && st.ops.size() < 3; ++j) {
      const Op& o = ops[static_cast<std::size_t>(j)];
      if (!is_leader[static_cast<std::size_t>(j)] || !step_of_leader[static_cast<std::size_t>(j)].ops.empty()) continue;
      if (linear_ok(o) && o.a == op.a && same_format(o.w, op.w)) {
        st.ops.push_back(j);
        absorbed_by[static_cast<std::size_t>(j)] = i;
        is_leader[static_cast<std::size_t>(j)] = false;
      }
    }
    step_of_leader[static_cast<std::size_t>(i)] = st;
  }
  std::vector<Step> steps;
  std::vector<int> step_index(static_cast<std::size_t>(n_ops), -1);
  for (int i = 0; i < n_ops; ++i) {
    if (!is_leader[static_cast<std::size_t>(i)]) continue;
    Step st = step_of_leader[static_cast<std::size_t>(i)];
    if (st.ops.empty()) st.ops = {i};
    for (int o : st.ops) step_index[static_cast<std::size_t>(o)] = static_cast<int>(steps.size());
    if (st.swiglu_op >= 0) step_index[static_cast<std::size_t>(st.swiglu_op)] = static_cast<int>(steps.size());
    steps.push_back(std::move(st));
  }

  // The one decode linear group step (after it) that reads the (add +) rms_norm step `sn`'s normed rows, and
  // nothing else does; -1 if there is none. The two norm rules below start from it.
  auto sole_group_reader = [&](int sn) {
    const Step& ns = steps[static_cast<std::size_t>(sn)];
    if (ns.dead || (ns.type != Step::AddNorm && !(ns.type == Step::Single && ops[static_cast<std::size_t>(ns.ops[0])].kind == Kind::RmsNorm)))
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
  };
  // An rms_norm (with its residual add) read only by one decode linear group of small width is computed
  // inside that group's launch: it moves to the group's step and its normed output is never written.
  if (decode && fuse_norm) {
    for (int sn = 0; sn < static_cast<int>(steps.size()); ++sn) {
      Step& ns = steps[static_cast<std::size_t>(sn)];
      const int ni = ns.ops[0];
      const int sg = sole_group_reader(sn);
      if (sg < 0) continue;
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
      if (!ok) continue;
      steps[static_cast<std::size_t>(sg)].norm_step = sn;
      ns.dead = true;
      for (int o : ns.ops) step_index[static_cast<std::size_t>(o)] = sg;
    }
  }
  // An rms_norm (with its residual add) read only by the very next step, a decode linear group on the
  // integer kernel, in a call of a few rows, writes that group's x terms itself (rms_norm_imma_prepare): the
  // group skips its prepare launch and the normed rows are never written (same bits, one launch fewer; 8B:
  // 64 a token, 27B: 128). Nothing runs between them, so nothing else touches the scratch holding the terms.
  if (decode) {
    for (int sn = 0; sn + 1 < static_cast<int>(steps.size()); ++sn) {
      if (sole_group_reader(sn) != sn + 1) continue;
      Step& ns = steps[static_cast<std::size_t>(sn)];
      Step& gs = steps[static_cast<std::size_t>(sn + 1)];
      const auto& nout = *ops[static_cast<std::size_t>(ns.ops[0])].out;
      if (!cuda::imma_norm_fusable(ops[static_cast<std::size_t>(gs.ops.front())].w, nout.rows, nout.cols)) continue;
      ns.prepares_next = true;
      gs.x_prepared = true;
    }
  }
  // A decode attention read only by the very next step, a linear group on the integer kernel (the o
  // projection), writes that group's x terms in its combine kernel (the same prepare function on the same
  // values: the same bits) and the group skips its prepare launch (8B: 32 a token, 27B: 64). Nothing runs
  // between them, so nothing else touches the scratch holding the terms.
  if (decode) {
    for (int sa = 0; sa + 1 < static_cast<int>(steps.size()); ++sa) {
      Step& as = steps[static_cast<std::size_t>(sa)];
      Step& gs = steps[static_cast<std::size_t>(sa + 1)];
      if (as.type != Step::RopeAttend || as.dead || gs.type != Step::LinearGroup || gs.dead || gs.norm_step >= 0 ||
          gs.x_prepared)
        continue;
      const int ai = as.ops[0];
      const auto& rd = readers[static_cast<std::size_t>(ai)];
      const bool sole = !rd.empty() && std::all_of(rd.begin(), rd.end(), [&](int r) {
        return step_index[static_cast<std::size_t>(r)] == sa + 1;
      });
      const AttentionSpec& sp = ops[static_cast<std::size_t>(ai)].attn;
      if (!sole || !cuda::attention_prepare_fusable(ops[static_cast<std::size_t>(gs.ops.front())].w, sp.heads, sp.head_dim))
        continue;
      as.prepares_next = true;
      gs.x_prepared = true;
    }
  }
  // A SwiGLU group whose output is read only by the very next step, a linear group on the integer kernel
  // (the down projection), writes that group's x terms after its stores (swiglu_prepare_fusable: the same
  // prepare function on the same values, the same bits) into the second scratch, and the group skips its
  // prepare launch (8B: 32 a token, 27B: 64).
  if (decode) {
    for (int sg = 0; sg + 1 < static_cast<int>(steps.size()); ++sg) {
      Step& gs = steps[static_cast<std::size_t>(sg)];
      Step& ds = steps[static_cast<std::size_t>(sg + 1)];
      if (gs.type != Step::SwigluGroup || gs.dead || gs.prepares_next || ds.type != Step::LinearGroup || ds.dead ||
          ds.norm_step >= 0 || ds.x_prepared)
        continue;
      const int si = gs.swiglu_op;
      const auto& rd = readers[static_cast<std::size_t>(si)];
      const bool sole = !rd.empty() && std::all_of(rd.begin(), rd.end(), [&](int r) {
        return step_index[static_cast<std::size_t>(r)] == sg + 1;
      });
      const Op& gate = ops[static_cast<std::size_t>(gs.ops.front())];
      const Op& down = ops[static_cast<std::size_t>(ds.ops.front())];
      if (!sole || !cuda::swiglu_prepare_fusable(gate.w, down.w, ops[static_cast<std::size_t>(si)].out->rows)) continue;
      gs.prepares_next = true;
      ds.x_prepared = true;
      ds.x_in_alt = true;
    }
  }
  return {std::move(steps), std::move(step_index), std::move(absorbed_by), std::move(readers)};
}

}  // namespace tf::cuda_internal
