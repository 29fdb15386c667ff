#pragma once
// The Qwen2-VL image processor (transformers' Qwen2VLImageProcessorPil, the one Qwen3.5/3.8 checkpoints name)
// as a checkpoint's preprocessor_config.json sets it up: smart_resize, PIL's bicubic resampling on 8-bit
// pixels, rescale, normalise, and the patch order the vision tower reads. Bit for bit the reference's
// pixel_values (tests/unit/vision/preprocess_test.cpp).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "vision/image_decode.h"

namespace tf::vision {

struct PreprocessorConfig {
  int patch_size = 14, temporal_patch_size = 2, merge_size = 2;
  std::int64_t min_pixels = 56 * 56, max_pixels = 28 * 28 * 1280;
  bool do_resize = true, do_rescale = true, do_normalize = true;
  double rescale_factor = 1.0 / 255.0;
  std::array<float, 3> mean{0.48145466f, 0.4578275f, 0.40821073f};  // OPENAI_CLIP_MEAN, the class default
  std::array<float, 3> std{0.26862954f, 0.26130258f, 0.27577711f};
};

// Reads preprocessor_config.json; throws tf::CheckpointError naming the file and the key for a value the
// processor would not take (a resample filter other than bicubic, a patch size < 1, a bad mean, ...).
PreprocessorConfig read_preprocessor_config(const std::string& path);

// transformers' smart_resize: (height, width) rounded to multiples of `factor` (Python's round: half to even)
// and brought inside [min_pixels, max_pixels]. Throws ImageError for an aspect ratio over 200.
std::array<std::int64_t, 2> smart_resize(std::int64_t height, std::int64_t width, std::int64_t factor,
                                         std::int64_t min_pixels, std::int64_t max_pixels);

// PIL's Image.resize(..., BICUBIC) of an RGB image (Pillow's two-pass 8-bit fixed-point resampler).
RgbImage resize_bicubic_like_pil(const RgbImage& in, std::uint32_t out_width, std::uint32_t out_height);

struct PixelPatches {
  std::int64_t grid_t = 1, grid_h = 0, grid_w = 0;  // in patches
  std::int64_t row_size = 0;                        // channels x temporal x patch x patch
  std::vector<float> values;                        // (grid_h * grid_w) x row_size, merge-block order
  std::int64_t patches() const { return grid_t * grid_h * grid_w; }
  // The number of placeholder tokens the image takes in the prompt: patches / merge^2.
  std::int64_t tokens(int merge_size) const { return patches() / (std::int64_t{merge_size} * merge_size); }
};

PixelPatches preprocess_image(const RgbImage& image, const PreprocessorConfig& config);

}  // namespace tf::vision
