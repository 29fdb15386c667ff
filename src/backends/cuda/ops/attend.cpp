// Attend: causal attention of each stream's rows over its KV cache, after writing the rows' k and v there.
// The rows of each stream (Op::runs) and their cache rows are dyn values. A rope(q) and a rope(k) read only
// by the attend are fused into it (a RopeAttend step): in decode calls the decode attention kernel rotates
// q and k and writes the cache itself, in prefill calls rope_kv_write does before the attention.
#include <algorithm>
#include <stdexcept>

#include "backends/cuda/cuda_launches.h"
#include "backends/cuda/ops/op_descriptor.h"

namespace tf::cuda_internal {
namespace {

// The decode attention's grid of splits along the cache, enough for the largest cache of the call.
int attend_splits(const Op& op) {
  if (op.attn.kv_heads <= 0) return 0;
  std::int64_t cap = 0;
  for (const Op::Run& r : op.runs) cap = std::max<std::int64_t>(cap, r.kv ? r.kv->cap : 0);
  return cuda::decode_attention_max_splits(static_cast<int>(cap), op.attn.kv_heads);
}

OpShape out_shape(const Op& op) { return {op.a->rows, op.a->cols}; }

void put_dyn(const Op& op, DynWriter& dyn, DynRefs& ref) {
  std::vector<cuda::AttnRow> rows;
  std::vector<std::int64_t> starts;
  for (const Op::Run& run : op.runs) {
    for (std::int64_t r = 0; r < run.rows; ++r) {
      cuda::AttnRow row;
      row.k = run.kv->k(op.layer);
      row.v = run.kv->v(op.layer);
      row.len = static_cast<std::int32_t>(run.start + r + 1);
      row.cap = run.kv->cap;
      row.write_pos = static_cast<std::int32_t>(run.start + r);
      row.new_from = static_cast<std::int32_t>(run.start);  // the stream's rows in this call start here
      rows.push_back(row);
    }
    starts.push_back(run.start);
  }
  ref.rows = dyn.put(rows.data(), rows.size() * sizeof(cuda::AttnRow));
  // Each stream's start, for the prefill kernel only. A decode tape's dyn layout must depend on its rows
  // alone (a graph replays for every tape of the same signature, whatever streams share its rows).
  if (op.out->rows > cuda::kMaxDecodeRows) ref.start = dyn.put(starts.data(), starts.size() * 8);
}

// The grid depends on the caches' capacities, which no Op field holds: a cache that grew needs a new graph.
std::uint64_t signature_word(const Op& op) { return static_cast<std::uint64_t>(attend_splits(op)); }

void need_buffers(const Op& op, LaunchBufferNeeds& need) {
  if (op.out->rows <= cuda::kMaxDecodeRows) {
    need.max_attn_rows = std::max(need.max_attn_rows, op.out->rows);
    need.max_splits = std::max(need.max_splits, attend_splits(op));
    need.max_heads = std::max(need.max_heads, op.attn.heads);
    need.max_dim = std::max(need.max_dim, op.attn.head_dim);
  }
}

// rope(q), rope(k) read only by this attend: in a decode call the attention kernel rotates both and
// writes the cache itself (one launch); in a prefill call rope_kv_write does, then the attention. Partial
// RoPE (Qwen3.5) and M-RoPE are not fused: those kernels turn whole heads, each row by one position.
void fuse_producers(FusionState& f, int i) {
  const std::vector<Op>& ops = f.ops;
  const std::vector<char>& esc = f.esc;
  std::vector<int>& absorbed_by = f.absorbed_by;
  std::vector<Step>& step_of_leader = f.step_of_leader;
  std::vector<bool>& is_leader = f.is_leader;
  const std::vector<std::vector<int>>& readers = f.readers;
  const Op& op = ops[static_cast<std::size_t>(i)];
  const int rq = f.prod(op.a), rk = f.prod(op.b);
  auto U = [](int x) { return static_cast<std::size_t>(x); };
  if (rq >= 0 && rk >= 0 && rq != rk && ops[U(rq)].kind == Kind::Rope && ops[U(rk)].kind == Kind::Rope &&
      is_leader[U(rq)] && is_leader[U(rk)] && step_of_leader[U(rq)].ops.empty() && step_of_leader[U(rk)].ops.empty() &&
      readers[U(rq)].size() == 1 && readers[U(rk)].size() == 1 && !esc[U(rq)] && !esc[U(rk)] &&
      ops[U(rq)].runs == op.runs && ops[U(rk)].runs == op.runs && ops[U(rq)].inv_freq == ops[U(rk)].inv_freq &&
      ops[U(rq)].interleaved == ops[U(rk)].interleaved && ops[U(rq)].rotary == 0 && ops[U(rk)].rotary == 0 &&
      ops[U(rq)].mrope.empty() && ops[U(rk)].mrope.empty() &&
      ops[U(rq)].head_dim == op.attn.head_dim &&
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

// A decode attention read only by the very next step, a linear group on the integer kernel (the o
// projection), writes that group's x terms in its combine kernel (the same prepare function on the same
// values: the same bits) and the group skips its prepare launch (8B: 32 a token, 27B: 64). Nothing runs
// between them, so nothing else touches the scratch holding the terms.
void prepare_next(FusionState& f, int sa) {
  const std::vector<Op>& ops = f.ops;
  std::vector<Step>& steps = f.steps;
  const std::vector<int>& step_index = f.step_index;
  const std::vector<std::vector<int>>& readers = f.readers;
  Step& as = steps[static_cast<std::size_t>(sa)];
  Step& gs = steps[static_cast<std::size_t>(sa + 1)];
  if (as.type != Step::RopeAttend || as.dead || gs.type != Step::LinearGroup || gs.dead || gs.norm_step >= 0 ||
      gs.x_prepared)
    return;
  const int ai = as.ops[0];
  const auto& rd = readers[static_cast<std::size_t>(ai)];
  const bool sole = !rd.empty() && std::all_of(rd.begin(), rd.end(), [&](int r) {
    return step_index[static_cast<std::size_t>(r)] == sa + 1;
  });
  const AttentionSpec& sp = ops[static_cast<std::size_t>(ai)].attn;
  if (!sole || !cuda::attention_prepare_fusable(ops[static_cast<std::size_t>(gs.ops.front())].w, sp.heads, sp.head_dim))
    return;
  as.prepares_next = true;
  gs.x_prepared = true;
}

// A fused rope+attend step never writes the rotated k. It writes the rotated q (read in the same step)
// only when it runs as rope_kv_write + prefill attention (more than kMaxDecodeRows rows); a decode call's
// attention kernel rotates the raw q itself. Nothing else reads the rotated q (the fusion requires it).
// An attention that writes the next step's x terms still writes its output (its combine kernel reads rows
// of one split back from there).
void step_outputs(const std::vector<Op>& ops, const Step& st, std::vector<bool>& needed) {
  if (st.type == Step::RopeAttend) {
    const Op& rq = ops[static_cast<std::size_t>(st.ops[1])];
    needed[static_cast<std::size_t>(st.ops[1])] = rq.out->rows > cuda::kMaxDecodeRows;
    needed[static_cast<std::size_t>(st.ops[2])] = false;
  }
}

// The attention launch of attend op `ia` over query q (the cache is written already, unless `da` asks
// the decode kernel to rotate q and write this call's rows itself: da's fresh-row fields, decode only).
void emit_attention(const LaunchContext& c, int ia, const float* q, cuda::DecodeAttnArgs da = {}) {
  const Op& at = c.ops[static_cast<std::size_t>(ia)];
  float* out = at.out->ptr;
  const auto* rows = reinterpret_cast<const cuda::AttnRow*>(c.dyn_dev + c.dref[static_cast<std::size_t>(ia)].rows);
  const auto* start = reinterpret_cast<const std::int64_t*>(c.dyn_dev + c.dref[static_cast<std::size_t>(ia)].start);
  const std::int64_t n = at.out->rows;
  const AttentionSpec sp = at.attn;
  if (n <= cuda::kMaxDecodeRows) {
    da.q = q;
    da.out = out;
    da.rows = rows;
    da.n_rows = static_cast<int>(n);
    da.heads = sp.heads;
    da.kv_heads = sp.kv_heads;
    da.head_dim = sp.head_dim;
    da.scale = sp.scale;
    da.max_splits = attend_splits(at);
    da.work = static_cast<float*>(c.buffers.attn_work);
    c.launches.push_back({[=](cudaStream_t s) { cuda::decode_attention(da, s); }});
  } else {
    if (da.k_new != nullptr) throw std::logic_error("CUDA backend: fresh rows in a prefill attention");
    // One launch per stream: the prefill kernel attends one cache.
    std::int64_t row = 0;
    for (std::size_t r = 0; r < at.runs.size(); ++r) {
      const Op::Run& run = at.runs[r];
      const std::int64_t at_row = row * at.out->cols;
      cuda::PrefillAttnArgs pa;
      pa.q = q + at_row;
      pa.out = out + at_row;
      pa.k = run.kv->k(at.layer);
      pa.v = run.kv->v(at.layer);
      pa.cap = run.kv->cap;
      pa.start = start + r;
      pa.n_rows = static_cast<int>(run.rows);
      pa.heads = sp.heads;
      pa.kv_heads = sp.kv_heads;
      pa.head_dim = sp.head_dim;
      pa.scale = sp.scale;
      c.launches.push_back({[=](cudaStream_t s) { cuda::prefill_attention(pa, s); }});
      row += run.rows;
    }
  }
}

// A rope(q) + rope(k) + attend step: one decode attention launch that rotates and writes the cache itself
// (decode), or rope_kv_write and the prefill attention.
void launch_rope_attend(const LaunchContext& c, const Step& st) {
  const int i = st.ops.front();
  const Op& op = c.ops[static_cast<std::size_t>(i)];
  const Op& rq = c.ops[static_cast<std::size_t>(st.ops[1])];
  const Op& rk = c.ops[static_cast<std::size_t>(st.ops[2])];
  const float* qin = c.in_ptr(rq.a);
  const float* kin = c.in_ptr(rk.a);
  const float* vin = c.in_ptr(op.c);
  const auto* rows = reinterpret_cast<const cuda::AttnRow*>(c.dyn_dev + c.dref[static_cast<std::size_t>(i)].rows);
  const auto* pos = reinterpret_cast<const std::int64_t*>(c.dyn_dev + c.dref[static_cast<std::size_t>(st.ops[1])].pos);
  const float* inv = rq.inv_freq;
  const bool il = rq.interleaved;
  const std::int64_t n = op.out->rows;
  const AttentionSpec sp = op.attn;
  if (n <= cuda::kMaxDecodeRows) {
    // One launch: the decode attention rotates q and k itself and writes the cache (the same bits as
    // rope_kv_write first); the rotated q is never materialized (step_outputs above).
    cuda::DecodeAttnArgs da;
    da.k_new = kin;
    da.v_new = vin;
    da.pos = pos;
    da.inv_freq = inv;
    da.interleaved = il;
    if (st.prepares_next) {  // the o projection's x terms, written by the combine kernel
      const Step& gs = c.next(st);
      da.prepare_x = c.buffers.imma_scratch;
      da.prepare_bytes = c.buffers.imma_scratch_bytes;
      da.prepare_g64 = c.ops[static_cast<std::size_t>(gs.ops.front())].w.group == 64;
    }
    emit_attention(c, i, qin, da);
    return;
  }
  float* qout = rq.out->ptr;
  c.launches.push_back({[=](cudaStream_t s) {
    cuda::rope_kv_write(qin, kin, vin, qout, rows, pos, inv, il, n, sp.heads, sp.kv_heads, sp.head_dim, s);
  }});
  emit_attention(c, i, qout);
}

// An attend alone: the cache write, then the attention.
void launch_alone(const LaunchContext& c, const Step& st) {
  const int i = st.ops.front();
  const Op& at = c.ops[static_cast<std::size_t>(i)];
  const float* k = c.in_ptr(at.b);
  const float* v = c.in_ptr(at.c);
  const auto* rows = reinterpret_cast<const cuda::AttnRow*>(c.dyn_dev + c.dref[static_cast<std::size_t>(i)].rows);
  const std::int64_t n = at.out->rows;
  const AttentionSpec sp = at.attn;
  c.launches.push_back({[=](cudaStream_t s) { cuda::kv_write(rows, k, v, n, sp.kv_heads, sp.head_dim, s); }});
  emit_attention(c, i, c.in_ptr(at.a));
}

void launch(const LaunchContext& c, const Step& st) {
  if (st.type == Step::RopeAttend)
    launch_rope_attend(c, st);
  else
    launch_alone(c, st);
}

}  // namespace

constinit const OpDescriptor attend_op{.kind = Kind::Attend,
                                       .name = "attend",
                                       .out_shape = out_shape,
                                       .put_dyn = put_dyn,
                                       .signature_word = signature_word,
                                       .need_buffers = need_buffers,
                                       .fuse_producers = fuse_producers,
                                       .prepare_next = prepare_next,
                                       .step_outputs = step_outputs,
                                       .launch = launch};

}  // namespace tf::cuda_internal
