#include "cli/release_feed.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace tf::cli {
namespace {

// "1.2.3-rc1" -> numbers {1,2,3} and suffix "rc1".
void split_version(const std::string& v, std::vector<long>& nums, std::string& suffix) {
  std::string core = v.rfind('v', 0) == 0 ? v.substr(1) : v;
  if (const auto dash = core.find('-'); dash != std::string::npos) {
    suffix = core.substr(dash + 1);
    core = core.substr(0, dash);
  }
  std::size_t pos = 0;
  while (pos <= core.size()) {
    const auto dot = core.find('.', pos);
    const std::string part = core.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos)
      throw std::runtime_error("'" + v + "' is not a version (N.N.N)");
    nums.push_back(std::stol(part));
    if (dot == std::string::npos) break;
    pos = dot + 1;
  }
}

}  // namespace

int compare_versions(const std::string& a, const std::string& b) {
  std::vector<long> na, nb;
  std::string sa, sb;
  split_version(a, na, sa);
  split_version(b, nb, sb);
  for (std::size_t i = 0; i < std::max(na.size(), nb.size()); ++i) {
    const long x = i < na.size() ? na[i] : 0, y = i < nb.size() ? nb[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  if (sa == sb) return 0;
  if (sa.empty()) return 1;  // 1.0.0 > 1.0.0-rc1
  if (sb.empty()) return -1;
  return sa < sb ? -1 : 1;
}

std::vector<Release> parse_release_feed(const std::string& json_text) {
  const auto j = nlohmann::json::parse(json_text, nullptr, false);
  if (!j.is_object() || !j.contains("releases") || !j["releases"].is_array())
    throw std::runtime_error("the release feed is not a JSON object with a \"releases\" list");
  std::vector<Release> out;
  for (const auto& r : j["releases"]) {
    if (!r.is_object() || !r.contains("version") || !r["version"].is_string())
      throw std::runtime_error("a release in the feed has no \"version\" string");
    Release rel;
    rel.version = r["version"].get<std::string>();
    compare_versions(rel.version, rel.version);  // throws for a malformed version
    if (r.contains("date") && r["date"].is_string()) rel.date = r["date"].get<std::string>();
    rel.pip = r.contains("pip") && r["pip"].is_string() ? r["pip"].get<std::string>() : "tensorfold==" + rel.version;
    if (r.contains("notes") && r["notes"].is_array())
      for (const auto& n : r["notes"])
        if (n.is_string()) rel.notes.push_back(n.get<std::string>());
    out.push_back(std::move(rel));
  }
  return out;
}

std::vector<Release> releases_since(std::vector<Release> releases, const std::string& running) {
  std::erase_if(releases, [&](const Release& r) { return compare_versions(r.version, running) <= 0; });
  std::sort(releases.begin(), releases.end(),
            [](const Release& a, const Release& b) { return compare_versions(a.version, b.version) > 0; });
  return releases;
}

}  // namespace tf::cli
