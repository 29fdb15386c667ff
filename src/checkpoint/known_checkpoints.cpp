#include "checkpoint/known_checkpoints.h"

#include <array>

namespace tf {
namespace {
constexpr std::array<KnownCheckpoint, 9> kTable{{
    {"llama", "llama", "SmolLM2-135M-Instruct (embedded default)", "GGUF Q4_1"},
    {"llama", "llama", "any llama GGUF / HF checkpoint", "GGUF, safetensors bf16, MLX affine"},
    {"qwen3_5", "qwen3_5", "Qwen3.5 / 3.8 dense hybrid", "GGUF (qwen35), MLX affine, safetensors bf16"},
    {"flash_next", "qwen4_exp", "Qwen3.8 Flash Next", "MLX affine, safetensors bf16"},
    {"nemotron_h", "nemotron_h", "Nemotron 3.5 Lightning", "MLX affine, safetensors bf16"},
    {"glm_moe", "glm5_next", "GLM-5.3-Flash", "safetensors FP8, bf16, MLX affine"},
    {"gemma4", "gemma4", "Gemma 4 26B-A4B", "MLX affine, safetensors bf16"},
    {"deepseek_v4", "deepseek_v4", "DeepSeek-V4-Flash", "safetensors FP8 + MXFP4, bf16, MLX affine"},
    {"qwen3_5", "qwen3_5", "Ternary Bonsai 2 27B (mlx-2bit)", "MLX affine 2-bit g128"},
}};
}  // namespace

std::span<const KnownCheckpoint> known_checkpoints() { return kTable; }

}  // namespace tf
