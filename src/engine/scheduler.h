#pragma once
// The one scheduler for every family (ARCHITECTURE §5): one thread keeps up to `parallel` admitted streams,
// advances every decoding stream by one round per tick and, between ticks, prefills waiting prompts one
// chunk at a time, so that running replies keep moving while prompts fill (decode keeps `decode_share` of
// the wall time then). A stream's tokens are a pure function of its own request: sampling is keyed by its
// seed and absolute position, and its forward passes see only its own state, whatever runs beside it.
//
// Admission: a request reserves its whole cache (prompt plus completion) and a prefill workspace in the
// memory budget. One that could never fit is refused (AdmissionError NeverFits); one that does not fit now,
// or finds every slot taken, waits in a bounded FIFO queue; past the bound, AdmissionError QueueFull.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/chunk_plan.h"
#include "engine/engine_stats.h"
#include "engine/generation.h"
#include "engine/memory_plan.h"

namespace tf {

class Model;
class DraftSource;
class PromptCache;

// Turns one stream's tokens into text: the tokenizer's incremental decoder in the engine, a fake in tests.
class TokenText {
 public:
  virtual ~TokenText() = default;
  virtual std::string push(std::int32_t token) = 0;  // the text that is now final
  virtual std::string flush() = 0;                   // whatever was held back, at the end
};
using TokenTextFactory = std::function<std::unique_ptr<TokenText>()>;

struct SchedulerOptions {
  int parallel = 1;            // streams admitted at once
  double decode_share = 0.5;   // share of wall time decode keeps while prompts prefill, in (0, 1)
  std::size_t max_queue = 64;  // requests waiting for admission at most
  std::int64_t context = 0;
  std::vector<std::int32_t> eos;  // sorted
  int max_drafts = 0;          // drafts per round served (0: serial)
  bool full_windows = false;   // see DecodeSettings::full_windows
  bool mtp_drafts = false;     // drafts from the model's MTP head (Model::draft_head()), else context copies
  // Rows one shared round may hold (Model::forward_parts over several streams); 0: one forward per stream.
  // The engine sets it only when the load-time shared-round check passed.
  std::int64_t shared_rows = 0;
  MemoryPlan memory;
  // Where prefill cuts prompts (every prompt, cached or not, so that fresh and resumed prefill run the same
  // chunks), and the retained prefixes (null: none). The cache must outlive the scheduler.
  ChunkPlanRule plan;
  PromptCache* prompt_cache = nullptr;
  // Called on the scheduler thread when the last running stream ends (the engine gives cached memory back).
  std::function<void()> on_idle;
};

class Scheduler {
 public:
  Scheduler(Model& model, SchedulerOptions options, TokenTextFactory text);
  ~Scheduler();  // cancels queued and running streams and joins the thread
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Admits or queues a generation; text arrives on the returned stream. Throws AdmissionError.
  std::shared_ptr<GenerationStream> submit(GenerationRequest request);
  EngineStats stats() const;
  const SchedulerOptions& options() const { return options_; }
  // The positions a request may reach: its prompt plus max_tokens, clipped to the context.
  std::int64_t request_tokens(const GenerationRequest& request) const;

 private:
  struct Stream;
  using Clock = std::chrono::steady_clock;

  void loop();
  void prefill_chunk();
  void decode_round();
  void reap_cancelled();
  void start_decoding(Stream& s);
  // At a new stream's first chunk: its plan, and its state restored from the longest cached prefix.
  void start_prefill(Stream& s);
  // The stream's draft source (null when it decodes serially), made when its prefill starts.
  std::unique_ptr<DraftSource> make_drafts(const Stream& s) const;
  // Ends `s`: flushes its text, closes its channel, counts it and frees its state and reservation.
  void finish(Stream& s, FinishReason reason, const std::string& error = {});
  // Under mu_: drops cancelled waiters, then admits from the queue's head while slots and memory allow.
  void admit_waiting_locked();
  bool fits_now_locked(std::size_t bytes) const;
  int retry_after_locked() const;

  Model& model_;
  const SchedulerOptions options_;
  TokenTextFactory text_;

  // The scheduler thread's own lists.
  std::deque<std::unique_ptr<Stream>> prefilling_;  // FIFO: the front fills first
  std::vector<std::unique_ptr<Stream>> decoding_;
  double decode_seconds_ = 0.0, prefill_seconds_ = 0.0;  // while prompts are filling

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Stream>> admitted_;  // admitted, not yet picked up by the thread
  std::deque<std::unique_ptr<Stream>> queue_;      // waiting for admission
  std::size_t reserved_ = 0;                       // bytes admitted streams hold
  int running_ = 0;                                // admitted and not finished
  bool stopping_ = false;
  EngineStats stats_;
  std::thread thread_;
};

}  // namespace tf
