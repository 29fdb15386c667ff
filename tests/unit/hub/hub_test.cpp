#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_error.h"
#include "hub/file_selection.h"
#include "hub/gguf_architecture.h"
#include "hub/hub_cache.h"
#include "hub/hub_error.h"
#include "hub/repo_spec.h"

namespace tf::hub {
namespace {

TEST(RepoSpec, ParsesRevisionAndQuant) {
  auto s = parse_repo_spec("Org/Name-GGUF@v1.0:Q4_K_M");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->repo, "Org/Name-GGUF");
  EXPECT_EQ(s->revision, "v1.0");
  EXPECT_EQ(s->quant, "Q4_K_M");
  EXPECT_EQ(s->text(), "Org/Name-GGUF@v1.0:Q4_K_M");
  s = parse_repo_spec("Org/Name");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->revision, "main");
  EXPECT_EQ(s->quant, "");
  EXPECT_EQ(s->text(), "Org/Name");
}

TEST(RepoSpec, RefusesWhatIsNotARepoId) {
  for (const char* bad : {"", "name", "a/b/c", "../x", "a/..", "/abs/path", "a/b:", "a/b@", "a /b", "./model.gguf",
                          "a/b@../../x", "models/x.gguf"})
    EXPECT_FALSE(parse_repo_spec(bad)) << bad;
}

TEST(HubCache, FolderNamesAndSafePaths) {
  EXPECT_EQ(repo_folder_name("Org/Name"), "models--Org--Name");
  EXPECT_TRUE(is_commit_hash("0123456789abcdef0123456789abcdef01234567"));
  EXPECT_FALSE(is_commit_hash("main"));
  EXPECT_FALSE(is_commit_hash("0123456789ABCDEF0123456789abcdef01234567"));
  EXPECT_TRUE(is_safe_repo_path("sub/dir/model.safetensors"));
  for (const char* bad : {"", "/etc/passwd", "../x", "a/../b", "a//b", "a/", "./a"})
    EXPECT_FALSE(is_safe_repo_path(bad)) << bad;
}

std::vector<RepoFile> listing(std::initializer_list<const char*> paths) {
  std::vector<RepoFile> out;
  std::uint64_t size = 1;
  for (const char* p : paths) out.push_back({p, size++, ""});
  return out;
}

std::vector<std::string> paths(const FileSelection& s) {
  std::vector<std::string> out;
  for (const auto& f : s.files) out.push_back(f.path);
  return out;
}

TEST(FileSelection, GgufByQuantLikeLlamaCpp) {
  const auto files = listing({"README.md", "m-Q8_0.gguf", "m-Q4_K_M.gguf", "mmproj-m-Q4_K_M.gguf", "m-q4_1.gguf"});
  RepoSpec spec{"O/m-GGUF", "main", "Q4_1"};
  auto s = select_files(files, spec, {}, {});
  EXPECT_TRUE(s.gguf);
  EXPECT_EQ(paths(s), std::vector<std::string>{"m-q4_1.gguf"});
  spec.quant = "";
  s = select_files(files, spec, {}, {});
  EXPECT_EQ(s.weights_entry, "m-Q4_K_M.gguf");  // the default quantization, not the mmproj
  spec.quant = "IQ2_XS";
  EXPECT_THROW(select_files(files, spec, {}, {}), HubError);
}

TEST(FileSelection, SplitGgufTakesEveryPart) {
  const auto files = listing({"m-Q8_0-00002-of-00002.gguf", "m-Q8_0-00001-of-00002.gguf", "m-Q4_0.gguf"});
  const auto s = select_files(files, {"O/m", "main", "Q8_0"}, {}, {});
  EXPECT_EQ(paths(s), (std::vector<std::string>{"m-Q8_0-00001-of-00002.gguf", "m-Q8_0-00002-of-00002.gguf"}));
  EXPECT_EQ(s.weights_entry, "m-Q8_0-00001-of-00002.gguf");
}

TEST(FileSelection, SafetensorsRepoSkipsOtherFrameworksConfigFirst) {
  const auto files = listing({"model.safetensors", "pytorch_model.bin", "tokenizer.json", "config.json",
                              "original/consolidated.pth", "model.gguf"});
  const auto s = select_files(files, {"O/m", "main", ""}, {}, {});
  EXPECT_FALSE(s.gguf);
  EXPECT_EQ(paths(s), (std::vector<std::string>{"config.json", "tokenizer.json", "model.safetensors"}));
  const auto only = select_files(files, {"O/m", "main", ""}, {"*.json"}, {"tokenizer*"});
  EXPECT_EQ(paths(only), std::vector<std::string>{"config.json"});
  EXPECT_THROW(select_files(listing({"config.json", "pytorch_model.bin"}), {"O/m", "main", ""}, {}, {}), HubError);
}

std::vector<std::uint8_t> gguf_prefix(const std::string& first_key, const std::string& arch) {
  std::vector<std::uint8_t> b = {'G', 'G', 'U', 'F', 3, 0, 0, 0};
  auto u64 = [&](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  };
  auto str = [&](const std::string& s) {
    u64(s.size());
    b.insert(b.end(), s.begin(), s.end());
  };
  u64(0);  // tensors
  u64(2);  // metadata entries
  str(first_key);
  b.insert(b.end(), {9, 0, 0, 0});  // array
  b.insert(b.end(), {4, 0, 0, 0});  // of u32
  u64(3);
  for (int i = 0; i < 12; ++i) b.push_back(0);
  str("general.architecture");
  b.insert(b.end(), {8, 0, 0, 0});  // string
  str(arch);
  return b;
}

TEST(GgufArchitecture, FoundAfterOtherKeysOrNotYet) {
  const auto bytes = gguf_prefix("some.array", "qwen3");
  EXPECT_EQ(gguf_architecture_from_prefix(bytes, "x"), std::optional<std::string>("qwen3"));
  const std::span<const std::uint8_t> cut(bytes.data(), bytes.size() - 3);
  EXPECT_EQ(gguf_architecture_from_prefix(cut, "x"), std::nullopt);  // needs more bytes
  std::vector<std::uint8_t> not_gguf = {'P', 'K', 3, 4, 0, 0, 0, 0};
  EXPECT_THROW(gguf_architecture_from_prefix(not_gguf, "x"), CheckpointError);
}

}  // namespace
}  // namespace tf::hub
