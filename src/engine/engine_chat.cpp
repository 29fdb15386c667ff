// The engine's text side: the model's chat template, loaded once and rendered per request, and the prefix
// constraints built over its tokenizer.
#include "engine/engine.h"
#include "engine/grammar_constraint.h"
#include "engine/token_constraint.h"
#include "text/template/chat_template.h"

namespace tf {

void Engine::load_chat_template(const EngineOptions& options) {
  template_ = std::make_unique<ChatTemplate>(tf::load_chat_template(options.model_path, options.chat_template_file));
}

const std::string& Engine::chat_template_source(const ChatInput& input) const { return template_->source(input); }

const std::shared_ptr<const TokenTexts>& Engine::decoded_tokens() const {
  std::call_once(token_texts_once_, [this] { token_texts_ = token_texts(*tokenizer_); });
  return token_texts_;
}

std::shared_ptr<const TokenConstraint> Engine::call_grammar_constraint(std::shared_ptr<const grammar::Grammar> grammar,
                                                                       std::string after,
                                                                       std::vector<tools::CallTrigger> triggers) const {
  std::call_once(call_vocabulary_once_,
                 [this] { call_vocabulary_ = token_vocabulary(*tokenizer_, tools::tool_call_markers()); });
  return make_grammar_constraint(call_vocabulary_, *grammar, eos_ids_, std::move(after), std::move(triggers));
}

std::shared_ptr<const TokenConstraint> Engine::reasoning_budget(ReasoningBudget budget) const {
  return make_reasoning_budget(decoded_tokens(), std::move(budget));
}

std::shared_ptr<const TokenConstraint> Engine::grammar_constraint(std::shared_ptr<const grammar::Grammar> grammar,
                                                                  std::string after) const {
  std::call_once(vocabulary_once_, [this] { vocabulary_ = token_vocabulary(*tokenizer_); });
  return make_grammar_constraint(vocabulary_, *grammar, eos_ids_, std::move(after));
}

std::string Engine::render_chat(ChatInput input) const {
  // A builtin encoding reads OpenAI's string arguments itself, as Python's json does (no 64-bit rounding).
  if (!template_->builtin_encoding()) normalize_chat_messages(input.messages);
  return template_->render(input);
}

}  // namespace tf
