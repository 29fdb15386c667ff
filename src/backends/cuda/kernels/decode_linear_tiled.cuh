#pragma once
// The tensor-core decode matmul for tiled affine 4/8-bit weights (decode_linear_tiled.cu); decode_linear()
// dispatches to it for weights with WeightView::tiled set.
#include "backends/cuda/kernels/kernels.h"

namespace tf::cuda {
void decode_linear_tiled(const DecodeLinearArgs& a, cudaStream_t s);
}  // namespace tf::cuda
