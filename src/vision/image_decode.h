#pragma once
// PNG, JPEG and WebP bytes to 8-bit RGB pixels through Debian's libpng, libjpeg-turbo and libwebp, with the
// pixels the reference image processor sees: PIL's Image.open + transformers' convert_to_rgb (transparency
// composited onto white with PIL's alpha_composite arithmetic, grey replicated to three channels, 16-bit RGB
// samples cut to their high byte, 16-bit grey clipped to 255 as PIL's I;16 mode converts, the first frame only).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tf::vision {

// Checked on the header, before any pixel is decoded, so a small file that claims a huge picture costs
// nothing. The reference's defaults: 8,192 px a side, 16 MP an image.
struct DecodeLimits {
  std::uint32_t max_side = 8192;
  std::uint64_t max_pixels = 16ull << 20;
};

enum class ImageFormat { png, jpeg, webp };

struct RgbImage {
  std::uint32_t width = 0, height = 0;
  std::vector<std::uint8_t> pixels;  // height x width x 3, row-major
  ImageFormat format = ImageFormat::png;
};

// The format by its magic bytes; throws ImageError when they are none of the three.
ImageFormat sniff_image_format(std::span<const std::uint8_t> bytes);
const char* image_format_name(ImageFormat f);

// Throws ImageError (one line: what is wrong) for corrupt or truncated data, an unsupported variant
// (CMYK JPEG, animated WebP) or a picture over `limits`; never crashes on any input.
RgbImage decode_image(std::span<const std::uint8_t> bytes, const DecodeLimits& limits = {});

}  // namespace tf::vision
