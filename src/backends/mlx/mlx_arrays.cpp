#include "backends/mlx/mlx_arrays.h"

#include <cstring>

namespace tf {

mx::array host_f32(const mx::array& a) {
  auto c = mx::contiguous(mx::astype(a, mx::float32));
  mx::eval(c);
  return c;
}

mx::array adopt(float* data, mx::Shape shape) {
  return mx::array(data, std::move(shape), mx::float32, [](void* p) { delete[] static_cast<float*>(p); });
}

mx::Dtype mlx_dtype(HostDType d) {
  switch (d) {
    case HostDType::F32:
      return mx::float32;
    case HostDType::F16:
      return mx::float16;
    case HostDType::BF16:
      return mx::bfloat16;
  }
  return mx::float32;
}

mx::array from_bytes(const std::vector<std::uint8_t>& bytes, mx::Shape shape, mx::Dtype dtype) {
  auto* copy = new std::uint8_t[bytes.size()];
  std::memcpy(copy, bytes.data(), bytes.size());
  return mx::array(copy, std::move(shape), dtype, [](void* p) { delete[] static_cast<std::uint8_t*>(p); });
}

}  // namespace tf
