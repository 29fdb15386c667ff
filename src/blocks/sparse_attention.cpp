#include "blocks/sparse_attention.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "blocks/host_row_log.h"

namespace tf {
namespace {

// Rotate-half RoPE of one head's first `rotary` dims at `position` (the backend's rope, for block keys whose
// positions are not a call's rows).
void rotate(float* v, int rotary, float base, std::int64_t position) {
  const int half = rotary / 2;
  for (int i = 0; i < half; ++i) {
    const auto inv = static_cast<float>(1.0 / std::pow(static_cast<double>(base), 2.0 * i / rotary));
    const float theta = static_cast<float>(position) * inv;
    const auto c = static_cast<float>(std::cos(static_cast<double>(theta)));
    const auto s = static_cast<float>(std::sin(static_cast<double>(theta)));
    const float a = v[i], b = v[i + half];
    v[i] = a * c - b * s;
    v[i + half] = a * s + b * c;
  }
}

}  // namespace

std::vector<std::int64_t> pick_blocks(std::span<const float> scores, std::int64_t keep) {
  std::vector<std::int64_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  if (static_cast<std::int64_t>(order.size()) > keep) {
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
      return scores[static_cast<std::size_t>(a)] > scores[static_cast<std::size_t>(b)];
    });
    order.resize(static_cast<std::size_t>(keep));
    std::sort(order.begin(), order.end());
  }
  return order;
}

SparseAttentionBlock SparseAttentionBlock::load(WeightSource& src, const std::string& prefix,
                                                const SparseAttentionConfig& cfg) {
  SparseAttentionBlock s;
  s.cfg = cfg;
  const AttentionConfig& ac = cfg.attention;
  const std::int64_t hd = ac.spec.head_dim;
  s.q = src.matrix(prefix + "q_proj.weight", ac.spec.heads * hd * 2, ac.hidden);
  s.k = src.matrix(prefix + "k_proj.weight", ac.spec.kv_heads * hd, ac.hidden);
  s.v = src.matrix(prefix + "v_proj.weight", ac.spec.kv_heads * hd, ac.hidden);
  s.o = src.matrix(prefix + "o_proj.weight", ac.hidden, ac.spec.heads * hd);
  s.q_norm = src.vector(prefix + "q_norm.weight", hd, ac.zero_centred_qk_norm);
  s.k_norm = src.vector(prefix + "k_norm.weight", hd, ac.zero_centred_qk_norm);
  const std::int64_t id = cfg.index_head_dim;
  s.index_qk = src.matrix(prefix + "indexer.index_qk_proj.weight", (cfg.index_heads + 1) * id, ac.hidden);
  s.index_q_norm = src.vector(prefix + "indexer.q_layernorm.weight", id, cfg.zero_centred_index_norms);
  s.index_k_norm = src.floats(prefix + "indexer.k_layernorm.weight", id);
  if (cfg.zero_centred_index_norms)
    for (float& w : s.index_k_norm) w += 1.0f;
  return s;
}

Tensor SparseAttentionBlock::forward(Backend& b, const Tensor& h, std::span<const StreamRows> runs, int slot) const {
  const AttentionConfig& ac = cfg.attention;
  const AttentionSpec& at = ac.spec;
  const auto hd = static_cast<std::size_t>(at.head_dim), kv = static_cast<std::size_t>(at.kv_heads);
  const auto heads = static_cast<std::size_t>(at.heads), group = heads / kv;
  const auto ih = static_cast<std::size_t>(cfg.index_heads), id = static_cast<std::size_t>(cfg.index_head_dim);
  const int rotary = ac.rope.rotary_dims > 0 ? ac.rope.rotary_dims : at.head_dim;

  Tensor query = b.linear(h, q);
  const Tensor gate = b.head_columns(query, at.heads, 2 * at.head_dim, at.head_dim, at.head_dim);
  query = b.head_columns(query, at.heads, 2 * at.head_dim, 0, at.head_dim);
  query = b.rope(b.rms_norm_heads(query, q_norm, at.heads, ac.norm_eps), at.heads, at.head_dim, runs, ac.rope);
  const Tensor key = b.rope(b.rms_norm_heads(b.linear(h, k), k_norm, at.kv_heads, ac.norm_eps), at.kv_heads,
                            at.head_dim, runs, ac.rope);
  const Tensor value = b.linear(h, v);
  const Tensor iqk = b.linear(h, index_qk);
  const int iqk_cols = (cfg.index_heads + 1) * cfg.index_head_dim;
  RopeSpec index_rope = ac.rope;
  index_rope.rotary_dims = rotary;
  const Tensor iq = b.rope(b.rms_norm_heads(b.head_columns(iqk, 1, iqk_cols, 0, cfg.index_heads * cfg.index_head_dim),
                                            index_q_norm, cfg.index_heads, ac.norm_eps),
                           cfg.index_heads, cfg.index_head_dim, runs, index_rope);
  const Tensor ik = b.head_columns(iqk, 1, iqk_cols, cfg.index_heads * cfg.index_head_dim, cfg.index_head_dim);

  const std::vector<float> Q = b.to_host(query), K = b.to_host(key), V = b.to_host(value);
  const std::vector<float> IQ = b.to_host(iq), IK = b.to_host(ik);
  std::size_t n = 0;
  for (const auto& r : runs) n += static_cast<std::size_t>(r.rows);
  std::vector<float> out(n * heads * hd);
  const std::size_t kvw = kv * hd, width = 2 * kvw + id;
  const auto ratio = static_cast<std::int64_t>(cfg.compress_ratio);
  const std::int64_t keep = cfg.budget / cfg.compress_ratio;
  const float index_scale = 1.0f / std::sqrt(static_cast<float>(id));

  std::vector<float> entry(width), block_keys, scores, weights, acc(hd);
  std::vector<std::int64_t> attended;
  std::size_t row = 0;
  for (const auto& run : runs) {
    auto* log = dynamic_cast<HostRowLog*>(run.host_rows);
    if (log == nullptr) throw std::logic_error("sparse attention: a run without its host rows");
    log->start_call(slot, run.start, run.rows);
    for (std::int64_t i = 0; i < run.rows; ++i) {
      const std::size_t r = row + static_cast<std::size_t>(i);
      std::copy_n(K.data() + r * kvw, kvw, entry.data());
      std::copy_n(V.data() + r * kvw, kvw, entry.data() + kvw);
      std::copy_n(IK.data() + r * id, id, entry.data() + 2 * kvw);
      log->append(slot, entry);
    }
    // The block keys of every block complete by the run's last row (each from its own positions alone).
    const std::int64_t blocks = (run.start + run.rows) / ratio;
    block_keys.assign(static_cast<std::size_t>(blocks) * id, 0.0f);
    if (blocks > keep)
      for (std::int64_t bl = 0; bl < blocks; ++bl) {
        float* bk = block_keys.data() + static_cast<std::size_t>(bl) * id;
        for (std::int64_t t = 0; t < ratio; ++t) {
          const float* raw = log->row(slot, bl * ratio + t).data() + 2 * kvw;
          for (std::size_t j = 0; j < id; ++j) bk[j] += raw[j];
        }
        float ss = 0.0f;
        for (std::size_t j = 0; j < id; ++j) {
          bk[j] /= static_cast<float>(ratio);
          ss += bk[j] * bk[j];
        }
        const float inv = 1.0f / std::sqrt(ss / static_cast<float>(id) + ac.norm_eps);
        for (std::size_t j = 0; j < id; ++j) bk[j] = bk[j] * inv * index_k_norm[j];
        rotate(bk, rotary, ac.rope.base, bl * ratio);
      }
    for (std::int64_t i = 0; i < run.rows; ++i, ++row) {
      const std::int64_t pos = run.start + i, complete = (pos + 1) / ratio;
      attended.clear();
      if (complete > keep) {
        scores.assign(static_cast<std::size_t>(complete), 0.0f);
        for (std::int64_t bl = 0; bl < complete; ++bl) {
          const float* bk = block_keys.data() + static_cast<std::size_t>(bl) * id;
          float s = 0.0f;
          for (std::size_t hh = 0; hh < ih; ++hh) {
            const float* qh = IQ.data() + row * ih * id + hh * id;
            float d = 0.0f;
            for (std::size_t j = 0; j < id; ++j) d += qh[j] * bk[j];
            s += std::max(d, 0.0f);
          }
          scores[static_cast<std::size_t>(bl)] = s * index_scale;
        }
        for (const std::int64_t bl : pick_blocks(scores, keep))
          for (std::int64_t t = 0; t < ratio; ++t) attended.push_back(bl * ratio + t);
        for (std::int64_t t = complete * ratio; t <= pos; ++t) attended.push_back(t);
      } else {
        for (std::int64_t t = 0; t <= pos; ++t) attended.push_back(t);
      }
      // Softmax attention of each query head over the attended positions, in position order.
      weights.resize(attended.size());
      for (std::size_t hq = 0; hq < heads; ++hq) {
        const float* qv = Q.data() + row * heads * hd + hq * hd;
        const std::size_t kh = hq / group;
        float top = -INFINITY;
        for (std::size_t a = 0; a < attended.size(); ++a) {
          const float* kr = log->row(slot, attended[a]).data() + kh * hd;
          float d = 0.0f;
          for (std::size_t j = 0; j < hd; ++j) d += qv[j] * kr[j];
          weights[a] = d * at.scale;
          top = std::max(top, weights[a]);
        }
        float sum = 0.0f;
        for (float& w : weights) {
          w = std::exp(w - top);
          sum += w;
        }
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (std::size_t a = 0; a < attended.size(); ++a) {
          const float* vr = log->row(slot, attended[a]).data() + kvw + kh * hd;
          for (std::size_t j = 0; j < hd; ++j) acc[j] += weights[a] * vr[j];
        }
        float* dst = out.data() + row * heads * hd + hq * hd;
        for (std::size_t j = 0; j < hd; ++j) dst[j] = acc[j] / sum;
      }
    }
  }
  const Tensor attended_rows = b.from_host(out, static_cast<std::int64_t>(n), static_cast<std::int64_t>(heads * hd));
  return b.linear(b.sigmoid_gate(attended_rows, gate), o);
}

}  // namespace tf
