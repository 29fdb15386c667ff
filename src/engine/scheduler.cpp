#include "engine/scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "engine/admission_error.h"
#include "engine/drafting/context_copy.h"
#include "engine/drafting/mtp_drafter.h"
#include "engine/prompt_cache.h"
#include "engine/prompt_scoring.h"
#include "engine/stop_matcher.h"
#include "engine/stream_decoder.h"
#include "families/model.h"

namespace tf {

struct Scheduler::Stream {
  GenerationRequest request;
  std::shared_ptr<GenerationStream> out;
  std::size_t reserved = 0;
  Clock::time_point submitted;
  bool first_token_seen = false;
  // From admission on:
  std::unique_ptr<SequenceState> state;
  std::int64_t prefilled = 0;  // prompt tokens run (or restored)
  std::int64_t cached = 0;     // prompt tokens restored from the prompt cache
  ChunkPlan plan;
  std::vector<std::int64_t> retain;           // plan positions whose state goes into the prompt cache
  std::vector<PromptImage> images;            // the prompt's images as the prompt cache keys them
  std::vector<float> logits;                  // the last prefill chunk's last row
  std::vector<TokenLogprob> prompt_logprobs;  // request.prompt_logprobs: the records of the rows run so far
  std::unique_ptr<DraftSource> drafts;        // null: the request decodes serially
  DecodeSettings settings;                    // sampling and seed from admission on, the rest from the end of prefill
  // From the end of prefill on:
  std::unique_ptr<TokenText> text;
  std::unique_ptr<StopMatcher> stops;
  std::unique_ptr<StreamDecoder> decoder;
};

Scheduler::Scheduler(Model& model, SchedulerOptions options, TokenTextFactory text)
    : model_(model), options_(std::move(options)), text_(std::move(text)) {
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::int64_t Scheduler::request_tokens(const GenerationRequest& r) const {
  const auto prompt = static_cast<std::int64_t>(r.prompt.size());
  if (!r.generate) return prompt;
  std::int64_t room = std::max<std::int64_t>(options_.context - prompt, 0);
  if (r.max_tokens > 0) room = std::min(room, r.max_tokens);
  return prompt + room;
}

std::shared_ptr<GenerationStream> Scheduler::submit(GenerationRequest request) {
  auto s = std::make_unique<Stream>();
  const auto tokens = request_tokens(request);
  s->reserved = options_.memory.request_bytes(tokens);
  if (request.prompt_logprobs)
    s->reserved += prompt_scoring_bytes(
        std::min<std::int64_t>(static_cast<std::int64_t>(request.prompt.size()), options_.plan.chunk),
        model_.info().vocab);
  s->request = std::move(request);
  s->out = std::make_shared<GenerationStream>();
  s->submitted = Clock::now();
  auto stream = s->out;
  std::unique_lock lock(mu_);
  if (s->reserved > options_.memory.stream_room()) {
    ++stats_.requests_refused;
    const auto prompt = static_cast<std::int64_t>(s->request.prompt.size());
    const auto fits = std::min(options_.memory.max_tokens_alone(), options_.context);
    throw AdmissionError(
        AdmissionError::Kind::NeverFits,
        fmt::format("This server's memory budget holds at most {} tokens per request (prompt plus completion). "
                    "However, you requested {} tokens ({} in the prompt, {} for the completion). Please reduce the "
                    "length of the prompt or of the completion.",
                    fits, tokens, prompt, tokens - prompt),
        fits);
  }
  if (stopping_) {
    GenerationResult r;
    r.finish = FinishReason::Cancelled;
    stream->cancel();
    stream->close(std::move(r));
    return stream;
  }
  if (queue_.empty() && fits_now_locked(s->reserved)) {
    reserved_ += s->reserved;
    ++running_;
    admitted_.push_back(std::move(s));
  } else if (queue_.size() >= options_.max_queue) {
    ++stats_.requests_refused;
    const int retry = retry_after_locked();
    throw AdmissionError(AdmissionError::Kind::QueueFull,
                         fmt::format("The server is busy: {} requests are running and {} are waiting, the most it "
                                     "queues. Please retry after {} seconds.",
                                     running_, queue_.size(), retry),
                         0, retry);
  } else {
    queue_.push_back(std::move(s));
  }
  lock.unlock();
  cv_.notify_all();
  return stream;
}

bool Scheduler::fits_now_locked(std::size_t bytes) const {
  return running_ < options_.parallel && reserved_ + bytes <= options_.memory.stream_room();
}

int Scheduler::retry_after_locked() const {
  // The queue ahead, drained `parallel` at a time at the mean latency seen so far (1 s before any).
  const auto& h = stats_.e2e_latency;
  const double mean = h.count > 0 ? h.sum / static_cast<double>(h.count) : 1.0;
  const double waves = static_cast<double>(queue_.size() + 1) / std::max(1, options_.parallel);
  return static_cast<int>(std::clamp(std::ceil(mean * waves), 1.0, 600.0));
}

void Scheduler::admit_waiting_locked() {
  for (auto it = queue_.begin(); it != queue_.end();) {
    if ((*it)->out->cancelled()) {
      GenerationResult r;
      r.finish = FinishReason::Cancelled;
      r.prompt_tokens = static_cast<std::int64_t>((*it)->request.prompt.size());
      (*it)->out->close(std::move(r));
      ++stats_.requests_cancelled;
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
  // Strict FIFO: the head waits for room rather than being passed by smaller requests behind it.
  while (!queue_.empty() && fits_now_locked(queue_.front()->reserved)) {
    reserved_ += queue_.front()->reserved;
    ++running_;
    admitted_.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
}

EngineStats Scheduler::stats() const {
  std::lock_guard lock(mu_);
  EngineStats s = stats_;
  s.requests_running = running_;
  s.requests_waiting = static_cast<std::int64_t>(queue_.size());
  s.memory_reserved_bytes = reserved_;
  s.busy = running_ > 0;
  return s;
}

void Scheduler::loop() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      admit_waiting_locked();
      for (auto& s : admitted_) prefilling_.push_back(std::move(s));
      admitted_.clear();
      if (stopping_) break;
      if (prefilling_.empty() && decoding_.empty()) {
        // Idle. The timeout lets cancelled waiters leave the queue even when nothing else happens.
        cv_.wait_for(lock, std::chrono::milliseconds(50), [&] { return stopping_ || !admitted_.empty(); });
        continue;
      }
    }
    reap_cancelled();
    if (prefilling_.empty()) decode_seconds_ = prefill_seconds_ = 0.0;
    if (prefilling_.empty() && decoding_.empty()) {
      if (options_.on_idle) options_.on_idle();
      continue;
    }
    // While prompts fill, decode keeps its share of the time; a new prompt starts with a chunk.
    const bool prefill =
        !prefilling_.empty() &&
        (decoding_.empty() || decode_seconds_ >= options_.decode_share * (decode_seconds_ + prefill_seconds_));
    const auto t0 = Clock::now();
    if (prefill)
      prefill_chunk();
    else
      decode_round();
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    (prefill ? prefill_seconds_ : decode_seconds_) += dt;
    if (prefilling_.empty() && decoding_.empty() && options_.on_idle) options_.on_idle();
  }
  // Stopping: every stream ends as cancelled.
  for (auto& s : prefilling_) finish(*s, FinishReason::Cancelled);
  for (auto& s : decoding_) finish(*s, FinishReason::Cancelled);
  prefilling_.clear();
  decoding_.clear();
  std::lock_guard lock(mu_);
  GenerationResult cancelled;
  cancelled.finish = FinishReason::Cancelled;
  for (auto& s : admitted_) s->out->close(cancelled);
  for (auto& s : queue_) s->out->close(cancelled);
  admitted_.clear();
  queue_.clear();
}

void Scheduler::reap_cancelled() {
  const auto reap = [&](auto& list) {
    for (auto it = list.begin(); it != list.end();) {
      if ((*it)->out->cancelled()) {
        if ((*it)->decoder) (*it)->decoder->cancel();
        finish(**it, FinishReason::Cancelled);
        it = list.erase(it);  // its state and cache go with it, now
      } else {
        ++it;
      }
    }
  };
  reap(prefilling_);
  reap(decoding_);
}

void Scheduler::prefill_chunk() {
  Stream& s = *prefilling_.front();
  const auto& prompt = s.request.prompt;
  const auto n = static_cast<std::int64_t>(prompt.size());
  try {
    if (!s.state) {
      if (prompt.empty()) throw std::invalid_argument("empty prompt");
      // A prompt that is only scored may fill the context; one that generates needs a position after it.
      if (n > options_.context || (n == options_.context && s.request.generate))
        throw std::invalid_argument("prompt does not fit the context");
      s.state = model_.new_state();
      s.state->set_images(s.request.images);
      s.settings.sampling = s.request.sampling;
      s.settings.seed = s.request.seed ? *s.request.seed : seed_from_prompt(prompt);
      s.drafts = make_drafts(s);
      start_prefill(s);
    }
    // The chunk plan's next chunk: its cuts are a pure function of the token sequence.
    const auto end = *std::upper_bound(s.plan.ends.begin(), s.plan.ends.end(), s.prefilled);
    const auto len = end - s.prefilled;
    const auto tokens = std::span<const std::int32_t>(prompt).subspan(static_cast<std::size_t>(s.prefilled),
                                                                      static_cast<std::size_t>(len));
    const bool wants_hidden = s.drafts && s.drafts->wants_hidden();  // the draft head follows the prompt too
    if (s.request.prompt_logprobs) {
      std::vector<float> rows, hidden;
      s.logits = model_.forward_scored(*s.state, tokens, rows, wants_hidden ? &hidden : nullptr);
      score_prompt_rows(rows, static_cast<std::size_t>(model_.info().vocab), prompt, s.prefilled, s.request.logprobs,
                        s.prompt_logprobs);
      if (wants_hidden) s.drafts->observe(prompt, s.prefilled, hidden, len);
    } else if (wants_hidden) {
      std::vector<float> hidden;
      s.logits = model_.forward_hidden(*s.state, tokens, 1, hidden);
      s.drafts->observe(prompt, s.prefilled, hidden, len);
    } else {
      s.logits = model_.forward(*s.state, tokens, 1);
    }
    s.prefilled += len;
    if (options_.prompt_cache != nullptr && std::binary_search(s.retain.begin(), s.retain.end(), s.prefilled))
      options_.prompt_cache->insert(std::span<const std::int32_t>(prompt).first(static_cast<std::size_t>(s.prefilled)),
                                    s.state->image(), s.images);
    if (s.prefilled < n) return;
    if (s.request.prompt_logprobs) s.out->set_prompt_logprobs(s.prompt_logprobs);  // before any text
    if (!s.request.generate) {
      finish(s, FinishReason::Length);
      prefilling_.pop_front();
      return;
    }
    start_decoding(s);
  } catch (const std::exception& e) {
    finish(s, FinishReason::Error, e.what());
    prefilling_.pop_front();
    return;
  }
  decoding_.push_back(std::move(prefilling_.front()));
  prefilling_.pop_front();
}

void Scheduler::start_prefill(Stream& s) {
  const auto& prompt = s.request.prompt;
  s.plan = plan_chunks(prompt, options_.plan);
  PromptCache* cache = options_.prompt_cache;
  // An MTP head's own state follows every prompt row's hidden state, which a restored prefix never had.
  if (cache == nullptr || !cache->enabled() || (s.drafts && s.drafts->wants_hidden())) return;
  // Image placeholders are the same tokens whatever the image: the cache keys them by each image's content hash.
  if (s.request.images)
    for (const auto& span : s.request.images->spans()) s.images.push_back({span.start, span.end(), span.content_hash});
  const auto& starts = s.plan.message_starts;
  // Prompt scoring needs every prompt row's logits, and a restored prefix has none (a snapshot holds the
  // state, not the rows that built it), so such a request prefills from the start. Its states are those of a
  // plain prefill (scoring only adds an output projection), so it may still fill the cache below.
  if (const auto hit = s.request.prompt_logprobs ? PromptCache::Hit{} : cache->lookup(prompt, starts, s.images);
      hit.state) {
    try {
      s.state->restore_image(*hit.state);
      s.prefilled = s.cached = hit.tokens;
    } catch (const std::exception&) {  // a state of another shape: prefill from the start
      s.state = model_.new_state();
      s.state->set_images(s.request.images);
      s.prefilled = s.cached = 0;
    }
  }
  // Retained: the start of the second message (a shared system prompt) and the last message start (the next
  // turn of this conversation resumes there: its reply and the next message follow).
  if (starts.empty()) return;
  const bool opens_at_zero = prompt.front() == options_.plan.message_start;
  const std::size_t second = opens_at_zero ? 0 : 1;
  for (const std::int64_t p : {second < starts.size() ? starts[second] : std::int64_t{0}, starts.back()})
    if (p > s.prefilled &&
        !cache->contains(std::span<const std::int32_t>(prompt).first(static_cast<std::size_t>(p)), s.images))
      s.retain.push_back(p);
  std::sort(s.retain.begin(), s.retain.end());
  s.retain.erase(std::unique(s.retain.begin(), s.retain.end()), s.retain.end());
}

std::unique_ptr<DraftSource> Scheduler::make_drafts(const Stream& s) const {
  if (!s.request.draft || options_.max_drafts <= 0) return nullptr;
  if (!options_.mtp_drafts) return std::make_unique<ContextCopyDrafter>();
  DraftHead* head = model_.draft_head();
  if (head == nullptr) throw std::logic_error("MTP drafts asked of a model without a draft head");
  return std::make_unique<MtpDrafter>(*head, model_.info().hidden, s.settings.sampling, s.settings.seed);
}

void Scheduler::start_decoding(Stream& s) {
  const auto& req = s.request;
  const auto prompt = static_cast<std::int64_t>(req.prompt.size());
  std::int64_t budget = options_.context - prompt;  // positions left for generated tokens
  if (req.max_tokens > 0) budget = std::min(budget, req.max_tokens);
  s.text = text_();
  s.stops = std::make_unique<StopMatcher>(req.stop);
  s.settings.budget = budget;
  s.settings.eos = options_.eos;
  s.settings.max_drafts = s.drafts ? options_.max_drafts : 0;
  s.settings.full_windows = options_.full_windows;
  s.settings.constraint = req.constraint.get();
  s.settings.adjust = &req.adjust;
  s.settings.logprobs = req.logprobs;
  Stream* sp = &s;
  s.decoder = std::make_unique<StreamDecoder>(
      model_, *s.state, std::move(s.logits), req.prompt, s.settings, s.drafts.get(), [this, sp](std::int32_t token) {
        if (!sp->first_token_seen) {
          sp->first_token_seen = true;
          const double ttft = std::chrono::duration<double>(Clock::now() - sp->submitted).count();
          std::lock_guard lock(mu_);
          stats_.time_to_first_token.observe(ttft);
        }
        if (sp->settings.logprobs >= 0) sp->out->push_logprob(sp->decoder->logprobs().back());
        sp->out->push(sp->stops->feed(sp->text->push(token)));
        return !sp->stops->stopped();
      });
}

void Scheduler::decode_round() {
  // One round for every decoding stream: inputs are gathered first, then run as shared rounds (one forward
  // pass over several streams' rows, up to shared_rows) or, without sharing, one forward per stream; the
  // results go back to each stream's decoder.
  struct Work {
    Stream* stream;
    RoundInput input;
  };
  std::vector<Work> work;
  std::vector<std::pair<Stream*, std::string>> failed;
  work.reserve(decoding_.size());
  for (auto& s : decoding_) {
    try {
      if (auto in = s->decoder->next_input()) work.push_back({s.get(), std::move(*in)});
    } catch (const std::exception& e) {
      failed.emplace_back(s.get(), e.what());
    }
  }
  const auto run = [&](std::size_t first, std::size_t last) {  // work[first, last) in one call
    std::vector<ForwardPart> parts;
    for (std::size_t i = first; i < last; ++i)
      parts.push_back({work[i].stream->state.get(), work[i].input.tokens, work[i].input.ids, work[i].input.ahead,
                       work[i].input.hidden, work[i].input.choice});
    try {
      auto out = model_.forward_parts(parts);
      for (std::size_t i = first; i < last; ++i) {
        try {
          work[i].stream->decoder->accept(std::move(out[i - first]));
        } catch (const std::exception& e) {
          failed.emplace_back(work[i].stream, e.what());
        }
      }
    } catch (const std::exception& e) {
      for (std::size_t i = first; i < last; ++i) failed.emplace_back(work[i].stream, e.what());
    }
  };
  // Consecutive streams fill a shared round while their rows fit; a window wider than a round runs alone.
  std::size_t first = 0;
  std::int64_t rows = 0;
  for (std::size_t i = 0; i < work.size(); ++i) {
    const auto n = static_cast<std::int64_t>(work[i].input.tokens.size());
    if (i > first && rows + n > options_.shared_rows) {
      run(first, i);
      first = i;
      rows = 0;
    }
    rows += n;
  }
  if (first < work.size()) run(first, work.size());
  for (auto it = decoding_.begin(); it != decoding_.end();) {
    Stream& s = **it;
    const auto f = std::find_if(failed.begin(), failed.end(), [&](const auto& p) { return p.first == &s; });
    if (f != failed.end())
      finish(s, FinishReason::Error, f->second);
    else if (s.decoder->done())
      finish(s, s.decoder->finish());
    else {
      ++it;
      continue;
    }
    it = decoding_.erase(it);
  }
}

void Scheduler::finish(Stream& s, FinishReason reason, const std::string& error) {
  GenerationResult result;
  result.finish = reason;
  result.error = error;
  result.prompt_tokens = static_cast<std::int64_t>(s.request.prompt.size());
  result.cached_tokens = s.cached;
  result.prompt_logprobs = std::move(s.prompt_logprobs);
  if (s.decoder) {
    const auto& c = s.decoder->counters();
    result.completion_tokens = c.emitted;
    const auto& history = s.decoder->history();
    result.token_ids.assign(history.begin() + static_cast<std::ptrdiff_t>(s.request.prompt.size()), history.end());
    result.logprobs = s.decoder->logprobs();
    result.drafted = c.drafted;
    result.accepted = c.accepted;
    result.rounds = c.rounds;
    if (reason != FinishReason::Cancelled && reason != FinishReason::Error && !s.stops->stopped()) {
      try {
        s.out->push(s.stops->feed(s.text->flush()) + s.stops->flush());
        if (s.stops->stopped()) result.finish = FinishReason::Stop;
      } catch (const std::exception& e) {
        result.finish = FinishReason::Error;
        result.error = e.what();
      }
    }
    if (s.stops->stopped() && result.finish == FinishReason::Stop) result.stop_sequence = s.stops->matched();
  }
  s.decoder.reset();
  s.drafts.reset();  // with the MTP head's cache
  s.state.reset();   // the cache is freed now, not when the list entry goes
  const double latency = std::chrono::duration<double>(Clock::now() - s.submitted).count();
  {
    std::lock_guard lock(mu_);
    ++stats_.requests_total;
    stats_.prompt_tokens_total += result.prompt_tokens;
    stats_.completion_tokens_total += result.completion_tokens;
    stats_.drafted_total += result.drafted;
    stats_.accepted_total += result.accepted;
    stats_.rounds_total += result.rounds;
    if (result.finish == FinishReason::Cancelled)
      ++stats_.requests_cancelled;
    else
      stats_.e2e_latency.observe(latency);
    reserved_ -= s.reserved;
    --running_;
    admit_waiting_locked();
  }
  s.out->close(std::move(result));
}

}  // namespace tf
