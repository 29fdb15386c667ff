// The CUDA backend's op descriptors (src/backends/cuda/ops/): one for every kind, in Kind's order, each under
// a name of its own and with a launch; and the shape rules the backend records outputs with. Host only: no
// CUDA call, so it runs on machines without a GPU.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

#include "backends/cuda/ops/op_descriptor.h"

namespace tf::cuda_internal {
namespace {

ActP act(std::int64_t rows, std::int64_t cols) { return std::make_shared<Act>(nullptr, rows, cols); }

void expect_shape(const Op& op, std::int64_t rows, std::int64_t cols) {
  const OpDescriptor& d = op_descriptor(op.kind);
  ASSERT_NE(d.out_shape, nullptr) << d.name;
  const OpShape s = d.out_shape(op);
  EXPECT_EQ(s.rows, rows) << d.name;
  EXPECT_EQ(s.cols, cols) << d.name;
}

TEST(CudaOpDescriptors, EveryKindHasItsOwn) {
  std::set<std::string> names;
  for (int k = 0; k < static_cast<int>(Kind::Count); ++k) {
    const OpDescriptor& d = op_descriptor(static_cast<Kind>(k));
    EXPECT_EQ(static_cast<int>(d.kind), k) << "the table's entry " << k << " is another kind's";
    ASSERT_NE(d.name, nullptr);
    EXPECT_TRUE(names.insert(d.name).second) << "two kinds named " << d.name;
    EXPECT_NE(d.launch, nullptr) << d.name << " has no launch";
  }
}

TEST(CudaOpDescriptors, ShapeRules) {
  Op embed(Kind::Embed);
  embed.ids = {3, 1, 4, 1, 5};
  embed.w.rows = 100;
  embed.w.cols = 48;
  expect_shape(embed, 5, 48);

  Op linear(Kind::Linear);
  linear.a = act(3, 64);
  linear.w.rows = 96;
  linear.w.cols = 64;
  expect_shape(linear, 3, 96);

  for (Kind k : {Kind::RmsNorm, Kind::Add, Kind::Swiglu, Kind::Rope, Kind::Attend, Kind::RmsNormHeads,
                 Kind::SigmoidGate}) {
    Op op(k);
    op.a = act(7, 40);
    op.b = act(7, 40);
    expect_shape(op, 7, 40);
  }

  Op last(Kind::LastRows);
  last.a = act(10, 32);
  last.first = 7;
  expect_shape(last, 3, 32);

  // A query and its gate interleaved per head (4 heads of 2 x 8 columns): one of them, 4 x 8 columns.
  Op cols(Kind::HeadColumns);
  cols.a = act(3, 64);
  cols.heads = 4;
  cols.head_dim = 16;
  cols.col_offset = 8;
  cols.col_width = 8;
  expect_shape(cols, 3, 32);

  Op cat(Kind::ConcatColumns);
  cat.a = act(2, 24);
  cat.b = act(2, 40);
  expect_shape(cat, 2, 64);

  // Gated DeltaNet: 2 key heads and 4 value heads of 32 dims: 2*2*32 + 4*32 = 256 conv channels, 128 out.
  const cuda::GdnShape gdn{2, 4, 32, 32, 4};
  Op conv(Kind::GdnConv);
  conv.a = act(5, 256);
  conv.gdn = gdn;
  expect_shape(conv, 5, 256);
  Op rec(Kind::GdnRecurrence);
  rec.a = act(5, 256);
  rec.gdn = gdn;
  expect_shape(rec, 5, 128);

  // An upload's values are flat: from_host gives its shape.
  EXPECT_EQ(op_descriptor(Kind::Upload).out_shape, nullptr);
}

}  // namespace
}  // namespace tf::cuda_internal
