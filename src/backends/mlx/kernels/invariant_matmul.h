#pragma once
// A CPU matrix product whose every output row is computed with the same arithmetic whatever the number of
// rows in the call (ARCHITECTURE §4, row invariance): y[m, n] = sum_k x[m, k] * w[n, k]. Each dot product
// runs over k in 8 interleaved float lanes (lane l takes k = l, l+8, ...; multiply, then add, never fused),
// the lanes are summed in a fixed tree, then the tail k % 8 in order. Rows are blocked only to reuse weight
// loads; blocking never changes a row's sequence of operations. Threads split the output columns.
#include <cstdint>

namespace tf {

void invariant_matmul(const float* x, std::int64_t rows, const float* w, std::int64_t out_features,
                      std::int64_t in_features, float* y);

}  // namespace tf
