// libFuzzer target: decode_image (PNG through libpng, JPEG through libjpeg-turbo, WebP through libwebp) and the
// reference preprocessing over arbitrary bytes. Bad input may only throw tf::vision::ImageError; an accepted
// image must have the size it claims and preprocess into whole merge blocks.
#include <cstdint>
#include <span>

#include "fuzz_check.h"
#include "vision/image_decode.h"
#include "vision/image_error.h"
#include "vision/image_preprocess.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const tf::vision::DecodeLimits limits{1024, 1u << 20};  // small, so one input stays fast
  tf::vision::RgbImage img;
  try {
    img = tf::vision::decode_image(std::span<const std::uint8_t>(data, size), limits);
  } catch (const tf::vision::ImageError&) {
    return 0;  // the one allowed way to refuse
  }
  FUZZ_CHECK(img.width >= 1 && img.height >= 1 && img.width <= limits.max_side && img.height <= limits.max_side,
             "size %ux%u", img.width, img.height);
  FUZZ_CHECK(img.pixels.size() == std::size_t{img.width} * img.height * 3, "pixel buffer %zu", img.pixels.size());
  tf::vision::PreprocessorConfig cfg;
  cfg.patch_size = 8;
  cfg.min_pixels = 256;
  cfg.max_pixels = 4096;
  try {
    const auto p = tf::vision::preprocess_image(img, cfg);
    FUZZ_CHECK(p.grid_h % cfg.merge_size == 0 && p.grid_w % cfg.merge_size == 0, "grid %lldx%lld",
               static_cast<long long>(p.grid_h), static_cast<long long>(p.grid_w));
    FUZZ_CHECK(p.patches() * 8 * 8 <= 4 * cfg.max_pixels, "too many patches: %lld",
               static_cast<long long>(p.patches()));
    FUZZ_CHECK(p.values.size() == std::size_t(p.patches() * p.row_size), "values %zu", p.values.size());
  } catch (const tf::vision::ImageError&) {
    // an aspect ratio over 200
  }
  return 0;
}
