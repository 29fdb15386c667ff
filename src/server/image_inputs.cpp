#include "server/image_inputs.h"

#include <fmt/format.h>

#include <array>

#include "server/api_error.h"
#include "vision/image_error.h"

namespace tf::server {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// Strict base64 (RFC 4648, padding optional at the end); nullopt-like failure as an empty result with ok false.
bool base64_decode(std::string_view in, std::vector<std::uint8_t>& out) {
  static const std::array<int, 256> table = [] {
    std::array<int, 256> t{};
    t.fill(-1);
    const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(a[i])] = i;
    return t;
  }();
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  if (in.size() % 4 == 1) return false;
  out.reserve(in.size() * 3 / 4);
  std::uint32_t acc = 0;
  int bits = 0;
  for (const char ch : in) {
    const int v = table[static_cast<unsigned char>(ch)];
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<std::uint8_t>(acc >> bits));
    }
  }
  return true;
}

bool is_fetched_url(const std::string& url) { return url.rfind("https://", 0) == 0 || url.rfind("http://", 0) == 0; }

}  // namespace

std::vector<std::uint8_t> data_url_bytes(const std::string& url, const std::string& param, std::size_t max_bytes) {
  if (is_fetched_url(url))
    throw unsupported(fmt::format("Invalid '{}': image URLs are fetched only by a server started with --vision-urls; "
                                  "send the image inline as a data: URL (data:image/png;base64,...).",
                                  param),
                      param);
  if (url.rfind("data:", 0) != 0)
    throw invalid_request(fmt::format("Invalid '{}': expected a data: URL (data:image/png;base64,...).", param), param,
                          "invalid_value");
  const auto comma = url.find(',');
  if (comma == std::string::npos)
    throw invalid_request(fmt::format("Invalid '{}': the data: URL has no ',' before its data.", param), param,
                          "invalid_value");
  const std::string_view header(url.data() + 5, comma - 5);
  if (header.size() < 7 || header.substr(header.size() - 7) != ";base64")
    throw invalid_request(fmt::format("Invalid '{}': the data: URL must be base64 (data:image/png;base64,...).", param),
                          param, "invalid_value");
  const std::string_view data(url.data() + comma + 1, url.size() - comma - 1);
  if (data.size() / 4 * 3 > max_bytes + 3)
    throw invalid_request(
        fmt::format("Invalid '{}': the image is {:.1f} MiB; the limit is {:.0f} MiB an image.", param,
                    static_cast<double>(data.size() / 4 * 3) / kMiB, static_cast<double>(max_bytes) / kMiB),
        param, "image_too_large");
  std::vector<std::uint8_t> bytes;
  if (!base64_decode(data, bytes))
    throw invalid_request(fmt::format("Invalid '{}': the image's base64 is malformed.", param), param, "invalid_value");
  if (bytes.size() > max_bytes)
    throw invalid_request(fmt::format("Invalid '{}': the image is {:.1f} MiB; the limit is {:.0f} MiB an image.", param,
                                      static_cast<double>(bytes.size()) / kMiB, static_cast<double>(max_bytes) / kMiB),
                          param, "image_too_large");
  return bytes;
}

std::shared_ptr<const StreamImages> read_images(const ImageEncoder& encoder, const std::vector<ImagePart>& parts,
                                                std::vector<std::int32_t>& prompt, const ImageLimits& limits,
                                                const ImageFetcher* fetcher, const std::string& prompt_param) {
  if (parts.size() > limits.images)
    throw invalid_request(fmt::format("Invalid '{}': the conversation holds {} images; the limit is {}.",
                                      parts[limits.images].param, parts.size(), limits.images),
                          parts[limits.images].param, "too_many_images");
  // Every check before any image goes through the tower.
  std::vector<vision::RgbImage> pixels;
  std::size_t total = 0;
  std::int64_t tokens = 0;
  for (const auto& p : parts) {
    auto bytes = fetcher != nullptr && is_fetched_url(p.url) ? fetcher->fetch(p.url, p.param, limits.bytes_per_image)
                                                             : data_url_bytes(p.url, p.param, limits.bytes_per_image);
    total += bytes.size();
    if (total > limits.total_bytes)
      throw invalid_request(
          fmt::format("Invalid '{}': the request's images come to {:.1f} MiB; the limit is {:.0f} "
                      "MiB in all.",
                      p.param, static_cast<double>(total) / kMiB, static_cast<double>(limits.total_bytes) / kMiB),
          p.param, "image_too_large");
    try {
      pixels.push_back(vision::decode_image(bytes, {limits.max_side, limits.max_pixels}));
      tokens += encoder.tokens_for(pixels.back().width, pixels.back().height);
    } catch (const vision::ImageError& e) {
      throw invalid_request(fmt::format("Invalid '{}': {}.", p.param, e.what()), p.param, "invalid_image");
    }
    if (tokens > limits.visual_tokens)
      throw invalid_request(fmt::format("Invalid '{}': the request's images take {} visual tokens; the limit is {}.",
                                        p.param, tokens, limits.visual_tokens),
                            p.param, "too_many_visual_tokens");
  }
  const std::int32_t pad = encoder.token_ids().image;
  std::size_t pads = 0;
  for (const auto t : prompt) pads += t == pad;
  if (pads != parts.size())
    throw invalid_request(fmt::format("Invalid '{}': the prompt holds {} image placeholder tokens for {} images "
                                      "(the text may not contain the model's image tokens).",
                                      prompt_param, pads, parts.size()),
                          prompt_param, "invalid_value");
  std::vector<ImageSpan> spans;
  std::vector<std::int32_t> widened;
  widened.reserve(prompt.size() + static_cast<std::size_t>(tokens));
  for (const auto t : prompt) {
    if (t != pad) {
      widened.push_back(t);
      continue;
    }
    const std::size_t i = spans.size();
    ImageSpan s = encoder.encode(pixels[i]);
    s.start = static_cast<std::int64_t>(widened.size());
    widened.insert(widened.end(), static_cast<std::size_t>(s.tokens()), pad);
    spans.push_back(std::move(s));
  }
  prompt = std::move(widened);
  return std::make_shared<const StreamImages>(std::move(spans));
}

}  // namespace tf::server
