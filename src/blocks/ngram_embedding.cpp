#include "blocks/ngram_embedding.h"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string_view>

#include "blocks/host_row_log.h"
#include "checkpoint/checkpoint_error.h"
#include "checkpoint/half_float.h"

namespace tf {
namespace {
float sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }
}  // namespace

namespace {
std::optional<AffineFloat> affine_float(StDType t) {
  switch (t) {
    case StDType::F32:
      return AffineFloat::F32;
    case StDType::F16:
      return AffineFloat::F16;
    case StDType::BF16:
      return AffineFloat::BF16;
    default:
      return std::nullopt;
  }
}
}  // namespace

NgramTable::NgramTable(std::shared_ptr<const HfCheckpoint> ck, const std::vector<std::string>& names, std::int64_t rows,
                       std::int64_t cols)
    : ck_(std::move(ck)), cols_(cols) {
  std::optional<AffineQuantConfig> quant;
  try {
    quant = parse_affine_quant_config(ck_->config());
  } catch (const std::invalid_argument& e) {
    throw CheckpointError(ck_->dir() + "/config.json", e.what());
  }
  std::int64_t total = 0;
  for (const auto& name : names) {
    const auto at = ck_->find(name);
    if (at.tensor == nullptr) throw CheckpointError(ck_->dir(), "missing tensor '" + name + "'");
    const StTensor& t = *at.tensor;
    Shard shard;
    shard.data = at.file->data(t).data();
    shard.rows = t.shape.empty() ? 0 : static_cast<std::int64_t>(t.shape[0]);
    shard.dtype = t.dtype;
    const std::string module = name.substr(0, name.size() - std::string_view(".weight").size());
    const auto scales = ck_->find(module + ".scales"), biases = ck_->find(module + ".biases");
    if (scales.tensor != nullptr) {
      shard.quant = quant ? quant->spec_for(module) : std::nullopt;
      const auto ft = affine_float(scales.tensor->dtype);
      if (!shard.quant || biases.tensor == nullptr || !ft || biases.tensor->dtype != scales.tensor->dtype ||
          t.dtype != StDType::U32 || t.shape.size() != 2 ||
          static_cast<std::int64_t>(t.shape[1]) * 32 != cols * shard.quant->bits || cols % shard.quant->group_size != 0)
        throw CheckpointError(ck_->dir(), "tensor '" + name + "' should be affine codes of [rows, " +
                                              std::to_string(cols) +
                                              "] with float scales and biases of one dtype and a quantization "
                                              "entry in config.json");
      const auto groups = static_cast<std::uint64_t>(cols / shard.quant->group_size);
      if (scales.tensor->element_count() != t.shape[0] * groups ||
          biases.tensor->element_count() != t.shape[0] * groups)
        throw CheckpointError(ck_->dir(), "'" + module + "' scales/biases do not match its codes");
      shard.scales = scales.file->data(*scales.tensor).data();
      shard.biases = biases.file->data(*biases.tensor).data();
      shard.quant_float = *ft;
      bytes_ += scales.tensor->byte_size() + biases.tensor->byte_size();
    } else if ((t.dtype != StDType::F32 && t.dtype != StDType::F16 && t.dtype != StDType::BF16) ||
               t.shape.size() != 2 || static_cast<std::int64_t>(t.shape[1]) != cols) {
      throw CheckpointError(ck_->dir(), "tensor '" + name + "' should be [rows, " + std::to_string(cols) +
                                            "] of F32, F16 or BF16 (or MLX affine codes)");
    }
    shards_.push_back(shard);
    total += shard.rows;
    bytes_ += t.byte_size();
  }
  per_shard_ = shards_.empty() ? 0 : shards_.front().rows;
  for (std::size_t i = 0; i + 1 < shards_.size(); ++i)
    if (shards_[i].rows != per_shard_)
      throw CheckpointError(ck_->dir(), "the n-gram table's shards must be of equal rows but the last");
  if (total != rows)
    throw CheckpointError(ck_->dir(), "the n-gram table '" + names.front() + "' holds " + std::to_string(total) +
                                          " rows, the config gives " + std::to_string(rows));
}

void NgramTable::row(std::int64_t r, float* out) const {
  const Shard& s = shards_[static_cast<std::size_t>(r / per_shard_)];
  const auto in_shard = static_cast<std::size_t>(r % per_shard_);
  const auto cols = static_cast<std::size_t>(cols_);
  if (s.quant) {
    // One row's codes (copied: a mapped tensor's words need not be 4-byte aligned) and its groups' values.
    const std::size_t words = cols * static_cast<std::size_t>(s.quant->bits) / 32;
    const std::size_t group_bytes =
        cols / static_cast<std::size_t>(s.quant->group_size) * (s.quant_float == AffineFloat::F32 ? 4 : 2);
    std::vector<std::uint32_t> packed(words);
    std::memcpy(packed.data(), s.data + in_shard * words * 4, words * 4);
    dequantize_affine(packed, {s.scales + in_shard * group_bytes, group_bytes},
                      {s.biases + in_shard * group_bytes, group_bytes}, s.quant_float, 1, cols, *s.quant, {out, cols});
    return;
  }
  const std::size_t at = in_shard * cols;
  for (std::size_t j = 0; j < cols; ++j) {
    switch (s.dtype) {
      case StDType::F32: {
        float v;
        std::memcpy(&v, s.data + (at + j) * 4, 4);
        out[j] = v;
        break;
      }
      case StDType::F16:
      case StDType::BF16: {
        std::uint16_t h;
        std::memcpy(&h, s.data + (at + j) * 2, 2);
        out[j] = s.dtype == StDType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
        break;
      }
      default:
        break;
    }
  }
}

NgramEmbeddingBlock NgramEmbeddingBlock::load(WeightSource& src, std::shared_ptr<const HfCheckpoint> ck,
                                              const std::string& prefix, const NgramEmbeddingConfig& cfg,
                                              std::int64_t shards) {
  NgramEmbeddingBlock p;
  p.cfg = cfg;
  p.hash = std::make_shared<const NgramHash>(cfg.hash);
  const std::int64_t heads = cfg.hash.heads(), wide = cfg.streams * cfg.hidden;
  if (heads <= 0 || cfg.embed_dim % heads != 0) src.fail("ple_embed_dim must be a multiple of the n-gram heads");
  const std::int64_t head_dim = cfg.embed_dim / heads, rows = p.hash->table_rows();
  const std::string table = prefix + "ple_embedding.ngram_embedding.";
  std::vector<std::string> names;
  if (src.has(table + "weight")) {
    names.push_back(table + "weight");
  } else {
    // The shards are torch.chunk's pieces of the table along its rows: ceil(rows / shards) each, the last smaller.
    const std::int64_t per = (rows + shards - 1) / shards;
    for (std::int64_t s = 0, at = 0; at < rows; ++s, at += per)
      names.push_back(table + "shard_" + std::to_string(s) + ".weight");
  }
  p.table = NgramTable(std::move(ck), names, rows, head_dim);
  p.key_proj = src.matrix(prefix + "key_proj.weight", wide, cfg.embed_dim);
  p.value_proj = src.matrix(prefix + "value_proj.weight", cfg.hidden, cfg.embed_dim);
  p.norm_key = src.vector(prefix + "norm_key.weight", wide, cfg.zero_centred_norms);
  p.norm_query = src.vector(prefix + "norm_query.weight", wide, cfg.zero_centred_norms);
  p.norm_conv = src.vector(prefix + "norm_conv.weight", wide, cfg.zero_centred_norms);
  p.conv = src.floats(prefix + "conv1d.weight", wide * cfg.conv_kernel);
  return p;
}

Tensor NgramEmbeddingBlock::forward(Backend& b, const Tensor& x, std::span<const StreamRows> runs) const {
  const auto N = static_cast<std::size_t>(cfg.hash.ngram_size);
  const auto heads = static_cast<std::size_t>(cfg.hash.heads());
  const auto head_dim = static_cast<std::size_t>(cfg.embed_dim) / heads;
  const auto S = static_cast<std::size_t>(cfg.streams), H = static_cast<std::size_t>(cfg.hidden);
  const std::size_t wide = S * H;
  std::size_t n = 0;
  for (const auto& r : runs) n += static_cast<std::size_t>(r.rows);

  // Each row's n-gram embedding, its window from the tokens before it (the log, then the call's own).
  std::vector<float> emb(n * static_cast<std::size_t>(cfg.embed_dim));
  std::vector<std::int32_t> window(N);
  std::vector<std::int64_t> table_rows(heads);
  std::size_t row = 0;
  for (const auto& run : runs) {
    auto* log = dynamic_cast<HostRowLog*>(run.host_rows);
    if (log == nullptr || static_cast<std::int64_t>(run.tokens.size()) != run.rows)
      throw std::logic_error("n-gram embedding: a run without its tokens or its host rows");
    for (std::int64_t i = 0; i < run.rows; ++i, ++row) {
      for (std::size_t w = 0; w < N; ++w) {
        const std::int64_t pos = run.start + i - static_cast<std::int64_t>(N - 1 - w);
        window[w] = pos < 0            ? cfg.hash.eos
                    : pos >= run.start ? run.tokens[static_cast<std::size_t>(pos - run.start)]
                                       : static_cast<std::int32_t>(log->row(slot, pos)[0]);
      }
      hash->rows(window, table_rows);
      for (std::size_t h = 0; h < heads; ++h)
        table.row(table_rows[h], emb.data() + row * static_cast<std::size_t>(cfg.embed_dim) + h * head_dim);
    }
  }
  const Tensor e = b.from_host(emb, static_cast<std::int64_t>(n), cfg.embed_dim);
  const std::vector<float> key = b.to_host(b.rms_norm_groups(b.linear(e, key_proj), norm_key, cfg.streams, cfg.eps));
  const std::vector<float> value = b.to_host(b.linear(e, value_proj));
  const std::vector<float> query = b.to_host(b.rms_norm_groups(x, norm_query, cfg.streams, cfg.eps));

  // The gated values, one per stream.
  std::vector<float> gated(n * wide);
  const float inv_sqrt_h = 1.0f / std::sqrt(static_cast<float>(cfg.hidden));
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t s = 0; s < S; ++s) {
      const float* k = key.data() + r * wide + s * H;
      const float* q = query.data() + r * wide + s * H;
      float a = 0.0f;
      for (std::size_t j = 0; j < H; ++j) a += k[j] * q[j];
      a *= inv_sqrt_h;
      const float mag = std::sqrt(std::max(std::fabs(a), 1e-6f));
      const float g = sigmoid(a > 0.0f ? mag : a < 0.0f ? -mag : 0.0f);
      for (std::size_t j = 0; j < H; ++j) gated[r * wide + s * H + j] = g * value[r * H + j];
    }
  const std::vector<float> normed =
      b.to_host(b.rms_norm_groups(b.from_host(gated, static_cast<std::int64_t>(n), static_cast<std::int64_t>(wide)),
                                  norm_conv, cfg.streams, cfg.eps));

  // Into the log ([token, conv input] a position), then the dilated conv over it.
  std::vector<float> out = b.to_host(x);
  std::vector<float> entry(1 + wide);
  const auto K = static_cast<std::int64_t>(cfg.conv_kernel), dilation = static_cast<std::int64_t>(N);
  row = 0;
  for (const auto& run : runs) {
    auto* log = static_cast<HostRowLog*>(run.host_rows);
    log->start_call(slot, run.start, run.rows);
    for (std::int64_t i = 0; i < run.rows; ++i) {
      entry[0] = static_cast<float>(run.tokens[static_cast<std::size_t>(i)]);
      std::copy_n(normed.data() + (row + static_cast<std::size_t>(i)) * wide, wide, entry.data() + 1);
      log->append(slot, entry);
    }
    for (std::int64_t i = 0; i < run.rows; ++i, ++row) {
      const std::int64_t pos = run.start + i;
      float* dst = out.data() + row * wide;
      for (std::size_t c = 0; c < wide; ++c) {
        float acc = 0.0f;
        for (std::int64_t k = 0; k < K; ++k) {
          const std::int64_t from = pos - (K - 1 - k) * dilation;
          if (from < 0) continue;
          acc += conv[c * static_cast<std::size_t>(K) + static_cast<std::size_t>(k)] * log->row(slot, from)[1 + c];
        }
        dst[c] = dst[c] + (gated[row * wide + c] + acc * sigmoid(acc));
      }
    }
  }
  return b.from_host(out, static_cast<std::int64_t>(n), static_cast<std::int64_t>(wide));
}

}  // namespace tf
