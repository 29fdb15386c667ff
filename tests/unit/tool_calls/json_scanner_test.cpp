// The incremental JSON check agrees with a JSON parser on where an object is complete and where text stops
// being JSON.
#include "text/tool_calls/json_scanner.h"

#include <gtest/gtest.h>

#include <string>

namespace tf::tools {
namespace {

// The status after feeding `text`, and how many bytes were read until it was decided.
std::pair<JsonScanner::Status, std::size_t> scan(const std::string& text) {
  JsonScanner s(true);
  for (std::size_t i = 0; i < text.size(); ++i)
    if (s.feed(text[i]) != JsonScanner::Status::More) return {s.status(), i + 1};
  return {s.status(), text.size()};
}

TEST(JsonScanner, CompleteObjectsEndAtTheirLastByte) {
  for (const std::string ok : {"{}", " {\"a\": 1}", "{\"a\": [1, -2.5e+3, true, false, null, \"x\\\"\\u00e9\"]}",
                               "{\"a\": {\"b\": {}}, \"c\": []}", "{\"é\": \"😀\"}", "{\"n\": 0, \"m\": -0.0E1}"}) {
    const auto [status, read] = scan(ok + "tail");
    EXPECT_EQ(status, JsonScanner::Status::Done) << ok;
    EXPECT_EQ(read, ok.size()) << ok;
  }
}

TEST(JsonScanner, TextThatIsNotJsonFailsAtTheFirstBadByte) {
  const std::pair<std::string, std::size_t> cases[] = {
      {"{\"a\": Paris}", 7}, {"[1]", 1},        {"{\"a\" 1}", 6},  {"{\"a\": 01}", 8},  {"{\"a\": 1.}", 9},
      {"{\"a\": tru }", 10}, {"{\"a\": [1,]}", 10}, {"{'a': 1}", 2}, {"{\"a\": \"\x01\"}", 8}, {"{\"a\": 1,}", 9},
      {"{\"a\": \"\\x\"}", 9}, {"{\"a\": -}", 8}};
  for (const auto& [bad, at] : cases) {
    const auto [status, read] = scan(bad);
    EXPECT_EQ(status, JsonScanner::Status::Error) << bad;
    EXPECT_EQ(read, at) << bad;
  }
}

TEST(JsonScanner, IncompleteTextWaits) {
  for (const std::string part : {"{", "{\"a\"", "{\"a\": 12", "{\"a\": \"x", "{\"a\": [1, {\"b\": tr"})
    EXPECT_EQ(scan(part).first, JsonScanner::Status::More) << part;
}

}  // namespace
}  // namespace tf::tools
