#include "server/chat_setup.h"

#include <fmt/format.h>

#include "server/api_error.h"
#include "server/image_fetch.h"

namespace tf::server {

ChatSetup prepare_chat(ApiContext& ctx, const ChatRequest& request, const std::string& param) {
  auto& service = ctx.service();
  ChatSetup s;
  ChatInput input;
  input.messages = request.messages;
  input.add_generation_prompt = request.add_generation_prompt;
  input.kwargs = request.template_kwargs;
  if (ctx.options().reasoning && !input.kwargs.contains("enable_thinking"))
    input.kwargs["enable_thinking"] = *ctx.options().reasoning;
  s.tools = plan_tools(service, request.tools, input);
  std::string prompt_text = render_chat_prompt(service, input, param);
  if (request.continue_final_message) {
    // vLLM's way: the prompt is cut right after the final message's text, before the template closes the turn.
    const auto& last = input.messages.back();
    const std::string text = last.value("content", "");
    const auto at = prompt_text.rfind(text);
    if (text.empty() || at == std::string::npos)
      throw invalid_request(fmt::format("Invalid '{}': continue_final_message: the chat template does not write the "
                                        "final message's text as given, so it cannot be continued.",
                                        param),
                            "continue_final_message", "invalid_value");
    prompt_text.resize(at + text.size());
  }
  s.reasoning.split = true;
  s.reasoning.markers = tools::detect_reasoning_markers(service.chat_template_source(input));
  s.reasoning.start_inside = tools::prompt_opens_reasoning(prompt_text, s.reasoning.markers);
  auto prompt = service.tokenize(prompt_text, /*add_special=*/false);
  std::shared_ptr<const StreamImages> images;
  if (!request.images.empty()) {
    const ImageEncoder* encoder = service.image_encoder();
    if (encoder == nullptr)
      throw unsupported(fmt::format("Invalid '{}': image input is off on this server; start it with `tensorfold serve "
                                    "--vision` (a checkpoint with a vision tower) to send images.",
                                    request.images.front().param),
                        request.images.front().param);
    const auto fetcher = ctx.options().vision_urls ? make_curl_image_fetcher() : nullptr;
    images = read_images(*encoder, request.images, prompt, {}, fetcher.get(), param);
  }
  s.generation = plan_generation(service, ctx.options(), std::move(prompt), request.sampling, param);
  s.generation.images = std::move(images);
  if (s.tools.calls && s.tools.forced) {
    // A prompt that opened a reasoning block: the call comes after the block closes.
    s.generation.constraint = service.call_grammar_constraint(
        s.tools.calls, s.reasoning.start_inside ? s.reasoning.markers.close : std::string(), {});
  } else if (s.tools.calls && !request.structured.grammar) {
    // tool_choice auto: free text until the model opens a call, then the call's grammar.
    s.generation.constraint = service.call_grammar_constraint(s.tools.calls, {}, tools::call_triggers(*s.tools.format));
  }
  if (request.structured.grammar) {
    if (s.tools.forced)
      throw invalid_request(fmt::format("Invalid '{}': a structured reply cannot be combined with a forced tool call "
                                        "(tool_choice 'required' or a named function).",
                                        request.structured.param),
                            request.structured.param, "invalid_value");
    // A prompt that opened a reasoning block: the structured reply comes after the block closes.
    s.generation.constraint = service.grammar_constraint(
        request.structured.grammar, s.reasoning.start_inside ? s.reasoning.markers.close : std::string());
  }
  const auto budget = request.thinking_budget.value_or(ctx.options().reasoning_budget);
  if (budget > 0)
    s.generation.constraint = both_constraints(
        s.generation.constraint, service.reasoning_budget({budget, s.reasoning.start_inside, s.reasoning.markers.open,
                                                           s.reasoning.markers.close}));
  return s;
}

}  // namespace tf::server
