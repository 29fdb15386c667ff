#include "backends/mlx/host_recurrent_state.h"

#include <cstring>
#include <stdexcept>

namespace tf {

HostRecurrentState::HostRecurrentState(int layers, std::int64_t state_floats, std::int64_t out_width)
    : state_floats_(state_floats), out_width_(out_width), layers_(static_cast<std::size_t>(layers)) {
  for (auto& l : layers_)
    for (auto& b : l.buf) b.assign(static_cast<std::size_t>(state_floats_), 0.0f);
}

std::size_t HostRecurrentState::bytes() const {
  std::size_t n = 0;
  for (const auto& l : layers_) n += (l.buf[0].capacity() + l.buf[1].capacity() + l.inputs.capacity()) * 4;
  return n;
}

void HostRecurrentState::run(int layer, std::int64_t start, std::int64_t rows, std::span<const Input> inputs, Step step,
                             float* out) {
  if (layer < 0 || static_cast<std::size_t>(layer) >= layers_.size())
    throw std::invalid_argument("recurrent state: layer");
  if (start != length_) throw std::invalid_argument("recurrent state: the rows must continue the state");
  if (layer == 0) {
    call_start_ = start;
    replayable_ = rows <= kReplayRows;
  }
  auto& l = layers_[static_cast<std::size_t>(layer)];
  l.step = std::move(step);
  int from = l.cur;
  if (replayable_) {
    l.before = l.cur;
    l.cur = 1 - l.cur;
    from = l.before;
    l.inputs.clear();
    l.widths.clear();
    for (const auto& in : inputs) {
      l.inputs.insert(l.inputs.end(), in.data, in.data + rows * in.width);
      l.widths.push_back(in.width);
    }
    l.rows = rows;
  } else {
    l.before = -1;
  }
  l.step(inputs, rows, l.buf[from].data(), l.buf[l.cur].data(), out);
  if (static_cast<std::size_t>(layer) + 1 == layers_.size()) length_ = start + rows;
}

// From the state before the last call, its first `keep` rows again (the same inputs, the same kernel: the
// same bits as when they first ran).
void HostRecurrentState::replay(Layer& l, std::int64_t keep, std::vector<float>& scratch) const {
  std::vector<Input> inputs;
  const float* at = l.inputs.data();
  for (const auto w : l.widths) {
    inputs.push_back({at, w});
    at += l.rows * w;
  }
  scratch.resize(static_cast<std::size_t>(keep * out_width_));
  l.cur = 1 - l.before;
  l.step(inputs, keep, l.buf[l.before].data(), l.buf[l.cur].data(), scratch.data());
}

void HostRecurrentState::truncate(std::int64_t length) {
  if (length == length_) return;
  if (length < 0 || length > length_ || !replayable_ || length < call_start_)
    throw std::invalid_argument("recurrent state: truncation outside the last verify window");
  const std::int64_t keep = length - call_start_;
  std::vector<float> scratch;
  for (auto& l : layers_) {
    l.cur = l.before;
    if (keep > 0) replay(l, keep, scratch);
  }
  length_ = length;
}

std::vector<std::uint8_t> HostRecurrentState::snapshot() const {
  const auto per_layer = static_cast<std::size_t>(state_floats_) * 4;
  std::vector<std::uint8_t> out(8 + layers_.size() * per_layer);
  std::memcpy(out.data(), &length_, 8);
  std::size_t off = 8;
  for (const auto& l : layers_) {
    std::memcpy(out.data() + off, l.buf[l.cur].data(), per_layer);
    off += per_layer;
  }
  return out;
}

void HostRecurrentState::restore(std::span<const std::uint8_t> bytes) {
  const auto per_layer = static_cast<std::size_t>(state_floats_) * 4;
  if (bytes.size() != 8 + layers_.size() * per_layer)
    throw std::invalid_argument("recurrent state restore: bytes of another shape");
  std::int64_t length = 0;
  std::memcpy(&length, bytes.data(), 8);
  if (length < 0) throw std::invalid_argument("recurrent state restore: negative length");
  std::size_t off = 8;
  for (auto& l : layers_) {
    l.cur = 0;
    l.before = -1;
    std::memcpy(l.buf[0].data(), bytes.data() + off, per_layer);
    off += per_layer;
  }
  length_ = length;
  call_start_ = length;
  replayable_ = false;
}

}  // namespace tf
