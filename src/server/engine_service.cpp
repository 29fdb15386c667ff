#include "server/engine_service.h"

#include <algorithm>

#include "text/tokenizer/tokenizer.h"

namespace tf::server {

std::int64_t EngineService::context_length() const { return engine_.context_length(); }

std::int64_t EngineService::vocab_size() const {
  // Ids the model has embedding rows for and the tokenizer can decode.
  const auto model_vocab = engine_.model_info().vocab;
  const auto tok_vocab = static_cast<std::int64_t>(engine_.tokenizer().vocab_size());
  return model_vocab > 0 ? std::min(model_vocab, tok_vocab) : tok_vocab;
}

SamplingParams EngineService::default_sampling() const { return engine_.default_sampling(); }

std::string EngineService::render_chat(const ChatInput& input) const { return engine_.render_chat(input); }

std::string EngineService::chat_template_source(const ChatInput& input) const {
  return engine_.chat_template_source(input);
}

std::shared_ptr<const TokenConstraint> EngineService::call_grammar_constraint(
    std::shared_ptr<const grammar::Grammar> grammar, std::string after,
    std::vector<tools::CallTrigger> triggers) const {
  return engine_.call_grammar_constraint(std::move(grammar), std::move(after), std::move(triggers));
}

std::shared_ptr<const TokenConstraint> EngineService::reasoning_budget(ReasoningBudget budget) const {
  return engine_.reasoning_budget(std::move(budget));
}

std::shared_ptr<const TokenConstraint> EngineService::grammar_constraint(
    std::shared_ptr<const grammar::Grammar> grammar, std::string after) const {
  return engine_.grammar_constraint(std::move(grammar), std::move(after));
}

std::vector<std::int32_t> EngineService::tokenize(const std::string& text, bool add_special) const {
  return engine_.tokenize(text, add_special);
}

std::string EngineService::detokenize(std::span<const std::int32_t> ids) const {
  return engine_.tokenizer().decode(ids);
}

std::vector<std::string> EngineService::token_strings(std::span<const std::int32_t> ids) const {
  std::vector<std::string> out;
  for (const auto id : ids) out.push_back(engine_.tokenizer().id_to_token(id).value_or(""));
  return out;
}

std::shared_ptr<GenerationStream> EngineService::submit(GenerationRequest request) {
  return engine_.submit(std::move(request));
}

}  // namespace tf::server
