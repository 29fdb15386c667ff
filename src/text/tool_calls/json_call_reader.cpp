#include "text/tool_calls/json_call_reader.h"

#include <nlohmann/json.hpp>

namespace tf::tools {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The header "{ "name" : "NAME" , "arguments" :" up to the arguments' '{' (not included).
struct Header {
  enum { More, Mismatch, Match } result = More;
  std::size_t length = 0;
  std::string name;
};

// The end of the JSON string literal starting at s[i] == '"' (one past its closing quote); npos when the
// text ends first.
std::size_t string_end(std::string_view s, std::size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') ++i;
    else if (s[i] == '"') return i + 1;
  }
  return std::string_view::npos;
}

Header match_header(std::string_view s, bool ended) {
  Header h;
  std::size_t i = 0;
  auto skip = [&] {
    while (i < s.size() && is_space(s[i])) ++i;
  };
  auto more = [&] {
    h.result = ended ? Header::Mismatch : Header::More;
    return h;
  };
  auto mismatch = [&] {
    h.result = Header::Mismatch;
    return h;
  };
  // Reads a string literal; false with `h` set when it is not there (yet).
  auto literal = [&](std::string& value) -> int {
    skip();
    if (i >= s.size()) return 0;
    if (s[i] != '"') return -1;
    const auto end = string_end(s, i);
    if (end == std::string_view::npos) return 0;
    const auto parsed = nlohmann::json::parse(s.substr(i, end - i), nullptr, false);
    if (!parsed.is_string()) return -1;
    value = parsed.get<std::string>();
    i = end;
    return 1;
  };
  auto punct = [&](char c) -> int {
    skip();
    if (i >= s.size()) return 0;
    if (s[i] != c) return -1;
    ++i;
    return 1;
  };
  std::string key;
  int r;
  if ((r = punct('{')) <= 0) return r == 0 ? more() : mismatch();
  if ((r = literal(key)) <= 0) return r == 0 ? more() : mismatch();
  if (key != "name") return mismatch();
  if ((r = punct(':')) <= 0) return r == 0 ? more() : mismatch();
  if ((r = literal(h.name)) <= 0) return r == 0 ? more() : mismatch();
  if ((r = punct(',')) <= 0) return r == 0 ? more() : mismatch();
  if ((r = literal(key)) <= 0) return r == 0 ? more() : mismatch();
  if (key != "arguments" && key != "parameters") return mismatch();
  if ((r = punct(':')) <= 0) return r == 0 ? more() : mismatch();
  skip();
  if (i >= s.size()) return more();
  if (s[i] != '{') return mismatch();
  h.result = Header::Match;
  h.length = i;
  return h;
}

}  // namespace

void JsonCallParser::reset_call_object() {
  phase_ = Phase::Header;
  outer_ = JsonScanner(true);
  inner_ = JsonScanner(true);
  whole_.clear();
}

JsonCallParser::Read JsonCallParser::read_call_object() {
  switch (phase_) {
    case Phase::Header: return read_header();
    case Phase::Arguments: return read_arguments();
    case Phase::Tail: return read_tail();
    case Phase::Whole: return read_whole();
  }
  return Read::Failed;
}

JsonCallParser::Read JsonCallParser::read_header() {
  const auto h = match_header(rest(), ended());
  if (h.result == Header::More) return Read::More;
  if (h.result == Header::Mismatch) {
    if (rest().empty() || rest().front() != '{') {
      fail_call();
      return Read::Failed;
    }
    phase_ = Phase::Whole;
    return read_whole();
  }
  if (!find_tool(h.name)) {  // not a declared tool: the text stays content
    fail_call();
    return Read::Failed;
  }
  for (std::size_t i = 0; i < h.length; ++i) outer_.feed(rest()[i]);
  consume(h.length);
  start_call(h.name);
  phase_ = Phase::Arguments;
  return read_arguments();
}

JsonCallParser::Read JsonCallParser::read_arguments() {
  const auto text = rest();
  std::size_t n = 0;
  JsonScanner::Status status = JsonScanner::Status::More;
  while (n < text.size() && status == JsonScanner::Status::More) {
    status = inner_.feed(text[n]);
    if (status == JsonScanner::Status::Error) break;
    outer_.feed(text[n]);
    ++n;
  }
  emit_arguments(text.substr(0, n));
  consume(n);
  if (status == JsonScanner::Status::Error) {
    consume(1);
    fail_call();
    return Read::Failed;
  }
  if (status == JsonScanner::Status::Done) {
    phase_ = Phase::Tail;
    return read_tail();
  }
  if (ended()) {
    fail_call();
    return Read::Failed;
  }
  return Read::More;
}

JsonCallParser::Read JsonCallParser::read_bare_arguments() {
  const auto text = rest();
  std::size_t n = 0;
  JsonScanner::Status status = JsonScanner::Status::More;
  while (n < text.size() && status == JsonScanner::Status::More) {
    status = inner_.feed(text[n]);
    if (status == JsonScanner::Status::Error) break;
    ++n;
  }
  emit_arguments(text.substr(0, n));
  consume(n);
  if (status == JsonScanner::Status::Done) return Read::Done;
  if (status == JsonScanner::Status::Error || ended()) {
    if (status == JsonScanner::Status::Error) consume(1);
    fail_call();
    return Read::Failed;
  }
  return Read::More;
}

JsonCallParser::Read JsonCallParser::read_tail() {
  // The arguments are complete, so the call stands whatever follows; the rest of the object (normally just
  // '}') is read while it is JSON. Where it is not, the framing decides what the text is.
  const auto text = rest();
  std::size_t n = 0;
  while (n < text.size() && outer_.status() == JsonScanner::Status::More) {
    if (outer_.feed(text[n]) == JsonScanner::Status::Error) break;
    ++n;
  }
  consume(n);
  if (outer_.status() == JsonScanner::Status::More && !ended()) return Read::More;
  end_call();
  return Read::Done;
}

JsonCallParser::Read JsonCallParser::read_whole() {
  const auto text = rest();
  std::size_t n = 0;
  while (n < text.size() && outer_.status() == JsonScanner::Status::More) {
    outer_.feed(text[n]);
    ++n;
  }
  whole_.append(text.substr(0, n));
  consume(n);
  if (outer_.status() == JsonScanner::Status::More) {
    if (!ended()) return Read::More;
    fail_call();
    return Read::Failed;
  }
  if (outer_.status() == JsonScanner::Status::Error) {
    fail_call();
    return Read::Failed;
  }
  const auto object = nlohmann::ordered_json::parse(whole_, nullptr, false);
  const auto name = object.find("name");
  auto args = object.find("arguments");
  if (args == object.end()) args = object.find("parameters");
  if (name == object.end() || !name->is_string() || args == object.end()) {
    fail_call();
    return Read::Failed;
  }
  nlohmann::ordered_json arguments = *args;
  if (arguments.is_string()) arguments = nlohmann::ordered_json::parse(args->get<std::string>(), nullptr, false);
  if (!arguments.is_object() || !start_call(name->get<std::string>())) {
    fail_call();
    return Read::Failed;
  }
  emit_arguments(arguments.dump());
  end_call();
  return Read::Done;
}

}  // namespace tf::tools
