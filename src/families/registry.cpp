// Which family serves which checkpoint, by GGUF general.architecture or config.json model_type, and the loader
// that builds it. A new family is one line of kFamilies (and its folder).
#include <array>
#include <filesystem>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/gguf.h"
#include "checkpoint/hf_checkpoint.h"
#include "families/deepseek_v4/deepseek_v4.h"
#include "families/gemma4/gemma4.h"
#include "families/glm5_next/glm5_next.h"
#include "families/image_encoder.h"
#include "families/llama/llama.h"
#include "families/model.h"
#include "families/nemotron_h/nemotron_h.h"
#include "families/qwen3_5/qwen3_5.h"
#include "families/qwen3_5/qwen3_5_vision.h"
#include "families/qwen4_exp/qwen4_exp.h"
#include "families/servable.h"

namespace tf {
namespace {

struct Family {
  const char* architecture;  // GGUF general.architecture or config.json model_type
  const char* family;        // our folder under src/families/
  std::unique_ptr<Model> (*load)(const std::string& path, bool is_gguf, Backend& backend);
  const char* works;  // what serves today (`tensorfold info`, `models`)
  // The family's image encoder loader (--vision), where it reads images.
  std::unique_ptr<ImageEncoder> (*load_images)(const std::string& path, Backend& backend) = nullptr;
};

constexpr const char* kQwen4ExpWorks =
    "serves Hugging Face bf16 and MLX affine safetensors on MLX (not CUDA or MTP drafting yet)";

// The one list of served architectures: load_model() dispatches on it, and `pull`, `serve REPO`, `models` and
// `info` ask it (servable.h) before any weight is read or downloaded. A new family is one line here.
constexpr const char* kGlm5NextWorks =
    "serves Hugging Face bf16, block-FP8 and MLX affine safetensors on MLX, its MTP layer drafting (not CUDA yet)";

constexpr const char* kDeepseekV4Works =
    "serves Hugging Face bf16, block-FP8 + MXFP4-expert and MLX affine safetensors (transformers' saved names and "
    "the release's) on the MLX CPU path (not CUDA, Metal or MTP drafting yet)";

constexpr std::array<Family, 12> kFamilies{{
    {"llama", "llama", load_llama, "serves on MLX and CUDA"},
    {"qwen3_5", "qwen3_5", load_qwen3_5, "serves on MLX and CUDA, drafting from its MTP head where it has one",
     load_qwen3_5_image_encoder},
    {"qwen3_5_text", "qwen3_5", load_qwen3_5, "serves on MLX and CUDA, drafting from its MTP head where it has one"},
    {"qwen35", "qwen3_5", load_qwen3_5,
     "serves llama.cpp's GGUF (F16, Q8_0, Q4_K_M, ...) on MLX (not CUDA yet), drafting from its MTP head where it "
     "has one"},
    {"nemotron_h", "nemotron_h", load_nemotron_h,
     "serves on MLX (not CUDA yet), drafting from its MTP head where it has one"},
    {"gemma4", "gemma4", load_gemma4,
     "serves Hugging Face safetensors and mlx-community quants on the MLX CPU path (not CUDA or Metal yet); E2B/E4B "
     "refused"},
    {"gemma4_text", "gemma4", load_gemma4,
     "serves Hugging Face safetensors and mlx-community quants on the MLX CPU path (not CUDA or Metal yet); E2B/E4B "
     "refused"},
    {"qwen4_exp", "qwen4_exp", load_qwen4_exp, kQwen4ExpWorks},
    {"qwen4_exp_text", "qwen4_exp", load_qwen4_exp, kQwen4ExpWorks},
    {"glm5_next", "glm5_next", load_glm5_next, kGlm5NextWorks},
    {"glm5_next_text", "glm5_next", load_glm5_next, kGlm5NextWorks},
    {"deepseek_v4", "deepseek_v4", load_deepseek_v4, kDeepseekV4Works},
}};

const Family* find_family(const std::string& architecture) {
  for (const auto& f : kFamilies)
    if (architecture == f.architecture) return &f;
  return nullptr;
}

}  // namespace

const char* serving_family(const std::string& architecture) {
  const auto* f = find_family(architecture);
  return f ? f->family : nullptr;
}

bool family_serves(const std::string& architecture) { return find_family(architecture) != nullptr; }

std::string serving_status(const std::string& architecture) {
  const auto* f = find_family(architecture);
  return f ? f->works : "not supported yet";
}

std::string serving_summary(const std::string& architecture) {
  const auto* f = find_family(architecture);
  return f ? std::string(f->family) + ": " + f->works : "not served yet";
}

std::vector<std::string> served_architectures() {
  std::vector<std::string> out;
  for (const auto& f : kFamilies) out.emplace_back(f.architecture);
  return out;
}

std::unique_ptr<Model> load_model(const std::string& path, Backend& backend) {
  std::error_code ec;
  const bool is_dir = std::filesystem::is_directory(path, ec);
  std::string arch;
  if (is_dir) {
    auto config = read_json_file((std::filesystem::path(path) / "config.json").string());
    arch = config.is_object() ? config.value("model_type", std::string()) : std::string();
  } else {
    GgufFile f(path);
    arch = f.header().get_string("general.architecture").value_or("");
  }
  if (const auto* f = find_family(arch)) return f->load(path, !is_dir, backend);
  throw CheckpointError(path, "architecture '" + arch + "' is not served yet (tensorfold models lists the families)");
}

std::unique_ptr<ImageEncoder> load_image_encoder(const std::string& path, Backend& backend) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return nullptr;
  auto config = read_json_file((std::filesystem::path(path) / "config.json").string());
  const auto arch = config.is_object() ? config.value("model_type", std::string()) : std::string();
  const auto* f = find_family(arch);
  return f != nullptr && f->load_images != nullptr ? f->load_images(path, backend) : nullptr;
}

}  // namespace tf
