#pragma once
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "checkpoint/safetensors.h"

namespace tf {

// A Hugging Face style checkpoint directory: config.json plus model.safetensors, or shards listed in
// model.safetensors.index.json. Every shard's header is validated on open; tensor data stays mapped.
class HfCheckpoint {
 public:
  explicit HfCheckpoint(const std::string& dir);  // throws CheckpointError
  const std::string& dir() const { return dir_; }
  const nlohmann::json& config() const { return config_; }
  const std::vector<std::unique_ptr<SafetensorsFile>>& shards() const { return shards_; }

  struct Located {
    const SafetensorsFile* file;
    const StTensor* tensor;
  };
  // nullopt-like: {nullptr, nullptr} when absent.
  Located find(const std::string& name) const;
  // All tensors over all shards, in shard order.
  std::vector<Located> all_tensors() const;

 private:
  std::string dir_;
  nlohmann::json config_;
  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
  std::map<std::string, Located, std::less<>> index_;
};

// Reads and parses a JSON file; throws CheckpointError naming the file when it cannot.
nlohmann::json read_json_file(const std::string& path);

}  // namespace tf
