#pragma once
// The recurrent state of a stream's linear-recurrent layers (Gated DeltaNet, Mamba-2) in host memory, for the
// MLX backend on the CPU, whatever the mixer: each layer's state is `state_floats` float32 values (conv window
// and recurrent matrices, as its kernel lays them out) and a layer runs through a Step, the mixer's kernel
// over some rows. Each layer keeps two buffers: a call of at most kReplayRows rows (decode, a verify window)
// reads the state from one and leaves its result in the other, and keeps its inputs, so a truncation inside
// that window restores the state before it and replays the accepted rows, bit for bit. Longer calls (prefill
// chunks) run in place and cannot be rolled back into (docs/architecture.md).
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "backends/backend.h"

namespace tf {

class HostRecurrentState final : public RecurrentState {
 public:
  static constexpr std::int64_t kReplayRows = 16;

  // One input of a call: `width` floats per row, rows after each other.
  struct Input {
    const float* data = nullptr;
    std::int64_t width = 0;
  };
  // Runs `rows` positions of one layer: inputs (in Step's own order), the state before them in state_in, the
  // state after them into state_out (the same buffer: in place), `out_width` floats per row into out.
  using Step = std::function<void(std::span<const Input> inputs, std::int64_t rows, const float* state_in,
                                  float* state_out, float* out)>;

  HostRecurrentState(int layers, std::int64_t state_floats, std::int64_t out_width);

  std::int64_t length() const override { return length_; }
  std::size_t bytes() const override;
  // Runs `rows` positions from `start` (the state's length) through `layer`; `step` is kept for a replay.
  void run(int layer, std::int64_t start, std::int64_t rows, std::span<const Input> inputs, Step step, float* out);
  void truncate(std::int64_t length) override;
  // [length: int64][per layer: its state_floats values], float32.
  std::vector<std::uint8_t> snapshot() const override;
  void restore(std::span<const std::uint8_t> bytes) override;

 private:
  struct Layer {
    std::vector<float> buf[2];  // the state, as the layer's kernel lays it out
    int cur = 0;                // the buffer holding the state at the store's length
    int before = -1;            // the buffer holding the state before the last call, while it can be replayed
    std::vector<float> inputs;  // the last call's inputs, one after another, while it can be replayed
    std::vector<std::int64_t> widths;
    std::int64_t rows = 0;
    Step step;
  };
  void replay(Layer& l, std::int64_t keep, std::vector<float>& scratch) const;

  std::int64_t state_floats_, out_width_;
  std::vector<Layer> layers_;
  std::int64_t length_ = 0, call_start_ = 0;
  bool replayable_ = false;
};

}  // namespace tf
