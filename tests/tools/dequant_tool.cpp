// Test helper: writes dequantized float32 values of one tensor to a file, so pytest can compare them
// with the reference implementations (the gguf package, mlx.core.dequantize).
//   tf_dequant_tool gguf FILE TENSOR OUT.f32
//   tf_dequant_tool mlx DIR MODULE OUT.f32      (MODULE.weight/.scales/.biases, spec from config.json)
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/ggml_dequant.h"
#include "checkpoint/gguf.h"
#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/mlx_affine.h"

namespace {

void write_floats(const char* path, const std::vector<float>& v) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
}

int dump_gguf(const char* file, const char* name, const char* out) {
  tf::GgufFile f(file);
  const auto* t = f.header().find_tensor(name);
  if (t == nullptr) {
    std::fprintf(stderr, "no tensor %s\n", name);
    return 1;
  }
  std::vector<float> v(t->element_count);
  tf::dequantize_ggml(t->type, f.data(*t), v);
  write_floats(out, v);
  return 0;
}

int dump_mlx(const char* dir, const char* module, const char* out) {
  tf::HfCheckpoint ck(dir);
  auto q = tf::parse_affine_quant_config(ck.config());
  if (!q) {
    std::fprintf(stderr, "config.json has no quantization block\n");
    return 1;
  }
  auto spec = q->spec_for(module);
  if (!spec) {
    std::fprintf(stderr, "module %s is not quantized\n", module);
    return 1;
  }
  const std::string m(module);
  auto w = ck.find(m + ".weight"), s = ck.find(m + ".scales"), b = ck.find(m + ".biases");
  if (w.tensor == nullptr || s.tensor == nullptr || b.tensor == nullptr) {
    std::fprintf(stderr, "module %s lacks weight/scales/biases\n", module);
    return 1;
  }
  const auto rows = w.tensor->shape.at(0);
  const auto cols = w.tensor->shape.at(1) * 32 / static_cast<std::uint64_t>(spec->bits);
  tf::AffineFloat ft = s.tensor->dtype == tf::StDType::F32   ? tf::AffineFloat::F32
                       : s.tensor->dtype == tf::StDType::F16 ? tf::AffineFloat::F16
                                                             : tf::AffineFloat::BF16;
  auto wbytes = w.file->data(*w.tensor);
  std::vector<std::uint32_t> packed(wbytes.size() / 4);
  std::memcpy(packed.data(), wbytes.data(), wbytes.size());
  std::vector<float> v(rows * cols);
  tf::dequantize_affine(packed, s.file->data(*s.tensor), b.file->data(*b.tensor), ft, rows, cols, *spec, v);
  write_floats(out, v);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: tf_dequant_tool gguf|mlx PATH NAME OUT.f32\n");
    return 2;
  }
  try {
    if (std::strcmp(argv[1], "gguf") == 0) return dump_gguf(argv[2], argv[3], argv[4]);
    if (std::strcmp(argv[1], "mlx") == 0) return dump_mlx(argv[2], argv[3], argv[4]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "unknown mode %s\n", argv[1]);
  return 2;
}
