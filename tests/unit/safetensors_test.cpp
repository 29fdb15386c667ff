#include "checkpoint/safetensors.h"

#include <gtest/gtest.h>

#include "byte_builder.h"
#include "checkpoint/checkpoint_error.h"

namespace tf {
namespace {

std::vector<std::uint8_t> file_with(const std::string& header_json, std::size_t data_bytes) {
  test::ByteBuilder b;
  b.put<std::uint64_t>(header_json.size()).raw(header_json).zeros(data_bytes);
  return b.bytes();
}

std::string parse_error(const std::vector<std::uint8_t>& bytes) {
  try {
    parse_safetensors_header(bytes, "m.safetensors");
  } catch (const CheckpointError& e) {
    EXPECT_EQ(e.file(), "m.safetensors");
    return e.problem();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(Safetensors, ParsesTensorsAndMetadata) {
  const std::string h =
      R"({"__metadata__":{"format":"mlx"},"b":{"dtype":"BF16","shape":[2,3],"data_offsets":[16,28]},)"
      R"("a":{"dtype":"U32","shape":[4],"data_offsets":[0,16]},"c":{"dtype":"F4","shape":[2,2],"data_offsets":[28,30]}})";
  auto bytes = file_with(h, 30);
  auto hdr = parse_safetensors_header(bytes, "m.safetensors");
  ASSERT_EQ(hdr.tensors.size(), 3u);
  EXPECT_EQ(hdr.tensors[0].name, "a");  // sorted by offset
  EXPECT_EQ(hdr.data_start, 8 + h.size());
  EXPECT_EQ(hdr.metadata.at("format"), "mlx");
  const auto* b = hdr.find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->dtype, StDType::BF16);
  EXPECT_EQ(b->element_count(), 6u);
  EXPECT_EQ(hdr.find("c")->byte_size(), 2u);
  EXPECT_EQ(hdr.find("zz"), nullptr);
}

TEST(Safetensors, EmptyHeaderObjectIsValid) {
  EXPECT_NO_THROW(parse_safetensors_header(file_with("{}", 0), "m.safetensors"));
}

TEST(Safetensors, RefusesBadHeaders) {
  EXPECT_NE(parse_error({}).find("empty"), std::string::npos);
  EXPECT_NE(parse_error({1, 2, 3}).find("truncated"), std::string::npos);
  {
    test::ByteBuilder b;
    b.put<std::uint64_t>(1000).raw("{}");
    EXPECT_NE(parse_error(b.bytes()).find("truncated"), std::string::npos);
  }
  {
    test::ByteBuilder b;
    b.put<std::uint64_t>(200ull * 1000 * 1000).raw("{}");
    EXPECT_NE(parse_error(b.bytes()).find("100 MB"), std::string::npos);
  }
  EXPECT_NE(parse_error(file_with("[1,2]", 0)).find("does not start with"), std::string::npos);
  EXPECT_NE(parse_error(file_with("{\"a\":", 0)).find("not valid JSON"), std::string::npos);
  auto entry = [](const std::string& body, std::size_t data) {
    return file_with("{\"t\":" + body + "}", data);
  };
  EXPECT_NE(parse_error(entry(R"({"dtype":"Q4","shape":[1],"data_offsets":[0,1]})", 1)).find("unknown dtype"),
            std::string::npos);
  EXPECT_NE(parse_error(entry(R"({"dtype":"F32","shape":[2],"data_offsets":[0,4]})", 4)).find("span"),
            std::string::npos);
  EXPECT_NE(parse_error(entry(R"({"dtype":"F32","shape":[1],"data_offsets":[4,0]})", 4)).find("end < begin"),
            std::string::npos);
  EXPECT_NE(parse_error(entry(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})", 2)).find("past the data"),
            std::string::npos);
  EXPECT_NE(parse_error(entry(R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})", 6)).find("trailing"),
            std::string::npos);
  EXPECT_NE(parse_error(entry(R"({"dtype":"F32","shape":[-1],"data_offsets":[0,4]})", 4)).find("non-negative"),
            std::string::npos);
  EXPECT_NE(parse_error(entry(R"({"dtype":"F32","shape":[1.5],"data_offsets":[0,4]})", 4)).find("non-negative"),
            std::string::npos);
  EXPECT_NE(parse_error(entry(R"({"dtype":"F4","shape":[3],"data_offsets":[0,1]})", 1)).find("whole bytes"),
            std::string::npos);
  EXPECT_NE(parse_error(entry(R"({"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,4]})", 4))
                .find("overflows"),
            std::string::npos);
  EXPECT_NE(parse_error(entry(R"("x")", 0)).find("not a JSON object"), std::string::npos);
  EXPECT_NE(parse_error(file_with(R"({"__metadata__":{"a":1}})", 0)).find("not a string"), std::string::npos);
  EXPECT_NE(parse_error(file_with(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                                  R"("b":{"dtype":"U8","shape":[4],"data_offsets":[2,6]}})",
                                  6))
                .find("overlaps"),
            std::string::npos);
  EXPECT_NE(parse_error(file_with(R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},)"
                                  R"("b":{"dtype":"U8","shape":[2],"data_offsets":[6,8]}})",
                                  8))
                .find("gap"),
            std::string::npos);
}

}  // namespace
}  // namespace tf
