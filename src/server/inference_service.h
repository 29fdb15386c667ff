#pragma once
// What the HTTP layer needs from the engine: rendering, tokenizing, limits, defaults and submitting a
// generation. The real one wraps tf::Engine (engine_service.h); tests use a fake.
#include <cstdint>
#include <memory>
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
  virtual std::vector<std::int32_t> tokenize(const std::string& text, bool add_special) const = 0;
  virtual std::shared_ptr<GenerationStream> submit(GenerationRequest request) = 0;
  // Totals since start, for /health.
  virtual EngineStats stats() const = 0;
};

}  // namespace tf::server
