#include "checkpoint/hf_checkpoint.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "checkpoint/checkpoint_error.h"

namespace tf {
namespace fs = std::filesystem;

namespace {
constexpr std::uintmax_t kMaxJsonBytes = 64ull << 20;  // config and index files are small; refuse giants
}

nlohmann::json read_json_file(const std::string& path) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec) throw CheckpointError(path, "cannot read: " + ec.message());
  if (size > kMaxJsonBytes) throw CheckpointError(path, "JSON file of " + std::to_string(size) + " bytes is too large");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError(path, "cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw CheckpointError(path, "not valid JSON");
  return j;
}

HfCheckpoint::HfCheckpoint(const std::string& dir) : dir_(dir) {
  const fs::path root(dir);
  if (!fs::is_directory(root)) throw CheckpointError(dir, "not a directory");
  const fs::path config_path = root / "config.json";
  if (!fs::exists(config_path)) throw CheckpointError(dir, "no config.json (not a checkpoint directory)");
  config_ = read_json_file(config_path.string());
  if (!config_.is_object()) throw CheckpointError(config_path.string(), "is not a JSON object");

  std::vector<std::string> shard_names;
  const fs::path index_path = root / "model.safetensors.index.json";
  if (fs::exists(index_path)) {
    auto index = read_json_file(index_path.string());
    auto wm = index.find("weight_map");
    if (!index.is_object() || wm == index.end() || !wm->is_object())
      throw CheckpointError(index_path.string(), "has no weight_map object");
    std::set<std::string> unique;
    for (auto it = wm->begin(); it != wm->end(); ++it) {
      if (!it->is_string()) throw CheckpointError(index_path.string(), "weight_map value of '" + it.key() + "' is not a string");
      const auto shard = it->get<std::string>();
      if (shard.empty() || shard.find('/') != std::string::npos || shard.find("..") != std::string::npos)
        throw CheckpointError(index_path.string(), "weight_map names shard '" + shard + "' outside the directory");
      if (unique.insert(shard).second) shard_names.push_back(shard);
    }
    if (shard_names.empty()) throw CheckpointError(index_path.string(), "has an empty weight_map (no tensors)");
    for (const auto& s : shard_names) {
      shards_.push_back(std::make_unique<SafetensorsFile>((root / s).string()));
    }
    // The index must agree with the shards: every listed tensor lives in the shard it names.
    for (auto it = wm->begin(); it != wm->end(); ++it) {
      const auto shard = it->get<std::string>();
      for (const auto& f : shards_) {
        if (fs::path(f->path()).filename() != shard) continue;
        if (f->find(it.key()) == nullptr)
          throw CheckpointError(index_path.string(), "lists tensor '" + it.key() + "' in " + shard + ", which lacks it");
      }
    }
  } else if (fs::exists(root / "model.safetensors")) {
    shards_.push_back(std::make_unique<SafetensorsFile>((root / "model.safetensors").string()));
  } else {
    throw CheckpointError(dir, "no model.safetensors or model.safetensors.index.json");
  }
  for (const auto& f : shards_) {
    for (const auto& t : f->tensors()) {
      if (!index_.emplace(t.name, Located{f.get(), &t}).second)
        throw CheckpointError(f->path(), "tensor '" + t.name + "' also appears in another shard");
    }
  }
}

HfCheckpoint::Located HfCheckpoint::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? Located{nullptr, nullptr} : it->second;
}

std::vector<HfCheckpoint::Located> HfCheckpoint::all_tensors() const {
  std::vector<Located> out;
  for (const auto& f : shards_)
    for (const auto& t : f->tensors()) out.push_back({f.get(), &t});
  return out;
}

}  // namespace tf
