// libFuzzer target: arbitrary bytes as an HTTP request body, through the JSON reader and every endpoint's
// request parser (chat, completions, responses, Anthropic messages and count_tokens, tokenize, detokenize).
// A body may only be refused with an ApiError of a 4xx status: any other exception would reach the client as
// a 500 (http_server.cpp turns unknown exceptions into server errors), and a crash or a sanitizer report is a
// bug outright.
#include <cstdint>
#include <functional>
#include <string_view>

#include "fuzz_check.h"
#include "server/api_error.h"
#include "server/chat_request.h"
#include "server/completion_request.h"
#include "server/json_fields.h"
#include "server/messages_request.h"
#include "server/responses_request.h"
#include "server/tokenize_request.h"

namespace {

using tf::server::ApiError;

// Runs one parser; a refusal must be a 4xx ApiError with a message.
void expect_parsed_or_4xx(const char* what, const std::function<void()>& parse) {
  try {
    parse();
  } catch (const ApiError& e) {
    FUZZ_CHECK(e.status() >= 400 && e.status() < 500, "%s: ApiError with status %d: %s", what, e.status(), e.what());
    FUZZ_CHECK(e.what()[0] != '\0', "%s: ApiError without a message", what);
  } catch (const std::exception& e) {
    FUZZ_CHECK(false, "%s threw a non-API exception (a 500 to the client): %s", what, e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 64 * 1024) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::ordered_json body;
  try {
    body = tf::server::parse_json_body(text);
  } catch (const ApiError& e) {
    FUZZ_CHECK(e.status() >= 400 && e.status() < 500, "parse_json_body: status %d", e.status());
    return 0;
  }
  using namespace tf::server;
  expect_parsed_or_4xx("chat", [&] { parse_chat_request(body); });
  expect_parsed_or_4xx("completions", [&] { parse_completion_request(body); });
  expect_parsed_or_4xx("responses", [&] { parse_responses_request(body); });
  expect_parsed_or_4xx("messages", [&] { parse_messages_request(body, false); });
  expect_parsed_or_4xx("count_tokens", [&] { parse_messages_request(body, true); });
  expect_parsed_or_4xx("tokenize", [&] { parse_tokenize_request(body); });
  expect_parsed_or_4xx("detokenize", [&] { parse_detokenize_request(body, 49152); });
  return 0;
}
