#pragma once
// Runs a tool-call parser over a text split in a given way and compares runs: the events with adjacent
// pieces of one kind merged (how the text was split may change the pieces, never their sum).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "text/tool_calls/tool_call_parser.h"

namespace tf::tools::test {

inline std::vector<ToolEvent> merged(const std::vector<ToolEvent>& events) {
  std::vector<ToolEvent> out;
  for (const auto& e : events) {
    const bool joins = !out.empty() && out.back().kind == e.kind && out.back().index == e.index &&
                       (e.kind == ToolEvent::Kind::Content || e.kind == ToolEvent::Kind::Arguments);
    if (joins) out.back().text += e.text;
    else out.push_back(e);
  }
  return out;
}

// The raw events of a run that feeds `text` cut at `cuts` (ascending offsets).
inline std::vector<ToolEvent> run_cuts(ToolFormat f, const std::vector<ToolSpec>& tools, const std::string& text,
                                       const std::vector<std::size_t>& cuts) {
  auto parser = make_tool_call_parser(f, tools);
  std::vector<ToolEvent> events;
  std::size_t at = 0;
  for (const auto cut : cuts) {
    parser->feed(std::string_view(text).substr(at, cut - at), events);
    at = cut;
  }
  parser->feed(std::string_view(text).substr(at), events);
  parser->finish(events);
  return events;
}

inline std::vector<ToolEvent> run_whole(ToolFormat f, const std::vector<ToolSpec>& tools, const std::string& text) {
  return merged(run_cuts(f, tools, text, {}));
}

inline std::vector<ToolEvent> run_bytes(ToolFormat f, const std::vector<ToolSpec>& tools, const std::string& text) {
  std::vector<std::size_t> cuts;
  for (std::size_t i = 1; i < text.size(); ++i) cuts.push_back(i);
  return run_cuts(f, tools, text, cuts);
}

// The text cut in two at every offset, and into single bytes, gives the events of the whole text.
inline void expect_split_invariant(ToolFormat f, const std::vector<ToolSpec>& tools, const std::string& text) {
  const auto whole = run_whole(f, tools, text);
  for (std::size_t k = 1; k < text.size(); ++k)
    ASSERT_EQ(merged(run_cuts(f, tools, text, {k})), whole) << "cut at " << k << " of: " << text;
  ASSERT_EQ(merged(run_bytes(f, tools, text)), whole) << "single bytes of: " << text;
}

inline std::string kind_name(ToolEvent::Kind k) {
  switch (k) {
    case ToolEvent::Kind::Content: return "content";
    case ToolEvent::Kind::CallStart: return "start";
    case ToolEvent::Kind::Arguments: return "args";
    case ToolEvent::Kind::CallEnd: return "end";
    case ToolEvent::Kind::CallInvalid: return "invalid";
  }
  return "?";
}

}  // namespace tf::tools::test

namespace tf::tools {
inline void PrintTo(const ToolEvent& e, std::ostream* os) {
  *os << test::kind_name(e.kind) << "#" << e.index << "[" << e.text << "]";
}
}  // namespace tf::tools
