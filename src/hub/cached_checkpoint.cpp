#include "hub/cached_checkpoint.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "hub/file_selection.h"
#include "hub/hub_cache.h"
#include "hub/hub_error.h"

namespace tf::hub {
namespace fs = std::filesystem;
namespace {

// Files of a snapshot whose link reaches a blob (a dangling link is a file that is not there).
std::vector<RepoFile> snapshot_files(const fs::path& snapshot) {
  std::vector<RepoFile> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(snapshot, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!fs::is_regular_file(it->path(), ec)) continue;  // follows the link; false when dangling
    RepoFile f;
    f.path = it->path().lexically_relative(snapshot).generic_string();  // not fs::relative: it follows the link
    f.size = fs::file_size(it->path(), ec);
    files.push_back(f);
  }
  return files;
}

bool has(const std::vector<RepoFile>& files, const std::string& path) {
  return std::any_of(files.begin(), files.end(), [&](const RepoFile& f) { return f.path == path; });
}

bool safetensors_complete(const fs::path& snapshot, const std::vector<RepoFile>& files) {
  if (!has(files, "config.json")) return false;
  if (has(files, "model.safetensors")) return true;
  if (!has(files, "model.safetensors.index.json")) return false;
  std::ifstream in(snapshot / "model.safetensors.index.json");
  const auto index = nlohmann::json::parse(in, nullptr, false);
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) return false;
  std::set<std::string> shards;
  for (const auto& [name, shard] : index["weight_map"].items())
    if (shard.is_string()) shards.insert(shard.get<std::string>());
  return !shards.empty() &&
         std::all_of(shards.begin(), shards.end(), [&](const std::string& s) { return has(files, s); });
}

// Whether every part of a split GGUF ("-00001-of-00003") is present.
bool gguf_parts_complete(const std::vector<RepoFile>& selected) {
  const std::string& first = selected.front().path;
  const auto of = first.rfind("-of-");
  if (of == std::string::npos || of + 9 > first.size()) return true;
  try {
    return selected.size() == std::stoul(first.substr(of + 4, 5));
  } catch (const std::exception&) {
    return true;
  }
}

std::optional<CachedCheckpoint> complete_checkpoint(const std::string& repo, const std::string& commit,
                                                    const fs::path& snapshot, const RepoSpec& spec) {
  const auto files = snapshot_files(snapshot);
  if (files.empty()) return std::nullopt;
  try {
    const FileSelection sel = select_files(files, spec, {}, {});
    CachedCheckpoint c{repo, commit, snapshot, snapshot};
    if (sel.gguf) {
      if (!gguf_parts_complete(sel.files)) return std::nullopt;
      c.model_path = snapshot / sel.weights_entry;
      return c;
    }
    if (!safetensors_complete(snapshot, files)) return std::nullopt;
    return c;
  } catch (const HubError&) {
    return std::nullopt;  // nothing tensorfold reads, or no GGUF for this quantization
  }
}

}  // namespace

std::optional<CachedCheckpoint> find_cached_checkpoint(const RepoSpec& spec, const std::string& cache_dir) {
  const RepoCache cache(cache_dir, spec.repo);
  const auto commit = cache.cached_commit(spec.revision);
  if (!commit) return std::nullopt;
  return complete_checkpoint(spec.repo, *commit, cache.snapshot(*commit), spec);
}

std::vector<CachedCheckpoint> list_cached_checkpoints(const std::string& cache_dir) {
  std::vector<CachedCheckpoint> out;
  std::error_code ec;
  for (const auto& repo_dir : fs::directory_iterator(cache_dir, ec)) {
    const std::string folder = repo_dir.path().filename().string();
    if (folder.rfind("models--", 0) != 0) continue;
    // "models--Org--Name" -> "Org/Name"
    const std::string org_name = folder.substr(8);
    const auto sep = org_name.find("--");
    if (sep == std::string::npos) continue;
    const std::string repo = org_name.substr(0, sep) + "/" + org_name.substr(sep + 2);
    std::error_code ec2;
    for (const auto& snap : fs::directory_iterator(repo_dir.path() / "snapshots", ec2)) {
      const std::string commit = snap.path().filename().string();
      const auto files = snapshot_files(snap.path());
      std::vector<std::string> ggufs;
      for (const auto& f : files)
        if (f.path.size() > 5 && f.path.substr(f.path.size() - 5) == ".gguf" &&
            f.path.find("mmproj") == std::string::npos &&
            (f.path.find("-of-") == std::string::npos || f.path.find("-00001-of-") != std::string::npos))
          ggufs.push_back(f.path);
      if (ggufs.empty()) {
        RepoSpec spec{repo, commit, ""};
        if (auto c = complete_checkpoint(repo, commit, snap.path(), spec)) out.push_back(*c);
        continue;
      }
      std::sort(ggufs.begin(), ggufs.end());
      for (const auto& g : ggufs) {
        // The spec that picks exactly this file: its full base name as the "quantization".
        RepoSpec spec{repo, commit, ""};
        spec.quant = g.substr(g.rfind('/') + 1);
        if (auto c = complete_checkpoint(repo, commit, snap.path(), spec)) out.push_back(*c);
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const CachedCheckpoint& a, const CachedCheckpoint& b) {
    return a.repo != b.repo ? a.repo < b.repo : a.model_path < b.model_path;
  });
  return out;
}

}  // namespace tf::hub
