#pragma once
// Images in chat requests (--vision): the image_url parts a request carries, read into the stream's images.
// Each refusal is a 400 naming the request field and the limit (docs/vision.md): the reference's limits of 4
// images a conversation, 10 MiB an image and 20 MiB in all, 8,192 px a side, 16 MP an image, 4,096 visual
// tokens a request. data: URLs (base64) are read inline; https URLs only through an ImageFetcher (--vision-urls,
// server/image_fetch.h), else refused.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "families/image_encoder.h"

namespace tf::server {

// What the chat template writes for an image part (Qwen3.5's template does the same): message_text puts it where
// the part was, and the tokenizer makes it the vision start, one image pad and the vision end tokens.
inline constexpr const char* kImagePlaceholder = "<|vision_start|><|image_pad|><|vision_end|>";

struct ImagePart {
  std::string param;  // the field that names it in errors, e.g. messages[0].content[1].image_url
  std::string url;    // a data: URL, or an https URL (fetched only with --vision-urls)
};

// Fetches an image URL's bytes (--vision-urls); throws a 400 (ApiError) naming `param` for every refusal.
class ImageFetcher {
 public:
  virtual ~ImageFetcher() = default;
  virtual std::vector<std::uint8_t> fetch(const std::string& url, const std::string& param,
                                          std::size_t max_bytes) const = 0;
};

struct ImageLimits {
  std::size_t images = 4;
  std::size_t bytes_per_image = std::size_t{10} << 20, total_bytes = std::size_t{20} << 20;
  std::uint32_t max_side = 8192;
  std::uint64_t max_pixels = std::uint64_t{16} << 20;
  std::int64_t visual_tokens = kMaxVisualTokens;
};

// The bytes of a `data:[<media type>][;base64],<data>` URL; throws a 400 naming `param` for anything else.
std::vector<std::uint8_t> data_url_bytes(const std::string& url, const std::string& param, std::size_t max_bytes);

// Decodes, checks and encodes the images, and widens each single image pad of `prompt` (one per part, in order)
// to the image's placeholder tokens. Throws a 400 (ApiError) naming the part and the limit. URL parts go to
// `fetcher` (null: refused, saying how to turn fetching on); `prompt_param` names the prompt's field ("messages",
// "input") when its placeholders do not match the parts.
std::shared_ptr<const StreamImages> read_images(const ImageEncoder& encoder, const std::vector<ImagePart>& parts,
                                                std::vector<std::int32_t>& prompt, const ImageLimits& limits = {},
                                                const ImageFetcher* fetcher = nullptr,
                                                const std::string& prompt_param = "messages");

}  // namespace tf::server
