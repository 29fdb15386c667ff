// Which kernels an affine weight format reaches, as the backend's rules decide it: 2-bit codes (Ternary
// Bonsai: groups of 128; also 64) stay in MLX's layout and take only the SIMT decode kernel and the SIMT
// prefill GEMM, never the tiled (tensor-core) kernels or their fusions. Host only: no CUDA call, so it runs
// on machines without a GPU.
#include <gtest/gtest.h>

#include <memory>

#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/kernels/tiled_layout.h"
#include "backends/cuda/ops/linear.h"

namespace tf::cuda_internal {
namespace {

// A view as device_weight_view makes it (no device memory: the rules read the format only).
cuda::WeightView view(int bits, int group, std::int64_t rows, std::int64_t cols) {
  cuda::WeightView v;
  v.bits = bits;
  v.group = group;
  v.rows = rows;
  v.cols = cols;
  v.dtype = cuda::ElemType::BF16;
  v.tiled = cuda::tileable(bits, group, cols);
  return v;
}

TEST(CudaWeightFormats, TwoBitTakesTheSimtKernelsOnly) {
  for (int group : {64, 128}) {
    for (std::int64_t cols : {std::int64_t{1024}, std::int64_t{2048}, std::int64_t{5120}, std::int64_t{17408}}) {
      const cuda::WeightView w = view(2, group, 6144, cols);
      EXPECT_FALSE(cuda::tileable(2, group, cols)) << group << " " << cols;
      EXPECT_FALSE(w.tiled);
      EXPECT_TRUE(cuda::decode_linear_supported(w)) << group << " " << cols;
      // Never the integer tensor-core kernels, nor what hangs on them.
      EXPECT_FALSE(cuda::prefill_linear_imma_takes(w)) << group << " " << cols;
      EXPECT_EQ(cuda::decode_linear_scratch_bytes(w), 0u);
      EXPECT_EQ(cuda::tiled_scale_bias_bytes(w), 0u);
      EXPECT_FALSE(cuda::imma_norm_fusable(w, 1, cols));
      EXPECT_FALSE(cuda::swiglu_prepare_fusable(w, view(2, group, cols, 6144), 1));
      EXPECT_FALSE(cuda::attention_prepare_fusable(w, static_cast<int>(cols / 128), 128));
      // The untiled kernel fuses a norm up to kMaxFusedNormCols, as for 4/8-bit untiled weights.
      EXPECT_EQ(cuda::decode_linear_takes_norm(w), cols <= cuda::kMaxFusedNormCols);
    }
  }
  // A chunk holds 64 codes and takes one scale: groups of 32 (or groups not dividing cols) are not taken.
  EXPECT_FALSE(cuda::decode_linear_supported(view(2, 32, 256, 1024)));
  EXPECT_FALSE(cuda::decode_linear_supported(view(2, 128, 256, 1088)));
  EXPECT_FALSE(cuda::decode_linear_supported(view(2, 96, 256, 1152)));
  // Widths without a kernel.
  for (int bits : {3, 5, 6}) EXPECT_FALSE(cuda::decode_linear_supported(view(bits, 64, 256, 1024))) << bits;
}

TEST(CudaWeightFormats, TwoBitLinearsRunOnTheDecodeMatmul) {
  auto x = std::make_shared<Act>(nullptr, 4, 2048);
  Op op(Kind::Linear);
  op.a = x;
  op.w = view(2, 128, 512, 2048);
  EXPECT_TRUE(decode_linear_op(op));
  op.a = std::make_shared<Act>(nullptr, cuda::kMaxDecodeRows + 1, 2048);
  EXPECT_FALSE(decode_linear_op(op));  // more rows: the prefill GEMM
  // Siblings share a launch only in one format.
  EXPECT_TRUE(same_format(view(2, 128, 512, 2048), view(2, 128, 96, 2048)));
  EXPECT_FALSE(same_format(view(2, 128, 512, 2048), view(2, 64, 96, 2048)));
  EXPECT_FALSE(same_format(view(2, 128, 512, 2048), view(4, 128, 96, 2048)));
}

}  // namespace
}  // namespace tf::cuda_internal
