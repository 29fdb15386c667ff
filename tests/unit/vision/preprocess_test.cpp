// preprocess_image gives the reference processor's pixel_values and grid bit for bit (transformers'
// Qwen2VLImageProcessorPil on the golden's images, with its preprocessor_config.json), and smart_resize rounds
// as Python does.
#include "vision/image_preprocess.h"

#include <gtest/gtest.h>

#include <cstring>

#include "checkpoint/checkpoint_error.h"
#include "golden_files.h"
#include "vision/image_error.h"

namespace tf::vision {
namespace {

using testing::golden_path;

TEST(SmartResize, AsTransformers) {
  // inside the range: unchanged; half-way values round to even (Python's round)
  EXPECT_EQ(smart_resize(48, 32, 16, 1024, 4096), (std::array<std::int64_t, 2>{48, 32}));
  EXPECT_EQ(smart_resize(40, 72, 16, 1024, 4096), (std::array<std::int64_t, 2>{32, 64}));
  EXPECT_EQ(smart_resize(24, 56, 16, 256, 1 << 20), (std::array<std::int64_t, 2>{32, 64}));
  EXPECT_EQ(smart_resize(80, 75, 16, 1024, 4096), (std::array<std::int64_t, 2>{64, 48}));  // over max
  EXPECT_EQ(smart_resize(9, 20, 16, 1024, 4096), (std::array<std::int64_t, 2>{32, 48}));   // under min
  // Qwen3.5's real values: patch 16, merge 2, 65,536..16,777,216 pixels; a 1024 x 1024 image stays
  EXPECT_EQ(smart_resize(1024, 1024, 32, 65536, 16777216), (std::array<std::int64_t, 2>{1024, 1024}));
  EXPECT_THROW(smart_resize(1, 300, 16, 1024, 4096), ImageError);
}

TEST(Preprocess, PixelValuesAsTheReferenceProcessor) {
  const PreprocessorConfig cfg = read_preprocessor_config(golden_path("preprocessor_config.json"));
  EXPECT_EQ(cfg.patch_size, 8);
  EXPECT_EQ(cfg.min_pixels, 1024);
  EXPECT_EQ(cfg.max_pixels, 4096);
  for (const char* f : {"a.png", "b.png", "c.png", "d.png"}) {
    const RgbImage img = decode_image(testing::read_bytes(golden_path(std::string("images/") + f)));
    const PixelPatches p = preprocess_image(img, cfg);
    const auto grid = testing::tensor<std::int64_t>(testing::references(), std::string("grid.") + f);
    ASSERT_EQ(grid.size(), 3u);
    EXPECT_EQ(p.grid_t, grid[0]) << f;
    EXPECT_EQ(p.grid_h, grid[1]) << f;
    EXPECT_EQ(p.grid_w, grid[2]) << f;
    std::vector<std::uint64_t> shape;
    const auto want = testing::tensor<float>(testing::references(), std::string("pixel_values.") + f, &shape);
    ASSERT_EQ(shape.size(), 2u);
    ASSERT_EQ(std::uint64_t(p.patches()), shape[0]) << f;
    ASSERT_EQ(std::uint64_t(p.row_size), shape[1]) << f;
    std::size_t differ = 0;
    float worst = 0;
    for (std::size_t i = 0; i < want.size(); ++i)
      if (std::memcmp(&want[i], &p.values[i], sizeof(float)) != 0) {
        ++differ;
        worst = std::max(worst, std::abs(want[i] - p.values[i]));
      }
    EXPECT_EQ(differ, 0u) << f << ": values that differ (worst " << worst << ")";
    EXPECT_EQ(p.tokens(cfg.merge_size), p.grid_h * p.grid_w / 4);
  }
}

TEST(Preprocess, ConfigErrorsNameTheKey) {
  const std::string dir = ::testing::TempDir();
  auto write = [&](const std::string& body) {
    const std::string path = dir + "/preprocessor_config.json";
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(body.c_str(), f);
    std::fclose(f);
    return path;
  };
  auto expect_error = [&](const std::string& body, const std::string& needle) {
    try {
      read_preprocessor_config(write(body));
      ADD_FAILURE() << body;
    } catch (const CheckpointError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(R"({"resample": 2})", "'resample'");
  expect_error(R"({"patch_size": 0})", "'patch_size'");
  expect_error(R"({"image_std": [1, 0, 1]})", "'image_std'");
  expect_error(R"({"image_mean": "x"})", "'image_mean'");
  expect_error(R"({"size": {"shortest_edge": 10, "longest_edge": 5}})", "minimum pixel count");
  expect_error("[", "not valid JSON");
}

}  // namespace
}  // namespace tf::vision
