#pragma once
// The backend-neutral serving engine: owns the model, its tokenizer and chat template, and a worker thread
// that runs generations. It knows nothing of HTTP; the server turns requests into GenerationRequests and
// reads GenerationStreams.
#include <atomic>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "engine/generation.h"
#include "families/model.h"

namespace tf {

class Backend;
class Tokenizer;
class ChatTemplate;
struct ChatInput;  // text/template/chat_template.h

struct EngineOptions {
  std::string model_path;
  std::string backend = "auto";   // auto | mlx | cuda
  std::int64_t context = 0;       // 0: the checkpoint's context length
  std::string chat_template_file; // overrides the checkpoint's template
  // Serve-flag overrides of the checkpoint's sampling defaults (generation_config.json / GGUF general.sampling.*).
  std::optional<float> temperature, top_p, min_p;
  std::optional<int> top_k;
  // Drafting (exact speculative decoding): "auto" and "copies" draft from context copies, "none" never
  // drafts. max_drafts caps the tokens proposed per round; the load-time row check may lower it.
  std::string drafter = "auto";
  int max_drafts = 8;
};

// What the load-time row check found: the widest verify window (1 + drafts) whose logits equal serial
// decoding bit for bit, per tested width.
struct RowCheckReport {
  int max_window = 1;
  std::vector<std::pair<int, bool>> widths;  // (window width, bit-identical)
  // Wall time of a forward of w rows over one of 1 row, for w = 2..max_window (index w - 2), measured after
  // the check on a backend whose 1-row forward is fast (empty otherwise: timing would slow startup).
  std::vector<double> costs;
};

struct EngineStats {
  std::int64_t requests_total = 0, prompt_tokens_total = 0, completion_tokens_total = 0;
  std::int64_t drafted_total = 0, accepted_total = 0, rounds_total = 0;
  bool busy = false;
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
  const Tokenizer& tokenizer() const;
  // The sampling defaults after checkpoint defaults and serve flags; requests override them.
  const SamplingParams& default_sampling() const { return default_sampling_; }
  // Drafts per round actually served (0: drafting off), and why.
  int max_drafts() const { return max_drafts_; }
  const RowCheckReport& row_check() const { return row_check_; }
  std::string drafting_summary() const;

  // Renders the chat template (ChatInput from text/template/chat_template.h; OpenAI-style tool-call
  // arguments strings are parsed as transformers expects); throws TemplateError, a client error.
  std::string render_chat(ChatInput input) const;
  std::vector<std::int32_t> tokenize(const std::string& text, bool add_special) const;

  // Queues a generation; text arrives on the returned stream. The prompt must fit the context (the server
  // checks and answers 400 otherwise); max_tokens is clipped to the context end.
  std::shared_ptr<GenerationStream> submit(GenerationRequest request);
  EngineStats stats() const;

 private:
  struct Job;
  void load_chat_template(const EngineOptions& options);  // engine_chat.cpp
  void worker();
  void run(Job& job);

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<ChatTemplate> template_;
  std::vector<std::int32_t> eos_ids_;
  std::int64_t context_ = 0;
  SamplingParams default_sampling_;
  int max_drafts_ = 0;
  bool full_windows_ = false;  // see DecodeSettings::full_windows
  // The served verify window may cost this much over one decode step for rounds to always draft the most.
  static constexpr double kFullWindowCost = 2.0;
  RowCheckReport row_check_;
  std::string drafter_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Job>> queue_;
  bool stopping_ = false;
  EngineStats stats_;
  std::thread thread_;
};

}  // namespace tf
