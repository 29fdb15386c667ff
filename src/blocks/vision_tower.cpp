#include "blocks/vision_tower.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tf {

VisionTower::Linear VisionTower::linear(const WeightSource& ws, const std::string& name, std::int64_t out,
                                        std::int64_t in) {
  Linear l{ws.floats(name + ".weight", out * in), ws.floats(name + ".bias", out), out, in};
  bytes_ += (l.w.size() + l.b.size()) * sizeof(float);
  return l;
}

VisionTower::Norm VisionTower::norm(const WeightSource& ws, const std::string& name, std::int64_t n) {
  Norm m{ws.floats(name + ".weight", n), ws.floats(name + ".bias", n)};
  bytes_ += (m.w.size() + m.b.size()) * sizeof(float);
  return m;
}

VisionTower::VisionTower(const WeightSource& ws, const std::string& p, const VisionTowerSpec& spec, HostMatmul matmul)
    : spec_(spec), matmul_(std::move(matmul)) {
  const int side = static_cast<int>(std::lround(std::sqrt(spec.position_embeddings)));
  if (spec.depth < 1 || spec.hidden < 1 || spec.heads < 1 || spec.hidden % spec.heads != 0 ||
      (spec.hidden / spec.heads) % 4 != 0 || side * side != spec.position_embeddings || spec.merge < 1)
    ws.fail(
        "vision tower: depth, hidden_size, num_heads (head_dim a multiple of 4), spatial_merge_size and a square "
        "num_position_embeddings are required");
  const std::int64_t h = spec.hidden;
  patch_embed_ = linear(ws, p + "patch_embed.proj", h, spec.patch_values());
  pos_table_ = ws.floats(p + "pos_embed.weight", std::int64_t{spec.position_embeddings} * h);
  bytes_ += pos_table_.size() * sizeof(float);
  for (int i = 0; i < spec.depth; ++i) {
    const std::string b = p + "blocks." + std::to_string(i) + ".";
    blocks_.push_back({norm(ws, b + "norm1", h), norm(ws, b + "norm2", h), linear(ws, b + "attn.qkv", 3 * h, h),
                       linear(ws, b + "attn.proj", h, h), linear(ws, b + "mlp.linear_fc1", spec.intermediate, h),
                       linear(ws, b + "mlp.linear_fc2", h, spec.intermediate)});
  }
  const std::int64_t merged = h * spec.merge * spec.merge;
  merger_norm_ = norm(ws, p + "merger.norm", h);
  merger_fc1_ = linear(ws, p + "merger.linear_fc1", merged, merged);
  merger_fc2_ = linear(ws, p + "merger.linear_fc2", spec.out_hidden, merged);
}

void VisionTower::apply(const Linear& l, const std::vector<float>& x, std::int64_t rows, std::vector<float>& y) const {
  y.resize(std::size_t(rows * l.out));
  matmul_(x.data(), rows, l.w.data(), l.out, l.in, y.data());
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < l.out; ++c) y[std::size_t(r * l.out + c)] += l.b[std::size_t(c)];
}

namespace {

void layer_norm(const std::vector<float>& x, std::int64_t rows, std::int64_t n, const std::vector<float>& w,
                const std::vector<float>& b, float eps, std::vector<float>& y) {
  y.resize(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* v = &x[std::size_t(r * n)];
    float mean = 0.0f;
    for (std::int64_t i = 0; i < n; ++i) mean += v[i];
    mean /= static_cast<float>(n);
    float var = 0.0f;
    for (std::int64_t i = 0; i < n; ++i) var += (v[i] - mean) * (v[i] - mean);
    var /= static_cast<float>(n);
    const float inv = 1.0f / std::sqrt(var + eps);
    for (std::int64_t i = 0; i < n; ++i) y[std::size_t(r * n + i)] = (v[i] - mean) * inv * w[i] + b[i];
  }
}

float gelu_tanh(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
}

float gelu_erf(float x) { return 0.5f * x * (1.0f + std::erf(x * 0.7071067811865476f)); }

}  // namespace

// Each patch's (row, column) in the image's patch grid, for rows in merge-block order.
std::vector<float> VisionTower::positions(std::int64_t grid_h, std::int64_t grid_w) const {
  const std::int64_t m = spec_.merge, n = grid_h * grid_w;
  std::vector<float> rc(std::size_t(2 * n));
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t block = r / (m * m), within = r % (m * m), blocks_w = grid_w / m;
    rc[std::size_t(2 * r)] = static_cast<float>((block / blocks_w) * m + within / m);
    rc[std::size_t(2 * r + 1)] = static_cast<float>((block % blocks_w) * m + within % m);
  }
  return rc;
}

void VisionTower::attention(const Block& b, std::vector<float>& x, std::int64_t n, std::int64_t grid_h,
                            std::int64_t grid_w) const {
  const std::int64_t h = spec_.hidden, heads = spec_.heads, hd = h / heads, half = hd / 2, quarter = hd / 4;
  std::vector<float> normed, qkv, out(std::size_t(n * h)), projected;
  layer_norm(x, n, h, b.norm1.w, b.norm1.b, spec_.eps, normed);
  apply(b.qkv, normed, n, qkv);
  // 2-D rotary: the first quarter of frequencies turn with the row, the second with the column, over the
  // head's first half; rotate-half pairs (d, d + hd/2).
  const std::vector<float> rc = positions(grid_h, grid_w);
  std::vector<float> inv(static_cast<std::size_t>(quarter));
  for (std::int64_t j = 0; j < quarter; ++j)
    inv[std::size_t(j)] = 1.0f / std::pow(spec_.rope_theta, static_cast<float>(2 * j) / static_cast<float>(half));
  for (std::int64_t r = 0; r < n; ++r)
    for (int part = 0; part < 2; ++part)  // q, k
      for (std::int64_t hh = 0; hh < heads; ++hh) {
        float* v = &qkv[std::size_t(r * 3 * h + part * h + hh * hd)];
        for (std::int64_t d = 0; d < half; ++d) {
          const float pos = d < quarter ? rc[std::size_t(2 * r)] : rc[std::size_t(2 * r + 1)];
          const float angle = pos * inv[std::size_t(d % quarter)];
          const float c = std::cos(angle), s = std::sin(angle);
          const float a = v[d], bb = v[d + half];
          v[d] = a * c - bb * s;
          v[d + half] = bb * c + a * s;
        }
      }
  // Per head: scores = q k^T and out = softmax(scores) v, both products on the host matmul (an image of
  // 1024 x 1024 pixels is 4,096 patches: the products are most of the tower's time).
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  std::vector<float> q(static_cast<std::size_t>(n * hd)), k(q.size()), vt(q.size()),
      scores(static_cast<std::size_t>(n * n)), o(q.size());
  for (std::int64_t hh = 0; hh < heads; ++hh) {
    for (std::int64_t r = 0; r < n; ++r)
      for (std::int64_t d = 0; d < hd; ++d) {
        const float* row = &qkv[static_cast<std::size_t>(r * 3 * h + hh * hd + d)];
        q[static_cast<std::size_t>(r * hd + d)] = row[0];
        k[static_cast<std::size_t>(r * hd + d)] = row[h];
        vt[static_cast<std::size_t>(d * n + r)] = row[2 * h];
      }
    matmul_(q.data(), n, k.data(), n, hd, scores.data());
    for (std::int64_t i = 0; i < n; ++i) {
      float* s = &scores[static_cast<std::size_t>(i * n)];
      float mx = -INFINITY;
      for (std::int64_t j = 0; j < n; ++j) mx = std::max(mx, s[j] *= scale);
      float sum = 0.0f;
      for (std::int64_t j = 0; j < n; ++j) sum += s[j] = std::exp(s[j] - mx);
      for (std::int64_t j = 0; j < n; ++j) s[j] /= sum;
    }
    matmul_(scores.data(), n, vt.data(), hd, n, o.data());
    for (std::int64_t r = 0; r < n; ++r)
      std::copy_n(&o[static_cast<std::size_t>(r * hd)], hd, &out[static_cast<std::size_t>(r * h + hh * hd)]);
  }
  apply(b.proj, out, n, projected);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] += projected[i];
}

std::size_t VisionTower::workspace_bytes(std::int64_t n) const {
  // encode: the patches' copy, x, tmp (hidden), tmp2 (intermediate); attention: normed, qkv (3 x hidden), out,
  // projected, q, k, vt, o (head dim each) and the scores.
  const std::int64_t h = spec_.hidden, hd = h / std::max(spec_.heads, 1);
  const std::int64_t floats = n * (spec_.patch_values() + 2 * h + spec_.intermediate) + n * (6 * h + 4 * hd) + n * n;
  return static_cast<std::size_t>(floats) * sizeof(float);
}

std::vector<float> VisionTower::encode(std::span<const float> patches, std::int64_t grid_h, std::int64_t grid_w) const {
  const std::int64_t m = spec_.merge, h = spec_.hidden, n = grid_h * grid_w;
  if (grid_h < m || grid_w < m || grid_h % m != 0 || grid_w % m != 0 ||
      patches.size() != std::size_t(n * spec_.patch_values()))
    throw std::invalid_argument("VisionTower::encode: the patches do not fill a grid of whole merge blocks");
  std::vector<float> x, tmp, tmp2;
  apply(patch_embed_, std::vector<float>(patches.begin(), patches.end()), n, x);
  // the learned position table, resampled bilinearly (align_corners) from side x side to grid_h x grid_w
  const std::int64_t side = std::lround(std::sqrt(spec_.position_embeddings));
  const std::vector<float> rc = positions(grid_h, grid_w);
  auto taps = [&](float idx, std::int64_t size, std::int64_t t[2], float w[2]) {
    const float src = idx * static_cast<float>(side - 1) / static_cast<float>(std::max<std::int64_t>(size - 1, 1));
    const float fl = std::floor(src);
    for (int o = 0; o < 2; ++o) {
      t[o] = std::clamp<std::int64_t>(static_cast<std::int64_t>(fl) + o, 0, side - 1);
      w[o] = std::max(0.0f, 1.0f - std::abs(src - fl - static_cast<float>(o)));
    }
  };
  for (std::int64_t r = 0; r < n; ++r) {
    std::int64_t th[2], tw[2];
    float wh[2], ww[2];
    taps(rc[std::size_t(2 * r)], grid_h, th, wh);
    taps(rc[std::size_t(2 * r + 1)], grid_w, tw, ww);
    float* row = &x[std::size_t(r * h)];
    for (std::int64_t c = 0; c < h; ++c) {
      float e = 0.0f;
      for (int a = 0; a < 2; ++a)
        for (int bb = 0; bb < 2; ++bb) e += pos_table_[std::size_t((th[a] * side + tw[bb]) * h + c)] * (wh[a] * ww[bb]);
      row[c] += e;
    }
  }
  for (const Block& b : blocks_) {
    attention(b, x, n, grid_h, grid_w);
    layer_norm(x, n, h, b.norm2.w, b.norm2.b, spec_.eps, tmp);
    apply(b.fc1, tmp, n, tmp2);
    for (float& v : tmp2) v = gelu_tanh(v);
    apply(b.fc2, tmp2, n, tmp);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += tmp[i];
  }
  // merger: LayerNorm per patch, then each merge block's m*m consecutive rows as one row
  layer_norm(x, n, h, merger_norm_.w, merger_norm_.b, spec_.eps, tmp);
  const std::int64_t tokens = n / (m * m);
  apply(merger_fc1_, tmp, tokens, tmp2);
  for (float& v : tmp2) v = gelu_erf(v);
  apply(merger_fc2_, tmp2, tokens, tmp);
  return tmp;
}

}  // namespace tf
