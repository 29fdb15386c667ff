#include "families/image_encoder.h"

namespace tf {

std::int64_t ImageEncoder::tokens_for(std::uint32_t width, std::uint32_t height) const {
  std::int64_t h = height, w = width;
  if (pre_.do_resize) {
    const auto hw =
        vision::smart_resize(h, w, std::int64_t{pre_.patch_size} * pre_.merge_size, pre_.min_pixels, pre_.max_pixels);
    h = hw[0];
    w = hw[1];
  }
  return (h / pre_.patch_size) * (w / pre_.patch_size) / (std::int64_t{pre_.merge_size} * pre_.merge_size);
}

ImageSpan ImageEncoder::encode(const vision::RgbImage& image) const {
  const vision::PixelPatches p = vision::preprocess_image(image, pre_);
  ImageSpan s;
  s.grid_h = p.grid_h / pre_.merge_size;
  s.grid_w = p.grid_w / pre_.merge_size;
  s.embeds = tower_->encode(p.values, p.grid_h, p.grid_w);
  return s;
}

}  // namespace tf
