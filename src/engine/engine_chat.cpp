// The engine's text side: the model's chat template, loaded once and rendered per request.
#include "engine/engine.h"
#include "text/template/chat_template.h"

namespace tf {

void Engine::load_chat_template(const EngineOptions& options) {
  template_ = std::make_unique<ChatTemplate>(tf::load_chat_template(options.model_path, options.chat_template_file));
}

std::string Engine::render_chat(ChatInput input) const {
  normalize_chat_messages(input.messages);
  return template_->render(input);
}

}  // namespace tf
