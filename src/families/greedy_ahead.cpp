#include "families/greedy_ahead.h"

namespace tf {

namespace {

// Whether two steps choose alike: any two greedy ones do; sampled ones at the same settings, seed and position.
bool same(const TokenChoice& a, const TokenChoice& b) {
  if (a.temperature <= 0.0f || b.temperature <= 0.0f) return a.temperature <= 0.0f && b.temperature <= 0.0f;
  return a.temperature == b.temperature && a.top_k == b.top_k && a.top_p == b.top_p && a.min_p == b.min_p &&
         a.seed == b.seed && a.position == b.position;
}

std::shared_ptr<DeviceIds> choose(Backend& backend, const Tensor& logits, const TokenChoice& choice) {
  if (choice.temperature <= 0.0f) return backend.argmax_rows_async(logits);
  return backend.sample_rows_async(logits, std::span<const TokenChoice>(&choice, 1));
}

}  // namespace

std::int32_t GreedyAhead::next(Backend& backend, KvCache& kv, std::int32_t token, bool queue_next, const Record& record,
                               const TokenChoice& choice) {
  std::shared_ptr<DeviceIds> out;
  if (queued_ && queued_input_ == token && same(queued_choice_, choice)) {
    out = std::move(queued_output_);
    queued_ = false;
    ++used_;
  } else {
    drop(kv);
    const std::int32_t one[1] = {token};
    out = choose(backend, record(one, nullptr), choice);
  }
  if (queue_next) {
    const std::int32_t placeholder[1] = {0};
    queued_choice_ = choice;
    ++queued_choice_.position;
    queued_output_ = choose(backend, record(placeholder, out), queued_choice_);
    queued_ = true;
  }
  const std::int32_t found = out->get().at(0);  // the device is on the queued step by now
  queued_input_ = found;
  return found;
}

void GreedyAhead::drop(KvCache& kv) {
  if (!queued_) return;
  kv.truncate(kv.length() - 1);
  queued_ = false;
  ++dropped_;
  queued_output_.reset();
}

void GreedyAhead::settle() {
  if (queued_) queued_output_->get();
}

}  // namespace tf
