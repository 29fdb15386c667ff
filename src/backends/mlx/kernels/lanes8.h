#pragma once
// The CPU kernels' 8-float vectors (vector extensions: AVX2 in the kernels' avx2 clones, SSE halves in their
// default ones, the same IEEE operations either way) and the one fixed order they sum lanes in, so that a
// value's bits depend neither on the clone nor on how a call is split.
#include <cstring>

namespace tf {

typedef float v8f __attribute__((vector_size(32)));

inline v8f load8(const float* p) {
  v8f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void store8(float* p, v8f v) { std::memcpy(p, &v, sizeof v); }

// ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)).
inline float reduce8(v8f a) {
  const float s04 = a[0] + a[4], s26 = a[2] + a[6], s15 = a[1] + a[5], s37 = a[3] + a[7];
  return (s04 + s26) + (s15 + s37);
}

}  // namespace tf
