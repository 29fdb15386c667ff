// From validated fields to the engine request: context checks, length limits, sampling, chat rendering.
#include <gtest/gtest.h>

#include "fake_service.h"
#include "server/api_error.h"
#include "server/generation_runner.h"

namespace tf::server {
namespace {

using testing::FakeService;

std::vector<std::int32_t> tokens(std::size_t n) { return std::vector<std::int32_t>(n, 7); }

TEST(PlanGeneration, MergesSamplingOverDefaults) {
  FakeService svc;
  ServerOptions o;
  SamplingFields f;
  f.temperature = 0.0f;
  f.min_p = 0.2f;
  f.seed = 99;
  f.stop = {"END"};
  f.draft = false;
  const auto r = plan_generation(svc, o, tokens(3), f, "prompt");
  EXPECT_EQ(r.prompt.size(), 3u);
  EXPECT_EQ(r.sampling.temperature, 0.0f);
  EXPECT_EQ(r.sampling.top_k, 40);   // default kept
  EXPECT_EQ(r.sampling.top_p, 0.9f);  // default kept
  EXPECT_EQ(r.sampling.min_p, 0.2f);
  EXPECT_EQ(*r.seed, 99u);
  EXPECT_EQ(r.stop, std::vector<std::string>{"END"});
  EXPECT_FALSE(r.draft);
}

TEST(PlanGeneration, DefaultLimitIsClippedToTheContextEnd) {
  FakeService svc;  // context 64
  ServerOptions o;
  o.default_max_tokens = 16;
  EXPECT_EQ(plan_generation(svc, o, tokens(10), {}, "prompt").max_tokens, 16);
  EXPECT_EQ(plan_generation(svc, o, tokens(60), {}, "prompt").max_tokens, 4);
  o.default_max_tokens = 0;  // until the context ends
  EXPECT_EQ(plan_generation(svc, o, tokens(10), {}, "prompt").max_tokens, 54);
}

TEST(PlanGeneration, RequestedLimitMustFit) {
  FakeService svc;
  ServerOptions o;
  SamplingFields f;
  f.max_tokens = 14;
  f.max_tokens_param = "max_completion_tokens";
  EXPECT_EQ(plan_generation(svc, o, tokens(50), f, "messages").max_tokens, 14);
  try {
    plan_generation(svc, o, tokens(51), f, "messages");
    FAIL() << "expected context_length_exceeded";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.code(), "context_length_exceeded");
    EXPECT_EQ(e.param(), "max_completion_tokens");
    EXPECT_EQ(std::string(e.what()).rfind("This server's maximum context length is 64 tokens", 0), 0u);
  }
}

TEST(PlanGeneration, PromptMustLeaveRoom) {
  FakeService svc;
  ServerOptions o;
  for (std::size_t n : {64u, 65u, 500u}) {
    try {
      plan_generation(svc, o, tokens(n), {}, "prompt");
      FAIL() << "expected context_length_exceeded for " << n;
    } catch (const ApiError& e) {
      EXPECT_EQ(e.code(), "context_length_exceeded");
      EXPECT_EQ(e.param(), "prompt");
      EXPECT_EQ(std::string(e.what()).rfind("This server's maximum context length is 64 tokens", 0), 0u);
    }
  }
  EXPECT_EQ(plan_generation(svc, o, tokens(63), {}, "prompt").max_tokens, 1);
}

TEST(PlanGeneration, EmptyPromptIsRefused) {
  FakeService svc;
  EXPECT_THROW(plan_generation(svc, {}, {}, {}, "prompt"), ApiError);
}

TEST(ChatPrompt, RendersAndTokenizesWithoutAddingSpecials) {
  FakeService svc;
  ChatInput in;
  in.messages = {{{"role", "user"}, {"content", "hi"}}};
  const auto ids = chat_prompt(svc, in);
  EXPECT_EQ(ids.size(), svc.last_rendered.size());  // one id per byte, no BOS added
}

TEST(ChatPrompt, TemplateErrorsAreClientErrors) {
  FakeService svc;
  svc.template_throws = true;
  ChatInput in;
  in.messages = {{{"role", "system"}, {"content", "x"}}};
  try {
    chat_prompt(svc, in);
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.code(), "chat_template_error");
    EXPECT_NE(std::string(e.what()).find("System role not supported"), std::string::npos);
  }
}

}  // namespace
}  // namespace tf::server
