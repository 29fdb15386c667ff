#pragma once
// State every HTTP handler shares: the options, the keys, the responses store, the running generations and
// the inference service (absent until the engine has loaded).
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "engine/generation.h"
#include "server/auth.h"
#include "server/inference_service.h"
#include "server/response_store.h"
#include "server/server_options.h"

namespace tf::server {

// The generations in flight, so that shutdown can cancel them all.
class ActiveGenerations {
 public:
  // Registers `stream`; when shutdown has begun it is cancelled at once. Returns the id for remove().
  std::uint64_t add(const std::shared_ptr<GenerationStream>& stream);
  void remove(std::uint64_t id);
  // Cancels every registered generation and any added later.
  void cancel_all();
  std::size_t size() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::uint64_t, std::weak_ptr<GenerationStream>> streams_;
  std::uint64_t next_id_ = 0;
  bool stopping_ = false;
};

class ApiContext {
 public:
  explicit ApiContext(ServerOptions options);

  const ServerOptions& options() const { return options_; }
  const ApiKeys& keys() const { return keys_; }
  ResponseStore& store() { return store_; }
  ActiveGenerations& active() { return active_; }
  std::int64_t started_at() const { return started_at_; }
  const std::string& system_fingerprint() const { return fingerprint_; }

  // The engine is loaded. `system_fingerprint` (when not empty) replaces the options' one from now on.
  void set_service(InferenceService* service, std::string system_fingerprint = {}) {
    if (!system_fingerprint.empty()) fingerprint_ = std::move(system_fingerprint);
    service_.store(service, std::memory_order_release);  // publishes fingerprint_ with it
  }
  bool ready() const { return service_.load(std::memory_order_acquire) != nullptr; }
  // The service, or ApiError 503 (code model_loading) while the engine loads.
  InferenceService& service() const;
  // The served id when `requested` is absent or names the model (id or alias); else ApiError 404.
  std::string check_model(const std::optional<std::string>& requested) const;

 private:
  ServerOptions options_;
  ApiKeys keys_;
  ResponseStore store_;
  ActiveGenerations active_;
  std::atomic<InferenceService*> service_{nullptr};
  std::int64_t started_at_;
  std::string fingerprint_;  // written before service_ is published, read after
};

}  // namespace tf::server
