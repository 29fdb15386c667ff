#include "checkpoint/model_summary.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "byte_builder.h"
#include "checkpoint/checkpoint_error.h"

namespace tf {
namespace {
namespace fs = std::filesystem;

class ModelSummaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tf_summary_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::vector<std::uint8_t>& bytes) {
    std::ofstream(dir_ / name, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                      static_cast<std::streamsize>(bytes.size()));
  }
  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }
  fs::path dir_;
};

TEST_F(ModelSummaryTest, HfDirectoryWithMlxQuantization) {
  write("config.json", R"({"model_type":"llama","architectures":["LlamaForCausalLM"],"num_hidden_layers":2,
    "hidden_size":64,"num_attention_heads":4,"num_key_value_heads":2,"vocab_size":100,"intermediate_size":128,
    "max_position_embeddings":512,"quantization":{"group_size":64,"bits":4,"lm_head":{"group_size":64,"bits":8}}})");
  const std::string h = R"({"w.weight":{"dtype":"U32","shape":[2,8],"data_offsets":[0,64]},)"
                        R"("w.scales":{"dtype":"BF16","shape":[2,1],"data_offsets":[64,68]}})";
  test::ByteBuilder b;
  b.put<std::uint64_t>(h.size()).raw(h).zeros(68);
  write("model.safetensors", b.bytes());
  auto s = summarize_model(dir_.string());
  EXPECT_EQ(s.architecture, "llama");
  EXPECT_EQ(s.layers, 2u);
  EXPECT_EQ(s.heads, 4u);
  EXPECT_EQ(s.kv_heads, 2u);
  EXPECT_EQ(s.head_dim, 16u);
  EXPECT_EQ(s.context, 512u);
  EXPECT_EQ(s.quantization, "MLX affine 4-bit, group 64");
  ASSERT_EQ(s.quantization_overrides.size(), 1u);
  EXPECT_EQ(s.quantization_overrides[0], "lm_head: 8-bit g64");
  EXPECT_EQ(s.weight_bytes, 68u);
  EXPECT_EQ(s.tensor_types.at("U32"), 1u);
  // 2 (K,V) x 2 layers x 2 kv heads x 16 dims x 2 bytes
  EXPECT_EQ(s.kv_bytes_per_token, 256u);
  EXPECT_EQ(s.memory_estimate(), 68u + 256u * 512u);
}

TEST_F(ModelSummaryTest, MissingPiecesAreCheckpointErrors) {
  EXPECT_THROW(summarize_model((dir_ / "nope").string()), CheckpointError);
  EXPECT_THROW(summarize_model(dir_.string()), CheckpointError);  // no config.json
  write("config.json", "{not json");
  EXPECT_THROW(summarize_model(dir_.string()), CheckpointError);
  write("config.json", R"({"model_type":"llama"})");
  EXPECT_THROW(summarize_model(dir_.string()), CheckpointError);  // no safetensors
  write("x.bin", std::string("hello"));
  EXPECT_THROW(summarize_model((dir_ / "x.bin").string()), CheckpointError);
}

}  // namespace
}  // namespace tf
