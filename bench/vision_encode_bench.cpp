// The time to encode one image with a Qwen3.5-sized vision tower (depth 27, hidden 1152, 16 heads, MLP 4304,
// patch 16, merge 2, out 5120: Qwen3.8-27B's vision_config) on random weights: preprocessing of a WIDTHxHEIGHT
// image, then the tower on BACKEND's host matmul (mlx: the CPU's BLAS; cuda: the GPU's float32 GEMM, the
// weights sent from the host each product). Results go to docs/vision.md.
//   tf_vision_encode_bench [WIDTH HEIGHT [BACKEND]]   (default 1024 1024 mlx)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>

#include "backends/compiled_backends.h"
#include "blocks/vision_tower.h"
#include "checkpoint/weight_reader.h"
#include "vision/image_preprocess.h"

namespace {

// Random float32 weights of the shapes the tower asks for (only the element count is checked).
class RandomWeights final : public tf::WeightReader {
 public:
  explicit RandomWeights(std::map<std::string, std::int64_t> sizes) : sizes_(std::move(sizes)) {}
  bool has(const std::string& name) const override { return sizes_.count(name) != 0; }
  tf::HostWeight read(const std::string& name) const override {
    const std::int64_t n = sizes_.at(name);
    tf::HostWeight w;
    w.name = name;
    w.shape = {n};
    w.rows = 1;
    w.cols = n;
    w.dtype = tf::HostDType::F32;
    std::vector<float> v(static_cast<std::size_t>(n));
    std::mt19937 rng(static_cast<unsigned>(n));
    std::normal_distribution<float> d(0.0f, 0.02f);
    for (auto& x : v) x = d(rng);
    w.data.resize(v.size() * sizeof(float));
    std::memcpy(w.data.data(), v.data(), w.data.size());
    return w;
  }
  std::string path() const override { return "random"; }

 private:
  std::map<std::string, std::int64_t> sizes_;
};

}  // namespace

int main(int argc, char** argv) {
  const std::uint32_t width = argc > 2 ? static_cast<std::uint32_t>(std::atoi(argv[1])) : 1024;
  const std::uint32_t height = argc > 2 ? static_cast<std::uint32_t>(std::atoi(argv[2])) : 1024;
  tf::VisionTowerSpec s;
  s.depth = 27;
  s.hidden = 1152;
  s.heads = 16;
  s.intermediate = 4304;
  s.out_hidden = 5120;
  s.patch = 16;
  s.temporal_patch = 2;
  s.merge = 2;
  s.position_embeddings = 2304;
  const std::int64_t h = s.hidden, merged = h * 4;
  std::map<std::string, std::int64_t> sizes{{"v.patch_embed.proj.weight", h * s.patch_values()},
                                            {"v.patch_embed.proj.bias", h},
                                            {"v.pos_embed.weight", s.position_embeddings * h},
                                            {"v.merger.norm.weight", h},
                                            {"v.merger.norm.bias", h},
                                            {"v.merger.linear_fc1.weight", merged * merged},
                                            {"v.merger.linear_fc1.bias", merged},
                                            {"v.merger.linear_fc2.weight", s.out_hidden * merged},
                                            {"v.merger.linear_fc2.bias", s.out_hidden}};
  for (int i = 0; i < s.depth; ++i) {
    const std::string b = "v.blocks." + std::to_string(i) + ".";
    for (const char* nrm : {"norm1", "norm2"}) sizes[b + nrm + ".weight"] = sizes[b + nrm + ".bias"] = h;
    sizes[b + "attn.qkv.weight"] = 3 * h * h;
    sizes[b + "attn.qkv.bias"] = 3 * h;
    sizes[b + "attn.proj.weight"] = h * h;
    sizes[b + "attn.proj.bias"] = h;
    sizes[b + "mlp.linear_fc1.weight"] = s.intermediate * h;
    sizes[b + "mlp.linear_fc1.bias"] = s.intermediate;
    sizes[b + "mlp.linear_fc2.weight"] = h * s.intermediate;
    sizes[b + "mlp.linear_fc2.bias"] = h;
  }
  RandomWeights reader(sizes);
  auto backend = tf::make_backend(argc > 3 ? argv[3] : "mlx");
  tf::WeightSource ws(reader, *backend);
  tf::Backend* b = backend.get();
  const tf::VisionTower tower(
      ws, "v.", s, [b](const float* x, std::int64_t r, const float* w, std::int64_t o, std::int64_t in, float* y) {
        b->host_matmul(x, r, w, o, in, y);
      });
  tf::vision::RgbImage img{width, height, std::vector<std::uint8_t>(std::size_t{width} * height * 3),
                           tf::vision::ImageFormat::png};
  std::mt19937 rng(1);
  for (auto& p : img.pixels) p = static_cast<std::uint8_t>(rng());
  tf::vision::PreprocessorConfig pre;
  pre.patch_size = 16;
  pre.min_pixels = 65536;
  pre.max_pixels = 16777216;
  pre.mean = pre.std = {0.5f, 0.5f, 0.5f};
  // A first, small image first: the backend's start-up (CUDA's context, its kernels' first load) is not an
  // image's cost.
  {
    tf::vision::RgbImage warm{64, 64, std::vector<std::uint8_t>(64 * 64 * 3, 128), tf::vision::ImageFormat::png};
    tf::vision::PreprocessorConfig p = pre;
    p.min_pixels = 4096;
    const auto wp = tf::vision::preprocess_image(warm, p);
    (void)tower.encode(wp.values, wp.grid_h, wp.grid_w);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const auto px = tf::vision::preprocess_image(img, pre);
  const auto t1 = std::chrono::steady_clock::now();
  const auto out = tower.encode(px.values, px.grid_h, px.grid_w);
  const auto t2 = std::chrono::steady_clock::now();
  const auto secs = [](auto a, auto z) { return std::chrono::duration<double>(z - a).count(); };
  std::printf("%ux%u on %s: %lld patches -> %lld tokens; preprocess %.3f s, tower %.2f s (weights %.2f GiB float32)\n",
              width, height, backend->name().c_str(), static_cast<long long>(px.patches()),
              static_cast<long long>(px.tokens(2)), secs(t0, t1), secs(t1, t2),
              static_cast<double>(tower.bytes()) / (1u << 30));
  return out.empty() ? 1 : 0;
}
