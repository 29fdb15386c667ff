#pragma once
// What the server hands the engine for one completion, and the channel the text comes back on.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/logit_adjust.h"
#include "engine/sampler.h"
#include "engine/token_constraint.h"
#include "families/stream_images.h"

namespace tf {

struct GenerationRequest {
  std::vector<std::int32_t> prompt;  // rendered and tokenized
  SamplingParams sampling;
  std::optional<std::uint64_t> seed;                  // none: a hash of the prompt (seed_from_prompt)
  std::int64_t max_tokens = 0;                        // 0: until the context ends
  std::vector<std::string> stop;                      // stop strings; never part of the returned text
  bool draft = true;                                  // false: decode serially (meaningful once drafting lands)
  std::shared_ptr<const TokenConstraint> constraint;  // masks every sampled row (tool_choice required/named)
  LogitAdjustments adjust;                            // logit_bias and penalties
  int logprobs = -1;  // >= 0: record each token's log-probability and this many alternatives
  // Prompt scoring (completions' echo with logprobs): each prompt token after the first gets its
  // log-probability under the model's raw distribution (the log-softmax of its row's logits at temperature 1:
  // no sampling settings, logit_bias or penalties apply to the prompt) and max(logprobs, 0) alternatives.
  // Prefill then computes every prompt row's logits, which it does only for these requests.
  bool prompt_logprobs = false;
  bool generate = true;  // false: prefill only, no token generated (echo with max_tokens 0); finish is Length
  // The prompt's images (--vision): embeddings at their placeholder tokens and M-RoPE positions. The prompt cache
  // keys their placeholder tokens by each image's content hash (engine/prompt_cache.h).
  std::shared_ptr<const StreamImages> images;
};

enum class FinishReason { Stop, Length, Cancelled, Error };
const char* finish_reason_name(FinishReason r);  // "stop", "length", "cancelled", "error"

struct GenerationResult {
  FinishReason finish = FinishReason::Stop;
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
  std::int64_t cached_tokens = 0;
  // Drafting counters: tokens proposed, proposals accepted, forward rounds of the decode loop.
  std::int64_t drafted = 0, accepted = 0, rounds = 0;
  std::vector<std::int32_t> token_ids;        // every generated token, in order (stop strings included)
  std::vector<TokenLogprob> logprobs;         // one per token of token_ids, when the request asked for them
  std::vector<TokenLogprob> prompt_logprobs;  // prompt_logprobs: one per prompt token after the first
  std::string error;                          // set when finish == Error
  std::string stop_sequence;                  // the request's stop string that ended the text, when one did
};

// A thread-safe, single-consumer channel from the engine thread to one HTTP handler. The engine pushes text
// pieces (whole UTF-8 characters, stop strings held back) and then closes it with the result.
class GenerationStream {
 public:
  // Blocks until the next piece of text or the end. Returns false at the end; result() is then valid.
  bool next(std::string& text);
  const GenerationResult& result() const { return result_; }
  // Asks the engine to stop this generation; it does so within one decode step. Safe from any thread.
  void cancel();
  bool cancelled() const;
  // The log-probability records pushed since the last call (each pushed before its token's text).
  std::vector<TokenLogprob> take_logprobs();
  // The prompt's records (GenerationRequest::prompt_logprobs), set when prefill ends, before any text.
  std::vector<TokenLogprob> prompt_logprobs() const;

  // Engine side.
  void push(std::string text);
  void push_logprob(TokenLogprob record);
  void set_prompt_logprobs(std::vector<TokenLogprob> records);
  void close(GenerationResult result);

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> pieces_;
  std::vector<TokenLogprob> logprobs_;
  std::vector<TokenLogprob> prompt_logprobs_;
  bool closed_ = false;
  bool cancel_ = false;
  GenerationResult result_;
};

}  // namespace tf
