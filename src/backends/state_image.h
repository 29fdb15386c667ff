#pragma once
// A stream's state kept for later: the prompt cache's retained prefixes (engine/prompt_cache.h). A backend
// keeps an image where it computes, so that restoring one is a copy there (CUDA: device memory, no trip over
// PCIe); every image can also give the bytes of the snapshot() it stands for, which is what disk files hold.
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace tf {

class StateImage {
 public:
  virtual ~StateImage() = default;
  virtual std::size_t bytes() const = 0;  // memory held (where the backend keeps it)
  // snapshot()'s bytes of the state the image was taken from (copied to the host when kept elsewhere).
  virtual std::vector<std::uint8_t> host_bytes() const = 0;
};

// An image as host bytes: what any state gives by default (its snapshot()), and what a disk file loads into.
class HostStateImage final : public StateImage {
 public:
  explicit HostStateImage(std::vector<std::uint8_t> bytes) : bytes_(std::move(bytes)) {}
  std::size_t bytes() const override { return bytes_.size(); }
  std::vector<std::uint8_t> host_bytes() const override { return bytes_; }
  std::span<const std::uint8_t> view() const { return bytes_; }

 private:
  std::vector<std::uint8_t> bytes_;
};

// restore_image() for states without images of their own: their restore(bytes) of the image's bytes (host
// bytes read in place).
template <class State>
void restore_from_bytes(State& state, const StateImage& image) {
  if (const auto* host = dynamic_cast<const HostStateImage*>(&image)) state.restore(host->view());
  else state.restore(image.host_bytes());
}

}  // namespace tf
