#include "hub/file_selection.h"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <regex>

#include "hub/hub_error.h"

namespace tf::hub {
namespace {

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && upper(s.substr(s.size() - suffix.size())) == upper(suffix);
}

std::string basename(const std::string& path) { return path.substr(path.rfind('/') + 1); }

bool is_gguf(const RepoFile& f) {
  return ends_with(f.path, ".gguf") && upper(basename(f.path)).find("MMPROJ") == std::string::npos;
}

// "name-00001-of-00003.gguf" -> "name": the parts of one split file share it.
std::string split_group(const std::string& path) {
  static const std::regex kSplit("-[0-9]{5}-of-[0-9]{5}\\.gguf$", std::regex::icase);
  return std::regex_replace(path, kSplit, "");
}

bool any_match(const std::vector<std::string>& globs, const std::string& path) {
  return std::any_of(globs.begin(), globs.end(), [&](const std::string& g) { return glob_match(g, path); });
}

// Weights of other frameworks, which tensorfold does not read.
const std::vector<std::string> kOtherWeights = {"*.bin",  "*.pt", "*.pth",    "*.h5",   "*.msgpack", "*.ckpt",
                                                "*.onnx", "*.ot", "*.tflite", "*.gguf", "*.mlmodel", "original/*"};

int order_rank(const RepoFile& f) {
  if (f.path == "config.json") return 0;
  if (ends_with(f.path, ".safetensors") || ends_with(f.path, ".gguf")) return 2;
  return 1;
}

}  // namespace

bool glob_match(const std::string& pattern, const std::string& path) {
  return fnmatch(pattern.c_str(), path.c_str(), 0) == 0;
}

FileSelection select_files(const std::vector<RepoFile>& listing, const RepoSpec& spec,
                           const std::vector<std::string>& include, const std::vector<std::string>& exclude) {
  FileSelection sel;
  std::vector<RepoFile> ggufs;
  bool has_safetensors = false;
  for (const auto& f : listing) {
    if (is_gguf(f)) ggufs.push_back(f);
    if (ends_with(f.path, ".safetensors")) has_safetensors = true;
    if (f.path == "config.json") sel.has_config = true;
  }
  std::sort(ggufs.begin(), ggufs.end(), [](const RepoFile& a, const RepoFile& b) { return a.path < b.path; });
  sel.gguf = !ggufs.empty() && (!spec.quant.empty() || !(sel.has_config && has_safetensors));

  if (sel.gguf) {
    const std::string want = upper(spec.quant.empty() ? std::string("Q4_K_M") : spec.quant);
    auto pick = std::find_if(ggufs.begin(), ggufs.end(), [&](const RepoFile& f) {
      return upper(basename(f.path)).find(want) != std::string::npos;
    });
    if (pick == ggufs.end()) {
      if (!spec.quant.empty()) {
        std::string have;
        for (const auto& f : ggufs) have += (have.empty() ? "" : ", ") + f.path;
        throw HubError(spec.repo + ": no GGUF file matches :" + spec.quant + " (the repo has " + have + ")");
      }
      pick = ggufs.begin();
    }
    const std::string group = split_group(pick->path);
    for (const auto& f : ggufs)
      if (split_group(f.path) == group) sel.files.push_back(f);
    sel.weights_entry = sel.files.front().path;
  } else {
    if (!sel.has_config || !has_safetensors)
      throw HubError(spec.repo + ": no files tensorfold reads (it reads config.json + safetensors, or GGUF)");
    for (const auto& f : listing)
      if (!any_match(kOtherWeights, f.path)) sel.files.push_back(f);
  }

  if (!include.empty()) {
    std::erase_if(sel.files, [&](const RepoFile& f) { return !any_match(include, f.path); });
    // Explicitly included files are fetched even where the defaults above would leave them out.
    for (const auto& f : listing) {
      const bool have =
          std::any_of(sel.files.begin(), sel.files.end(), [&](const RepoFile& s) { return s.path == f.path; });
      if (!have && any_match(include, f.path) && !(sel.gguf && is_gguf(f))) sel.files.push_back(f);
    }
  }
  std::erase_if(sel.files, [&](const RepoFile& f) { return any_match(exclude, f.path); });
  if (sel.files.empty()) throw HubError(spec.repo + ": no file left after --include/--exclude");
  std::stable_sort(sel.files.begin(), sel.files.end(), [](const RepoFile& a, const RepoFile& b) {
    if (order_rank(a) != order_rank(b)) return order_rank(a) < order_rank(b);
    return order_rank(a) == 2 ? a.path < b.path : a.size < b.size;  // shards in their order, small files first
  });
  if (sel.gguf &&
      std::none_of(sel.files.begin(), sel.files.end(), [&](const RepoFile& f) { return f.path == sel.weights_entry; }))
    sel.weights_entry.clear();
  return sel;
}

}  // namespace tf::hub
