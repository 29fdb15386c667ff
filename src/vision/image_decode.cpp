#include "vision/image_decode.h"

#include <jpeglib.h>
// after jpeglib.h, which it needs
#include <jerror.h>
#include <png.h>
#include <webp/decode.h>

#include <csetjmp>
#include <cstring>
#include <string>

#include "vision/image_error.h"

namespace tf::vision {
namespace {

void check_size(std::uint32_t w, std::uint32_t h, const DecodeLimits& limits, const char* kind) {
  if (w == 0 || h == 0) throw ImageError(std::string(kind) + " image has no pixels (width or height 0)");
  if (w > limits.max_side || h > limits.max_side)
    throw ImageError(std::string(kind) + " image is " + std::to_string(w) + "x" + std::to_string(h) +
                     " pixels; the limit is " + std::to_string(limits.max_side) + " pixels a side");
  if (std::uint64_t{w} * h > limits.max_pixels)
    throw ImageError(std::string(kind) + " image is " + std::to_string(w) + "x" + std::to_string(h) + " = " +
                     std::to_string(std::uint64_t{w} * h) + " pixels; the limit is " +
                     std::to_string(limits.max_pixels) + " pixels an image");
}

// transformers' convert_to_rgb composites onto opaque white with PIL's Image.alpha_composite, whose integer
// arithmetic (Pillow's AlphaComposite.c, 7 extra bits, rounded divisions by 255) is reproduced here exactly.
void composite_on_white(const std::uint8_t* rgba, std::size_t n, std::uint8_t* rgb) {
  constexpr std::uint32_t kBits = 7;
  auto div255 = [](std::uint32_t a) { return ((a >> 8) + a) >> 8; };
  for (std::size_t i = 0; i < n; ++i, rgba += 4, rgb += 3) {
    const std::uint32_t a = rgba[3];
    if (a == 0) {
      rgb[0] = rgb[1] = rgb[2] = 255;
      continue;
    }
    const std::uint32_t blend = 255u * (255u - a);
    const std::uint32_t outa255 = a * 255u + blend;
    const std::uint32_t coef1 = a * 255u * 255u * (1u << kBits) / outa255;
    const std::uint32_t coef2 = 255u * (1u << kBits) - coef1;
    for (int c = 0; c < 3; ++c) {
      const std::uint32_t t = rgba[c] * coef1 + 255u * coef2;
      rgb[c] = static_cast<std::uint8_t>(div255(t + (0x80u << kBits)) >> kBits);
    }
  }
}

// ---- PNG (libpng; its errors longjmp back here, so this frame holds nothing with a destructor) ----------

struct PngSource {
  const std::uint8_t* data;
  std::size_t size, pos;
};

struct PngErrors {
  char message[200];
};

void png_read_mem(png_structp png, png_bytep out, png_size_t n) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > src->size - src->pos) png_error(png, "the PNG data ends early (truncated file)");
  std::memcpy(out, src->data + src->pos, n);
  src->pos += n;
}

void png_on_error(png_structp png, png_const_charp msg) {
  auto* e = static_cast<PngErrors*>(png_get_error_ptr(png));
  std::snprintf(e->message, sizeof e->message, "%s", msg);
  png_longjmp(png, 1);
}

void png_on_warning(png_structp, png_const_charp) {}

// Returns nullptr on success or the problem. Reads the header, lets `on_header` size `out` (4 bytes a pixel),
// then decodes the first image into it as RGBA 8-bit; *has_alpha says whether the file carries transparency.
const char* png_decode(std::span<const std::uint8_t> bytes, const DecodeLimits& limits, std::vector<std::uint8_t>* out,
                       std::vector<png_bytep>* rows, std::uint32_t* w, std::uint32_t* h, bool* has_alpha, bool* grey16,
                       PngErrors* err, std::string* limit_msg) {
  PngSource src{bytes.data(), bytes.size(), 0};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, err, png_on_error, png_on_warning);
  if (!png) return "out of memory";
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return "out of memory";
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return err->message;
  }
  png_set_read_fn(png, &src, png_read_mem);
  png_read_info(png, info);
  *w = png_get_image_width(png, info);
  *h = png_get_image_height(png, info);
  try {
    check_size(*w, *h, limits, "the PNG");
  } catch (const ImageError& e) {
    *limit_msg = e.what();  // no longjmp across this frame after a throw: leave by returning
    png_destroy_read_struct(&png, &info, nullptr);
    return limit_msg->c_str();
  }
  const int color = png_get_color_type(png, info);
  *has_alpha = (color & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS);
  // PIL opens 16-bit greyscale as mode I;16, whose RGB conversion clips each value to 255: read those samples
  // whole (big-endian, two bytes a pixel, which the 4-byte rows hold) and clip after.
  *grey16 = color == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(png, info) == 16 && !*has_alpha;
  if (!*grey16) {
    png_set_expand(png);    // palette -> RGB, grey < 8 bits -> 8 bits, tRNS -> alpha
    png_set_strip_16(png);  // PIL keeps the high byte of 16-bit RGB samples
    if (!(color & PNG_COLOR_MASK_COLOR)) png_set_gray_to_rgb(png);
    if (!*has_alpha) png_set_filler(png, 0xff, PNG_FILLER_AFTER);
  }
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != std::size_t{*w} * (*grey16 ? 2 : 4))
    png_error(png, "unexpected row layout after expansion");
  out->resize(std::size_t{*w} * *h * 4);
  rows->resize(*h);
  for (std::uint32_t y = 0; y < *h; ++y) (*rows)[y] = out->data() + std::size_t{y} * *w * 4;
  png_read_image(png, rows->data());
  png_destroy_read_struct(&png, &info, nullptr);
  return nullptr;
}

RgbImage decode_png(std::span<const std::uint8_t> bytes, const DecodeLimits& limits) {
  std::vector<std::uint8_t> rgba;
  std::vector<png_bytep> rows;
  std::uint32_t w = 0, h = 0;
  bool alpha = false, grey16 = false;
  PngErrors err{};
  std::string limit_msg;
  if (const char* problem = png_decode(bytes, limits, &rgba, &rows, &w, &h, &alpha, &grey16, &err, &limit_msg)) {
    if (!limit_msg.empty()) throw ImageError(limit_msg);
    throw ImageError(std::string("the PNG image is corrupt: ") + problem);
  }
  RgbImage img{w, h, std::vector<std::uint8_t>(std::size_t{w} * h * 3), ImageFormat::png};
  if (grey16) {
    for (std::size_t y = 0; y < h; ++y)
      for (std::size_t x = 0; x < w; ++x) {
        const std::uint8_t* s = &rgba[y * w * 4 + x * 2];
        const unsigned v = (unsigned{s[0]} << 8) | s[1];
        std::memset(&img.pixels[(y * w + x) * 3], v > 255 ? 255 : static_cast<int>(v), 3);
      }
  } else if (alpha) {
    composite_on_white(rgba.data(), std::size_t{w} * h, img.pixels.data());
  } else {
    for (std::size_t i = 0, n = std::size_t{w} * h; i < n; ++i) std::memcpy(&img.pixels[i * 3], &rgba[i * 4], 3);
  }
  return img;
}

// ---- JPEG (libjpeg-turbo; the same longjmp discipline) ---------------------------------------------------

struct JpegErrors {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_on_error(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

void jpeg_no_output(j_common_ptr) {}

// libjpeg only warns when the data ends early and pads the picture with grey; a truncated upload is refused.
void jpeg_on_message(j_common_ptr cinfo, int level) {
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) jpeg_on_error(cinfo);
}

enum class JpegStage { ok, error, too_big, cmyk };

// PIL decodes with libjpeg's defaults (islow DCT, fancy upsampling); grey comes out replicated to RGB.
JpegStage jpeg_decode(std::span<const std::uint8_t> bytes, const DecodeLimits& limits, std::vector<std::uint8_t>* out,
                      std::uint32_t* w, std::uint32_t* h, JpegErrors* err) {
  jpeg_decompress_struct cinfo;
  cinfo.err = jpeg_std_error(&err->mgr);
  err->mgr.error_exit = jpeg_on_error;
  err->mgr.output_message = jpeg_no_output;
  err->mgr.emit_message = jpeg_on_message;
  if (setjmp(err->jump)) {
    jpeg_destroy_decompress(&cinfo);
    return JpegStage::error;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  *w = cinfo.image_width;
  *h = cinfo.image_height;
  if (*w == 0 || *h == 0 || *w > limits.max_side || *h > limits.max_side ||
      std::uint64_t{*w} * *h > limits.max_pixels) {
    jpeg_destroy_decompress(&cinfo);
    return JpegStage::too_big;
  }
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    jpeg_destroy_decompress(&cinfo);
    return JpegStage::cmyk;
  }
  cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&cinfo);
  if (cinfo.output_components != 3) {
    std::snprintf(err->message, sizeof err->message, "%d output components", cinfo.output_components);
    jpeg_destroy_decompress(&cinfo);
    return JpegStage::error;
  }
  out->resize(std::size_t{*w} * *h * 3);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out->data() + std::size_t{cinfo.output_scanline} * *w * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return JpegStage::ok;
}

RgbImage decode_jpeg(std::span<const std::uint8_t> bytes, const DecodeLimits& limits) {
  RgbImage img;
  img.format = ImageFormat::jpeg;
  JpegErrors err{};
  switch (jpeg_decode(bytes, limits, &img.pixels, &img.width, &img.height, &err)) {
    case JpegStage::ok:
      return img;
    case JpegStage::error:
      throw ImageError(std::string("the JPEG image is corrupt: ") + err.message);
    case JpegStage::too_big:
      check_size(img.width, img.height, limits, "the JPEG");
      break;
    case JpegStage::cmyk:
      throw ImageError("the JPEG image is CMYK; send RGB or greyscale");
  }
  throw ImageError("the JPEG image could not be decoded");
}

// ---- WebP (libwebp reports errors by status; no jumps) ----------------------------------------------------

RgbImage decode_webp(std::span<const std::uint8_t> bytes, const DecodeLimits& limits) {
  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config)) throw ImageError("the WebP decoder could not start (library version)");
  if (WebPGetFeatures(bytes.data(), bytes.size(), &config.input) != VP8_STATUS_OK)
    throw ImageError("the WebP image is corrupt: its header cannot be read");
  if (config.input.has_animation) throw ImageError("the WebP image is animated; send a still image");
  const auto w = static_cast<std::uint32_t>(config.input.width), h = static_cast<std::uint32_t>(config.input.height);
  check_size(w, h, limits, "the WebP");
  std::vector<std::uint8_t> rgba(std::size_t{w} * h * 4);
  config.output.colorspace = MODE_RGBA;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = rgba.data();
  config.output.u.RGBA.stride = static_cast<int>(w * 4);
  config.output.u.RGBA.size = rgba.size();
  const VP8StatusCode status = WebPDecode(bytes.data(), bytes.size(), &config);
  WebPFreeDecBuffer(&config.output);
  if (status != VP8_STATUS_OK)
    throw ImageError("the WebP image is corrupt (libwebp status " + std::to_string(static_cast<int>(status)) + ")");
  RgbImage img{w, h, std::vector<std::uint8_t>(std::size_t{w} * h * 3), ImageFormat::webp};
  if (config.input.has_alpha) {
    composite_on_white(rgba.data(), std::size_t{w} * h, img.pixels.data());
  } else {
    for (std::size_t i = 0, n = std::size_t{w} * h; i < n; ++i) std::memcpy(&img.pixels[i * 3], &rgba[i * 4], 3);
  }
  return img;
}

}  // namespace

ImageFormat sniff_image_format(std::span<const std::uint8_t> b) {
  static constexpr std::uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (b.size() >= 8 && std::memcmp(b.data(), kPng, 8) == 0) return ImageFormat::png;
  if (b.size() >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff) return ImageFormat::jpeg;
  if (b.size() >= 12 && std::memcmp(b.data(), "RIFF", 4) == 0 && std::memcmp(b.data() + 8, "WEBP", 4) == 0)
    return ImageFormat::webp;
  throw ImageError("the data is not a PNG, JPEG or WebP image (unrecognised signature)");
}

const char* image_format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::png:
      return "png";
    case ImageFormat::jpeg:
      return "jpeg";
    case ImageFormat::webp:
      return "webp";
  }
  return "?";
}

RgbImage decode_image(std::span<const std::uint8_t> bytes, const DecodeLimits& limits) {
  switch (sniff_image_format(bytes)) {
    case ImageFormat::png:
      return decode_png(bytes, limits);
    case ImageFormat::jpeg:
      return decode_jpeg(bytes, limits);
    case ImageFormat::webp:
      return decode_webp(bytes, limits);
  }
  throw ImageError("unreachable image format");
}

}  // namespace tf::vision
