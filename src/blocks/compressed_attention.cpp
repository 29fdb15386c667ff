#include "blocks/compressed_attention.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "blocks/host_row_log.h"

namespace tf {
namespace {

// Rotates the last 2 * inv_freq.size() values of x (interleaved pairs) by `pos` (sign -1: by -pos).
void rope_tail(float* x, int dim, const std::vector<float>& inv_freq, std::int64_t pos, float sign = 1.0f) {
  const int rd = static_cast<int>(inv_freq.size()) * 2;
  float* r = x + (dim - rd);
  for (std::size_t i = 0; i < inv_freq.size(); ++i) {
    const float f = static_cast<float>(pos) * inv_freq[i];
    const float c = std::cos(f), s = sign * std::sin(f);
    const float a = r[2 * i], b = r[2 * i + 1];
    r[2 * i] = a * c - b * s;
    r[2 * i + 1] = b * c + a * s;
  }
}

// x * rsqrt(mean(x^2) + eps) (* w where given), in place.
void rms(float* x, int n, float eps, const float* w = nullptr) {
  float ss = 0.0f;
  for (int j = 0; j < n; ++j) ss += x[j] * x[j];
  const float inv = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (int j = 0; j < n; ++j) x[j] = w != nullptr ? x[j] * inv * w[j] : x[j] * inv;
}

}  // namespace

std::vector<float> default_inv_freq(int dims, double base) {
  std::vector<float> out(static_cast<std::size_t>(dims / 2));
  for (int i = 0; i < dims / 2; ++i)
    out[static_cast<std::size_t>(i)] =
        1.0f / std::pow(static_cast<float>(base), static_cast<float>(2 * i) / static_cast<float>(dims));
  return out;
}

std::vector<float> yarn_inv_freq(int dims, double base, double factor, double original_context, double beta_fast,
                                 double beta_slow, bool truncate) {
  const auto correction = [&](double rotations) {
    return (dims * std::log(original_context / (rotations * 2 * M_PI))) / (2 * std::log(base));
  };
  double low = correction(beta_fast), high = correction(beta_slow);
  if (truncate) low = std::floor(low), high = std::ceil(high);
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dims - 1));
  if (low == high) high += 0.001;
  std::vector<float> out(static_cast<std::size_t>(dims / 2));
  for (int i = 0; i < dims / 2; ++i) {
    const float pos_freq = std::pow(static_cast<float>(base), static_cast<float>(2 * i) / static_cast<float>(dims));
    const float extrapolation = 1.0f / pos_freq, interpolation = 1.0f / (static_cast<float>(factor) * pos_freq);
    const float ramp = std::clamp(static_cast<float>((i - low) / (high - low)), 0.0f, 1.0f);
    const float keep = 1.0f - ramp;  // the extrapolation's share
    out[static_cast<std::size_t>(i)] = interpolation * (1.0f - keep) + extrapolation * keep;
  }
  return out;
}

CompressedAttentionBlock CompressedAttentionBlock::load(WeightSource& src, const std::string& prefix,
                                                        const CompressedAttentionConfig& cfg,
                                                        const CompressedAttentionNames& names) {
  if (cfg.heads * cfg.head_dim % cfg.o_groups != 0) src.fail("o_groups must divide num_attention_heads * head_dim");
  if (cfg.rope_dims % 2 != 0 || cfg.rope_dims > cfg.head_dim ||
      static_cast<int>(cfg.inv_freq.size()) * 2 != cfg.rope_dims)
    src.fail("the rotary dims must be even and at most head_dim");
  CompressedAttentionBlock a;
  a.cfg = cfg;
  const std::int64_t H = cfg.heads, D = cfg.head_dim;
  a.q_a = src.matrix(prefix + names.q_a, cfg.q_rank, cfg.hidden);
  a.q_norm = src.vector(prefix + names.q_norm, cfg.q_rank);
  a.q_b = src.matrix(prefix + names.q_b, H * D, cfg.q_rank);
  a.kv = src.matrix(prefix + names.kv, D, cfg.hidden);
  a.kv_norm = src.vector(prefix + names.kv_norm, D);
  a.o_a = src.row_blocks(prefix + names.o_a, cfg.o_groups, cfg.o_rank, H * D / cfg.o_groups);
  a.o_b = src.matrix(prefix + names.o_b, cfg.hidden, static_cast<std::int64_t>(cfg.o_groups) * cfg.o_rank);
  a.sinks = src.floats(prefix + names.sinks, H);
  const auto pool = [&](const std::string& p, int dim, bool overlapping) {
    Pool out;
    out.dim = dim;
    const std::int64_t c = overlapping ? 2 * dim : dim;
    out.wkv = src.matrix(p + "wkv.weight", c, cfg.hidden);
    out.wgate = src.matrix(p + "wgate.weight", c, cfg.hidden);
    out.ape = src.floats(p + "ape", cfg.rate * c);
    out.norm = src.floats(p + "norm.weight", dim);
    return out;
  };
  if (cfg.branch != CompressedAttentionConfig::Branch::None) {
    const bool overlapping = cfg.branch == CompressedAttentionConfig::Branch::Overlapping;
    a.compressor = pool(prefix + names.compressor, cfg.head_dim, overlapping);
    if (overlapping) {
      if (cfg.rope_dims > cfg.index_dim) src.fail("index_head_dim must be at least the rotary dims");
      const std::string ix = prefix + names.indexer;
      a.index_pool = pool(ix + names.compressor, cfg.index_dim, true);
      a.index_q =
          src.matrix(ix + "wq_b.weight", static_cast<std::int64_t>(cfg.index_heads) * cfg.index_dim, cfg.q_rank);
      a.index_w = src.matrix(ix + "weights_proj.weight", cfg.index_heads, cfg.hidden);
    }
  }
  return a;
}

namespace {
struct Layout {
  std::size_t key = 0, ckv = 0, cgate = 0, centry = 0, ikv = 0, igate = 0, ientry = 0, width = 0;
};
Layout layout(const CompressedAttentionConfig& c) {
  Layout l;
  const auto D = static_cast<std::size_t>(c.head_dim), I = static_cast<std::size_t>(c.index_dim);
  l.width = D;
  if (c.branch == CompressedAttentionConfig::Branch::None) return l;
  const std::size_t cw = c.branch == CompressedAttentionConfig::Branch::Overlapping ? 2 * D : D;
  l.ckv = l.width;
  l.cgate = l.ckv + cw;
  l.centry = l.cgate + cw;
  l.width = l.centry + D;
  if (c.branch != CompressedAttentionConfig::Branch::Overlapping) return l;
  l.ikv = l.width;
  l.igate = l.ikv + 2 * I;
  l.ientry = l.igate + 2 * I;
  l.width = l.ientry + I;
  return l;
}
}  // namespace

namespace {
// Floats of one entry with its index key, and of the piece of it a position carries.
std::size_t entry_width(const CompressedAttentionConfig& c) {
  return static_cast<std::size_t>(c.head_dim) +
         (c.branch == CompressedAttentionConfig::Branch::Overlapping ? static_cast<std::size_t>(c.index_dim) : 0);
}
std::size_t piece_width(const CompressedAttentionConfig& c) {
  return (entry_width(c) + static_cast<std::size_t>(c.rate) - 1) / static_cast<std::size_t>(c.rate);
}
}  // namespace

std::vector<HostRowLayer> CompressedAttentionBlock::log_layers() const {
  // The recent rows a call reads before its first: the window's keys, the positions an entry pools (two windows
  // when overlapping) and the newest entries not yet compacted (completed less than `rate` positions ago).
  std::int64_t reach = cfg.window - 1;
  if (cfg.branch != CompressedAttentionConfig::Branch::None) {
    const std::int64_t pooled =
        cfg.branch == CompressedAttentionConfig::Branch::Overlapping ? 2 * cfg.rate - 1 : cfg.rate - 1;
    reach = std::max({reach, pooled, static_cast<std::int64_t>(cfg.rate)});
  }
  std::vector<HostRowLayer> out{{static_cast<std::int64_t>(layout(cfg).width), reach}};
  if (cfg.branch != CompressedAttentionConfig::Branch::None)
    out.push_back({static_cast<std::int64_t>(piece_width(cfg)), HostRowLayer::kEveryPosition});
  return out;
}

Tensor CompressedAttentionBlock::forward(Backend& b, const Tensor& h, std::span<const StreamRows> runs,
                                         int slot) const {
  using Branch = CompressedAttentionConfig::Branch;
  const auto H = static_cast<std::size_t>(cfg.heads), D = static_cast<std::size_t>(cfg.head_dim);
  const std::int64_t r = cfg.rate;
  const Layout L = layout(cfg);
  const bool compressed = cfg.branch != Branch::None, overlapping = cfg.branch == Branch::Overlapping;

  const Tensor q_resid = b.rms_norm(b.linear(h, q_a), q_norm, cfg.eps);
  std::vector<float> Q = b.to_host(b.linear(q_resid, q_b));
  const std::vector<float> KV = b.to_host(b.rms_norm(b.linear(h, kv), kv_norm, cfg.eps));
  std::vector<float> CKV, CG, IKV, IG, IQ, IW;
  if (compressed) {
    CKV = b.to_host(b.linear(h, compressor.wkv));
    CG = b.to_host(b.linear(h, compressor.wgate));
  }
  const auto I = static_cast<std::size_t>(cfg.index_dim), IH = static_cast<std::size_t>(cfg.index_heads);
  if (overlapping) {
    IKV = b.to_host(b.linear(h, index_pool.wkv));
    IG = b.to_host(b.linear(h, index_pool.wgate));
    IQ = b.to_host(b.linear(q_resid, index_q));
    IW = b.to_host(b.linear(h, index_w));
  }
  const std::size_t cw = overlapping ? 2 * D : D;

  std::size_t n = 0;
  for (const auto& run : runs) n += static_cast<std::size_t>(run.rows);
  std::vector<float> out(n * H * D);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const float index_scale = overlapping ? 1.0f / std::sqrt(static_cast<float>(I)) : 0.0f;
  const float weight_scale = overlapping ? 1.0f / std::sqrt(static_cast<float>(IH)) : 0.0f;
  std::vector<float> entry(L.width), logits, scores, probs(2 * static_cast<std::size_t>(r));
  const std::size_t EW = entry_width(cfg), PW = compressed ? piece_width(cfg) : 0;
  std::vector<float> entries, piece(PW);  // a run's complete entries [count, EW] (entry then index key)
  std::vector<const float*> keys;
  std::vector<std::int64_t> chosen, order;
  std::size_t row = 0;
  const int entries_slot = slot + 1;
  for (const auto& run : runs) {
    auto* log = dynamic_cast<HostRowLog*>(run.host_rows);
    if (log == nullptr) throw std::logic_error("compressed attention: a run without its host rows");
    log->start_call(slot, run.start, run.rows);
    entries.clear();
    if (compressed) {
      log->start_call(entries_slot, run.start, run.rows);
      // The entries complete before the run: compacted ones from their pieces (window w + 1's rows), the newest
      // from the recent row that completed them.
      for (std::int64_t w = 0; w < run.start / r; ++w) {
        const std::size_t at = entries.size();
        entries.resize(at + EW);
        if ((w + 2) * r - 1 < run.start) {
          for (std::int64_t t = 0; t < r; ++t) {
            const auto p = log->row(entries_slot, (w + 1) * r + t);
            const std::size_t from = static_cast<std::size_t>(t) * PW, take = std::min(PW, EW - std::min(EW, from));
            std::copy_n(p.data(), take, entries.data() + at + from);
          }
        } else {
          const float* done = log->row(slot, (w + 1) * r - 1).data();
          std::copy_n(done + L.centry, D, entries.data() + at);
          if (overlapping) std::copy_n(done + L.ientry, I, entries.data() + at + D);
        }
      }
    }
    for (std::int64_t i = 0; i < run.rows; ++i, ++row) {
      const std::int64_t pos = run.start + i;
      // This position's row: its key, and its compressor inputs (gates with their slot's position bias).
      std::fill(entry.begin(), entry.end(), 0.0f);
      std::copy_n(KV.data() + row * D, D, entry.data() + L.key);
      rope_tail(entry.data() + L.key, cfg.head_dim, cfg.inv_freq, pos);
      const auto slot_in_window = static_cast<std::size_t>(pos % r);
      const auto put = [&](const Pool& p, const std::vector<float>& kvs, const std::vector<float>& gates,
                           std::size_t width, std::size_t at_kv, std::size_t at_gate) {
        std::copy_n(kvs.data() + row * width, width, entry.data() + at_kv);
        for (std::size_t j = 0; j < width; ++j)
          entry[at_gate + j] = gates[row * width + j] + p.ape[slot_in_window * width + j];
      };
      const auto row_at = [&](std::int64_t at) { return at == pos ? entry.data() : log->row(slot, at).data(); };
      // A window this position completes: its entry (channel by channel: softmax of the slots' gates, the sum of
      // their values in slot order, then the norm and the rope at the window's first position).
      const auto pool_entry = [&](const Pool& p, std::size_t at_kv, std::size_t at_gate, std::size_t at_entry,
                                  bool overlap) {
        const std::int64_t w = pos / r, first = w * r;
        const auto dim = static_cast<std::size_t>(p.dim);
        float* e = entry.data() + at_entry;
        for (std::size_t j = 0; j < dim; ++j) {
          std::size_t m = 0;
          float top = -INFINITY;
          // Slots: Ca of the window before (overlapping, w > 0), then this window's values (Cb when overlapping).
          if (overlap && w > 0)
            for (std::int64_t t = 0; t < r; ++t) top = std::max(top, (probs[m++] = row_at(first - r + t)[at_gate + j]));
          const std::size_t half = overlap ? dim : 0;
          for (std::int64_t t = 0; t < r; ++t)
            top = std::max(top, (probs[m++] = row_at(first + t)[at_gate + half + j]));
          float sum = 0.0f;
          for (std::size_t s = 0; s < m; ++s) sum += (probs[s] = std::exp(probs[s] - top));
          float acc = 0.0f;
          m = 0;
          if (overlap && w > 0)
            for (std::int64_t t = 0; t < r; ++t) acc += row_at(first - r + t)[at_kv + j] * (probs[m++] / sum);
          for (std::int64_t t = 0; t < r; ++t) acc += row_at(first + t)[at_kv + half + j] * (probs[m++] / sum);
          e[j] = acc;
        }
        rms(e, p.dim, cfg.eps, p.norm.data());
        rope_tail(e, p.dim, cfg.compress_inv_freq, first);
      };
      if (compressed) {
        put(compressor, CKV, CG, cw, L.ckv, L.cgate);
        if (overlapping) put(index_pool, IKV, IG, 2 * I, L.ikv, L.igate);
        if ((pos + 1) % r == 0) {
          pool_entry(compressor, L.ckv, L.cgate, L.centry, overlapping);
          if (overlapping) pool_entry(index_pool, L.ikv, L.igate, L.ientry, true);
          entries.insert(entries.end(), entry.begin() + static_cast<std::ptrdiff_t>(L.centry),
                         entry.begin() + static_cast<std::ptrdiff_t>(L.centry + D));
          if (overlapping)
            entries.insert(entries.end(), entry.begin() + static_cast<std::ptrdiff_t>(L.ientry),
                           entry.begin() + static_cast<std::ptrdiff_t>(L.ientry + I));
        }
        // This position's piece of the entry completed before its window began.
        std::fill(piece.begin(), piece.end(), 0.0f);
        if (const std::int64_t w = pos / r - 1; w >= 0) {
          const std::size_t from = static_cast<std::size_t>(pos % r) * PW, take = std::min(PW, EW - std::min(EW, from));
          std::copy_n(entries.data() + static_cast<std::size_t>(w) * EW + from, take, piece.data());
        }
        log->append(entries_slot, piece);
      }
      log->append(slot, entry);

      // What the query attends: the window, then the compressed entries it sees (ascending).
      keys.clear();
      for (std::int64_t t = std::max<std::int64_t>(0, pos - cfg.window + 1); t <= pos; ++t)
        keys.push_back(log->row(slot, t).data() + L.key);
      const std::int64_t complete = compressed ? (pos + 1) / r : 0;
      chosen.clear();
      if (overlapping && complete > cfg.top_k) {
        // The indexer: its queries at this position (compress rope), scored against the complete entries' keys.
        float* iq = IQ.data() + row * IH * I;
        for (std::size_t hh = 0; hh < IH; ++hh) rope_tail(iq + hh * I, cfg.index_dim, cfg.compress_inv_freq, pos);
        scores.assign(static_cast<std::size_t>(complete), 0.0f);
        for (std::int64_t w = 0; w < complete; ++w) {
          const float* k = entries.data() + static_cast<std::size_t>(w) * EW + D;
          float s = 0.0f;
          for (std::size_t hh = 0; hh < IH; ++hh) {
            float d = 0.0f;
            for (std::size_t j = 0; j < I; ++j) d += iq[hh * I + j] * k[j];
            s += std::max(d, 0.0f) * index_scale * (IW[row * IH + hh] * weight_scale);
          }
          scores[static_cast<std::size_t>(w)] = s;
        }
        order.resize(static_cast<std::size_t>(complete));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](std::int64_t x, std::int64_t y) {
          return scores[static_cast<std::size_t>(x)] > scores[static_cast<std::size_t>(y)];
        });
        chosen.assign(order.begin(), order.begin() + cfg.top_k);
        std::sort(chosen.begin(), chosen.end());
      } else {
        for (std::int64_t w = 0; w < complete; ++w) chosen.push_back(w);
      }
      for (const std::int64_t w : chosen) keys.push_back(entries.data() + static_cast<std::size_t>(w) * EW);

      // Per head: the unweighted-normed, rotated query; softmax over the keys and the sink; the values' sum
      // (values are the keys), rotated back by -pos.
      const std::size_t A = keys.size();
      logits.resize(A);
      for (std::size_t hh = 0; hh < H; ++hh) {
        float* q = Q.data() + (row * H + hh) * D;
        rms(q, cfg.head_dim, cfg.eps);
        rope_tail(q, cfg.head_dim, cfg.inv_freq, pos);
        float top = sinks[hh];
        for (std::size_t a = 0; a < A; ++a) {
          float d = 0.0f;
          for (std::size_t j = 0; j < D; ++j) d += q[j] * keys[a][j];
          top = std::max(top, logits[a] = d * scale);
        }
        float sum = std::exp(sinks[hh] - top);
        for (std::size_t a = 0; a < A; ++a) sum += (logits[a] = std::exp(logits[a] - top));
        float* dst = out.data() + (row * H + hh) * D;
        std::fill(dst, dst + D, 0.0f);
        for (std::size_t a = 0; a < A; ++a) {
          const float p = logits[a] / sum;
          for (std::size_t j = 0; j < D; ++j) dst[j] += p * keys[a][j];
        }
        rope_tail(dst, cfg.head_dim, cfg.inv_freq, pos, -1.0f);
      }
    }
  }

  // The grouped low-rank output: each group of heads through its own block of o_a, then o_b over them all.
  const auto G = static_cast<std::size_t>(cfg.o_groups), R = static_cast<std::size_t>(cfg.o_rank);
  const std::size_t gw = H * D / G;
  std::vector<float> part(n * gw), low(n * G * R);
  for (std::size_t g = 0; g < G; ++g) {
    for (std::size_t i = 0; i < n; ++i) std::copy_n(out.data() + i * H * D + g * gw, gw, part.data() + i * gw);
    const std::vector<float> y =
        b.to_host(b.linear(b.from_host(part, static_cast<std::int64_t>(n), static_cast<std::int64_t>(gw)), o_a[g]));
    for (std::size_t i = 0; i < n; ++i) std::copy_n(y.data() + i * R, R, low.data() + i * G * R + g * R);
  }
  return b.linear(b.from_host(low, static_cast<std::int64_t>(n), static_cast<std::int64_t>(G * R)), o_b);
}

}  // namespace tf
