#include "families/image_encoder.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <memory>
#include <stdexcept>

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

std::string ImageEncoder::content_hash(const vision::PixelPatches& p) {
  // SHA-256 (a prompt cache trusts it across clients, so it must resist a crafted collision) of the grid and the
  // tower's input values: everything the image's embeddings depend on besides the weights, which the cache's
  // identity covers. Two files of the same pixels share it; a decoder whose pixels change does not.
  const std::array<std::int64_t, 4> grid{p.grid_t, p.grid_h, p.grid_w, p.row_size};
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), grid.data(), sizeof grid) != 1 ||
      EVP_DigestUpdate(ctx.get(), p.values.data(), p.values.size() * sizeof(float)) != 1 ||
      EVP_DigestFinal_ex(ctx.get(), md, &n) != 1)
    throw std::runtime_error("image content hash: OpenSSL's SHA-256 failed");
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

ImageSpan ImageEncoder::encode(const vision::RgbImage& image) const {
  const vision::PixelPatches p = vision::preprocess_image(image, pre_);
  ImageSpan s;
  s.grid_h = p.grid_h / pre_.merge_size;
  s.grid_w = p.grid_w / pre_.merge_size;
  s.content_hash = content_hash(p);
  std::lock_guard lock(encode_mu_);
  s.embeds = tower_->encode(p.values, p.grid_h, p.grid_w);
  return s;
}

std::size_t ImageEncoder::workspace_bytes() const {
  const std::int64_t merge2 = std::int64_t{pre_.merge_size} * pre_.merge_size;
  std::int64_t patches = kMaxVisualTokens * merge2;
  if (pre_.do_resize)
    patches = std::min<std::int64_t>(patches, pre_.max_pixels / (std::int64_t{pre_.patch_size} * pre_.patch_size));
  return tower_->workspace_bytes(patches / merge2 * merge2);
}

std::size_t ImageEncoder::embedding_bytes() const {
  return static_cast<std::size_t>(kMaxVisualTokens) * static_cast<std::size_t>(tower_->spec().out_hidden) *
         sizeof(float);
}

}  // namespace tf
