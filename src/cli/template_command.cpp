// `tensorfold template`: renders a model's chat template the way transformers' apply_chat_template does
// and prints the prompt exactly (no newline added), or with --tokens its token ids.
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "checkpoint/checkpoint_error.h"
#include "cli/commands.h"
#include "text/template/chat_template.h"
#include "text/tokenizer/tokenizer.h"

namespace tf::cli {

namespace {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct TemplateOptions {
  std::string model;
  std::string chat_template;
  std::string messages;
  std::string tools;
  std::string kwargs;
  std::string template_name;
  std::string now;
  bool add_generation_prompt = false;
  bool continue_final_message = false;
  bool tokens = false;
};

nlohmann::ordered_json read_json_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(fmt::format("cannot read {} file {}", what, path));
  std::ostringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::ordered_json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) throw UsageError(fmt::format("{}: not valid JSON", path));
  return j;
}

int run_template(const TemplateOptions& o) {
  ChatInput input;
  // --messages: a JSON list of messages, or an object {"messages": [...], "tools": [...], ...} like a
  // chat completions request body.
  nlohmann::ordered_json m = read_json_file(o.messages, "messages");
  if (m.is_object()) {
    if (!m.contains("messages"))
      throw UsageError(o.messages + ": expected a list of messages or an object with \"messages\"");
    if (m.contains("tools") && !m["tools"].is_null()) input.tools = m["tools"];
    m = m["messages"];
  }
  if (!m.is_array()) throw UsageError(o.messages + ": expected a JSON list of messages");
  input.messages = std::move(m);
  if (!o.tools.empty()) {
    nlohmann::ordered_json t = read_json_file(o.tools, "tools");
    if (!t.is_array()) throw UsageError(o.tools + ": expected a JSON list of tools");
    input.tools = std::move(t);
  }
  if (!o.kwargs.empty()) {
    auto k = nlohmann::ordered_json::parse(o.kwargs, nullptr, false);
    if (k.is_discarded() || !k.is_object())
      throw UsageError("--kwargs: expected a JSON object, e.g. '{\"enable_thinking\": false}'");
    input.kwargs = std::move(k);
  }
  input.add_generation_prompt = o.add_generation_prompt;
  input.continue_final_message = o.continue_final_message;
  if (!o.template_name.empty()) input.template_name = o.template_name;
  RenderOptions render_options;
  if (!o.now.empty()) {
    render_options.now = parse_template_time(o.now);
    if (!render_options.now) throw UsageError("--now: expected YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS]");
  }

  const std::string model = resolve_model_path(o.model);
  const ChatTemplate tmpl = load_chat_template(model, o.chat_template);
  // A builtin encoding reads OpenAI's string arguments itself, as Python's json does.
  if (!tmpl.builtin_encoding()) normalize_chat_messages(input.messages);
  const std::string prompt = tmpl.render(input, render_options);
  if (o.tokens) {
    // as apply_chat_template(tokenize=True): the prompt encoded without adding special tokens
    const Tokenizer tok = load_tokenizer(model);
    const std::vector<int32_t> ids = tok.encode(prompt, false);
    std::string out = "[";
    for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
    out += "]\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
  } else {
    std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace

Command add_template_command(CLI::App& app) {
  auto o = std::make_shared<TemplateOptions>();
  auto* sub =
      app.add_subcommand("template", "Render the model's chat template (as transformers does) and print the prompt");
  sub->add_option("model", o->model, "GGUF file or model directory (default: the embedded model)");
  sub->add_option("--chat-template", o->chat_template,
                  "a Jinja file to use instead of the model's chat template, or builtin:deepseek_v4 (DeepSeek-V4's "
                  "encoding, which a deepseek_v4 checkpoint gets by itself)");
  sub->add_option("--messages", o->messages,
                  "JSON file: a list of messages, or {\"messages\": [...], \"tools\": [...]}")
      ->required();
  sub->add_option("--tools", o->tools, "JSON file: a list of tools (JSON schemas)");
  sub->add_flag("--add-generation-prompt", o->add_generation_prompt, "end with the assistant turn's header");
  sub->add_flag("--continue-final-message", o->continue_final_message,
                "end the prompt inside the final message so the model continues it");
  sub->add_option("--kwargs", o->kwargs,
                  "JSON object of extra template variables, e.g. '{\"enable_thinking\": false}'");
  sub->add_option("--template-name", o->template_name, "which of the model's named templates (e.g. tool_use)");
  sub->add_flag("--tokens", o->tokens, "print the prompt's token ids (a JSON array) instead of its text");
  sub->add_option("--now", o->now,
                  "fix the date strftime_now() sees: YYYY-MM-DD[THH:MM[:SS]] (reproducible output, tests)");
  return {sub, [o] {
            try {
              return run_template(*o);
            } catch (const TemplateError& e) {
              fmt::print(stderr, "tensorfold template: {}\n", e.what());
              return 1;
            } catch (const CheckpointError& e) {
              fmt::print(stderr, "tensorfold template: {}\n", e.what());
              return 1;
            } catch (const UsageError& e) {
              fmt::print(stderr, "tensorfold template: {}\n", e.what());
              return 1;
            }
          }};
}

}  // namespace tf::cli
