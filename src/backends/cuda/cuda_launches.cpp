#include "backends/cuda/cuda_launches.h"

#include <cstdint>
#include <stdexcept>

namespace tf::cuda_internal {

std::vector<Launch> build_launches(const std::vector<Op>& ops, const std::vector<Step>& steps,
                                   const std::vector<DynRefs>& dref, const LaunchBuffers& buffers) {
  std::vector<Launch> launches;
  char* dyn_dev = static_cast<char*>(buffers.dyn_dev);
  auto in_ptr = [&](const ActP& a) -> const float* {
    if (a->ptr == nullptr) throw std::logic_error("CUDA backend: input not materialized");
    return a->ptr;
  };

  // The attention launch of attend op `ia` over query q (the cache is written already, unless `da` asks
  // the decode kernel to rotate q and write this call's rows itself: da's fresh-row fields, decode only).
  auto emit_attention = [&](int ia, const float* q, cuda::DecodeAttnArgs da = {}) {
    const Op& at = ops[static_cast<std::size_t>(ia)];
    float* out = at.out->ptr;
    const auto* rows = reinterpret_cast<const cuda::AttnRow*>(dyn_dev + dref[static_cast<std::size_t>(ia)].rows);
    const auto* start = reinterpret_cast<const std::int64_t*>(dyn_dev + dref[static_cast<std::size_t>(ia)].start);
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
      da.max_splits = at.attn_splits();
      da.work = static_cast<float*>(buffers.attn_work);
      launches.push_back({[=](cudaStream_t s) { cuda::decode_attention(da, s); }});
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
        launches.push_back({[=](cudaStream_t s) { cuda::prefill_attention(pa, s); }});
        row += run.rows;
      }
    }
  };
  // An (add +) rms_norm that writes the next step's x terms (Step::prepares_next) instead of its rows.
  auto emit_norm_prepare = [&](const Step& st, const float* a, const float* b, float* sum) {
    const Op& nrm = ops[static_cast<std::size_t>(st.ops[0])];
    const Step& gs = steps[static_cast<std::size_t>(&st - steps.data()) + 1];
    const WeightView w = ops[static_cast<std::size_t>(gs.ops.front())].w;
    const float* nw = nrm.norm;
    const int rows = static_cast<int>(nrm.out->rows);
    const std::int64_t cols = nrm.out->cols;
    const float eps = nrm.eps;
    void* scratch = buffers.imma_scratch;
    const std::size_t bytes = buffers.imma_scratch_bytes;
    launches.push_back({[=](cudaStream_t s) {
      cuda::rms_norm_imma_prepare(a, b, sum, nw, rows, cols, eps, w.group, scratch, bytes, s);
    }});
  };
  for (const Step& st : steps) {
    if (st.dead) continue;
    const int i = st.ops.front();
    const Op& op = ops[static_cast<std::size_t>(i)];
    switch (st.type) {
      case Step::AddNorm: {
        const Op& addop = ops[static_cast<std::size_t>(st.ops[1])];
        const float* a = in_ptr(addop.a);
        const float* b = in_ptr(addop.b);
        float* sum = addop.out->ptr;
        if (st.prepares_next) {
          emit_norm_prepare(st, a, b, sum);
          break;
        }
        float* out = op.out->ptr;
        const float* w = op.norm;
        const std::int64_t rows = op.out->rows, cols = op.out->cols;
        const float eps = op.eps;
        launches.push_back({[=](cudaStream_t s) { cuda::rms_norm(a, b, sum, out, w, rows, cols, eps, s); }});
        break;
      }
      case Step::LinearGroup:
      case Step::SwigluGroup: {
        cuda::DecodeLinearArgs args;
        args.x = st.norm_step >= 0 || st.x_prepared ? nullptr : in_ptr(op.a);
        args.x_prepared = st.x_prepared;
        args.x_stride = op.a->cols;
        args.rows = static_cast<int>(op.a->rows);
        args.segments = static_cast<int>(st.ops.size());
        for (std::size_t s = 0; s < st.ops.size(); ++s) {
          const Op& o = ops[static_cast<std::size_t>(st.ops[s])];
          args.seg[s].w = o.w;
          args.seg[s].out = o.out->ptr;
          args.seg[s].out_stride = o.out->cols;
        }
        if (st.type == Step::SwigluGroup) {
          const Op& sw = ops[static_cast<std::size_t>(st.swiglu_op)];
          args.swiglu_out = sw.out->ptr;
          args.swiglu_stride = sw.out->cols;
        }
        if (st.norm_step >= 0) {
          const Step& ns = steps[static_cast<std::size_t>(st.norm_step)];
          const Op& nrm = ops[static_cast<std::size_t>(ns.ops[0])];
          args.norm_w = nrm.norm;
          args.norm_eps = nrm.eps;
          if (ns.type == Step::AddNorm) {
            const Op& addop = ops[static_cast<std::size_t>(ns.ops[1])];
            args.x = in_ptr(addop.a);
            args.norm_b = in_ptr(addop.b);
            args.norm_sum = addop.out->ptr;
          } else {
            args.x = in_ptr(nrm.a);
          }
        }
        args.imma_scratch = st.x_in_alt ? buffers.imma_scratch_alt : buffers.imma_scratch;
        args.imma_scratch_bytes = buffers.imma_scratch_bytes;
        if (st.type == Step::SwigluGroup && st.prepares_next) {  // the down projection's terms (Step::x_in_alt)
          args.swiglu_prepare = buffers.imma_scratch_alt;
          args.swiglu_prepare_bytes = buffers.imma_scratch_bytes;
        }
        launches.push_back({[=](cudaStream_t s) { cuda::decode_linear(args, s); }});
        break;
      }
      case Step::RopeAttend: {
        const Op& rq = ops[static_cast<std::size_t>(st.ops[1])];
        const Op& rk = ops[static_cast<std::size_t>(st.ops[2])];
        const float* qin = in_ptr(rq.a);
        const float* kin = in_ptr(rk.a);
        const float* vin = in_ptr(op.c);
        const auto* rows = reinterpret_cast<const cuda::AttnRow*>(dyn_dev + dref[static_cast<std::size_t>(i)].rows);
        const auto* pos = reinterpret_cast<const std::int64_t*>(dyn_dev + dref[static_cast<std::size_t>(st.ops[1])].pos);
        const float* inv = rq.inv_freq;
        const bool il = rq.interleaved;
        const std::int64_t n = op.out->rows;
        const AttentionSpec sp = op.attn;
        if (n <= cuda::kMaxDecodeRows) {
          // One launch: the decode attention rotates q and k itself and writes the cache (the same bits as
          // rope_kv_write first); the rotated q is never materialized (cuda_arena_plan.cpp).
          cuda::DecodeAttnArgs da;
          da.k_new = kin;
          da.v_new = vin;
          da.pos = pos;
          da.inv_freq = inv;
          da.interleaved = il;
          if (st.prepares_next) {  // the o projection's x terms, written by the combine kernel
            const Step& gs = steps[static_cast<std::size_t>(&st - steps.data()) + 1];
            da.prepare_x = buffers.imma_scratch;
            da.prepare_bytes = buffers.imma_scratch_bytes;
            da.prepare_g64 = ops[static_cast<std::size_t>(gs.ops.front())].w.group == 64;
          }
          emit_attention(i, qin, da);
          break;
        }
        float* qout = rq.out->ptr;
        launches.push_back({[=](cudaStream_t s) {
          cuda::rope_kv_write(qin, kin, vin, qout, rows, pos, inv, il, n, sp.heads, sp.kv_heads, sp.head_dim, s);
        }});
        emit_attention(i, qout);
        break;
      }
      case Step::Single: {
        switch (op.kind) {
          case Kind::Upload: {
            float* out = op.out->ptr;
            // Uploads go through the dyn block (copied before the launches).
            const std::size_t off = dref[static_cast<std::size_t>(i)].ids;
            const std::size_t bytes = op.host.size() * 4;
            launches.push_back({[=](cudaStream_t s) {
              TF_CK(cudaMemcpyAsync(out, dyn_dev + off, bytes, cudaMemcpyDeviceToDevice, s));
            }});
            break;
          }
          case Kind::Embed: {
            const WeightView w = op.w;
            const auto* ids = reinterpret_cast<const std::int32_t*>(dyn_dev + dref[static_cast<std::size_t>(i)].ids);
            float* out = op.out->ptr;
            const std::int64_t rows = op.out->rows;
            launches.push_back({[=](cudaStream_t s) { cuda::embed(w, ids, rows, out, s); }});
            break;
          }
          case Kind::RmsNorm: {
            const float* a = in_ptr(op.a);
            if (st.prepares_next) {
              emit_norm_prepare(st, a, nullptr, nullptr);
              break;
            }
            float* out = op.out->ptr;
            const float* w = op.norm;
            const std::int64_t rows = op.out->rows, cols = op.out->cols;
            const float eps = op.eps;
            launches.push_back({[=](cudaStream_t s) { cuda::rms_norm(a, nullptr, nullptr, out, w, rows, cols, eps, s); }});
            break;
          }
          case Kind::Linear: {
            const float* x = in_ptr(op.a);
            const std::int64_t rows = op.a->rows, xs = op.a->cols;
            const WeightView w = op.w;
            float* out = op.out->ptr;
            if (out == nullptr) break;  // nobody reads it
            void* const scratch = buffers.prefill_scratch;
            const std::size_t scratch_bytes = buffers.prefill_scratch_bytes;
            if (rows > cuda::kMaxDecodeRows && cuda::prefill_linear_imma_takes(w) &&
                scratch_bytes >= cuda::prefill_imma_scratch_bytes(rows, w.cols)) {
              launches.push_back({[=](cudaStream_t s) {
                cuda::prefill_linear_imma(x, xs, rows, w, out, w.rows, scratch, scratch_bytes, s);
              }});
              break;
            }
            launches.push_back({[=](cudaStream_t s) { cuda::prefill_linear(x, xs, rows, w, out, w.rows, s); }});
            break;
          }
          case Kind::Add:
          case Kind::Swiglu: {  // elementwise over two inputs of the output's shape
            const float* a = in_ptr(op.a);
            const float* b = in_ptr(op.b);
            float* out = op.out->ptr;
            const std::int64_t n = op.out->rows * op.out->cols;
            auto* const fn = op.kind == Kind::Add ? &cuda::add : &cuda::swiglu;
            launches.push_back({[=](cudaStream_t s) { fn(a, b, out, n, s); }});
            break;
          }
          case Kind::Rope: {
            const float* a = in_ptr(op.a);
            float* out = op.out->ptr;
            const std::int64_t rows = op.out->rows;
            const int heads = op.heads, hd = op.head_dim;
            const auto* pos = reinterpret_cast<const std::int64_t*>(dyn_dev + dref[static_cast<std::size_t>(i)].pos);
            const float* inv = op.inv_freq;
            const bool il = op.interleaved;
            launches.push_back({[=](cudaStream_t s) { cuda::rope(a, out, rows, heads, hd, pos, inv, il, s); }});
            break;
          }
          case Kind::Attend: {
            const Op& at = op;
            const float* k = in_ptr(at.b);
            const float* v = in_ptr(at.c);
            const auto* rows = reinterpret_cast<const cuda::AttnRow*>(dyn_dev + dref[static_cast<std::size_t>(i)].rows);
            const std::int64_t n = at.out->rows;
            const AttentionSpec sp = at.attn;
            launches.push_back({[=](cudaStream_t s) { cuda::kv_write(rows, k, v, n, sp.kv_heads, sp.head_dim, s); }});
            emit_attention(i, in_ptr(at.a));
            break;
          }
          case Kind::LastRows: {
            const float* a = in_ptr(op.a);
            float* out = op.out->ptr;
            const std::int64_t first = op.first, n = op.out->rows, cols = op.out->cols;
            launches.push_back({[=](cudaStream_t s) { cuda::copy_rows(a, first, n, cols, out, s); }});
            break;
          }
        }
        break;
      }
    }
  }
  return launches;
}

}  // namespace tf::cuda_internal
