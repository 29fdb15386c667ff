#pragma once
// InferenceService over the real engine.
#include "server/inference_service.h"

namespace tf::server {

class EngineService final : public InferenceService {
 public:
  explicit EngineService(Engine& engine) : engine_(engine) {}
  std::int64_t context_length() const override;
  std::int64_t vocab_size() const override;
  SamplingParams default_sampling() const override;
  std::string render_chat(const ChatInput& input) const override;
  std::string chat_template_source(const ChatInput& input) const override;
  std::vector<std::int32_t> tokenize(const std::string& text, bool add_special) const override;
  std::string detokenize(std::span<const std::int32_t> ids) const override;
  std::vector<std::string> token_strings(std::span<const std::int32_t> ids) const override;
  std::shared_ptr<const TokenConstraint> call_grammar_constraint(
      std::shared_ptr<const grammar::Grammar> grammar, std::string after,
      std::vector<tools::CallTrigger> triggers) const override;
  std::shared_ptr<const TokenConstraint> reasoning_budget(ReasoningBudget budget) const override;
  std::shared_ptr<const TokenConstraint> grammar_constraint(std::shared_ptr<const grammar::Grammar> grammar,
                                                            std::string after) const override;
  std::shared_ptr<GenerationStream> submit(GenerationRequest request) override;
  const ImageEncoder* image_encoder() const override { return engine_.image_encoder(); }
  EngineStats stats() const override { return engine_.stats(); }

 private:
  Engine& engine_;
};

}  // namespace tf::server
