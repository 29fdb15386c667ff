#include "families/greedy_ahead.h"

namespace tf {

std::int32_t GreedyAhead::next(Backend& backend, KvCache& kv, std::int32_t token, bool queue_next,
                               const Record& record) {
  std::shared_ptr<DeviceIds> out;
  if (queued_ && queued_input_ == token) {
    out = std::move(queued_output_);
    queued_ = false;
    ++used_;
  } else {
    drop(kv);
    const std::int32_t one[1] = {token};
    out = backend.argmax_rows_async(record(one, nullptr));
  }
  if (queue_next) {
    const std::int32_t placeholder[1] = {0};
    queued_output_ = backend.argmax_rows_async(record(placeholder, out));
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
