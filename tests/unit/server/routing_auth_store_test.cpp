// The router, bearer auth, the bounded responses store and the served model's names.
#include <gtest/gtest.h>

#include "server/auth.h"
#include "server/model_names.h"
#include "server/response_store.h"
#include "server/router.h"

namespace tf::server {
namespace {

TEST(Router, MatchesMethodsPathsAndCaptures) {
  Router r;
  const int models = r.add("GET", "/v1/models");
  const int get = r.add("GET", "/v1/responses/{id}");
  const int del = r.add("DELETE", "/v1/responses/{id}");
  const int chat = r.add("POST", "/v1/chat/completions");

  auto m = r.match("GET", "/v1/models");
  EXPECT_EQ(m.kind, RouteMatch::Kind::Found);
  EXPECT_EQ(m.route, models);
  EXPECT_EQ(r.match("GET", "/v1/models/").route, models);
  EXPECT_EQ(r.match("HEAD", "/v1/models").route, models);

  m = r.match("DELETE", "/v1/responses/resp_1");
  EXPECT_EQ(m.route, del);
  EXPECT_EQ(m.params, std::vector<std::string>{"resp_1"});
  EXPECT_EQ(r.match("GET", "/v1/responses/abc").route, get);
  EXPECT_EQ(r.match("POST", "/v1/chat/completions").route, chat);

  m = r.match("GET", "/v1/chat/completions");
  EXPECT_EQ(m.kind, RouteMatch::Kind::MethodNotAllowed);
  EXPECT_EQ(m.allow, "POST");
  m = r.match("PUT", "/v1/responses/x");
  EXPECT_EQ(m.kind, RouteMatch::Kind::MethodNotAllowed);
  EXPECT_EQ(m.allow, "GET, DELETE");

  for (const char* path : {"/v2/models", "/v1", "/", "", "/v1/responses", "/v1/responses//", "/v1//models",
                           "/v1/responses/a/b", "v1/models"})
    EXPECT_EQ(r.match("GET", path).kind, RouteMatch::Kind::NotFound) << path;
}

TEST(ApiKeys, BearerTokens) {
  const ApiKeys none;
  EXPECT_FALSE(none.required());
  EXPECT_TRUE(none.allows(""));
  const ApiKeys keys({"sk-one", "sk-two"});
  EXPECT_TRUE(keys.required());
  EXPECT_TRUE(keys.allows("Bearer sk-one"));
  EXPECT_TRUE(keys.allows("bearer sk-two"));
  EXPECT_TRUE(keys.allows("  Bearer   sk-two  "));
  EXPECT_FALSE(keys.allows(""));
  EXPECT_FALSE(keys.allows("sk-one"));
  EXPECT_FALSE(keys.allows("Bearer"));
  EXPECT_FALSE(keys.allows("Bearer "));
  EXPECT_FALSE(keys.allows("Bearer sk-on"));
  EXPECT_FALSE(keys.allows("Bearer sk-one2"));
  EXPECT_FALSE(keys.allows("Basic sk-one"));
  EXPECT_FALSE(keys.allows("Bearersk-one"));
  EXPECT_FALSE(ApiKeys({""}).required());
}

StoredResponse entry(const std::string& text) {
  return StoredResponse{
      {{"id", "x"}, {"text", text}}, nlohmann::ordered_json::array({{{"role", "user"}, {"content", text}}}), {}};
}

TEST(ResponseStore, PutGetEraseReplace) {
  ResponseStore store;
  EXPECT_TRUE(store.put("a", entry("1")));
  ASSERT_TRUE(store.get("a"));
  EXPECT_EQ(store.get("a")->response["text"], "1");
  EXPECT_FALSE(store.get("b"));
  const auto before = store.bytes();
  EXPECT_TRUE(store.put("a", entry("22")));
  EXPECT_EQ(store.size(), 1u);
  EXPECT_GT(store.bytes(), before);
  EXPECT_TRUE(store.erase("a"));
  EXPECT_FALSE(store.erase("a"));
  EXPECT_EQ(store.size(), 0u);
  EXPECT_EQ(store.bytes(), 0u);
}

TEST(ResponseStore, KeepsTheNewestWithinCount) {
  ResponseStore store(3, 1 << 20);
  for (int i = 0; i < 5; ++i) store.put("r" + std::to_string(i), entry(std::to_string(i)));
  EXPECT_EQ(store.size(), 3u);
  EXPECT_FALSE(store.get("r0"));
  EXPECT_FALSE(store.get("r1"));
  EXPECT_TRUE(store.get("r4"));
}

TEST(ResponseStore, KeepsTheNewestWithinBytes) {
  const auto one = ResponseStore::entry_bytes(entry(std::string(1000, 'x'))) + 2;
  ResponseStore store(100, 3 * one);
  for (int i = 0; i < 6; ++i) store.put("r" + std::to_string(i), entry(std::string(1000, 'x')));
  EXPECT_EQ(store.size(), 3u);
  EXPECT_LE(store.bytes(), 3 * one);
  EXPECT_TRUE(store.get("r5"));
  EXPECT_FALSE(store.get("r2"));
  // Alone larger than the bound: not stored, nothing else evicted.
  EXPECT_FALSE(store.put("huge", entry(std::string(10 * one, 'y'))));
  EXPECT_EQ(store.size(), 3u);
}

TEST(ResponseStore, HandedOutEntriesOutliveEviction) {
  ResponseStore store(1, 1 << 20);
  store.put("a", entry("keep"));
  const auto held = store.get("a");
  store.put("b", entry("new"));
  EXPECT_FALSE(store.get("a"));
  EXPECT_EQ(held->response["text"], "keep");
}

TEST(ModelNames, ServedId) {
  EXPECT_EQ(served_model_id("custom", "/x/y.gguf"), "custom");
  EXPECT_EQ(served_model_id("", "/cache/SmolLM2-135M-Instruct.Q4_1.gguf"), "SmolLM2-135M-Instruct.Q4_1");
  EXPECT_EQ(served_model_id("", "/models/Qwen3-0.6B"), "Qwen3-0.6B");
  EXPECT_EQ(served_model_id("", "/models/Qwen3-0.6B/"), "Qwen3-0.6B");
  EXPECT_EQ(served_model_id("", "/hf/hub/models--HuggingFaceTB--SmolLM2-135M/snapshots/abc123"),
            "HuggingFaceTB/SmolLM2-135M");
  const ModelNames names{"smol", {"a", "b"}};
  EXPECT_TRUE(names.matches("smol"));
  EXPECT_TRUE(names.matches("b"));
  EXPECT_FALSE(names.matches("gpt-4o"));
  EXPECT_FALSE(names.matches(""));
}

}  // namespace
}  // namespace tf::server
