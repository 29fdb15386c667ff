#pragma once
// How a block gets its weights: by name from a checkpoint, uploaded to the backend, with the shape checked
// and every uploaded byte counted. A bad checkpoint is one CheckpointError naming the file and the tensor.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "checkpoint/weight_reader.h"

namespace tf {

class WeightSource {
 public:
  // `rename` maps the names blocks use (Hugging Face's) to the checkpoint's, for layouts that differ (GGUF).
  WeightSource(const WeightReader& reader, Backend& backend,
               std::function<std::string(const std::string&)> rename = {});

  bool has(const std::string& name) const;
  // A [rows, cols] matrix, dense or quantized, divided among tensor-parallel ranks as `split` says.
  DeviceWeight matrix(const std::string& name, std::int64_t rows, std::int64_t cols, const WeightSplit& split = {});
  // A vector of n float values (norm weights, per-head parameters). With `plus_one` each value is stored as
  // 1 + w: zero-centred RMSNorm weights (Qwen3.5, Gemma) become plain multipliers.
  DeviceWeight vector(const std::string& name, std::int64_t n, bool plus_one = false, const WeightSplit& split = {});
  // Float values computed at load rather than read (an unscaled norm's ones, a router's folded input scale),
  // uploaded as a vector named `what` (for messages).
  DeviceWeight values(const std::string& what, const std::vector<float>& values, const WeightSplit& split = {});
  // A vector of n float values kept on the host (a router's correction bias: the host picks the experts).
  std::vector<float> floats(const std::string& name, std::int64_t n) const;
  // A [rows, cols] matrix kept on the host as float32, dequantized where MLX affine codes hold it (MLX's
  // rounding: checkpoint/mlx_affine.h) (latent attention's kv_b, whose absorbed products run on the host).
  std::vector<float> host_matrix(const std::string& name, std::int64_t rows, std::int64_t cols) const;
  // A dense float weight of rows * cols values, whatever its stored shape (a depthwise conv kernel is
  // [channels, 1, kernel] in one layout and [channels, kernel, 1] in another: the same values in order).
  DeviceWeight dense(const std::string& name, std::int64_t rows, std::int64_t cols, const WeightSplit& split = {});

  // A stack of `experts` matrices of [rows, cols], stored as one tensor [experts, rows, cols] (dense or
  // quantized): rows [begin, begin + take) of each (take 0: all), one weight per expert. A fused gate|up stack is
  // read twice, once for each half.
  std::vector<DeviceWeight> stack(const std::string& name, std::int64_t experts, std::int64_t rows, std::int64_t cols,
                                  std::int64_t begin = 0, std::int64_t take = 0);
  // A [blocks * rows, cols] matrix cut into `blocks` weights of [rows, cols] (a block-diagonal projection's
  // blocks, stored one after the other: DeepSeek-V4's grouped output projection).
  std::vector<DeviceWeight> row_blocks(const std::string& name, std::int64_t blocks, std::int64_t rows,
                                       std::int64_t cols);
  std::size_t bytes() const { return bytes_; }  // uploaded so far (as the backend holds them)
  const std::string& path() const { return path_; }
  [[noreturn]] void fail(const std::string& problem) const;

 private:
  HostWeight read(const std::string& name) const;
  DeviceWeight upload(const HostWeight& w, const WeightSplit& split);

  const WeightReader& reader_;
  Backend& backend_;
  std::function<std::string(const std::string&)> rename_;
  std::string path_;
  std::size_t bytes_ = 0;
};

// Weight bytes as uploaded (codes, scales and biases; dense weights as float32).
std::size_t device_weight_bytes(const DeviceWeight& w);

}  // namespace tf
