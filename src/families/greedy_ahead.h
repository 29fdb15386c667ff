#pragma once
// Greedy decoding of one stream, run one step ahead on a backend with device ids (Backend::has_device_ids);
// keyed sampling too (Backend::has_sample_rows): a sampled step's token is a pure function of its logits and
// (settings, seed, position), and the position of the step after is known, so it queues the same way.
// Once a step's greedy token is found, the host must learn it, record the next step and launch it, and the
// device idles meanwhile (8B shape on the H200: ~80 µs of a ~2,050 µs step; docs/cuda.md). Here the next
// step is queued before the host has the token, its embedding fed the token on the device: the host records
// step t + 1 while the device runs step t. The queued step is the tape a plain step records, the token copied
// into its dyn values on the device: the same graph, the same bits. The next call with that token finds it
// queued; anything else (another token, a forward of other rows, a truncation) drops it first.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "backends/backend.h"

namespace tf {

class GreedyAhead {
 public:
  // Records a forward of one row at the cache's length and returns its logits: the token `tokens[0]`, or with
  // `fed` the one id `fed` holds on the device (then `tokens` holds a placeholder).
  using Record = std::function<Tensor(std::span<const std::int32_t> tokens, const std::shared_ptr<DeviceIds>& fed)>;

  // The token after `token` at the cache's logical length, chosen under `choice` (argmax_rows of that
  // forward when greedy, else sample_rows_async; bit for bit), `token` appended. With `queue_next` the step
  // after it is queued, fed the token found, chosen at choice.position + 1.
  std::int32_t next(Backend& backend, KvCache& kv, std::int32_t token, bool queue_next, const Record& record,
                    const TokenChoice& choice = {});
  // Drops a queued step: the cache back to its logical length (the device still runs the step, in stream
  // order before anything recorded later, which overwrites what it wrote).
  void drop(KvCache& kv);
  // Waits until a queued step has run (before its cache's memory may go).
  void settle();
  // Positions the cache holds past the logical length: 1 while a step is queued.
  std::int64_t ahead() const { return queued_ ? 1 : 0; }
  // Queued steps that a later call used, and that were dropped.
  std::int64_t used() const { return used_; }
  std::int64_t dropped() const { return dropped_; }

 private:
  bool queued_ = false;
  std::int32_t queued_input_ = 0;             // the token the queued step runs (the last one returned)
  TokenChoice queued_choice_;                 // how the queued step chooses (its position included)
  std::shared_ptr<DeviceIds> queued_output_;  // its greedy id
  std::int64_t used_ = 0, dropped_ = 0;
};

}  // namespace tf
