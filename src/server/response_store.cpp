#include "server/response_store.h"

#include "server/json_fields.h"

namespace tf::server {

ResponseStore::ResponseStore(std::size_t max_items, std::size_t max_bytes)
    : max_items_(max_items), max_bytes_(max_bytes) {}

std::size_t ResponseStore::entry_bytes(const StoredResponse& e) {
  std::size_t images = 0;
  for (const auto& i : e.images) images += i.param.size() + i.url.size();
  return dump_json(e.response).size() + dump_json(e.conversation).size() + images + 64;
}

bool ResponseStore::put(const std::string& id, StoredResponse entry) {
  const std::size_t n = entry_bytes(entry) + id.size();
  std::lock_guard lock(mu_);
  if (auto it = slots_.find(id); it != slots_.end()) {
    bytes_ -= it->second.bytes;
    order_.erase(it->second.order);
    slots_.erase(it);
  }
  if (n > max_bytes_ || max_items_ == 0) return false;
  order_.push_back(id);
  slots_[id] = Slot{std::make_shared<const StoredResponse>(std::move(entry)), n, std::prev(order_.end())};
  bytes_ += n;
  evict_locked();
  return true;
}

void ResponseStore::evict_locked() {
  while (!order_.empty() && (slots_.size() > max_items_ || bytes_ > max_bytes_)) {
    auto it = slots_.find(order_.front());
    bytes_ -= it->second.bytes;
    slots_.erase(it);
    order_.pop_front();
  }
}

std::shared_ptr<const StoredResponse> ResponseStore::get(const std::string& id) const {
  std::lock_guard lock(mu_);
  auto it = slots_.find(id);
  return it == slots_.end() ? nullptr : it->second.entry;
}

bool ResponseStore::erase(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = slots_.find(id);
  if (it == slots_.end()) return false;
  bytes_ -= it->second.bytes;
  order_.erase(it->second.order);
  slots_.erase(it);
  return true;
}

std::size_t ResponseStore::size() const {
  std::lock_guard lock(mu_);
  return slots_.size();
}

std::size_t ResponseStore::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

}  // namespace tf::server
