#include "families/qwen3_5/qwen3_5_vision.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "backends/backend.h"
#include "checkpoint/checkpoint_error.h"
#include "checkpoint/config_reader.h"
#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/weight_reader.h"

namespace tf {

std::unique_ptr<ImageEncoder> load_qwen3_5_image_encoder(const std::string& path, Backend& backend) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return nullptr;  // GGUF files carry no tower (llama.cpp's mmproj is separate)
  const std::string file = (fs::path(path) / "config.json").string();
  const nlohmann::json top = read_json_file(file);
  const auto vc = top.find("vision_config");
  if (vc == top.end() || !vc->is_object()) return nullptr;
  if (!backend.has_image_inputs())
    throw CheckpointError(path, "the " + backend.name() + " backend does not take images yet: use --backend mlx");
  const ConfigReader r(*vc, file);
  VisionTowerSpec s;
  s.depth = static_cast<int>(r.integer("depth"));
  s.hidden = static_cast<int>(r.integer("hidden_size"));
  s.heads = static_cast<int>(r.integer("num_heads"));
  s.intermediate = static_cast<int>(r.integer("intermediate_size"));
  s.out_hidden = static_cast<int>(r.integer("out_hidden_size"));
  s.in_channels = static_cast<int>(r.integer("in_channels", 3));
  s.patch = static_cast<int>(r.integer("patch_size", 16));
  s.temporal_patch = static_cast<int>(r.integer("temporal_patch_size", 2));
  s.merge = static_cast<int>(r.integer("spatial_merge_size", 2));
  s.position_embeddings = static_cast<int>(r.integer("num_position_embeddings"));
  if (const auto rp = vc->find("rope_parameters"); rp != vc->end() && rp->is_object())
    s.rope_theta = static_cast<float>(r.number(*rp, "rope_theta", 10000.0));
  if (s.in_channels != 3) r.fail("'in_channels' must be 3 (RGB)");
  if (const std::string act = r.text("hidden_act", "gelu_pytorch_tanh"); act != "gelu_pytorch_tanh")
    r.fail("'hidden_act' " + act + " is not supported (gelu_pytorch_tanh is)");
  if (s.hidden % s.heads != 0 || (s.hidden / s.heads) % 4 != 0)
    r.fail("hidden_size / num_heads must be a multiple of 4 (the 2-D rotary halves)");
  // The text side must place M-RoPE as the tower's positions expect: interleaved sections.
  const nlohmann::json& text = text_config(top);
  const auto rp = text.find("rope_parameters");
  const nlohmann::json& rope = rp != text.end() && rp->is_object() ? *rp : text;
  if (!rope.value("mrope_interleaved", false) || !rope.contains("mrope_section"))
    throw CheckpointError(file, "images need interleaved M-RoPE (text_config rope mrope_section, mrope_interleaved)");
  if (s.out_hidden != ConfigReader(text, file).integer("hidden_size"))
    r.fail("'out_hidden_size' must equal the text model's hidden_size");

  const std::string pre_file = (fs::path(path) / "preprocessor_config.json").string();
  if (!fs::exists(pre_file, ec))
    throw CheckpointError(path, "has a vision tower but no preprocessor_config.json (images need it)");
  const vision::PreprocessorConfig pre = vision::read_preprocessor_config(pre_file);
  if (pre.patch_size != s.patch || pre.temporal_patch_size != s.temporal_patch || pre.merge_size != s.merge)
    throw CheckpointError(pre_file,
                          "patch_size / temporal_patch_size / merge_size differ from config.json's vision_config");

  ImageTokenIds ids;
  const ConfigReader t(top, file);
  ids.image = static_cast<std::int32_t>(t.integer("image_token_id"));
  ids.vision_start = static_cast<std::int32_t>(t.integer("vision_start_token_id"));
  ids.vision_end = static_cast<std::int32_t>(t.integer("vision_end_token_id"));

  auto reader = open_hf_weights(path);
  if (!reader->has("model.visual.patch_embed.proj.weight"))
    throw CheckpointError(path,
                          "config.json has a vision_config but the weights hold no model.visual.* tower "
                          "(an mlx-lm conversion drops it): use the Hugging Face checkpoint for images");
  WeightSource ws(*reader, backend);
  HostMatmul mm = [&backend](const float* x, std::int64_t rows, const float* w, std::int64_t out, std::int64_t in,
                             float* y) { backend.host_matmul(x, rows, w, out, in, y); };
  auto tower = std::make_unique<VisionTower>(ws, "model.visual.", s, std::move(mm));
  return std::make_unique<ImageEncoder>(pre, std::move(tower), ids);
}

}  // namespace tf
