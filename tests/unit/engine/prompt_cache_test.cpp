// The chunk plan's cuts and the prompt cache's memory and disk behaviour.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "engine/chunk_plan.h"
#include "engine/prompt_cache.h"

namespace tf {
namespace {
namespace fs = std::filesystem;

TEST(ChunkPlan, CutsAtMessageStartsAndEveryChunk) {
  const std::vector<std::int32_t> t = {7, 1, 5, 5, 5, 5, 5, 5, 5, 1, 5, 1, 5, 5};
  const auto plan = plan_chunks(t, {.chunk = 4, .message_start = 1});
  EXPECT_EQ(plan.message_starts, (std::vector<std::int64_t>{1, 9, 11}));
  EXPECT_EQ(plan.ends, (std::vector<std::int64_t>{1, 5, 9, 11, 14}));
  const auto fixed = plan_chunks(t, {.chunk = 4, .message_start = -1});
  EXPECT_EQ(fixed.ends, (std::vector<std::int64_t>{4, 8, 12, 14}));
}

// Two prompts sharing tokens up to a message start share every cut inside that prefix: a state restored
// there was computed over the same chunks as a fresh prefill of either.
TEST(ChunkPlan, CutsInsideASharedPrefixAgree) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::int32_t> a(1 + rng() % 300);
    for (auto& x : a) x = static_cast<std::int32_t>(rng() % 6);
    const auto pa = plan_chunks(a, {.chunk = 37, .message_start = 0});
    for (const auto p : pa.message_starts) {
      std::vector<std::int32_t> b(a.begin(), a.begin() + p + 1);  // through the message start at p
      for (int k = 0; k < 50; ++k) b.push_back(static_cast<std::int32_t>(rng() % 6));
      const auto pb = plan_chunks(b, {.chunk = 37, .message_start = 0});
      std::vector<std::int64_t> ca, cb;
      for (auto e : pa.ends)
        if (e <= p) ca.push_back(e);
      for (auto e : pb.ends)
        if (e <= p) cb.push_back(e);
      EXPECT_EQ(ca, cb);
      EXPECT_EQ(ca.back(), p);
    }
  }
}

std::vector<std::uint8_t> bytes_of(std::size_t n, std::uint8_t v) { return std::vector<std::uint8_t>(n, v); }

TEST(PromptCache, LongestPrefixAndLruUnderBudget) {
  PromptCache c({.memory_bytes = 250, .snapshot_dir = "", .disk_bytes = 0, .identity = "m"});
  const std::vector<std::int32_t> t = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<std::int64_t> points = {2, 4, 6};
  EXPECT_FALSE(c.lookup(t, points).state);
  c.insert(std::span(t).first(2), bytes_of(100, 2));
  c.insert(std::span(t).first(4), bytes_of(100, 4));
  auto hit = c.lookup(t, points);
  ASSERT_TRUE(hit.state);
  EXPECT_EQ(hit.tokens, 4);
  EXPECT_EQ(hit.state->host_bytes()[0], 4);
  c.insert(std::span(t).first(6), bytes_of(100, 6));  // evicts the least recently used: the 2-token prefix
  EXPECT_LE(c.stats().bytes, 250u);
  EXPECT_FALSE(c.contains(std::span(t).first(2)));
  EXPECT_TRUE(c.contains(std::span(t).first(4)));
  EXPECT_EQ(c.lookup(t, points).tokens, 6);
  // Another sequence with the same length never matches.
  const std::vector<std::int32_t> u = {1, 2, 3, 9, 5, 6, 7, 8};
  EXPECT_EQ(c.lookup(u, points).tokens, 0);
  const auto s = c.stats();
  EXPECT_EQ(s.queries, 4);
  EXPECT_EQ(s.hits, 2);
}

// Image placeholders are the same tokens whatever the image: a prefix holding an image is keyed by the image's
// place and content hash too, so another image in the same place misses, and a point inside an image is never a
// resume point. A prefix before the first image is a text prefix (shared with text prompts).
TEST(PromptCache, ImagePrefixesAreKeyedByTheImagesContent) {
  PromptCache c({.memory_bytes = 1000, .snapshot_dir = "", .disk_bytes = 0, .identity = "m"});
  const std::vector<std::int32_t> t = {1, 2, 9, 9, 9, 9, 3, 4, 5, 6};
  const std::vector<std::int64_t> points = {2, 4, 7, 9};
  const std::vector<PromptImage> cat = {{2, 6, "cat"}}, dog = {{2, 6, "dog"}}, cat_later = {{3, 7, "cat"}};
  c.insert(std::span(t).first(2), bytes_of(10, 2), cat);
  c.insert(std::span(t).first(7), bytes_of(10, 7), cat);
  c.insert(std::span(t).first(4), bytes_of(10, 4), cat);  // inside the image: not retained
  EXPECT_EQ(c.stats().entries, 2);
  EXPECT_TRUE(c.contains(std::span(t).first(7), cat));
  EXPECT_FALSE(c.contains(std::span(t).first(7), dog));
  EXPECT_FALSE(c.contains(std::span(t).first(7)));  // the same tokens as text
  EXPECT_FALSE(c.contains(std::span(t).first(4), cat));
  auto hit = c.lookup(t, points, cat);
  EXPECT_EQ(hit.tokens, 7);
  EXPECT_EQ(hit.state->host_bytes()[0], 7);
  // Another image in the same place: only the text before it is reused.
  hit = c.lookup(t, points, dog);
  EXPECT_EQ(hit.tokens, 2);
  EXPECT_EQ(hit.state->host_bytes()[0], 2);
  EXPECT_EQ(c.lookup(t, points, cat_later).tokens, 2);
  EXPECT_TRUE(c.contains(std::span(t).first(2)));  // a text prefix, whichever image follows
  EXPECT_EQ(PromptCache::images_key(7, cat), "2-6:cat;");
  EXPECT_EQ(PromptCache::images_key(2, cat), "");
  EXPECT_FALSE(PromptCache::images_key(3, cat));
}

class PromptCacheDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("tf-prompt-cache-" + std::to_string(::getpid()));
    fs::remove_all(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  PromptCacheOptions opts(const std::string& identity) {
    return {.memory_bytes = 1 << 20, .snapshot_dir = dir.string(), .disk_bytes = 1 << 20, .identity = identity};
  }
  std::vector<fs::path> files() const {
    std::vector<fs::path> out;
    for (const auto& de : fs::directory_iterator(dir)) out.push_back(de.path());
    return out;
  }
  fs::path dir;
  const std::vector<std::int32_t> t = {1, 2, 3, 4, 5, 6};
  const std::vector<std::int64_t> points = {3};
};

TEST_F(PromptCacheDisk, SurvivesARestart) {
  {
    PromptCache c(opts("m"));
    c.insert(std::span(t).first(3), bytes_of(1000, 9));
    c.flush();
  }
  ASSERT_EQ(files().size(), 1u);
  PromptCache c(opts("m"));
  const auto hit = c.lookup(t, points);
  ASSERT_TRUE(hit.state);
  EXPECT_EQ(hit.state->host_bytes(), bytes_of(1000, 9));
  EXPECT_EQ(c.stats().disk_loads, 1);
}

TEST_F(PromptCacheDisk, ImagePrefixesSurviveARestartUnderTheirImages) {
  const std::vector<PromptImage> cat = {{1, 2, "cat"}}, dog = {{1, 2, "dog"}};
  {
    PromptCache c(opts("m"));
    c.insert(std::span(t).first(3), bytes_of(1000, 9), cat);
    c.flush();
  }
  PromptCache c(opts("m"));
  EXPECT_FALSE(c.lookup(t, points, dog).state);
  EXPECT_FALSE(c.lookup(t, points).state);
  const auto hit = c.lookup(t, points, cat);
  ASSERT_TRUE(hit.state);
  EXPECT_EQ(hit.state->host_bytes(), bytes_of(1000, 9));
}

TEST_F(PromptCacheDisk, AnotherIdentityIsRemovedAtStart) {
  {
    PromptCache c(opts("m"));
    c.insert(std::span(t).first(3), bytes_of(1000, 9));
  }
  PromptCache c(opts("other"));
  EXPECT_EQ(c.stats().disk_refused, 1);
  EXPECT_TRUE(files().empty());
  EXPECT_FALSE(c.lookup(t, points).state);
}

TEST_F(PromptCacheDisk, TruncatedAndCorruptedAreRefused) {
  {
    PromptCache c(opts("m"));
    c.insert(std::span(t).first(3), bytes_of(1000, 9));
  }
  const auto f = files().at(0);
  const auto size = fs::file_size(f);
  {  // a damaged payload byte: only the checksum tells
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(static_cast<std::streamoff>(size - 10));
    io.put(7);
  }
  {
    PromptCache c(opts("m"));
    EXPECT_FALSE(c.lookup(t, points).state);
    EXPECT_EQ(c.stats().disk_refused, 1);
    EXPECT_TRUE(files().empty());
    c.insert(std::span(t).first(3), bytes_of(1000, 9));
  }
  fs::resize_file(files().at(0), size / 2);
  PromptCache c(opts("m"));
  EXPECT_EQ(c.stats().disk_refused, 1);
  EXPECT_FALSE(c.lookup(t, points).state);
}

TEST_F(PromptCacheDisk, DirectoryStaysWithinItsBound) {
  auto o = opts("m");
  o.disk_bytes = 2500;
  PromptCache c(o);
  for (int i = 0; i < 5; ++i) {
    const std::vector<std::int32_t> p = {i, i, i};
    c.insert(p, bytes_of(1000, static_cast<std::uint8_t>(i)));
  }
  c.flush();
  EXPECT_LE(c.stats().disk_bytes, 2500u);
  EXPECT_EQ(files().size(), 2u);
}

}  // namespace
}  // namespace tf
