#pragma once
// A stream's state in a decoder family: the stores of its layers' state kinds (ARCHITECTURE §3): a KvCache
// for the attention layers (full keys and values, rolled back by truncation) and a RecurrentState for the
// linear-attention layers (conv windows and recurrent matrices, rolled back by replaying the accepted rows of
// the last window), a WindowKvCache for sliding-window attention layers (their own head shape; only the
// positions still attended, rolled back inside the last call), and a HostRowLog for blocks that keep their
// state on the host (sparse attention, n-gram embeddings). Each layer reaches its own slot of the store of its
// kind.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "families/greedy_ahead.h"
#include "families/model.h"

namespace tf {

class StreamState final : public SequenceState {
 public:
  StreamState(std::unique_ptr<KvCache> kv, std::unique_ptr<RecurrentState> recurrent,
              std::unique_ptr<WindowKvCache> window = nullptr, std::unique_ptr<StateStore> host_rows = nullptr);
  ~StreamState() override;
  StreamState(const StreamState&) = delete;
  StreamState& operator=(const StreamState&) = delete;

  std::int64_t length() const override;
  // To the length itself (a round whose drafts all failed, or that had none) keeps a queued greedy step.
  void truncate(std::int64_t length) override;
  std::size_t bytes() const override;
  // [store count: u32][per store: byte count u64, bytes] in the order KV cache, recurrent state, window KV,
  // host rows.
  std::vector<std::uint8_t> snapshot() const override;
  void restore(std::span<const std::uint8_t> bytes) override;
  // The stores' own images (device memory on CUDA), whose host_bytes() are snapshot()'s layout.
  std::shared_ptr<const StateImage> image() const override;
  void restore_image(const StateImage& image) override;

  // The stores at the state's length (a greedy step queued ahead is dropped first); null for a kind no layer has.
  KvCache* kv();
  RecurrentState* recurrent();
  KvCache* window() { return window_.get(); }
  StateStore* host_rows() { return host_rows_.get(); }
  // One greedy round through GreedyAhead (attention-only models on backends with device ids).
  // One token's round through GreedyAhead; `choice` says how its token is chosen (its position included).
  std::int32_t greedy_round(Backend& b, std::int32_t token, bool queue_next, const GreedyAhead::Record& record,
                            const TokenChoice& choice);
  KvCache& raw_kv() { return *kv_; }  // for GreedyAhead's records, which run at the cache's own length

 private:
  std::unique_ptr<KvCache> kv_;
  std::unique_ptr<RecurrentState> recurrent_;
  std::unique_ptr<WindowKvCache> window_;
  std::unique_ptr<StateStore> host_rows_;
  GreedyAhead ahead_;
  // The stores that exist, in snapshot order.
  std::vector<StateStore*> stores() const;
};

}  // namespace tf
