#include "vision/image_preprocess.h"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "checkpoint/config_reader.h"
#include "vision/image_error.h"

namespace tf::vision {

PreprocessorConfig read_preprocessor_config(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw CheckpointError(path, "cannot be read");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(path, std::string("is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw CheckpointError(path, "must be a JSON object");
  const ConfigReader r(j, path);
  PreprocessorConfig c;
  c.patch_size = static_cast<int>(r.integer("patch_size", c.patch_size));
  c.temporal_patch_size = static_cast<int>(r.integer("temporal_patch_size", c.temporal_patch_size));
  c.merge_size = static_cast<int>(r.integer("merge_size", c.merge_size));
  if (c.patch_size > 1024 || c.temporal_patch_size > 64 || c.merge_size > 64)
    r.fail("patch_size / temporal_patch_size / merge_size out of range");
  // The processor's __init__: `size` {shortest_edge, longest_edge} (pixels), overridden by min_pixels/max_pixels.
  if (auto s = j.find("size"); s != j.end() && s->is_object()) {
    const ConfigReader sr(*s, path);
    c.min_pixels = sr.integer("shortest_edge", c.min_pixels);
    c.max_pixels = sr.integer("longest_edge", c.max_pixels);
  }
  c.min_pixels = r.integer("min_pixels", c.min_pixels);
  c.max_pixels = r.integer("max_pixels", c.max_pixels);
  if (c.min_pixels > c.max_pixels) r.fail("the minimum pixel count is above the maximum");
  c.do_resize = r.flag("do_resize", c.do_resize);
  c.do_rescale = r.flag("do_rescale", c.do_rescale);
  c.do_normalize = r.flag("do_normalize", c.do_normalize);
  c.rescale_factor = r.number("rescale_factor", c.rescale_factor);
  if (r.count("resample", 3) != 3) r.fail("'resample' must be 3 (bicubic): the only filter implemented");
  if (!r.flag("do_convert_rgb", true)) r.fail("'do_convert_rgb' false is not supported");
  for (auto [key, dst] : {std::pair{"image_mean", &c.mean}, std::pair{"image_std", &c.std}}) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) continue;
    if (it->is_number()) {
      dst->fill(static_cast<float>(it->get<double>()));
    } else if (it->is_array() && it->size() == 3 &&
               std::all_of(it->begin(), it->end(), [](auto& v) { return v.is_number(); })) {
      for (int i = 0; i < 3; ++i) (*dst)[i] = static_cast<float>((*it)[i].get<double>());
    } else {
      r.fail(std::string("'") + key + "' must be a number or 3 numbers");
    }
  }
  for (float s : c.std)
    if (!(s != 0.0f) || !std::isfinite(s)) r.fail("'image_std' must be finite and non-zero");
  return c;
}

std::array<std::int64_t, 2> smart_resize(std::int64_t height, std::int64_t width, std::int64_t factor,
                                         std::int64_t min_pixels, std::int64_t max_pixels) {
  const double h = static_cast<double>(height), w = static_cast<double>(width), f = static_cast<double>(factor);
  if (std::max(h, w) / std::min(h, w) > 200)
    throw ImageError("the image's aspect ratio is " + std::to_string(std::max(h, w) / std::min(h, w)) +
                     "; the limit is 200");
  // Python's round() is half to even, as nearbyint in the default rounding mode.
  std::fesetround(FE_TONEAREST);
  auto h_bar = static_cast<std::int64_t>(std::nearbyint(h / f)) * factor;
  auto w_bar = static_cast<std::int64_t>(std::nearbyint(w / f)) * factor;
  if (h_bar * w_bar > max_pixels) {
    const double beta = std::sqrt((h * w) / static_cast<double>(max_pixels));
    h_bar = std::max(factor, static_cast<std::int64_t>(std::floor(h / beta / f)) * factor);
    w_bar = std::max(factor, static_cast<std::int64_t>(std::floor(w / beta / f)) * factor);
  } else if (h_bar * w_bar < min_pixels) {
    const double beta = std::sqrt(static_cast<double>(min_pixels) / (h * w));
    h_bar = static_cast<std::int64_t>(std::ceil(h * beta / f)) * factor;
    w_bar = static_cast<std::int64_t>(std::ceil(w * beta / f)) * factor;
  }
  return {h_bar, w_bar};
}

namespace {

// Pillow's Resample.c, 8 bits a sample: double-precision bicubic (a = -0.5) taps widened by the scale when
// shrinking, normalised, then fixed point with 22 fraction bits; each pass rounds and clips to 8 bits.
constexpr int kPrecisionBits = 32 - 8 - 2;

double bicubic(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

struct Taps {
  int ksize = 0;
  std::vector<int> first, count;  // per output index: first input index and number of taps
  std::vector<std::int32_t> k;    // out_size x ksize fixed-point weights
};

Taps precompute(int in_size, int out_size) {
  double scale = static_cast<double>(static_cast<float>(in_size) - 0.0f) / out_size;
  double filterscale = scale < 1.0 ? 1.0 : scale;
  const double support = 2.0 * filterscale;
  Taps t;
  t.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  t.first.resize(out_size);
  t.count.resize(out_size);
  t.k.assign(std::size_t(out_size) * t.ksize, 0);
  std::vector<double> w(t.ksize);
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = 0.0 + (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      w[x] = bicubic((x + xmin - center + 0.5) * ss);
      ww += w[x];
    }
    for (int x = 0; x < xmax; ++x) {
      if (ww != 0.0) w[x] /= ww;
      const double v = w[x] * (1 << kPrecisionBits);
      t.k[std::size_t(xx) * t.ksize + x] = static_cast<std::int32_t>(w[x] < 0 ? -0.5 + v : 0.5 + v);
    }
    t.first[xx] = xmin;
    t.count[xx] = xmax;
  }
  return t;
}

std::uint8_t clip8(std::int32_t v) {
  const std::int32_t s = v >> kPrecisionBits;
  return static_cast<std::uint8_t>(s < 0 ? 0 : s > 255 ? 255 : s);
}

}  // namespace

RgbImage resize_bicubic_like_pil(const RgbImage& in, std::uint32_t out_width, std::uint32_t out_height) {
  if (out_width == in.width && out_height == in.height) return in;  // Image.resize returns a copy
  RgbImage cur = in;
  if (out_width != in.width) {  // horizontal pass first, as Pillow
    const Taps t = precompute(static_cast<int>(in.width), static_cast<int>(out_width));
    RgbImage next{out_width, cur.height, std::vector<std::uint8_t>(std::size_t(out_width) * cur.height * 3), in.format};
    for (std::uint32_t y = 0; y < cur.height; ++y) {
      const std::uint8_t* row = &cur.pixels[std::size_t(y) * cur.width * 3];
      for (std::uint32_t xx = 0; xx < out_width; ++xx) {
        const std::int32_t* k = &t.k[std::size_t(xx) * t.ksize];
        std::int32_t s[3] = {1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1)};
        for (int x = 0; x < t.count[xx]; ++x)
          for (int c = 0; c < 3; ++c) s[c] += row[std::size_t(x + t.first[xx]) * 3 + c] * k[x];
        for (int c = 0; c < 3; ++c) next.pixels[(std::size_t(y) * out_width + xx) * 3 + c] = clip8(s[c]);
      }
    }
    cur = std::move(next);
  }
  if (out_height != in.height) {
    const Taps t = precompute(static_cast<int>(in.height), static_cast<int>(out_height));
    RgbImage next{cur.width, out_height, std::vector<std::uint8_t>(std::size_t(cur.width) * out_height * 3), in.format};
    for (std::uint32_t yy = 0; yy < out_height; ++yy) {
      const std::int32_t* k = &t.k[std::size_t(yy) * t.ksize];
      for (std::uint32_t x = 0; x < cur.width; ++x) {
        std::int32_t s[3] = {1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1)};
        for (int y = 0; y < t.count[yy]; ++y)
          for (int c = 0; c < 3; ++c) s[c] += cur.pixels[(std::size_t(y + t.first[yy]) * cur.width + x) * 3 + c] * k[y];
        for (int c = 0; c < 3; ++c) next.pixels[(std::size_t(yy) * cur.width + x) * 3 + c] = clip8(s[c]);
      }
    }
    cur = std::move(next);
  }
  return cur;
}

PixelPatches preprocess_image(const RgbImage& image, const PreprocessorConfig& c) {
  const std::int64_t P = c.patch_size, T = c.temporal_patch_size, M = c.merge_size;
  std::int64_t h = image.height, w = image.width;
  RgbImage resized;
  const RgbImage* img = &image;
  if (c.do_resize) {
    const auto [nh, nw] = smart_resize(h, w, P * M, c.min_pixels, c.max_pixels);
    resized = resize_bicubic_like_pil(image, static_cast<std::uint32_t>(nw), static_cast<std::uint32_t>(nh));
    img = &resized;
    h = nh;
    w = nw;
  }
  if (h % (P * M) != 0 || w % (P * M) != 0)
    throw ImageError("the image is " + std::to_string(w) + "x" + std::to_string(h) + " pixels, not a multiple of " +
                     std::to_string(P * M) + " (the checkpoint's preprocessor does not resize)");
  // rescale: float64 product rounded to float32 (transformers' rescale); normalise in float32
  std::vector<float> plane(std::size_t(h) * w * 3);
  for (std::size_t i = 0; i < plane.size(); ++i) {
    float v = c.do_rescale ? static_cast<float>(static_cast<double>(img->pixels[i]) * c.rescale_factor)
                           : static_cast<float>(img->pixels[i]);
    if (c.do_normalize) {
      const std::size_t ch = i % 3;
      v = (v - c.mean[ch]) / c.std[ch];
    }
    plane[i] = v;
  }
  PixelPatches out;
  out.grid_h = h / P;
  out.grid_w = w / P;
  out.row_size = 3 * T * P * P;
  out.values.resize(std::size_t(out.patches()) * out.row_size);
  // Row order: merge blocks in raster order, the M x M patches of a block in raster order inside it; a row
  // holds channel, then the (duplicated) temporal frame, then the patch's pixels in raster order.
  std::size_t r = 0;
  for (std::int64_t bh = 0; bh < out.grid_h / M; ++bh)
    for (std::int64_t bw = 0; bw < out.grid_w / M; ++bw)
      for (std::int64_t mh = 0; mh < M; ++mh)
        for (std::int64_t mw = 0; mw < M; ++mw, ++r) {
          const std::int64_t y0 = (bh * M + mh) * P, x0 = (bw * M + mw) * P;
          float* dst = &out.values[r * out.row_size];
          for (std::int64_t ch = 0; ch < 3; ++ch)
            for (std::int64_t t = 0; t < T; ++t)
              for (std::int64_t py = 0; py < P; ++py)
                for (std::int64_t px = 0; px < P; ++px) *dst++ = plane[(std::size_t(y0 + py) * w + (x0 + px)) * 3 + ch];
        }
  return out;
}

}  // namespace tf::vision
