#pragma once
// A checkpoint's image encoder, loaded only when the server is asked for images (--vision): the reference
// preprocessing its preprocessor_config.json describes, the vision tower, and the placeholder tokens the chat
// template writes. A family that has one provides a loader (registry.h: load_image_encoder).
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "blocks/vision_tower.h"
#include "families/stream_images.h"
#include "vision/image_decode.h"
#include "vision/image_preprocess.h"

namespace tf {

// The reference's limit of visual tokens a request (docs/vision.md): the server refuses more, and the memory plan
// counts a stream's image embeddings and the largest image's encode at it.
inline constexpr std::int64_t kMaxVisualTokens = 4096;

struct ImageTokenIds {
  std::int32_t image = -1, vision_start = -1, vision_end = -1;
};

class ImageEncoder {
 public:
  ImageEncoder(vision::PreprocessorConfig pre, std::unique_ptr<VisionTower> tower, ImageTokenIds ids)
      : pre_(pre), tower_(std::move(tower)), ids_(ids) {}

  const vision::PreprocessorConfig& preprocessor() const { return pre_; }
  const ImageTokenIds& token_ids() const { return ids_; }
  // The placeholder tokens an image of this size takes (before running the tower: limits are checked first).
  std::int64_t tokens_for(std::uint32_t width, std::uint32_t height) const;
  // The image's span (grid, embeddings and content hash; the start left to the caller).
  ImageSpan encode(const vision::RgbImage& image) const;
  // The key a prompt cache gives the image's placeholder rows: SHA-256 of the tower's input (grid and values).
  static std::string content_hash(const vision::PixelPatches& patches);
  std::size_t bytes() const { return tower_->bytes(); }
  // The encode workspace of the largest image a request may carry (kMaxVisualTokens, or the processor's
  // max_pixels if fewer), and a request's embeddings at kMaxVisualTokens.
  std::size_t workspace_bytes() const;
  std::size_t embedding_bytes() const;

 private:
  vision::PreprocessorConfig pre_;
  std::unique_ptr<VisionTower> tower_;
  ImageTokenIds ids_;
  // One image through the tower at a time: its workspace is held once (the memory plan counts one), and on a CPU
  // two encodes at once would only share the same cores.
  mutable std::mutex encode_mu_;
};

}  // namespace tf

namespace tf {
class Backend;
// The image encoder of the checkpoint at `path` (its family's loader), or null when it has none or its
// family reads no images. Throws CheckpointError naming the file for a tower or preprocessor it cannot use.
std::unique_ptr<ImageEncoder> load_image_encoder(const std::string& path, Backend& backend);
}  // namespace tf
