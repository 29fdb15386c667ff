#include "checkpoint/gguf.h"

#include <gtest/gtest.h>

#include "byte_builder.h"
#include "checkpoint/checkpoint_error.h"

namespace tf {
namespace {

using test::ByteBuilder;

ByteBuilder header(std::uint64_t tensors, std::uint64_t kvs, std::uint32_t version = 3) {
  ByteBuilder b;
  b.raw("GGUF").put<std::uint32_t>(version).put<std::uint64_t>(tensors).put<std::uint64_t>(kvs);
  return b;
}

std::string parse_error(const std::vector<std::uint8_t>& bytes) {
  try {
    parse_gguf_header(bytes, "t.gguf");
  } catch (const CheckpointError& e) {
    EXPECT_EQ(e.file(), "t.gguf");
    return e.problem();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(Gguf, ReadsEveryMetadataValueType) {
  auto b = header(0, 14);
  b.gguf_string("u8").put<std::uint32_t>(0).put<std::uint8_t>(200);
  b.gguf_string("i8").put<std::uint32_t>(1).put<std::int8_t>(-5);
  b.gguf_string("u16").put<std::uint32_t>(2).put<std::uint16_t>(60000);
  b.gguf_string("i16").put<std::uint32_t>(3).put<std::int16_t>(-300);
  b.gguf_string("u32").put<std::uint32_t>(4).put<std::uint32_t>(4000000000u);
  b.gguf_string("i32").put<std::uint32_t>(5).put<std::int32_t>(-70000);
  b.gguf_string("f32").put<std::uint32_t>(6).put<float>(1.5f);
  b.gguf_string("bool").put<std::uint32_t>(7).put<std::uint8_t>(1);
  b.gguf_string("str").put<std::uint32_t>(8).gguf_string("héllo");
  b.gguf_string("u64").put<std::uint32_t>(10).put<std::uint64_t>(1ull << 40);
  b.gguf_string("i64").put<std::uint32_t>(11).put<std::int64_t>(-(1ll << 40));
  b.gguf_string("f64").put<std::uint32_t>(12).put<double>(-2.25);
  b.gguf_string("arr").put<std::uint32_t>(9).put<std::uint32_t>(8).put<std::uint64_t>(2).gguf_string("a").gguf_string("bc");
  // an array of arrays of i32
  b.gguf_string("nested").put<std::uint32_t>(9).put<std::uint32_t>(9).put<std::uint64_t>(1);
  b.put<std::uint32_t>(5).put<std::uint64_t>(3).put<std::int32_t>(1).put<std::int32_t>(-2).put<std::int32_t>(3);

  auto h = parse_gguf_header(b.bytes(), "t.gguf");
  EXPECT_EQ(h.version, 3u);
  EXPECT_EQ(h.metadata.size(), 14u);
  EXPECT_EQ(h.get_uint("u8"), 200u);
  EXPECT_EQ(h.get_number("i8"), -5.0);
  EXPECT_EQ(h.get_uint("u16"), 60000u);
  EXPECT_EQ(h.get_number("i16"), -300.0);
  EXPECT_EQ(h.get_uint("u32"), 4000000000u);
  EXPECT_EQ(h.get_number("i32"), -70000.0);
  EXPECT_EQ(h.get_number("f32"), 1.5);
  EXPECT_EQ(std::get<bool>(h.get("bool")->v), true);
  EXPECT_EQ(h.get_string("str"), "héllo");
  EXPECT_EQ(h.get_uint("u64"), 1ull << 40);
  EXPECT_FALSE(h.get_uint("i64").has_value());  // negative
  EXPECT_EQ(h.get_number("f64"), -2.25);
  const auto* arr = h.get_array("arr");
  ASSERT_NE(arr, nullptr);
  ASSERT_EQ(arr->items.size(), 2u);
  EXPECT_EQ(*arr->items[1].as_string(), "bc");
  const auto* nested = h.get_array("nested");
  ASSERT_NE(nested, nullptr);
  ASSERT_EQ(nested->items.size(), 1u);
  const auto* inner = nested->items[0].as_array();
  ASSERT_NE(inner, nullptr);
  EXPECT_EQ(inner->items[1].as_number(), -2.0);
  EXPECT_TRUE(h.tensors.empty());  // vocab-only style: no tensors, nothing after the metadata
}

TEST(Gguf, TensorInfosAlignmentAndData) {
  auto b = header(2, 1, 2);
  b.gguf_string("general.alignment").put<std::uint32_t>(4).put<std::uint32_t>(64);
  b.gguf_string("a").put<std::uint32_t>(2).put<std::uint64_t>(32).put<std::uint64_t>(2);
  b.put<std::uint32_t>(static_cast<std::uint32_t>(GgmlType::Q8_0)).put<std::uint64_t>(0);
  b.gguf_string("b").put<std::uint32_t>(1).put<std::uint64_t>(3);
  b.put<std::uint32_t>(static_cast<std::uint32_t>(GgmlType::F32)).put<std::uint64_t>(128);
  const std::size_t infos_end = b.size();
  b.pad_to(64);
  b.zeros(128 + 12);
  auto h = parse_gguf_header(b.bytes(), "t.gguf");
  EXPECT_EQ(h.version, 2u);
  EXPECT_EQ(h.alignment, 64u);
  EXPECT_EQ(h.data_offset, (infos_end + 63) / 64 * 64);
  ASSERT_EQ(h.tensors.size(), 2u);
  EXPECT_EQ(h.tensors[0].dims, (std::vector<std::uint64_t>{32, 2}));
  EXPECT_EQ(h.tensors[0].byte_size, 68u);  // 2 Q8_0 blocks of 34 bytes
  EXPECT_EQ(h.tensors[1].byte_size, 12u);
  EXPECT_EQ(h.find_tensor("b")->offset, 128u);
}

TEST(Gguf, RefusesBadFilesWithClearProblems) {
  EXPECT_NE(parse_error({}).find("empty"), std::string::npos);
  EXPECT_NE(parse_error(ByteBuilder().raw("GGUX").put<std::uint32_t>(3).bytes()).find("magic"), std::string::npos);
  EXPECT_NE(parse_error(header(0, 0, 1).bytes()).find("version 1"), std::string::npos);
  EXPECT_NE(parse_error(header(0, 0, 0x03000000u).bytes()).find("big-endian"), std::string::npos);
  EXPECT_NE(parse_error(ByteBuilder().raw("GGUF").put<std::uint32_t>(3).bytes()).find("truncated"), std::string::npos);
  EXPECT_NE(parse_error(header(0, 1ull << 60).bytes()).find("absurd metadata count"), std::string::npos);
  EXPECT_NE(parse_error(header(1ull << 60, 0).bytes()).find("absurd tensor count"), std::string::npos);
  {
    auto b = header(0, 1);
    b.gguf_string("k").put<std::uint32_t>(13).put<std::uint8_t>(0);
    EXPECT_NE(parse_error(b.bytes()).find("unknown value type 13"), std::string::npos);
  }
  {
    auto b = header(0, 1);
    b.gguf_string("k").put<std::uint32_t>(9).put<std::uint32_t>(8).put<std::uint64_t>(1ull << 40);
    EXPECT_NE(parse_error(b.bytes()).find("cannot fit"), std::string::npos);
  }
  {
    auto b = header(0, 2);
    b.gguf_string("k").put<std::uint32_t>(0).put<std::uint8_t>(0);
    b.gguf_string("k").put<std::uint32_t>(0).put<std::uint8_t>(0);
    EXPECT_NE(parse_error(b.bytes()).find("duplicate metadata key 'k'"), std::string::npos);
  }
  {
    auto b = header(0, 1);
    b.gguf_string("general.alignment").put<std::uint32_t>(4).put<std::uint32_t>(48);
    EXPECT_NE(parse_error(b.bytes()).find("power of two"), std::string::npos);
  }
  {  // arrays nested too deep
    auto b = header(0, 1);
    b.gguf_string("deep").put<std::uint32_t>(9);
    for (int i = 0; i < 10; ++i) b.put<std::uint32_t>(9).put<std::uint64_t>(1);
    EXPECT_NE(parse_error(b.bytes()).find("nested deeper"), std::string::npos);
  }
}

TEST(Gguf, RefusesBadTensorInfos) {
  auto one_tensor = [](std::uint32_t type, std::uint64_t dim0, std::uint64_t offset, std::size_t data_bytes) {
    auto b = header(1, 0);
    b.gguf_string("w").put<std::uint32_t>(1).put<std::uint64_t>(dim0).put<std::uint32_t>(type).put<std::uint64_t>(offset);
    b.pad_to(32);
    b.zeros(data_bytes);
    return b.bytes();
  };
  EXPECT_NE(parse_error(one_tensor(99, 32, 0, 64)).find("unknown ggml type 99"), std::string::npos);
  EXPECT_NE(parse_error(one_tensor(2, 31, 0, 64)).find("not a multiple"), std::string::npos);
  EXPECT_NE(parse_error(one_tensor(0, 8, 4, 64)).find("not aligned"), std::string::npos);
  EXPECT_NE(parse_error(one_tensor(0, 8, 0, 16)).find("runs past the end"), std::string::npos);
  EXPECT_NO_THROW(parse_gguf_header(one_tensor(0, 8, 0, 32), "t.gguf"));
  {
    auto b = header(2, 0);
    b.gguf_string("a").put<std::uint32_t>(1).put<std::uint64_t>(16).put<std::uint32_t>(0).put<std::uint64_t>(0);
    b.gguf_string("b").put<std::uint32_t>(1).put<std::uint64_t>(16).put<std::uint32_t>(0).put<std::uint64_t>(32);
    b.pad_to(32).zeros(128);
    EXPECT_NE(parse_error(b.bytes()).find("overlaps"), std::string::npos);
  }
  {
    auto b = header(1, 0);
    b.gguf_string("w").put<std::uint32_t>(5).put<std::uint64_t>(1).zeros(64);
    EXPECT_NE(parse_error(b.bytes()).find("dimensions"), std::string::npos);
  }
  {
    auto b = header(1, 0);
    b.gguf_string(std::string(65, 'x'));
    EXPECT_NE(parse_error(b.bytes()).find("tensor name length"), std::string::npos);
  }
  {
    auto b = header(1, 0);
    b.gguf_string("w").put<std::uint32_t>(2).put<std::uint64_t>(1ull << 40).put<std::uint64_t>(1ull << 40);
    EXPECT_NE(parse_error(b.bytes()).find("absurd"), std::string::npos);
  }
}

}  // namespace
}  // namespace tf
