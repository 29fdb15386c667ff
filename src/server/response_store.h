#pragma once
// The in-memory store behind `store: true`, GET/DELETE /v1/responses/{id} and previous_response_id. Bounded:
// the newest `max_items` responses within `max_bytes`; the oldest go first.
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "server/image_inputs.h"

namespace tf::server {

struct StoredResponse {
  nlohmann::ordered_json response;      // the response object as returned
  nlohmann::ordered_json conversation;  // the chat messages through this response's output (instructions excluded)
  // The conversation's images (--vision), in prompt order: its messages hold their placeholders, so a response
  // that continues it sends them again.
  std::vector<ImagePart> images;
};

class ResponseStore {
 public:
  static constexpr std::size_t kDefaultMaxItems = 1024;
  static constexpr std::size_t kDefaultMaxBytes = std::size_t{256} << 20;

  explicit ResponseStore(std::size_t max_items = kDefaultMaxItems, std::size_t max_bytes = kDefaultMaxBytes);

  // Stores (or replaces) `id`, then evicts the oldest entries until both bounds hold. An entry larger than
  // max_bytes on its own is not stored. Returns whether it was stored.
  bool put(const std::string& id, StoredResponse entry);
  std::shared_ptr<const StoredResponse> get(const std::string& id) const;
  bool erase(const std::string& id);

  std::size_t size() const;
  std::size_t bytes() const;

  // What an entry counts against max_bytes: its serialized size.
  static std::size_t entry_bytes(const StoredResponse& entry);

 private:
  struct Slot {
    std::shared_ptr<const StoredResponse> entry;
    std::size_t bytes = 0;
    std::list<std::string>::iterator order;
  };
  void evict_locked();

  const std::size_t max_items_, max_bytes_;
  mutable std::mutex mu_;
  std::list<std::string> order_;  // oldest first
  std::unordered_map<std::string, Slot> slots_;
  std::size_t bytes_ = 0;
};

}  // namespace tf::server
