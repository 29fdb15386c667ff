#pragma once
// The CUDA backend's recurrent state: a stream's Gated DeltaNet conv windows and fp32 states on the device.
// Rollback works as on the MLX backend (docs/architecture.md): each layer has two buffers, and a call reads
// the state from one and leaves its result in the other, so the state before the call stays intact; a call
// of at most kReplayRows rows (decode, a verify window) also keeps its inputs, and a truncation inside it
// replays the accepted rows from the state before: the same kernels over the same rows give the same bits
// as serial decoding. The buffer a call reads is chosen when the call is recorded and reaches the kernels as
// a dyn value (cuda::GdnRow), so decode graphs replay whichever buffer is current.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "backends/cuda/kernels/kernels.h"

namespace tf::cuda_internal {

// One allocation: per layer two slots of [conv window | state], then the kept inputs of the last call, then
// the replay's outputs (scratch shared by the layers).
struct RecurrentStorage {
  ~RecurrentStorage() { cudaFree(buf); }
  float* buf = nullptr;
  std::size_t bytes = 0;
};

class CudaRecurrentState final : public RecurrentState {
 public:
  static constexpr std::int64_t kReplayRows = cuda::kMaxDecodeRows;

  // `settle` runs whatever the backend has recorded but not launched and returns its stream (as for the KV
  // cache): truncation, snapshots and restores must see every recorded write first.
  CudaRecurrentState(int layers, const cuda::GdnShape& shape, std::function<cudaStream_t()> settle);

  std::int64_t length() const override { return length_; }
  void truncate(std::int64_t length) override;
  std::size_t bytes() const override { return st_->bytes; }
  // [length: int64][per layer: conv window, then state], float32 (the MLX backend's layout).
  std::vector<std::uint8_t> snapshot() const override;
  void restore(std::span<const std::uint8_t> bytes) override;
  // The same in device memory (cuda_state_image.h; the length as its host head), and back on the device.
  std::shared_ptr<const StateImage> image() const override;
  void restore_image(const StateImage& image) override;

  int layers() const { return static_cast<int>(layers_.size()); }
  const cuda::GdnShape& shape() const { return shape_; }
  // Throws std::invalid_argument unless `rows` rows from `start` may be recorded into `layer` now.
  void check_call(int layer, std::int64_t start, std::int64_t rows) const;
  // Records a call of `layer` over rows start .. start + rows - 1 (check_call first): flips the layer's
  // buffers and returns the row slot the kernels read. The weights are kept for a replay.
  cuda::GdnRow record(int layer, std::int64_t start, std::int64_t rows, const cuda::WeightView& conv, const float* a_log,
                      const float* dt_bias);
  std::shared_ptr<const void> storage() const { return st_; }

 private:
  struct Layer {
    int cur = 0;      // the slot holding the state at the store's length
    int before = -1;  // the slot holding the state before the last call, while it can be replayed
    cuda::WeightView conv;
    const float* a_log = nullptr;
    const float* dt_bias = nullptr;
  };
  std::int64_t slot_floats() const;
  // restore()'s body: `length`, then the layers' slots from `slots` (host or device memory).
  void restore_slots(std::int64_t length, const std::uint8_t* slots);
  float* slot(int layer, int s) const;
  float* saved(int layer) const;
  std::int64_t save_floats() const;

  cuda::GdnShape shape_;
  std::vector<Layer> layers_;
  std::shared_ptr<RecurrentStorage> st_;
  float* replay_y_ = nullptr;    // [kReplayRows, channels]
  float* replay_out_ = nullptr;  // [kReplayRows, v_heads * v_dim]
  cuda::GdnRow* replay_rows_ = nullptr;  // one row slot a layer
  std::function<cudaStream_t()> settle_;
  std::int64_t length_ = 0;
  std::int64_t call_start_ = 0;
  std::int64_t call_rows_ = 0;
  bool replayable_ = false;
};

}  // namespace tf::cuda_internal
