#include "blocks/weight_source.h"

#include <cstring>
#include <vector>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/half_float.h"
#include "checkpoint/mlx_affine.h"
#include "checkpoint/weight_slice.h"

namespace tf {
namespace {

std::string dims(std::int64_t rows, std::int64_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

// The values of a dense HostWeight as float32.
std::vector<float> to_f32(const HostWeight& w) {
  const auto n = static_cast<std::size_t>(w.rows * w.cols);
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint16_t h = 0;
    switch (w.dtype) {
      case HostDType::F32:
        std::memcpy(&out[i], w.data.data() + 4 * i, 4);
        break;
      case HostDType::F16:
        std::memcpy(&h, w.data.data() + 2 * i, 2);
        out[i] = f16_to_f32(h);
        break;
      case HostDType::BF16:
        std::memcpy(&h, w.data.data() + 2 * i, 2);
        out[i] = bf16_to_f32(h);
        break;
    }
  }
  return out;
}

}  // namespace

WeightSource::WeightSource(const WeightReader& reader, Backend& backend,
                           std::function<std::string(const std::string&)> rename)
    : reader_(reader), backend_(backend), rename_(std::move(rename)), path_(reader.path()) {}

bool WeightSource::has(const std::string& name) const { return reader_.has(rename_ ? rename_(name) : name); }

HostWeight WeightSource::read(const std::string& name) const {
  const std::string stored = rename_ ? rename_(name) : name;
  if (!reader_.has(stored)) fail("missing tensor '" + stored + "'");
  return reader_.read(stored);
}

void WeightSource::fail(const std::string& problem) const { throw CheckpointError(path_, problem); }

DeviceWeight WeightSource::upload(const HostWeight& w, const WeightSplit& split) {
  auto d = split.kind == WeightSplit::Kind::Whole ? backend_.upload(w) : backend_.upload_split(w, split);
  bytes_ += device_weight_bytes(d);
  return d;
}

DeviceWeight WeightSource::matrix(const std::string& name, std::int64_t rows, std::int64_t cols,
                                  const WeightSplit& split) {
  auto w = read(name);
  if (w.rows != rows || w.cols != cols)
    fail("tensor '" + w.name + "' is " + dims(w.rows, w.cols) + ", expected " + dims(rows, cols));
  return upload(w, split);
}

DeviceWeight WeightSource::vector(const std::string& name, std::int64_t n, bool plus_one, const WeightSplit& split) {
  auto w = read(name);
  if (w.bits != 0 || w.rows * w.cols != n)
    fail("tensor '" + w.name + "' should be " + std::to_string(n) + " float values, is " + dims(w.rows, w.cols) +
         (w.bits != 0 ? " quantized" : ""));
  auto floats = to_f32(w);
  if (plus_one)
    for (auto& v : floats) v = 1.0f + v;
  return values(w.name, floats, split);
}

DeviceWeight WeightSource::values(const std::string& what, const std::vector<float>& values, const WeightSplit& split) {
  HostWeight w;
  w.name = what;
  const auto n = static_cast<std::int64_t>(values.size());
  w.rows = 1;
  w.cols = n;
  w.shape = {n};
  w.dtype = HostDType::F32;
  w.data.resize(values.size() * 4);
  std::memcpy(w.data.data(), values.data(), w.data.size());
  return upload(w, split);
}

std::vector<float> WeightSource::floats(const std::string& name, std::int64_t n) const {
  const auto w = read(name);
  if (w.bits != 0 || w.rows * w.cols != n)
    fail("tensor '" + w.name + "' should be " + std::to_string(n) + " float values, is " + dims(w.rows, w.cols) +
         (w.bits != 0 ? " quantized" : ""));
  return to_f32(w);
}

std::vector<float> WeightSource::host_matrix(const std::string& name, std::int64_t rows, std::int64_t cols) const {
  const auto w = read(name);
  if (w.rows != rows || w.cols != cols || w.ggml_blocks())
    fail("tensor '" + w.name + "' is " + dims(w.rows, w.cols) + (w.ggml_blocks() ? " in GGUF blocks" : "") +
         ", expected " + dims(rows, cols));
  if (w.bits == 0) return to_f32(w);
  std::vector<float> out(static_cast<std::size_t>(rows * cols));
  const AffineFloat ft = w.dtype == HostDType::F32   ? AffineFloat::F32
                         : w.dtype == HostDType::F16 ? AffineFloat::F16
                                                     : AffineFloat::BF16;
  try {
    dequantize_affine(
        std::span<const std::uint32_t>(reinterpret_cast<const std::uint32_t*>(w.data.data()), w.data.size() / 4),
        w.scales, w.biases, ft, static_cast<std::size_t>(rows), static_cast<std::size_t>(cols),
        AffineSpec{w.bits, w.group_size}, out);
  } catch (const std::invalid_argument& e) {
    fail("tensor '" + w.name + "': " + e.what());
  }
  return out;
}

DeviceWeight WeightSource::dense(const std::string& name, std::int64_t rows, std::int64_t cols,
                                 const WeightSplit& split) {
  auto w = read(name);
  if (w.bits != 0 || w.rows * w.cols != rows * cols)
    fail("tensor '" + w.name + "' should be " + dims(rows, cols) + " float values, is " + dims(w.rows, w.cols) +
         (w.bits != 0 ? " quantized" : ""));
  w.rows = rows;
  w.cols = cols;
  w.shape = {rows, cols};
  return upload(w, split);
}

std::vector<DeviceWeight> WeightSource::stack(const std::string& name, std::int64_t experts, std::int64_t rows,
                                              std::int64_t cols, std::int64_t begin, std::int64_t take) {
  const auto w = read(name);
  if (take == 0) take = rows;
  const bool stacked = w.shape.size() == 3 && w.shape[0] == experts && w.shape[1] == rows;
  if (!stacked || w.rows != experts * rows || w.cols != cols) {
    std::string stored;
    for (const auto d : w.shape) stored += (stored.empty() ? "" : "x") + std::to_string(d);
    fail("tensor '" + w.name + "' is " + stored + ", expected a stack " + std::to_string(experts) + "x" +
         dims(rows, cols));
  }
  std::vector<DeviceWeight> out;
  for (std::int64_t e = 0; e < experts; ++e) {
    const std::pair<std::int64_t, std::int64_t> range{e * rows + begin, e * rows + begin + take};
    auto part = take_rows(w, std::span(&range, 1));
    part.name = w.name + "[" + std::to_string(e) + "]";
    out.push_back(upload(part, {}));
  }
  return out;
}

std::vector<DeviceWeight> WeightSource::row_blocks(const std::string& name, std::int64_t blocks, std::int64_t rows,
                                                   std::int64_t cols) {
  const auto w = read(name);
  if (w.shape.size() != 2 || w.rows != blocks * rows || w.cols != cols)
    fail("tensor '" + w.name + "' should be " + dims(blocks * rows, cols) + " (" + std::to_string(blocks) +
         " blocks of " + std::to_string(rows) + " rows)");
  std::vector<DeviceWeight> out;
  for (std::int64_t g = 0; g < blocks; ++g) {
    const std::pair<std::int64_t, std::int64_t> range{g * rows, (g + 1) * rows};
    auto part = take_rows(w, std::span(&range, 1));
    part.name = w.name + "[" + std::to_string(g) + "]";
    out.push_back(upload(part, {}));
  }
  return out;
}

std::size_t device_weight_bytes(const DeviceWeight& w) {
  if (w.bytes != 0) return w.bytes;
  const auto elems = static_cast<std::size_t>(w.rows * w.cols);
  if (!w.quantized()) return elems * 4;
  const auto groups = elems / static_cast<std::size_t>(w.group_size);
  return elems * static_cast<std::size_t>(w.bits) / 8 + groups * 8;
}

}  // namespace tf
