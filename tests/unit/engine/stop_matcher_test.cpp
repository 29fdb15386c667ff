#include "engine/stop_matcher.h"

#include <gtest/gtest.h>

namespace tf {
namespace {

std::string run(StopMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) out += m.feed(p);
  return out + m.flush();
}

TEST(StopMatcher, HoldsBackPossibleStartsAndCutsAtTheStop) {
  StopMatcher m({"</end>"});
  EXPECT_EQ(m.feed("hello </"), "hello ");
  EXPECT_EQ(m.feed("en"), "");
  EXPECT_EQ(m.feed("d> more"), "");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.matched(), "</end>");  // Anthropic's stop_sequence
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, ReleasesAFalseStart) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(run(m, {"ST", "OOP", "!"}), "STOOP!");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, EarliestOfSeveralStopsWins) {
  StopMatcher m({"bb", "a"});
  EXPECT_EQ(run(m, {"xxbbya"}), "xx");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.matched(), "bb");
}

TEST(StopMatcher, NoStopsPassesEverythingThrough) {
  StopMatcher m({});
  EXPECT_EQ(m.feed("abc"), "abc");
  StopMatcher e({""});
  EXPECT_EQ(e.feed("abc"), "abc");
}

TEST(StopMatcher, MultibyteStopStrings) {
  StopMatcher m({"ñé"});
  EXPECT_EQ(run(m, {"añ", "éz"}), "a");
  EXPECT_TRUE(m.stopped());
}

}  // namespace
}  // namespace tf
