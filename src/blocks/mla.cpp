#include "blocks/mla.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "blocks/host_row_log.h"
#include "blocks/sparse_attention.h"

namespace tf {

MlaBlock MlaBlock::load(WeightSource& src, const std::string& prefix, const MlaConfig& cfg) {
  MlaBlock m;
  m.cfg = cfg;
  const std::int64_t H = cfg.heads;
  m.q_a = src.matrix(prefix + "q_a_proj.weight", cfg.q_rank, cfg.hidden);
  m.q_a_norm = src.vector(prefix + "q_a_layernorm.weight", cfg.q_rank);
  m.q_b = src.matrix(prefix + "q_b_proj.weight", H * cfg.nope_dim, cfg.q_rank);
  m.kv_a = src.matrix(prefix + "kv_a_proj_with_mqa.weight", cfg.kv_rank, cfg.hidden);
  m.kv_a_norm = src.vector(prefix + "kv_a_layernorm.weight", cfg.kv_rank);
  m.kv_b = src.host_matrix(prefix + "kv_b_proj.weight", H * (cfg.nope_dim + cfg.v_dim), cfg.kv_rank);
  m.o = src.matrix(prefix + "o_proj.weight", cfg.hidden, H * cfg.v_dim);
  if (cfg.selection == MlaConfig::Selection::Own) m.indexer = KpoolIndexer::load(src, prefix + "indexer.", cfg.indexer);
  return m;
}

std::int64_t MlaBlock::log_width() const {
  const std::int64_t own =
      cfg.selection == MlaConfig::Selection::Own ? 3LL * cfg.indexer.head_dim + cfg.indexer.pools_kept() : 0;
  return cfg.kv_rank + own;
}

Tensor MlaBlock::forward(Backend& b, const Tensor& h, std::span<const StreamRows> runs, int slot) const {
  const auto H = static_cast<std::size_t>(cfg.heads), r = static_cast<std::size_t>(cfg.kv_rank);
  const auto dn = static_cast<std::size_t>(cfg.nope_dim), dv = static_cast<std::size_t>(cfg.v_dim);
  const Tensor q_resid = b.rms_norm(b.linear(h, q_a), q_a_norm, cfg.eps);
  const std::vector<float> Q = b.to_host(b.linear(q_resid, q_b));
  const std::vector<float> C = b.to_host(b.rms_norm(b.linear(h, kv_a), kv_a_norm, cfg.eps));
  const bool own = indexer.has_value(), chooses = cfg.selection != MlaConfig::Selection::Dense;
  KpoolIndexer::Rows ix;
  if (own) ix = indexer->project(b, h, q_resid);
  const auto id = static_cast<std::size_t>(cfg.indexer.head_dim), ih = static_cast<std::size_t>(cfg.indexer.heads);
  const std::int64_t pool = cfg.indexer.pool, keep = cfg.indexer.pools_kept();
  // Offsets in a row of the layer holding the choices (this one, or the shared layer's source).
  const std::size_t key_at = r, gate_at = r + id, pool_key_at = r + 2 * id, chosen_at = r + 3 * id;
  const int choice_slot = cfg.selection == MlaConfig::Selection::Shared ? cfg.shared_from : slot;

  std::size_t n = 0;
  for (const auto& run : runs) n += static_cast<std::size_t>(run.rows);
  std::vector<float> out(n * H * dv);
  const float scale = 1.0f / std::sqrt(static_cast<float>(dn));
  std::vector<float> entry(static_cast<std::size_t>(log_width())), pool_keys, scores, weights, qt(H * r),
      q_by_rank(H * r), ctx(H * r), top(H), sum(H);
  std::vector<std::int64_t> attended;
  std::vector<const float*> keys(static_cast<std::size_t>(pool)), gates(static_cast<std::size_t>(pool));
  std::size_t row = 0;
  for (const auto& run : runs) {
    auto* log = dynamic_cast<HostRowLog*>(run.host_rows);
    if (log == nullptr) throw std::logic_error("latent attention: a run without its host rows");
    log->start_call(slot, run.start, run.rows);
    // The keys of the pools complete before the run, from their last positions' rows.
    pool_keys.clear();
    if (own)
      for (std::int64_t p = 0; p < run.start / pool; ++p) {
        const auto rw = log->row(slot, p * pool + pool - 1);
        pool_keys.insert(pool_keys.end(), rw.begin() + static_cast<std::ptrdiff_t>(pool_key_at),
                         rw.begin() + static_cast<std::ptrdiff_t>(pool_key_at + id));
      }
    for (std::int64_t i = 0; i < run.rows; ++i, ++row) {
      const std::int64_t pos = run.start + i, complete = (pos + 1) / pool;
      std::fill(entry.begin(), entry.end(), 0.0f);
      std::copy_n(C.data() + row * r, r, entry.data());
      if (own) {
        std::copy_n(ix.k.data() + row * id, id, entry.data() + key_at);
        std::copy_n(ix.gate.data() + row * id, id, entry.data() + gate_at);
        if ((pos + 1) % pool == 0) {  // this position completes a pool: its key, from the rows before and this one
          for (std::int64_t t = 0; t < pool; ++t) {
            const std::int64_t at = pos - pool + 1 + t;
            const float* src = at == pos ? entry.data() : log->row(slot, at).data();
            keys[static_cast<std::size_t>(t)] = src + key_at;
            gates[static_cast<std::size_t>(t)] = src + gate_at;
          }
          indexer->pool_key(keys, gates, entry.data() + pool_key_at);
          pool_keys.insert(pool_keys.end(), entry.begin() + static_cast<std::ptrdiff_t>(pool_key_at),
                           entry.begin() + static_cast<std::ptrdiff_t>(pool_key_at + id));
        }
        std::vector<std::int64_t> chosen;
        if (complete > keep) {
          indexer->score(ix.q.data() + row * ih * id, ix.w.data() + row * ih, pool_keys, complete, scores);
          chosen = pick_blocks(scores, keep);
        } else {
          for (std::int64_t p = 0; p < complete; ++p) chosen.push_back(p);
        }
        for (std::int64_t k = 0; k < keep; ++k)
          entry[chosen_at + static_cast<std::size_t>(k)] = k < static_cast<std::int64_t>(chosen.size())
                                                               ? static_cast<float>(chosen[static_cast<std::size_t>(k)])
                                                               : -1.0f;
      }
      log->append(slot, entry);

      // The attended positions, ascending: the chosen pools' and the incomplete tail, or every one.
      attended.clear();
      if (chooses) {
        const float* choice = log->row(choice_slot, pos).data() + chosen_at;
        for (std::int64_t k = 0; k < keep && choice[k] >= 0.0f; ++k)
          for (std::int64_t t = 0; t < pool; ++t) attended.push_back(static_cast<std::int64_t>(choice[k]) * pool + t);
        for (std::int64_t t = complete * pool; t <= pos; ++t) attended.push_back(t);
      } else {
        for (std::int64_t t = 0; t <= pos; ++t) attended.push_back(t);
      }

      // Per head: the query absorbed into the latent space (kept transposed, [r][heads]), softmax over the
      // attended latents, W_UV after. Every head's sums run in the same order as one head alone would (j, then
      // a, ascending); heads sit side by side in the inner loops so that those vectorize, each latent row read
      // once for all heads.
      for (std::size_t hh = 0; hh < H; ++hh) {
        const float* q = Q.data() + (row * H + hh) * dn;
        const float* uk = kv_b.data() + hh * (dn + dv) * r;
        float* qh = qt.data() + hh * r;
        std::fill(qh, qh + r, 0.0f);
        for (std::size_t d = 0; d < dn; ++d)
          for (std::size_t j = 0; j < r; ++j) qh[j] += q[d] * uk[d * r + j];
      }
      for (std::size_t hh = 0; hh < H; ++hh)
        for (std::size_t j = 0; j < r; ++j) q_by_rank[j * H + hh] = qt[hh * r + j];
      const std::size_t A = attended.size();
      weights.assign(A * H, 0.0f);
      for (std::size_t a = 0; a < A; ++a) {
        const float* c = log->row(slot, attended[a]).data();
        float* s = weights.data() + a * H;
        for (std::size_t j = 0; j < r; ++j) {
          const float cj = c[j];
          const float* qj = q_by_rank.data() + j * H;
          for (std::size_t hh = 0; hh < H; ++hh) s[hh] += qj[hh] * cj;
        }
        for (std::size_t hh = 0; hh < H; ++hh) s[hh] *= scale;
      }
      std::fill(top.begin(), top.end(), -INFINITY);
      for (std::size_t a = 0; a < A; ++a)
        for (std::size_t hh = 0; hh < H; ++hh) top[hh] = std::max(top[hh], weights[a * H + hh]);
      std::fill(sum.begin(), sum.end(), 0.0f);
      for (std::size_t a = 0; a < A; ++a)
        for (std::size_t hh = 0; hh < H; ++hh)
          sum[hh] += (weights[a * H + hh] = std::exp(weights[a * H + hh] - top[hh]));
      std::fill(ctx.begin(), ctx.end(), 0.0f);
      for (std::size_t a = 0; a < A; ++a) {
        const float* c = log->row(slot, attended[a]).data();
        for (std::size_t hh = 0; hh < H; ++hh) {
          const float w = weights[a * H + hh];
          float* ch = ctx.data() + hh * r;
          for (std::size_t j = 0; j < r; ++j) ch[j] += w * c[j];
        }
      }
      for (std::size_t hh = 0; hh < H; ++hh) {
        const float* uv = kv_b.data() + (hh * (dn + dv) + dn) * r;
        const float* ch = ctx.data() + hh * r;
        float* dst = out.data() + (row * H + hh) * dv;
        for (std::size_t e = 0; e < dv; ++e) {
          float acc = 0.0f;
          for (std::size_t j = 0; j < r; ++j) acc += uv[e * r + j] * ch[j];
          dst[e] = acc / sum[hh];
        }
      }
    }
  }
  return b.linear(b.from_host(out, static_cast<std::int64_t>(n), static_cast<std::int64_t>(H * dv)), o);
}

}  // namespace tf
