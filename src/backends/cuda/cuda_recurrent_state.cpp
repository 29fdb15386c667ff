#include "backends/cuda/cuda_recurrent_state.h"

#include <cstring>
#include <stdexcept>

#include "backends/cuda/cuda_state_image.h"
#include "backends/cuda/cuda_support.h"

namespace tf::cuda_internal {

CudaRecurrentState::CudaRecurrentState(int layers, const cuda::GdnShape& shape, std::function<cudaStream_t()> settle)
    : shape_(shape), layers_(static_cast<std::size_t>(layers)), st_(std::make_shared<RecurrentStorage>()),
      settle_(std::move(settle)) {
  if (layers < 1 || !cuda::gdn_supported(shape))
    throw std::invalid_argument("CUDA recurrent state: a Gated DeltaNet shape the kernels take (k_dim 16-128)");
  const std::int64_t C = shape_.channels(), width = static_cast<std::int64_t>(shape_.v_heads) * shape_.v_dim;
  const std::int64_t floats =
      layers * (2 * slot_floats() + save_floats()) + kReplayRows * C + kReplayRows * width;
  const std::size_t rows_at = align_up(static_cast<std::size_t>(floats) * 4, 256);
  st_->bytes = rows_at + static_cast<std::size_t>(layers) * sizeof(cuda::GdnRow);
  TF_CK(cudaMalloc(reinterpret_cast<void**>(&st_->buf), st_->bytes));
  TF_CK(cudaMemset(st_->buf, 0, st_->bytes));
  replay_y_ = st_->buf + layers * (2 * slot_floats() + save_floats());
  replay_out_ = replay_y_ + kReplayRows * C;
  replay_rows_ = reinterpret_cast<cuda::GdnRow*>(reinterpret_cast<char*>(st_->buf) + rows_at);
}

std::int64_t CudaRecurrentState::slot_floats() const {
  return static_cast<std::int64_t>(shape_.conv_kernel - 1) * shape_.channels() +
         static_cast<std::int64_t>(shape_.v_heads) * shape_.k_dim * shape_.v_dim;
}
std::int64_t CudaRecurrentState::save_floats() const {
  return kReplayRows * (shape_.channels() + 2LL * shape_.v_heads);
}
float* CudaRecurrentState::slot(int layer, int s) const {
  return st_->buf + static_cast<std::int64_t>(layer) * (2 * slot_floats() + save_floats()) + s * slot_floats();
}
float* CudaRecurrentState::saved(int layer) const { return slot(layer, 0) + 2 * slot_floats(); }

void CudaRecurrentState::check_call(int layer, std::int64_t start, std::int64_t rows) const {
  if (layer < 0 || layer >= layers()) throw std::invalid_argument("gated_delta: layer");
  if (start != length_) throw std::invalid_argument("gated_delta: the rows must continue the state");
  if (rows < 1) throw std::invalid_argument("gated_delta: a run without rows");
}

cuda::GdnRow CudaRecurrentState::record(int layer, std::int64_t start, std::int64_t rows, const cuda::WeightView& conv,
                                        const float* a_log, const float* dt_bias) {
  check_call(layer, start, rows);
  if (layer == 0) {
    call_start_ = start;
    call_rows_ = rows;
    replayable_ = rows <= kReplayRows;
  }
  Layer& l = layers_[static_cast<std::size_t>(layer)];
  l.conv = conv;
  l.a_log = a_log;
  l.dt_bias = dt_bias;
  const int from = l.cur;
  l.before = replayable_ ? from : -1;
  l.cur = 1 - from;
  const std::int64_t conv_floats = static_cast<std::int64_t>(shape_.conv_kernel - 1) * shape_.channels();
  cuda::GdnRow r;
  r.conv_in = slot(layer, from);
  r.state_in = slot(layer, from) + conv_floats;
  r.conv_out = slot(layer, l.cur);
  r.state_out = slot(layer, l.cur) + conv_floats;
  r.save = replayable_ ? saved(layer) : nullptr;
  r.rows = static_cast<std::int32_t>(rows);
  r.save_rows = static_cast<std::int32_t>(kReplayRows);
  if (layer + 1 == layers()) length_ = start + rows;
  return r;
}

void CudaRecurrentState::truncate(std::int64_t length) {
  if (length == length_) return;
  if (length < 0 || length > length_ || !replayable_ || length < call_start_)
    throw std::invalid_argument("recurrent state: truncation outside the last verify window");
  cudaStream_t stream = settle_();
  const std::int64_t keep = length - call_start_;
  const std::int64_t conv_floats = static_cast<std::int64_t>(shape_.conv_kernel - 1) * shape_.channels();
  const std::int64_t C = shape_.channels();
  std::vector<cuda::GdnRow> rows(layers_.size());
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    Layer& l = layers_[i];
    l.cur = l.before;
    if (keep == 0) continue;
    const int layer = static_cast<int>(i);
    cuda::GdnRow& r = rows[i];
    r.conv_in = slot(layer, l.before);
    r.state_in = slot(layer, l.before) + conv_floats;
    r.conv_out = slot(layer, 1 - l.before);
    r.state_out = slot(layer, 1 - l.before) + conv_floats;
    r.rows = static_cast<std::int32_t>(keep);
    r.save_rows = static_cast<std::int32_t>(kReplayRows);
    l.cur = 1 - l.before;
  }
  if (keep > 0) {
    // The replay: the call's kept inputs through the same kernels, one row slot a layer, in layer order.
    TF_CK(cudaMemcpyAsync(replay_rows_, rows.data(), rows.size() * sizeof(cuda::GdnRow), cudaMemcpyHostToDevice,
                          stream));
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      const Layer& l = layers_[i];
      const float* in = saved(static_cast<int>(i));
      const float* a = in + kReplayRows * C;
      const float* b = a + kReplayRows * shape_.v_heads;
      cuda::gdn_conv(replay_rows_ + i, 1, in, l.conv.data, l.conv.dtype, shape_, replay_y_, stream);
      cuda::gdn_recurrence(replay_rows_ + i, 1, replay_y_, a, b, l.a_log, l.dt_bias, shape_, replay_out_, stream);
    }
    TF_CK(cudaStreamSynchronize(stream));  // `rows` is pageable host memory the copy reads
  }
  length_ = length;
}

std::vector<std::uint8_t> CudaRecurrentState::snapshot() const {
  // [length: i64][each layer's current slot], copied straight to the host (image() keeps it on the device).
  cudaStream_t stream = settle_();
  const std::size_t per_layer = static_cast<std::size_t>(slot_floats()) * 4;
  std::vector<std::uint8_t> out(8 + layers_.size() * per_layer);
  std::memcpy(out.data(), &length_, 8);
  for (std::size_t i = 0; i < layers_.size(); ++i)
    TF_CK(cudaMemcpyAsync(out.data() + 8 + i * per_layer, slot(static_cast<int>(i), layers_[i].cur), per_layer,
                          cudaMemcpyDeviceToHost, stream));
  TF_CK(cudaStreamSynchronize(stream));
  return out;
}

std::shared_ptr<const StateImage> CudaRecurrentState::image() const {
  cudaStream_t stream = settle_();
  const std::size_t per_layer = static_cast<std::size_t>(slot_floats()) * 4;
  std::vector<std::uint8_t> head(8);
  std::memcpy(head.data(), &length_, 8);
  auto image = std::make_shared<CudaStateImage>(std::move(head), layers_.size() * per_layer);
  for (std::size_t i = 0; i < layers_.size(); ++i)
    TF_CK(cudaMemcpyAsync(image->device_data() + i * per_layer, slot(static_cast<int>(i), layers_[i].cur), per_layer,
                          cudaMemcpyDeviceToDevice, stream));
  TF_CK(cudaStreamSynchronize(stream));
  return image;
}

void CudaRecurrentState::restore(std::span<const std::uint8_t> bytes) {
  const std::size_t per_layer = static_cast<std::size_t>(slot_floats()) * 4;
  if (bytes.size() != 8 + layers_.size() * per_layer)
    throw std::invalid_argument("recurrent state restore: bytes of another shape");
  std::int64_t length = 0;
  std::memcpy(&length, bytes.data(), 8);
  restore_slots(length, bytes.data() + 8);
}

void CudaRecurrentState::restore_image(const StateImage& image) {
  const auto* dev = dynamic_cast<const CudaStateImage*>(&image);
  if (dev == nullptr || dev->head().size() != 8) return restore_from_bytes(*this, image);
  if (dev->device_bytes() != layers_.size() * static_cast<std::size_t>(slot_floats()) * 4)
    throw std::invalid_argument("recurrent state restore: an image of another shape");
  std::int64_t length = 0;
  std::memcpy(&length, dev->head().data(), 8);
  restore_slots(length, dev->device_data());
}

void CudaRecurrentState::restore_slots(std::int64_t length, const std::uint8_t* slots) {
  if (length < 0) throw std::invalid_argument("recurrent state restore: negative length");
  const std::size_t per_layer = static_cast<std::size_t>(slot_floats()) * 4;
  cudaStream_t stream = settle_();
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    layers_[i].cur = 0;
    layers_[i].before = -1;
    TF_CK(cudaMemcpyAsync(slot(static_cast<int>(i), 0), slots + i * per_layer, per_layer, cudaMemcpyDefault, stream));
  }
  TF_CK(cudaStreamSynchronize(stream));
  length_ = length;
  call_start_ = length;
  replayable_ = false;
}

}  // namespace tf::cuda_internal
