#include "server/api_context.h"

#include "server/api_error.h"
#include "server/openai_ids.h"

namespace tf::server {

std::uint64_t ActiveGenerations::add(const std::shared_ptr<GenerationStream>& stream) {
  std::lock_guard lock(mu_);
  if (stopping_) stream->cancel();
  const auto id = ++next_id_;
  streams_[id] = stream;
  return id;
}

void ActiveGenerations::remove(std::uint64_t id) {
  std::lock_guard lock(mu_);
  streams_.erase(id);
}

void ActiveGenerations::cancel_all() {
  std::lock_guard lock(mu_);
  stopping_ = true;
  for (auto& [id, weak] : streams_)
    if (auto s = weak.lock()) s->cancel();
}

std::size_t ActiveGenerations::size() const {
  std::lock_guard lock(mu_);
  return streams_.size();
}

ApiContext::ApiContext(ServerOptions options)
    : options_(std::move(options)), keys_(options_.api_keys),
      store_(options_.store_max_items, options_.store_max_bytes), started_at_(unix_now()),
      fingerprint_(options_.system_fingerprint) {}

InferenceService& ApiContext::service() const {
  auto* s = service_.load(std::memory_order_acquire);
  if (!s) throw ApiError(503, "server_error", "The model is still loading; try again shortly.", std::nullopt,
                         "model_loading");
  return *s;
}

std::string ApiContext::check_model(const std::optional<std::string>& requested) const {
  if (requested && !options_.names.accepts(*requested)) throw model_not_found(*requested);
  return options_.names.id;
}

}  // namespace tf::server
