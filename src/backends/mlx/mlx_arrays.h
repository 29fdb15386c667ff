#pragma once
// The MLX backend's array plumbing, shared by its ops and its Metal KV cache: a Tensor holding an mx::array,
// host copies in and out, and per-run slicing of a call's rows.
#include <mlx/mlx.h>

#include <cstdint>
#include <span>
#include <vector>

#include "backends/backend.h"

namespace tf {
namespace mx = mlx::core;

struct MlxTensor final : Tensor::Impl {
  explicit MlxTensor(mx::array a) : array(std::move(a)) {}
  mx::array array;
};

inline const mx::array& arr(const Tensor& t) {
  auto* impl = dynamic_cast<MlxTensor*>(t.impl());
  if (impl == nullptr) throw std::logic_error("tensor does not belong to the MLX backend");
  return impl->array;
}
inline Tensor wrap(mx::array a) { return Tensor(std::make_shared<MlxTensor>(std::move(a))); }

// Evaluates `a` as a row-major float32 host array.
mx::array host_f32(const mx::array& a);

// A new float32 MLX array from a filled host buffer allocated with new[], which the array takes over (MLX's
// CPU allocator copies it and deletes it at once: nothing may write to it afterwards).
mx::array adopt(float* data, mx::Shape shape);

mx::Dtype mlx_dtype(HostDType d);

// Copies host bytes into a new MLX array.
mx::array from_bytes(const std::vector<std::uint8_t>& bytes, mx::Shape shape, mx::Dtype dtype);

// Rows row .. row + n - 1 of a [rows, cols].
inline mx::array row_slice(const mx::array& a, int row, int n) { return mx::slice(a, {row, 0}, {row + n, a.shape(1)}); }

// f over each run's rows of a [n, cols], the results stacked in run order (one run: a itself).
template <class F>
mx::array per_run(const mx::array& a, std::span<const StreamRows> runs, F f) {
  if (runs.size() == 1) return f(a, runs[0]);
  std::vector<mx::array> out;
  int row = 0;
  for (const auto& run : runs) {
    const int n = static_cast<int>(run.rows);
    out.push_back(f(row_slice(a, row, n), run));
    row += n;
  }
  return mx::concatenate(out, 0);
}

}  // namespace tf
