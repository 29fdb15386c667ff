#pragma once
// Parts of a host weight, in the weight's own form (dense, affine codes with their scales and biases, or GGUF
// blocks): what tensor parallelism hands each rank (backends/tensor_parallel/). Slices keep every stored value
// bit for bit; a cut that would fall inside a quantization group or block is refused with the tensor's name.
#include <cstdint>
#include <span>
#include <utility>

#include "checkpoint/host_weight.h"

namespace tf {

// The rows [begin, end) of each range, in order, as one weight of their total rows. A 1-D weight ([n]) is
// cut along its n values instead (the ranges count values).
HostWeight take_rows(const HostWeight& w, std::span<const std::pair<std::int64_t, std::int64_t>> ranges);
// The columns [begin, end) of every row.
HostWeight take_columns(const HostWeight& w, std::int64_t begin, std::int64_t end);
// An affine weight in groups of `group` (a divisor of its own): every scale and bias repeated for each smaller
// group it covers, so every value s * q + b stays the same. Lets a cut fall inside one of the original groups.
HostWeight regroup(const HostWeight& w, int group);

}  // namespace tf
