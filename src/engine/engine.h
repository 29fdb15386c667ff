#pragma once
// The backend-neutral serving engine: owns the model, its tokenizer and chat template, and a worker thread
// that runs generations. It knows nothing of HTTP; the server turns requests into GenerationRequests and
// reads GenerationStreams.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "backends/prompt_precision.h"
#include "engine/engine_stats.h"
#include "engine/generation.h"
#include "engine/grammar_constraint.h"
#include "engine/memory_plan.h"
#include "engine/prompt_cache.h"
#include "engine/row_check.h"
#include "engine/scheduler.h"
#include "families/image_encoder.h"
#include "families/model.h"

namespace tf {

class Backend;
class Tokenizer;
class ChatTemplate;
struct ChatInput;  // text/template/chat_template.h

struct EngineOptions {
  std::string model_path;
  std::string backend = "auto";   // auto | mlx | cuda
  // Tensor-parallel ranks (backends/tensor_parallel/): 1, or that many backends each holding a part of every
  // divided weight (CUDA: one device each, summing over NCCL; MLX: in turn on the CPU, summing on the host).
  int tp = 1;
  std::int64_t context = 0;       // 0: the checkpoint's context length
  std::string chat_template_file; // overrides the checkpoint's template
  // Serve-flag overrides of the checkpoint's sampling defaults (generation_config.json / GGUF general.sampling.*).
  std::optional<float> temperature, top_p, min_p;
  std::optional<int> top_k;
  // Drafting (exact speculative decoding): "copies" drafts from context copies, "mtp" from the checkpoint's
  // MTP head (an error where it has none), "auto" from the MTP head where there is one and else from copies,
  // "none" never drafts. max_drafts caps the tokens proposed per round; the load-time row check may lower it.
  std::string drafter = "auto";
  int max_drafts = 8;
  // Concurrency (ARCHITECTURE §5): streams admitted at once (0: auto, 4 on MLX and 16 on CUDA), the share of
  // wall time decode keeps while prompts prefill, and the most requests waiting for admission.
  int parallel = 0;
  double decode_share = 0.5;
  std::size_t max_queue = 64;
  // Prompt caching (engine/prompt_cache.h): the memory retained prefixes may hold (negative: auto, a quarter of
  // the room beside the weights up to 16 GiB; 0: off), the snapshot directory ("": the default under the cache
  // directory, "none": no snapshots) and its bound.
  double prompt_cache_gib = -1.0;
  std::string snapshot_dir;
  double max_snapshot_gib = 8.0;
  // Prompt rows' precision (backends/prompt_precision.h) where the backend has a prompt path of its own (CUDA):
  // unset, bf16 there; set on a backend without one, an error.
  std::optional<PromptPrecision> prompt_precision;
  // --vision: load the checkpoint's image encoder (an error where it has none) so requests may carry images.
  bool vision = false;
};

class Engine {
 public:
  explicit Engine(const EngineOptions& options);  // loads everything; throws CheckpointError / runtime_error
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const ModelInfo& model_info() const;
  std::int64_t context_length() const { return context_; }
  std::string backend_name() const;
  int tensor_parallel() const { return tp_; }  // ranks (--tp)
  const Tokenizer& tokenizer() const;
  // The sampling defaults after checkpoint defaults and serve flags; requests override them.
  const SamplingParams& default_sampling() const { return default_sampling_; }
  // Drafts per round actually served (0: drafting off), and why.
  int max_drafts() const { return max_drafts_; }
  const RowCheckReport& row_check() const { return row_check_; }
  std::string drafting_summary() const;
  // The prompt precision in force, or "" where the backend has no choice; and the startup report's line.
  std::string prompt_precision() const;
  std::string prompt_precision_summary() const;

  // Renders the chat template (ChatInput from text/template/chat_template.h; OpenAI-style tool-call
  // arguments strings are parsed as transformers expects); throws TemplateError, a client error.
  std::string render_chat(ChatInput input) const;
  // The template text render_chat() uses for this input (the server reads which tool-call markers it writes).
  const std::string& chat_template_source(const ChatInput& input) const;
  std::vector<std::int32_t> tokenize(const std::string& text, bool add_special) const;
  // Tool calls: the reply held to a call grammar (text/tool_calls/call_grammar.h), after `after` (forced) or
  // from the first of `triggers` on (lazy); the format's marker tokens may be written.
  std::shared_ptr<const TokenConstraint> call_grammar_constraint(std::shared_ptr<const grammar::Grammar> grammar,
                                                                 std::string after,
                                                                 std::vector<tools::CallTrigger> triggers) const;
  // A constraint that closes a reasoning block after its budget of tokens (engine/token_constraint.h).
  std::shared_ptr<const TokenConstraint> reasoning_budget(ReasoningBudget budget) const;
  // Structured output: the reply held to `grammar` (after `after`, when set); engine/grammar_constraint.h.
  std::shared_ptr<const TokenConstraint> grammar_constraint(std::shared_ptr<const grammar::Grammar> grammar,
                                                            std::string after = {}) const;

  // Admits or queues a generation; text arrives on the returned stream. The prompt must fit the context (the
  // server checks and answers 400 otherwise); max_tokens is clipped to the context end. Throws AdmissionError
  // (engine/admission_error.h) when the request can never fit the memory budget or the queue is full.
  std::shared_ptr<GenerationStream> submit(GenerationRequest request);
  EngineStats stats() const;
  // Streams served at once, and the memory budget with what a request costs in it.
  int parallel() const;
  const MemoryPlan& memory_plan() const;
  std::string concurrency_summary() const;
  std::string prompt_cache_summary() const;
  // The image encoder (--vision), or null.
  const ImageEncoder* image_encoder() const { return image_encoder_.get(); }

 private:
  void load_chat_template(const EngineOptions& options);  // engine_chat.cpp
  MemoryPlan plan_memory() const;
  // Everything a stream state's bits depend on besides its tokens (snapshot headers).
  std::string state_identity(const std::string& model_path, const ChunkPlanRule& rule) const;
  ChunkPlanRule chunk_plan_rule() const;  // engine_cache.cpp
  void open_prompt_cache(const EngineOptions& options, MemoryPlan& memory, const ChunkPlanRule& rule);

  std::unique_ptr<Backend> backend_;
  int tp_ = 1;
  std::unique_ptr<Model> model_;
  std::unique_ptr<ImageEncoder> image_encoder_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<ChatTemplate> template_;
  mutable std::once_flag token_texts_once_;
  mutable std::shared_ptr<const TokenTexts> token_texts_;
  const std::shared_ptr<const TokenTexts>& decoded_tokens() const;  // token_texts_, decoded on first use
  mutable std::once_flag vocabulary_once_;
  mutable std::shared_ptr<const TokenVocabulary> vocabulary_;  // token bytes and their trie, on first use
  mutable std::once_flag call_vocabulary_once_;
  mutable std::shared_ptr<const TokenVocabulary> call_vocabulary_;  // the same with the tool-call markers
  std::vector<std::int32_t> eos_ids_;
  std::int64_t context_ = 0;
  SamplingParams default_sampling_;
  int max_drafts_ = 0;
  bool full_windows_ = false;  // see DecodeSettings::full_windows
  // The served verify window may cost this much over one decode step for rounds to always draft the most.
  static constexpr double kFullWindowCost = 2.0;
  RowCheckReport row_check_;
  std::string drafter_;  // what serves: "none", "copies" or "mtp"
  std::unique_ptr<PromptCache> prompt_cache_;  // before the scheduler: it outlives the scheduler's use
  std::string prompt_cache_off_;               // why there is no prompt cache, when there is none
  std::unique_ptr<Scheduler> scheduler_;  // last: it stops before the model it runs goes
};

}  // namespace tf
