#include "text/template/chat_template.h"

#include <cstdio>

#include "text/template/dsv4_encoding.h"

#include "text/template/fold.h"
#include "text/template/interpreter.h"
#include "text/template/json_value.h"
#include "text/template/parser.h"
#include "text/template/symbols.h"
#include "text/template/unicode.h"

namespace tf {

namespace {

std::tm local_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  return tm;
}

[[noreturn]] void input_error(const std::string& msg) { throw TemplateError(TemplateError::Kind::Input, msg); }

std::string py_strip(std::string_view s) {
  std::u32string u = jinja::uni::to_u32(s);
  std::size_t a = 0, b = u.size();
  while (a < b && jinja::uni::is_space(u[a])) ++a;
  while (b > a && jinja::uni::is_space(u[b - 1])) --b;
  return jinja::uni::from_u32(std::u32string_view(u).substr(a, b - a));
}

std::string py_lstrip(std::string_view s) {
  std::u32string u = jinja::uni::to_u32(s);
  std::size_t a = 0;
  while (a < u.size() && jinja::uni::is_space(u[a])) ++a;
  return jinja::uni::from_u32(std::u32string_view(u).substr(a));
}

// transformers' continue_final_message: cut the prompt after the final message's text.
std::string cut_after_final_message(const std::string& rendered, const nlohmann::ordered_json& messages) {
  if (!messages.is_array() || messages.empty()) input_error("continue_final_message needs at least one message");
  const auto& last = messages.back();
  if (!last.is_object() || !last.contains("content"))
    input_error("continue_final_message: the final message has no content");
  const auto& content = last["content"];
  std::string final_message;
  if (content.is_array()) {
    bool found = false;
    for (auto it = content.rbegin(); it != content.rend(); ++it)
      if (it->is_object() && it->contains("text") && (*it)["text"].is_string()) {
        final_message = (*it)["text"].get<std::string>();
        found = true;
        break;
      }
    if (!found)
      input_error("continue_final_message is set but we could not find any text to continue in the final message!");
  } else if (content.is_string()) {
    final_message = content.get<std::string>();
  } else {
    input_error("continue_final_message: the final message's content is not text");
  }
  const std::string stripped = py_strip(final_message);
  const std::size_t loc = rendered.rfind(stripped);
  if (loc == std::string::npos)
    input_error(
        "continue_final_message is set but the final message does not appear in the chat after applying the chat "
        "template!");
  const std::string lstripped = py_lstrip(final_message);
  if (rendered.compare(loc, lstripped.size(), lstripped) == 0) return rendered.substr(0, loc + lstripped.size());
  return rendered.substr(0, loc + stripped.size());
}

}  // namespace

JinjaTemplate JinjaTemplate::compile(std::string_view source) {
  auto ast = std::make_shared<jinja::TemplateAst>(jinja::parse_template(source));
  jinja::resolve_symbols(*ast);
  jinja::fold_constants(*ast);
  JinjaTemplate t;
  t.ast_ = std::move(ast);
  return t;
}

std::string JinjaTemplate::render(const nlohmann::ordered_json& variables, const RenderOptions& options) const {
  if (!variables.is_object()) input_error("template variables must be a JSON object");
  jinja::DictData vars;
  for (const auto& [k, v] : variables.items()) vars.set(jinja::Value(k), jinja::from_json(v));
  jinja::RenderLimits limits{options.limits.max_output_bytes, options.limits.max_work, options.limits.max_depth};
  jinja::Interpreter in(*ast_, vars, limits, options.now ? *options.now : local_now());
  try {
    return in.render();
  } catch (const TemplateError&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw TemplateError(TemplateError::Kind::Limit, "MemoryError: the template ran out of memory");
  } catch (const std::exception& e) {  // a defect of ours; still a clear error, never a crash
    throw TemplateError(TemplateError::Kind::Runtime, std::string("internal error while rendering: ") + e.what());
  }
}

ChatTemplate::ChatTemplate(std::string_view source, nlohmann::ordered_json special_tokens)
    : special_tokens_(std::move(special_tokens)) {
  entries_.push_back({"default", std::string(source), JinjaTemplate::compile(source)});
}

ChatTemplate::ChatTemplate(const std::vector<std::pair<std::string, std::string>>& named_sources,
                           nlohmann::ordered_json special_tokens)
    : special_tokens_(std::move(special_tokens)) {
  for (const auto& [name, src] : named_sources) {
    try {
      entries_.push_back({name, src, JinjaTemplate::compile(src)});
    } catch (const TemplateError& e) {
      throw TemplateError(e.kind(), "chat template '" + name + "': " + e.bare_message(), e.line());
    }
  }
  if (entries_.empty()) input_error("no chat template");
}

std::optional<BuiltinEncoding> builtin_encoding_from_name(std::string_view name) {
  if (name == "deepseek_v4") return BuiltinEncoding::DeepSeekV4;
  return std::nullopt;
}

std::optional<BuiltinEncoding> builtin_encoding_for_architecture(std::string_view architecture) {
  if (architecture == "deepseek_v4" || architecture == "deepseek4") return BuiltinEncoding::DeepSeekV4;
  return std::nullopt;
}

ChatTemplate ChatTemplate::builtin(BuiltinEncoding encoding, nlohmann::ordered_json special_tokens) {
  ChatTemplate t;
  t.special_tokens_ = std::move(special_tokens);
  t.builtin_ = encoding;
  // What tools::detect_tool_format / detect_reasoning_markers read: the markers the encoding writes.
  t.entries_.push_back({"default",
                        "{#- builtin:deepseek_v4: DeepSeek-V4's encoding/encoding_dsv4.py in C++, no Jinja. Reasoning "
                        "<think>...</think>; tool calls <｜DSML｜tool_calls><｜DSML｜invoke name=...> -#}",
                        {}});
  return t;
}

std::vector<std::string> ChatTemplate::names() const {
  std::vector<std::string> out;
  for (const auto& e : entries_) out.push_back(e.name);
  return out;
}

const ChatTemplate::Entry& ChatTemplate::select(const ChatInput& input) const {
  auto find = [&](std::string_view name) -> const Entry* {
    for (const auto& e : entries_)
      if (e.name == name) return &e;
    return nullptr;
  };
  if (entries_.size() == 1 && (!input.template_name || *input.template_name == entries_[0].name)) return entries_[0];
  if (input.template_name) {
    if (const Entry* e = find(*input.template_name)) return *e;
    input_error("the model has no chat template named '" + *input.template_name + "'");
  }
  if (input.tools && !input.tools->is_null())
    if (const Entry* e = find("tool_use")) return *e;
  if (const Entry* e = find("default")) return *e;
  input_error("This model has multiple chat templates with no default specified; choose one by name");
}

const std::string& ChatTemplate::source(const ChatInput& input) const { return select(input).source; }

std::string ChatTemplate::render(const ChatInput& input, const RenderOptions& options) const {
  if (!input.messages.is_array()) input_error("messages must be a list");
  if (input.add_generation_prompt && input.continue_final_message)
    input_error("continue_final_message and add_generation_prompt are not compatible");
  if (!input.kwargs.is_object()) input_error("template kwargs must be a JSON object");
  if (builtin_) return encode_dsv4(input);
  nlohmann::ordered_json vars = nlohmann::ordered_json::object();
  if (special_tokens_.is_object())
    for (const auto& [k, v] : special_tokens_.items()) vars[k] = v;
  for (const auto& [k, v] : input.kwargs.items()) {
    if (k == "messages" || k == "tools" || k == "documents" || k == "add_generation_prompt")
      input_error("got multiple values for keyword argument '" + k + "'");
    vars[k] = v;
  }
  vars["messages"] = input.messages;
  vars["tools"] = input.tools ? *input.tools : nlohmann::ordered_json();
  vars["documents"] = input.documents ? *input.documents : nlohmann::ordered_json();
  vars["add_generation_prompt"] = input.add_generation_prompt;
  std::string out = select(input).compiled.render(vars, options);
  if (input.continue_final_message) out = cut_after_final_message(out, input.messages);
  return out;
}

void normalize_chat_messages(nlohmann::ordered_json& messages) {
  if (!messages.is_array()) return;
  for (auto& m : messages) {
    if (!m.is_object() || !m.contains("tool_calls") || !m["tool_calls"].is_array()) continue;
    for (auto& call : m["tool_calls"]) {
      if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) continue;
      auto& fn = call["function"];
      if (!fn.contains("arguments") || !fn["arguments"].is_string()) continue;
      auto parsed = nlohmann::ordered_json::parse(fn["arguments"].get<std::string>(), nullptr, false);
      if (!parsed.is_discarded() && parsed.is_object()) fn["arguments"] = std::move(parsed);
    }
  }
}

std::optional<std::tm> parse_template_time(std::string_view text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  const std::string t(text);
  int n = 0;
  if (std::sscanf(t.c_str(), "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3) return std::nullopt;
  std::size_t pos = static_cast<std::size_t>(n);
  if (pos < t.size()) {
    if (t[pos] != 'T' && t[pos] != ' ') return std::nullopt;
    int m = 0;
    const int got = std::sscanf(t.c_str() + pos + 1, "%2d:%2d%n:%2d%n", &h, &mi, &m, &s, &m);
    if (got < 2 || pos + 1 + static_cast<std::size_t>(m) != t.size()) return std::nullopt;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60 || y < 1) return std::nullopt;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  const std::time_t tt = timegm(&tm);  // normalizes and fills tm_wday / tm_yday
  std::tm out{};
  gmtime_r(&tt, &out);
  out.tm_isdst = -1;
  if (out.tm_mday != d) return std::nullopt;
  return out;
}

}  // namespace tf
