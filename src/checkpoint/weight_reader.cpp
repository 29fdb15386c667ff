#include "checkpoint/weight_reader.h"

#include <cstring>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/ggml_dequant.h"
#include "checkpoint/gguf.h"
#include "checkpoint/half_float.h"
#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/mlx_affine.h"

namespace tf {
namespace {

void append_f32(std::vector<std::uint8_t>& out, float v) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
  out.insert(out.end(), p, p + 4);
}

// Packs 32 codes of `bits` bits LSB-first into 32*bits/32 words appended to `out` (bytes).
void pack_block(const std::uint8_t* codes, int bits, std::vector<std::uint8_t>& out) {
  std::uint32_t word = 0;
  int filled = 0;
  for (int j = 0; j < 32; ++j) {
    word |= static_cast<std::uint32_t>(codes[j]) << filled;
    filled += bits;
    if (filled == 32) {
      const auto* p = reinterpret_cast<const std::uint8_t*>(&word);
      out.insert(out.end(), p, p + 4);
      word = 0;
      filled = 0;
    }
  }
}

class GgufWeights final : public WeightReader {
 public:
  explicit GgufWeights(const std::string& path) : file_(path) {}
  std::string path() const override { return file_.path(); }
  bool has(const std::string& name) const override { return file_.header().find_tensor(name) != nullptr; }

  HostWeight read(const std::string& name) const override {
    const auto* t = file_.header().find_tensor(name);
    if (t == nullptr) throw CheckpointError(file_.path(), "no tensor '" + name + "'");
    HostWeight w;
    w.name = name;
    w.cols = static_cast<std::int64_t>(t->dims[0]);
    w.rows = static_cast<std::int64_t>(t->element_count / std::max<std::uint64_t>(t->dims[0], 1));
    for (std::size_t i = t->dims.size(); i-- > 0;) w.shape.push_back(static_cast<std::int64_t>(t->dims[i]));
    const auto bytes = file_.data(*t);
    switch (t->type) {
      case GgmlType::F32: return dense(std::move(w), HostDType::F32, bytes);
      case GgmlType::F16: return dense(std::move(w), HostDType::F16, bytes);
      case GgmlType::BF16: return dense(std::move(w), HostDType::BF16, bytes);
      case GgmlType::Q4_0:
      case GgmlType::Q4_1:
      case GgmlType::Q8_0: return affine(std::move(w), t->type, bytes);
      default: break;
    }
    auto info = ggml_type_info(static_cast<std::uint32_t>(t->type));
    if (!info || !info->dequantizable)
      throw CheckpointError(file_.path(), "tensor '" + name + "' has type " + std::string(ggml_type_name(t->type)) +
                                              ", which this build cannot decode yet");
    std::vector<float> values(t->element_count);
    dequantize_ggml(t->type, bytes, values);
    w.dtype = HostDType::F32;
    w.data.resize(values.size() * 4);
    std::memcpy(w.data.data(), values.data(), w.data.size());
    return w;
  }

 private:
  static HostWeight dense(HostWeight w, HostDType dt, std::span<const std::uint8_t> bytes) {
    w.dtype = dt;
    w.data.assign(bytes.begin(), bytes.end());
    return w;
  }

  // Q4_0: x = d*(q-8); Q4_1: x = d*q + m; Q8_0: x = d*q (q signed). As affine: scale d, bias -8d / m / -128d,
  // codes unsigned. Low nibbles hold elements 0..15 of a block, high nibbles 16..31.
  static HostWeight affine(HostWeight w, GgmlType type, std::span<const std::uint8_t> bytes) {
    w.dtype = HostDType::F32;
    w.group_size = 32;
    w.bits = type == GgmlType::Q8_0 ? 8 : 4;
    const std::size_t block_bytes = type == GgmlType::Q4_0 ? 18 : type == GgmlType::Q4_1 ? 20 : 34;
    const std::size_t blocks = bytes.size() / block_bytes;
    w.data.reserve(blocks * 32 * static_cast<std::size_t>(w.bits) / 8);
    w.scales.reserve(blocks * 4);
    w.biases.reserve(blocks * 4);
    std::uint8_t codes[32];
    for (std::size_t b = 0; b < blocks; ++b) {
      const std::uint8_t* p = bytes.data() + b * block_bytes;
      std::uint16_t dh;
      std::memcpy(&dh, p, 2);
      const float d = f16_to_f32(dh);
      float bias;
      const std::uint8_t* qs;
      if (type == GgmlType::Q8_0) {
        qs = p + 2;
        for (int j = 0; j < 32; ++j) codes[j] = static_cast<std::uint8_t>(static_cast<std::int8_t>(qs[j]) + 128);
        bias = -128.0f * d;
      } else {
        if (type == GgmlType::Q4_1) {
          std::uint16_t mh;
          std::memcpy(&mh, p + 2, 2);
          bias = f16_to_f32(mh);
          qs = p + 4;
        } else {
          bias = -8.0f * d;
          qs = p + 2;
        }
        for (int j = 0; j < 16; ++j) {
          codes[j] = qs[j] & 0x0f;
          codes[j + 16] = static_cast<std::uint8_t>(qs[j] >> 4);
        }
      }
      pack_block(codes, w.bits, w.data);
      append_f32(w.scales, d);
      append_f32(w.biases, bias);
    }
    return w;
  }

  GgufFile file_;
};

std::optional<HostDType> float_dtype(StDType t) {
  switch (t) {
    case StDType::F32: return HostDType::F32;
    case StDType::F16: return HostDType::F16;
    case StDType::BF16: return HostDType::BF16;
    default: return std::nullopt;
  }
}

class HfWeights final : public WeightReader {
 public:
  explicit HfWeights(const std::string& dir) : ck_(dir) {
    try {
      quant_ = parse_affine_quant_config(ck_.config());
    } catch (const std::invalid_argument& e) {
      throw CheckpointError(dir + "/config.json", e.what());
    }
  }
  std::string path() const override { return ck_.dir(); }
  bool has(const std::string& name) const override { return ck_.find(name).tensor != nullptr; }

  HostWeight read(const std::string& name) const override {
    auto loc = ck_.find(name);
    if (loc.tensor == nullptr) throw CheckpointError(ck_.dir(), "no tensor '" + name + "'");
    const auto& t = *loc.tensor;
    HostWeight w;
    w.name = name;
    const std::string module = name.ends_with(".weight") ? name.substr(0, name.size() - 7) : name;
    auto scales = ck_.find(module + ".scales");
    if (scales.tensor != nullptr) {
      if (!quant_) throw CheckpointError(ck_.dir(), "'" + module + ".scales' present but config.json has no quantization");
      auto spec = quant_->spec_for(module);
      if (!spec) throw CheckpointError(ck_.dir(), "'" + module + "' has scales but is marked unquantized");
      auto biases = ck_.find(module + ".biases");
      auto sdt = float_dtype(scales.tensor->dtype);
      if (biases.tensor == nullptr || !sdt || biases.tensor->dtype != scales.tensor->dtype)
        throw CheckpointError(ck_.dir(), "'" + module + "' needs float scales and biases of one dtype");
      if (t.dtype != StDType::U32 || t.shape.size() != 2)
        throw CheckpointError(ck_.dir(), "'" + name + "' is quantized but not a 2-D uint32 tensor");
      w.rows = static_cast<std::int64_t>(t.shape[0]);
      w.cols = static_cast<std::int64_t>(t.shape[1] * 32 / static_cast<std::uint64_t>(spec->bits));
      const std::uint64_t groups = static_cast<std::uint64_t>(w.cols / spec->group_size);
      if (scales.tensor->element_count() != t.shape[0] * groups || biases.tensor->element_count() != t.shape[0] * groups)
        throw CheckpointError(ck_.dir(), "'" + module + "' scales/biases do not match " + std::to_string(spec->bits) +
                                             "-bit group " + std::to_string(spec->group_size));
      w.shape = {w.rows, w.cols};
      w.bits = spec->bits;
      w.group_size = spec->group_size;
      w.dtype = *sdt;
      auto d = loc.file->data(t);
      w.data.assign(d.begin(), d.end());
      auto s = scales.file->data(*scales.tensor);
      w.scales.assign(s.begin(), s.end());
      auto b = biases.file->data(*biases.tensor);
      w.biases.assign(b.begin(), b.end());
      return w;
    }
    auto dt = float_dtype(t.dtype);
    if (!dt) throw CheckpointError(ck_.dir(), "'" + name + "' has dtype " + std::string(st_dtype_name(t.dtype)) +
                                                  ", which is not a float weight");
    w.dtype = *dt;
    w.cols = t.shape.empty() ? 1 : static_cast<std::int64_t>(t.shape.back());
    w.rows = w.cols == 0 ? 0 : static_cast<std::int64_t>(t.element_count()) / w.cols;
    for (auto d : t.shape) w.shape.push_back(static_cast<std::int64_t>(d));
    auto d = loc.file->data(t);
    w.data.assign(d.begin(), d.end());
    return w;
  }

 private:
  HfCheckpoint ck_;
  std::optional<AffineQuantConfig> quant_;
};

}  // namespace

std::unique_ptr<WeightReader> open_gguf_weights(const std::string& path) { return std::make_unique<GgufWeights>(path); }
std::unique_ptr<WeightReader> open_hf_weights(const std::string& dir) { return std::make_unique<HfWeights>(dir); }

}  // namespace tf
