#pragma once
// A ViT image encoder with a patch merger (the Qwen3-VL / Qwen3.5 kind, as transformers' Qwen3_5VisionModel):
// patches -> linear patch embedding + a learned position table resampled bilinearly (align_corners) to the
// image's grid -> `depth` pre-LayerNorm blocks (bidirectional attention inside one image, 2-D rotary on the
// patch's (row, column), GELU-tanh MLP) -> LayerNorm -> every merge x merge patches concatenated -> fc1, GELU
// (erf), fc2: one output row (a placeholder token's embedding) per merge block.
//
// It runs on the host in float32, once per image, its matrix products on `matmul` (the MLX backend's host
// kernels: BLAS sgemm for an image's many patch rows): an image's embeddings are a pure function of the image on
// a machine, whatever else the server is doing.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "blocks/weight_source.h"

namespace tf {

struct VisionTowerSpec {
  int depth = 0, hidden = 0, heads = 0, intermediate = 0, out_hidden = 0;
  int in_channels = 3, patch = 16, temporal_patch = 2, merge = 2;
  int position_embeddings = 0;  // a square table: side = sqrt(position_embeddings)
  float rope_theta = 10000.0f;
  float eps = 1e-6f;
  std::int64_t patch_values() const { return std::int64_t{in_channels} * temporal_patch * patch * patch; }
};

// y [rows, out] = x [rows, in] . w[out, in]^T
using HostMatmul =
    std::function<void(const float* x, std::int64_t rows, const float* w, std::int64_t out, std::int64_t in, float* y)>;

class VisionTower {
 public:
  // Reads `prefix`patch_embed.proj, pos_embed, blocks.N.{norm1,norm2,attn.qkv,attn.proj,mlp.linear_fc1,
  // mlp.linear_fc2}, merger.{norm,linear_fc1,linear_fc2} (weights and biases) as float32 on the host.
  VisionTower(const WeightSource& weights, const std::string& prefix, const VisionTowerSpec& spec, HostMatmul matmul);

  // One image: `patches` [grid_h * grid_w, patch_values()] in merge-block order (image_preprocess.h's rows;
  // temporal grid 1). Returns [grid_h * grid_w / merge^2, out_hidden].
  std::vector<float> encode(std::span<const float> patches, std::int64_t grid_h, std::int64_t grid_w) const;

  const VisionTowerSpec& spec() const { return spec_; }
  std::size_t bytes() const { return bytes_; }  // host memory the weights take
  // The host memory encode() allocates for an image of `patches` patches (its largest buffers live together):
  // activations, the qkv and MLP rows, and one head's patches x patches attention scores.
  std::size_t workspace_bytes(std::int64_t patches) const;

 private:
  struct Linear {
    std::vector<float> w, b;
    std::int64_t out = 0, in = 0;
  };
  struct Norm {
    std::vector<float> w, b;
  };
  struct Block {
    Norm norm1, norm2;
    Linear qkv, proj, fc1, fc2;
  };
  Linear linear(const WeightSource& ws, const std::string& name, std::int64_t out, std::int64_t in);
  Norm norm(const WeightSource& ws, const std::string& name, std::int64_t n);
  void apply(const Linear& l, const std::vector<float>& x, std::int64_t rows, std::vector<float>& y) const;
  std::vector<float> positions(std::int64_t grid_h, std::int64_t grid_w) const;
  void attention(const Block& b, std::vector<float>& x, std::int64_t n, std::int64_t grid_h, std::int64_t grid_w) const;

  VisionTowerSpec spec_;
  HostMatmul matmul_;
  Linear patch_embed_;
  std::vector<float> pos_table_;
  std::vector<Block> blocks_;
  Norm merger_norm_;
  Linear merger_fc1_, merger_fc2_;
  std::size_t bytes_ = 0;
};

}  // namespace tf
