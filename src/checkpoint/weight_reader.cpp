#include "checkpoint/weight_reader.h"

#include <cstring>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/fp8_blocks.h"
#include "checkpoint/ggml_dequant.h"
#include "checkpoint/gguf.h"
#include "checkpoint/half_float.h"
#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/mlx_affine.h"

namespace tf {
namespace {

// A block type's nominal code width (HostWeight::bits).
int nominal_bits(GgmlType t) {
  switch (t) {
    case GgmlType::Q8_0:
      return 8;
    case GgmlType::Q6_K:
      return 6;
    case GgmlType::Q5_0:
    case GgmlType::Q5_1:
    case GgmlType::Q5_K:
      return 5;
    default:
      return 4;
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
      case GgmlType::F32:
        return dense(std::move(w), HostDType::F32, bytes);
      case GgmlType::F16:
        return dense(std::move(w), HostDType::F16, bytes);
      case GgmlType::BF16:
        return dense(std::move(w), HostDType::BF16, bytes);
      case GgmlType::Q4_0:
      case GgmlType::Q4_1:
      case GgmlType::Q5_0:
      case GgmlType::Q5_1:
      case GgmlType::Q8_0:
      case GgmlType::Q4_K:
      case GgmlType::Q5_K:
      case GgmlType::Q6_K:
        return blocks(std::move(w), t->type, bytes);
      default:
        break;
    }
    throw CheckpointError(file_.path(), "tensor '" + name + "' has type " + std::string(ggml_type_name(t->type)) +
                                            ", which this build cannot decode yet");
  }

 private:
  static HostWeight dense(HostWeight w, HostDType dt, std::span<const std::uint8_t> bytes) {
    w.dtype = dt;
    w.data.assign(bytes.begin(), bytes.end());
    return w;
  }

  // The file's blocks as they are (host_weight.h); a row is a whole number of blocks.
  HostWeight blocks(HostWeight w, GgmlType type, std::span<const std::uint8_t> bytes) const {
    const auto info = ggml_type_info(static_cast<std::uint32_t>(type));
    if (w.cols % info->block_elements != 0)
      throw CheckpointError(file_.path(), "tensor '" + w.name + "': rows of " + std::to_string(w.cols) +
                                              " elements are not whole " + std::string(info->name) + " blocks");
    w.block_type = type;
    w.group_size = static_cast<int>(info->block_elements);
    w.bits = nominal_bits(type);
    w.data.assign(bytes.begin(), bytes.end());
    return w;
  }

  GgufFile file_;
};

std::optional<HostDType> float_dtype(StDType t) {
  switch (t) {
    case StDType::F32:
      return HostDType::F32;
    case StDType::F16:
      return HostDType::F16;
    case StDType::BF16:
      return HostDType::BF16;
    default:
      return std::nullopt;
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
    // Block FP8 (quant_method fp8 with weight_block_size): its float8 weights are read through their scales.
    const auto qc = ck_.config().find("quantization_config");
    if (qc != ck_.config().end() && qc->is_object() && qc->value("quant_method", std::string()) == "fp8") {
      const auto bs = qc->find("weight_block_size");
      if (bs == qc->end() || !bs->is_array() || bs->size() != 2 || !(*bs)[0].is_number_integer() ||
          !(*bs)[1].is_number_integer() || (*bs)[0].get<std::int64_t>() < 1 || (*bs)[1].get<std::int64_t>() < 1)
        throw CheckpointError(dir + "/config.json",
                              "'quantization_config.weight_block_size' must be two positive integers (block FP8)");
      fp8_block_ = {(*bs)[0].get<std::int64_t>(), (*bs)[1].get<std::int64_t>()};
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
      if (!quant_)
        throw CheckpointError(ck_.dir(), "'" + module + ".scales' present but config.json has no quantization");
      auto spec = quant_->spec_for(module);
      if (!spec) throw CheckpointError(ck_.dir(), "'" + module + "' has scales but is marked unquantized");
      auto biases = ck_.find(module + ".biases");
      auto sdt = float_dtype(scales.tensor->dtype);
      if (biases.tensor == nullptr || !sdt || biases.tensor->dtype != scales.tensor->dtype)
        throw CheckpointError(ck_.dir(), "'" + module + "' needs float scales and biases of one dtype");
      // A matrix [out, packed], or a stack of experts' matrices [experts, out, packed] (mlx-lm's switch_mlp).
      if (t.dtype != StDType::U32 || (t.shape.size() != 2 && t.shape.size() != 3))
        throw CheckpointError(ck_.dir(), "'" + name + "' is quantized but not a 2-D or 3-D uint32 tensor");
      const std::uint64_t rows = t.shape.size() == 3 ? t.shape[0] * t.shape[1] : t.shape[0];
      w.rows = static_cast<std::int64_t>(rows);
      w.cols = static_cast<std::int64_t>(t.shape.back() * 32 / static_cast<std::uint64_t>(spec->bits));
      const std::uint64_t groups = static_cast<std::uint64_t>(w.cols / spec->group_size);
      if (scales.tensor->element_count() != rows * groups || biases.tensor->element_count() != rows * groups)
        throw CheckpointError(ck_.dir(), "'" + module + "' scales/biases do not match " + std::to_string(spec->bits) +
                                             "-bit group " + std::to_string(spec->group_size));
      w.shape = {w.rows, w.cols};
      if (t.shape.size() == 3)
        w.shape = {static_cast<std::int64_t>(t.shape[0]), static_cast<std::int64_t>(t.shape[1]), w.cols};
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
    if (t.dtype == StDType::F8_E4M3) return read_fp8(name, module, loc);
    if (t.dtype == StDType::I8 && ck_.find(module + ".scale").tensor != nullptr) return read_mxfp4(name, module, loc);
    if (t.dtype == StDType::I64 || t.dtype == StDType::I32) return read_integers(name, loc);
    auto dt = float_dtype(t.dtype);
    if (!dt)
      throw CheckpointError(ck_.dir(), "'" + name + "' has dtype " + std::string(st_dtype_name(t.dtype)) +
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
  // A float8 E4M3 matrix with its block scales (fp8_blocks.h), dequantized to float32.
  HostWeight read_fp8(const std::string& name, const std::string& module, const HfCheckpoint::Located& loc) const {
    const auto& t = *loc.tensor;
    if (!fp8_block_)
      throw CheckpointError(ck_.dir(), "'" + name + "' is float8 but config.json has no block-FP8 quantization_config");
    // weight_scale_inv (float32), or DeepSeek-V4's `.scale` (UE8M0 bytes, or float32).
    auto scales = ck_.find(module + ".weight_scale_inv");
    std::string scale_name = module + ".weight_scale_inv";
    if (scales.tensor == nullptr) scales = ck_.find(scale_name = module + ".scale");
    if (scales.tensor == nullptr)
      throw CheckpointError(ck_.dir(), "'" + name + "' is float8 without its weight_scale_inv (or .scale)");
    if (t.shape.size() != 2) throw CheckpointError(ck_.dir(), "'" + name + "' is float8 but not a matrix");
    const auto [br, bc] = *fp8_block_;
    const auto rows = static_cast<std::int64_t>(t.shape[0]), cols = static_cast<std::int64_t>(t.shape[1]);
    const std::uint64_t want = static_cast<std::uint64_t>(((rows + br - 1) / br) * ((cols + bc - 1) / bc));
    const StDType sdt = scales.tensor->dtype;
    if ((sdt != StDType::F32 && sdt != StDType::F8_E8M0) || scales.tensor->element_count() != want)
      throw CheckpointError(ck_.dir(), "'" + scale_name + "' must be float32 or UE8M0 with one scale per " +
                                           std::to_string(br) + "x" + std::to_string(bc) + " block (" +
                                           std::to_string(want) + ")");
    const auto codes = loc.file->data(t);
    const auto sb = scales.file->data(*scales.tensor);
    std::vector<float> sv(want);
    if (sdt == StDType::F32) {
      std::memcpy(sv.data(), sb.data(), want * sizeof(float));
    } else {
      for (std::uint64_t i = 0; i < want; ++i) {
        if (sb[i] == 0xFF) throw CheckpointError(ck_.dir(), "'" + scale_name + "' holds a NaN scale (0xFF)");
        sv[i] = e8m0_value(sb[i]);
      }
    }
    const std::vector<float> values = dequantize_fp8_blocks(codes, rows, cols, sv, br, bc);
    HostWeight w;
    w.name = name;
    w.dtype = HostDType::F32;
    w.rows = rows;
    w.cols = cols;
    w.shape = {rows, cols};
    w.data.resize(values.size() * sizeof(float));
    std::memcpy(w.data.data(), values.data(), w.data.size());
    return w;
  }

  // MXFP4 (DeepSeek-V4's routed experts, fp8_blocks.h): int8 [out, in / 2] with UE8M0 `.scale` [out, in / 32].
  HostWeight read_mxfp4(const std::string& name, const std::string& module, const HfCheckpoint::Located& loc) const {
    const auto& t = *loc.tensor;
    const auto scales = ck_.find(module + ".scale");
    if (t.shape.size() != 2) throw CheckpointError(ck_.dir(), "'" + name + "' is MXFP4 (int8) but not a matrix");
    const auto rows = static_cast<std::int64_t>(t.shape[0]), cols = static_cast<std::int64_t>(t.shape[1]) * 2;
    if (cols % 32 != 0 || scales.tensor->dtype != StDType::F8_E8M0 ||
        scales.tensor->element_count() != static_cast<std::uint64_t>(rows * (cols / 32)))
      throw CheckpointError(
          ck_.dir(), "'" + module + ".scale' must be UE8M0 with one scale per 32 inputs of '" + name + "' (MXFP4)");
    const auto sb = scales.file->data(*scales.tensor);
    for (const std::uint8_t e : sb)
      if (e == 0xFF) throw CheckpointError(ck_.dir(), "'" + module + ".scale' holds a NaN scale (0xFF)");
    return dense_f32(name, rows, cols, dequantize_mxfp4(loc.file->data(t), rows, cols, sb));
  }

  // Integer tensors (DeepSeek-V4's token -> experts table) as float values, exact below 2^24.
  HostWeight read_integers(const std::string& name, const HfCheckpoint::Located& loc) const {
    const auto& t = *loc.tensor;
    const auto d = loc.file->data(t);
    const bool wide = t.dtype == StDType::I64;
    std::vector<float> values(t.element_count());
    for (std::size_t i = 0; i < values.size(); ++i) {
      std::int64_t v = 0;
      if (wide) {
        std::memcpy(&v, d.data() + i * 8, 8);
      } else {
        std::int32_t v32 = 0;
        std::memcpy(&v32, d.data() + i * 4, 4);
        v = v32;
      }
      if (v > (1 << 24) || v < -(1 << 24))
        throw CheckpointError(ck_.dir(),
                              "'" + name + "' holds an integer too large to read (" + std::to_string(v) + ")");
      values[i] = static_cast<float>(v);
    }
    const auto cols = t.shape.empty() ? 1 : static_cast<std::int64_t>(t.shape.back());
    HostWeight w = dense_f32(name, cols == 0 ? 0 : static_cast<std::int64_t>(values.size()) / cols, cols, values);
    w.shape.clear();
    for (auto s : t.shape) w.shape.push_back(static_cast<std::int64_t>(s));
    return w;
  }

  static HostWeight dense_f32(const std::string& name, std::int64_t rows, std::int64_t cols,
                              const std::vector<float>& values) {
    HostWeight w;
    w.name = name;
    w.dtype = HostDType::F32;
    w.rows = rows;
    w.cols = cols;
    w.shape = {rows, cols};
    w.data.resize(values.size() * sizeof(float));
    std::memcpy(w.data.data(), values.data(), w.data.size());
    return w;
  }

  HfCheckpoint ck_;
  std::optional<AffineQuantConfig> quant_;
  std::optional<std::pair<std::int64_t, std::int64_t>> fp8_block_;  // block FP8's weight_block_size
};

}  // namespace

std::unique_ptr<WeightReader> open_gguf_weights(const std::string& path) { return std::make_unique<GgufWeights>(path); }
std::unique_ptr<WeightReader> open_hf_weights(const std::string& dir) { return std::make_unique<HfWeights>(dir); }

}  // namespace tf
