#pragma once
// Chat templates rendered exactly as Hugging Face transformers renders them (apply_chat_template):
// jinja2's ImmutableSandboxedEnvironment with trim_blocks + lstrip_blocks, the loopcontrols extension and
// {% generation %}, tojson as json.dumps(ensure_ascii=False), raise_exception() and strftime_now().
//
//   tf::ChatTemplate t = tf::load_chat_template("model.gguf");     // compiled once
//   tf::ChatInput in;  in.messages = ...;  in.add_generation_prompt = true;
//   std::string prompt = t.render(in);                              // thread-safe, const
//
// Every failure is a tf::TemplateError (a syntax error at load, or an error raised while rendering).
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/template/template_error.h"

namespace tf {

namespace jinja {
struct TemplateAst;
}

// Resource limits of one render; a template that exceeds them fails with TemplateError::Kind::Limit.
struct TemplateLimits {
  std::size_t max_output_bytes = std::size_t{64} << 20;  // the prompt, and any one value built on the way
  std::uint64_t max_work = 100'000'000;                  // loop iterations and bytes/items processed
  int max_depth = 400;  // nested evaluation incl. macro recursion (each level is a few C++ stack frames)
};

struct RenderOptions {
  TemplateLimits limits;
  // The clock strftime_now() reads (broken-down local time). Unset: the current local time. Fixed in
  // tests so that templates that print today's date render reproducibly.
  std::optional<std::tm> now;
};

// One compiled Jinja template. Immutable after compile; render() is const and may run concurrently.
class JinjaTemplate {
 public:
  static JinjaTemplate compile(std::string_view source);  // throws TemplateError(Syntax)
  // Renders with the given variables (a JSON object; arrays/objects become Python lists/dicts).
  std::string render(const nlohmann::ordered_json& variables, const RenderOptions& options = {}) const;

 private:
  std::shared_ptr<const jinja::TemplateAst> ast_;
  friend class ChatTemplate;
};

// What transformers' apply_chat_template passes to the template. JSON objects keep their key order
// (ordered_json), as Python dicts do, so tools render with the client's key order.
struct ChatInput {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();  // [{role, content, ...}, ...]
  std::optional<nlohmann::ordered_json> tools;                        // list of JSON schemas; absent renders as None
  std::optional<nlohmann::ordered_json> documents;                    // absent renders as None
  bool add_generation_prompt = false;
  // Cut the prompt right after the final message's content so the model continues it (transformers'
  // continue_final_message). Exclusive with add_generation_prompt.
  bool continue_final_message = false;
  // Extra template variables (enable_thinking, reasoning_effort, ...); they override special tokens.
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();
  // For a model with named templates: use this one (default: "tool_use" when tools are given and the
  // model has it, else "default").
  std::optional<std::string> template_name;
};

// A model's prompt format built by code rather than a Jinja template (a model that ships none).
enum class BuiltinEncoding {
  DeepSeekV4,  // encoding/encoding_dsv4.py (text/template/dsv4_encoding.h)
};
// "deepseek_v4" for --chat-template builtin:deepseek_v4; nullopt for an unknown name.
std::optional<BuiltinEncoding> builtin_encoding_from_name(std::string_view name);
// The encoding for a model architecture (config.json model_type, GGUF general.architecture) that ships no
// template: deepseek_v4 / deepseek4.
std::optional<BuiltinEncoding> builtin_encoding_for_architecture(std::string_view architecture);

class ChatTemplate {
 public:
  // special_tokens: {"bos_token": "<s>", "eos_token": "</s>", ..., "additional_special_tokens": [...]},
  // the tokenizer's special_tokens_map (only the tokens the model has).
  explicit ChatTemplate(std::string_view source,
                        nlohmann::ordered_json special_tokens = nlohmann::ordered_json::object());
  // Named templates (tokenizer_config.json's list form, GGUF tokenizer.chat_template.<name>).
  explicit ChatTemplate(const std::vector<std::pair<std::string, std::string>>& named_sources,
                        nlohmann::ordered_json special_tokens = nlohmann::ordered_json::object());

  // A builtin encoding: render() runs it (the special tokens are the model's, for reference only).
  static ChatTemplate builtin(BuiltinEncoding encoding,
                              nlohmann::ordered_json special_tokens = nlohmann::ordered_json::object());
  std::optional<BuiltinEncoding> builtin_encoding() const { return builtin_; }

  std::string render(const ChatInput& input, const RenderOptions& options = {}) const;

  // The template source that render() would use for this input. For a builtin encoding, a Jinja comment
  // naming it and the markers it writes (reasoning, tool calls), which is what callers read a source for.
  const std::string& source(const ChatInput& input) const;
  std::vector<std::string> names() const;  // "default" for a single template
  const nlohmann::ordered_json& special_tokens() const { return special_tokens_; }

 private:
  struct Entry {
    std::string name;
    std::string source;
    JinjaTemplate compiled;
  };
  std::vector<Entry> entries_;
  nlohmann::ordered_json special_tokens_;
  std::optional<BuiltinEncoding> builtin_;
  ChatTemplate() = default;
  const Entry& select(const ChatInput& input) const;
};

// Loads the chat template and special-token strings of a model: a GGUF file (tokenizer.chat_template,
// tokenizer.chat_template.<name>, token strings of tokenizer.ggml.*_token_id) or a Hugging Face
// directory (chat_template.jinja, else tokenizer_config.json's chat_template, a string or a list of
// {name, template}; additional_chat_templates/*.jinja; special tokens from tokenizer_config.json).
// override_file, when set, replaces the model's template with that file's text (the special tokens
// still come from the model when model_path is not empty), or names a builtin encoding
// ("builtin:deepseek_v4"). A model with no template whose architecture has a builtin encoding gets it. Throws
// TemplateError (Input) when no template is found, and CheckpointError for an unreadable GGUF file.
ChatTemplate load_chat_template(const std::string& model_path, const std::string& override_file = "");

// OpenAI-style input to the Hugging Face convention: assistant tool_calls whose function.arguments is
// a JSON string get it parsed into an object (left as is when it is not a JSON object).
void normalize_chat_messages(nlohmann::ordered_json& messages);

// Parses "YYYY-MM-DD", "YYYY-MM-DDTHH:MM[:SS]" or "YYYY-MM-DD HH:MM[:SS]" into a broken-down time
// (weekday and day of year filled in); nullopt when malformed.
std::optional<std::tm> parse_template_time(std::string_view text);

}  // namespace tf
