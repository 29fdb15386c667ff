// The vision tower block (src/blocks/vision_tower.h) on the golden checkpoint's model.visual.* weights gives the
// float64 reference's embeddings (transformers' Qwen3_5VisionModel + merger) to float32 accuracy, from the
// pixel values our own preprocessing makes of the golden's images.
#include "blocks/vision_tower.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "backends/compiled_backends.h"
#include "backends/mlx/kernels/invariant_matmul.h"
#include "checkpoint/weight_reader.h"
#include "golden_files.h"
#include "vision/image_decode.h"
#include "vision/image_preprocess.h"

namespace tf {
namespace {

using vision::testing::golden_path;

VisionTowerSpec golden_spec() {
  VisionTowerSpec s;
  s.depth = 2;
  s.hidden = 32;
  s.heads = 2;
  s.intermediate = 64;
  s.out_hidden = 64;
  s.patch = 8;
  s.temporal_patch = 2;
  s.merge = 2;
  s.position_embeddings = 64;
  return s;
}

TEST(VisionTower, MatchesTheFloat64Reference) {
  auto reader = open_hf_weights(golden_path(""));
  auto backend = make_backend("mlx");
  WeightSource ws(*reader, *backend);
  const VisionTower tower(ws, "model.visual.", golden_spec(), invariant_matmul);
  const auto cfg = vision::read_preprocessor_config(golden_path("preprocessor_config.json"));
  for (const char* f : {"a.png", "b.png", "c.png", "d.png"}) {
    const auto img = vision::decode_image(vision::testing::read_bytes(golden_path(std::string("images/") + f)));
    const auto px = vision::preprocess_image(img, cfg);
    const auto got = tower.encode(px.values, px.grid_h, px.grid_w);
    std::vector<std::uint64_t> shape;
    const auto want =
        vision::testing::tensor<float>(vision::testing::references(), std::string("vision_embeds.") + f, &shape);
    ASSERT_EQ(shape.size(), 2u);
    ASSERT_EQ(got.size(), want.size()) << f;
    EXPECT_EQ(std::int64_t(shape[0]), px.tokens(cfg.merge_size));
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, double(std::abs(got[i] - want[i])));
      scale = std::max(scale, double(std::abs(want[i])));
    }
    std::printf("%s: %zu values, max |diff| %.3g, max |value| %.3g\n", f, want.size(), worst, scale);
    EXPECT_LT(worst, 1e-5 * std::max(1.0, scale)) << f << ": max |diff| " << worst << " (max |value| " << scale << ")";
  }
}

TEST(VisionTower, RefusesPatchesThatDoNotFillTheGrid) {
  auto reader = open_hf_weights(golden_path(""));
  auto backend = make_backend("mlx");
  WeightSource ws(*reader, *backend);
  const VisionTower tower(ws, "model.visual.", golden_spec(), invariant_matmul);
  std::vector<float> p(std::size_t(6 * tower.spec().patch_values()));
  EXPECT_THROW(tower.encode(p, 2, 3), std::invalid_argument);
}

}  // namespace
}  // namespace tf
