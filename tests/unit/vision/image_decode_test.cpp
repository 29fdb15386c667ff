// The decoders give the pixels pillow gives (PNG exactly; JPEG and WebP through the same library defaults),
// and refuse corrupt, truncated, oversized and unknown data with an ImageError, never a crash.
#include "vision/image_decode.h"

#include <gtest/gtest.h>

#include "golden_files.h"
#include "vision/image_error.h"

namespace tf::vision {
namespace {

using testing::golden_path;
using testing::read_bytes;
using testing::references;

void expect_pixels_as_pillow(const std::string& file, ImageFormat format) {
  const auto bytes = read_bytes(golden_path("images/" + file));
  ASSERT_FALSE(bytes.empty()) << file;
  std::vector<std::uint64_t> shape;
  const auto want = testing::tensor<std::uint8_t>(references(), "pixels." + file, &shape);
  ASSERT_EQ(shape.size(), 3u) << file;
  const RgbImage img = decode_image(bytes);
  EXPECT_EQ(img.format, format);
  ASSERT_EQ(img.height, shape[0]);
  ASSERT_EQ(img.width, shape[1]);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < want.size(); ++i) differ += img.pixels[i] != want[i];
  EXPECT_EQ(differ, 0u) << file << ": samples that differ from pillow's";
}

TEST(ImageDecode, PngAsPillow) {
  for (const char* f : {"a.png", "b.png", "c.png", "d.png"}) expect_pixels_as_pillow(f, ImageFormat::png);
}
TEST(ImageDecode, JpegAsPillow) { expect_pixels_as_pillow("photo.jpg", ImageFormat::jpeg); }
TEST(ImageDecode, WebpAsPillow) { expect_pixels_as_pillow("photo.webp", ImageFormat::webp); }
TEST(ImageDecode, TransparencyOnWhiteAsPillow) {
  expect_pixels_as_pillow("alpha.png", ImageFormat::png);
  expect_pixels_as_pillow("palette.png", ImageFormat::png);
  expect_pixels_as_pillow("grey.png", ImageFormat::png);
  expect_pixels_as_pillow("grey16.png", ImageFormat::png);
}

void expect_refused(const std::vector<std::uint8_t>& bytes, const std::string& needle, const DecodeLimits& lim = {}) {
  try {
    decode_image(bytes, lim);
    ADD_FAILURE() << "accepted; wanted an error with '" << needle << "'";
  } catch (const ImageError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
}

TEST(ImageDecode, RefusesUnknownAndEmpty) {
  expect_refused({}, "not a PNG, JPEG or WebP");
  expect_refused({'G', 'I', 'F', '8', '9', 'a', 0, 0}, "not a PNG, JPEG or WebP");
}

TEST(ImageDecode, RefusesTruncatedAndCorrupt) {
  for (const char* f : {"images/a.png", "images/photo.jpg", "images/photo.webp"}) {
    auto bytes = read_bytes(golden_path(f));
    for (std::size_t keep : {std::size_t{12}, std::size_t{40}, bytes.size() / 2, bytes.size() * 7 / 8}) {
      std::vector<std::uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<long>(keep));
      SCOPED_TRACE(std::string(f) + " cut to " + std::to_string(keep));
      expect_refused(cut, "corrupt");
    }
    auto flipped = bytes;
    for (std::size_t i = 16; i < flipped.size(); i += 7) flipped[i] ^= 0x5a;
    SCOPED_TRACE(std::string(f) + " with flipped bytes");
    expect_refused(flipped, "corrupt");
  }
}

TEST(ImageDecode, LimitsCheckedOnTheHeader) {
  const auto png = read_bytes(golden_path("images/c.png"));  // 75 x 80
  expect_refused(png, "the limit is 64 pixels a side", DecodeLimits{64, 1u << 20});
  expect_refused(png, "the limit is 5000 pixels an image", DecodeLimits{8192, 5000});
  const auto jpg = read_bytes(golden_path("images/photo.jpg"));  // 56 x 40
  expect_refused(jpg, "pixels a side", DecodeLimits{50, 1u << 20});
  const auto webp = read_bytes(golden_path("images/photo.webp"));
  expect_refused(webp, "pixels an image", DecodeLimits{8192, 100});
}

}  // namespace
}  // namespace tf::vision
