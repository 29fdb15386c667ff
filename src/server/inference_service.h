#pragma once
// What the HTTP layer needs from the engine: rendering, tokenizing, limits, defaults and submitting a
// generation. The real one wraps tf::Engine (engine_service.h); tests use a fake.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/generation.h"
#include "engine/sampler.h"
#include "text/template/chat_template.h"

namespace tf::server {

class InferenceService {
 public:
  virtual ~InferenceService() = default;
  virtual std::int64_t context_length() const = 0;
  // Token ids a prompt may use are 0 .. vocab_size() - 1.
  virtual std::int64_t vocab_size() const = 0;
  virtual SamplingParams default_sampling() const = 0;
  // Renders the chat template (ChatInput: text/template/chat_template.h); throws tf::TemplateError when the
  // template rejects the input.
  virtual std::string render_chat(const ChatInput& input) const = 0;
  // The template text render_chat() uses for `input` (tool-call markers tell the format: text/tool_calls).
  virtual std::string chat_template_source(const ChatInput& input) const = 0;
  virtual std::vector<std::int32_t> tokenize(const std::string& text, bool add_special) const = 0;
  // Token ids (each below vocab_size()) to text, special tokens included; and each id's vocabulary string.
  virtual std::string detokenize(std::span<const std::int32_t> ids) const = 0;
  virtual std::vector<std::string> token_strings(std::span<const std::int32_t> ids) const = 0;
  // A constraint that holds the reply's tool calls to their grammar (text/tool_calls/call_grammar.h): after
  // `after` when set (a forced call), or from the first of `triggers` on (lazy: tool_choice auto).
  virtual std::shared_ptr<const TokenConstraint> call_grammar_constraint(
      std::shared_ptr<const grammar::Grammar> grammar, std::string after,
      std::vector<tools::CallTrigger> triggers) const = 0;
  // A constraint that closes the reply's reasoning block after its budget of tokens.
  virtual std::shared_ptr<const TokenConstraint> reasoning_budget(ReasoningBudget budget) const = 0;
  // A constraint that holds the reply to a grammar (structured output), from after `after` when set.
  virtual std::shared_ptr<const TokenConstraint> grammar_constraint(std::shared_ptr<const grammar::Grammar> grammar,
                                                                    std::string after) const = 0;
  virtual std::shared_ptr<GenerationStream> submit(GenerationRequest request) = 0;
  // The model's image encoder where the server was started with --vision, else null.
  virtual const ImageEncoder* image_encoder() const { return nullptr; }
  // Totals since start, for /health.
  virtual EngineStats stats() const = 0;
};

}  // namespace tf::server
