#pragma once
#include <string>
#include <vector>

namespace tf::cli {

// The release feed `tensorfold update` reads: a JSON document
//   {"releases": [{"version": "0.2.0", "date": "2026-12-20", "notes": ["...", ...],
//                  "pip": "tensorfold==0.2.0"}, ...]}
// `pip` (optional) is what pip installs for that release (default "tensorfold==VERSION").
struct Release {
  std::string version, date, pip;
  std::vector<std::string> notes;
};

// Parses the feed; throws std::runtime_error saying what is wrong with it.
std::vector<Release> parse_release_feed(const std::string& json_text);

// Numeric comparison of dotted versions ("0.10.0" > "0.9.2"); a trailing "-rc1"-style suffix sorts before
// the plain version. <0, 0, >0.
int compare_versions(const std::string& a, const std::string& b);

// Releases newer than `running`, newest first.
std::vector<Release> releases_since(std::vector<Release> releases, const std::string& running);

}  // namespace tf::cli
