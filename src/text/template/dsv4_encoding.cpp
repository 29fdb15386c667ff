// DeepSeek-V4's encode_messages() (encoding/encoding_dsv4.py), step for step: merge the tool messages into user
// turns, sort their results by call order, drop earlier turns' reasoning, render each message. Where the
// reference would raise, or format a value Python-style (a list's repr), we refuse with the message and field.
#include "text/template/dsv4_encoding.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "text/template/chat_template.h"
#include "text/template/py_json.h"
#include "text/template/template_error.h"

namespace tf {

namespace {

using json = nlohmann::ordered_json;

const std::string kBos = "<｜begin▁of▁sentence｜>";
const std::string kEos = "<｜end▁of▁sentence｜>";
const std::string kThinkOpen = "<think>";
const std::string kThinkClose = "</think>";
const std::string kDsml = "｜DSML｜";
const std::string kUser = "<｜User｜>";
const std::string kAssistant = "<｜Assistant｜>";
const std::string kLatestReminder = "<｜latest_reminder｜>";

// The reference's internal classification tasks and the token each appends.
const std::map<std::string, std::string> kTaskTokens = {
    {"action", "<｜action｜>"}, {"query", "<｜query｜>"}, {"authority", "<｜authority｜>"},
    {"domain", "<｜domain｜>"}, {"title", "<｜title｜>"}, {"read_url", "<｜read_url｜>"},
};

const std::string kEffortMax =
    "Reasoning Effort: Absolute maximum with no shortcuts permitted.\n"
    "You MUST be very thorough in your thinking and comprehensively decompose the problem to resolve the root "
    "cause, rigorously stress-testing your logic against all potential paths, edge cases, and adversarial "
    "scenarios.\n"
    "Explicitly write out your entire deliberation process, documenting every intermediate step, considered "
    "alternative, and rejected hypothesis to ensure absolutely no assumption is left unchecked.\n\n";

std::string tools_section(const std::string& schemas) {
  const std::string& d = kDsml;
  return "## Tools\n\nYou have access to a set of tools to help answer the user's question. You can invoke tools by "
         "writing a \"<" +
         d +
         "tool_calls>\" block like the following:\n\n"
         "<" +
         d +
         "tool_calls>\n"
         "<" +
         d +
         "invoke name=\"$TOOL_NAME\">\n"
         "<" +
         d + "parameter name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE</" + d +
         "parameter>\n"
         "...\n"
         "</" +
         d +
         "invoke>\n"
         "<" +
         d +
         "invoke name=\"$TOOL_NAME2\">\n"
         "...\n"
         "</" +
         d +
         "invoke>\n"
         "</" +
         d +
         "tool_calls>\n\n"
         "String parameters should be specified as is and set `string=\"true\"`. For all other types (numbers, "
         "booleans, arrays, objects), pass the value in JSON format and set `string=\"false\"`.\n\n"
         "If thinking_mode is enabled (triggered by " +
         kThinkOpen +
         "), you MUST output your complete reasoning "
         "inside " +
         kThinkOpen + "..." + kThinkClose +
         " BEFORE any tool calls or final response.\n\n"
         "Otherwise, output directly after " +
         kThinkClose +
         " with tool calls or final response.\n\n"
         "### Available Tool Schemas\n\n" +
         schemas +
         "\n\nYou MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls.\n";
}

[[noreturn]] void refuse(const std::string& where, const std::string& what) {
  throw TemplateError(TemplateError::Kind::Input, where + ": " + what);
}

std::string at(std::size_t i) { return "messages[" + std::to_string(i) + "]"; }

// Python's truth value of a JSON value (None, 0, "", [] and {} are false).
bool truthy(const json* v) {
  if (!v || v->is_null()) return false;
  if (v->is_boolean()) return v->get<bool>();
  if (v->is_number()) return v->get<double>() != 0;
  if (v->is_string()) return !v->get_ref<const std::string&>().empty();
  if (v->is_array() || v->is_object()) return !v->empty();
  return true;
}

// msg.get(key): nullptr when absent (None).
const json* field(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}
bool is_none(const json* v) { return !v || v->is_null(); }

std::string role_of(const json& m) {
  const json* r = field(m, "role");
  return r && r->is_string() ? r->get<std::string>() : std::string();
}

// A value the reference puts into its text with str.format(): text, or None written "None".
std::string formatted(const json* v, const std::string& where) {
  if (is_none(v)) return "None";
  if (!v->is_string()) refuse(where, "must be text");
  return v->get<std::string>();
}
// `value or ""`: text, or nothing for None / "".
std::string text_or_empty(const json* v, const std::string& where) {
  if (!truthy(v)) {
    if (v && !v->is_null() && !v->is_string()) refuse(where, "must be text");
    return {};
  }
  if (!v->is_string()) refuse(where, "must be text");
  return v->get<std::string>();
}

std::string dumps(const json& v, const std::string& where) {
  try {
    return py_json_dumps(v);
  } catch (const std::exception& e) {
    refuse(where, e.what());
  }
}

// Tool messages become tool_result blocks of a user turn; user messages join the turn before when it is one
// (and has no task). `origin` keeps, per merged message, the index it came from (for error messages).
json merge_tool_messages(const json& messages, std::vector<std::size_t>& origin) {
  json merged = json::array();
  origin.clear();
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const json& msg = messages[i];
    const std::string role = role_of(msg);
    const bool after_user_turn =
        !merged.empty() && role_of(merged.back()) == "user" && merged.back().contains("content_blocks");
    if (role == "tool") {
      const json* id = field(msg, "tool_call_id");
      const json* content = field(msg, "content");
      json block = {
          {"type", "tool_result"}, {"tool_use_id", id ? *id : json("")}, {"content", content ? *content : json("")}};
      if (after_user_turn) {
        merged.back()["content_blocks"].push_back(std::move(block));
      } else {
        merged.push_back({{"role", "user"}, {"content_blocks", json::array({std::move(block)})}});
        origin.push_back(i);
      }
    } else if (role == "user") {
      const json* content = field(msg, "content");
      json text = content ? *content : json("");
      json block = {{"type", "text"}, {"text", text}};
      if (after_user_turn && is_none(field(merged.back(), "task"))) {
        merged.back()["content_blocks"].push_back(std::move(block));
      } else {
        json m = {{"role", "user"}, {"content", text}, {"content_blocks", json::array({std::move(block)})}};
        for (const char* key : {"task", "wo_eos", "mask"})
          if (const json* v = field(msg, key)) m[key] = *v;
        merged.push_back(std::move(m));
        origin.push_back(i);
      }
    } else {
      merged.push_back(msg);
      origin.push_back(i);
    }
  }
  return merged;
}

// The tool_result blocks of a user turn in the order of the last assistant turn's calls (by id; a result whose
// id is unknown counts as the first call), the other blocks where they were.
void sort_tool_results(json& messages, const std::vector<std::size_t>& origin) {
  std::map<std::string, std::size_t> order;
  for (std::size_t m = 0; m < messages.size(); ++m) {
    json& msg = messages[m];
    const std::string role = role_of(msg);
    if (role == "assistant" && truthy(field(msg, "tool_calls"))) {
      order.clear();
      const json& calls = msg["tool_calls"];
      if (!calls.is_array()) refuse(at(origin[m]) + ".tool_calls", "must be a list");
      for (std::size_t i = 0; i < calls.size(); ++i) {
        const std::string where = at(origin[m]) + ".tool_calls[" + std::to_string(i) + "]";
        if (!calls[i].is_object()) refuse(where, "must be an object");
        const json* id = field(calls[i], "id");
        if (!truthy(id)) {
          const json* fn = field(calls[i], "function");
          if (fn && !fn->is_object()) refuse(where + ".function", "must be an object");
          id = fn ? field(*fn, "id") : nullptr;
        }
        if (!truthy(id)) continue;
        if (!id->is_string()) refuse(where + ".id", "must be text");
        order[id->get<std::string>()] = i;
      }
    } else if (role == "user" && truthy(field(msg, "content_blocks"))) {
      json& blocks = msg["content_blocks"];
      if (!blocks.is_array()) refuse(at(origin[m]) + ".content_blocks", "must be a list");
      std::vector<json> results;
      for (const auto& b : blocks)
        if (b.is_object() && b.value("type", json()) == "tool_result") results.push_back(b);
      if (results.size() < 2 || order.empty()) continue;
      const auto rank = [&](const json& b) -> std::size_t {
        const json* id = field(b, "tool_use_id");
        if (!id || !id->is_string()) return 0;
        const auto it = order.find(id->get<std::string>());
        return it == order.end() ? 0 : it->second;
      };
      std::stable_sort(results.begin(), results.end(), [&](const json& a, const json& b) { return rank(a) < rank(b); });
      std::size_t next = 0;
      for (auto& b : blocks)
        if (b.is_object() && b.value("type", json()) == "tool_result") b = results[next++];
    }
  }
}

std::size_t npos = static_cast<std::size_t>(-1);

// The last user or developer message (npos: none).
std::size_t last_user_index(const json& messages) {
  for (std::size_t i = messages.size(); i-- > 0;) {
    const std::string r = role_of(messages[i]);
    if (r == "user" || r == "developer") return i;
  }
  return npos;
}

// Before the last user turn: assistant turns lose their reasoning, developer (and unknown) turns are dropped.
json drop_thinking_messages(const json& messages, std::vector<std::size_t>& origin) {
  const std::size_t last = last_user_index(messages);
  json out = json::array();
  std::vector<std::size_t> kept;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const std::string r = role_of(messages[i]);
    const bool keep = r == "user" || r == "system" || r == "tool" || r == "latest_reminder" ||
                      r == "direct_search_results" || last == npos || i >= last;
    if (keep) {
      out.push_back(messages[i]);
    } else if (r == "assistant") {
      json m = messages[i];
      m.erase("reasoning_content");
      out.push_back(std::move(m));
    } else {
      continue;
    }
    kept.push_back(origin[i]);
  }
  origin = std::move(kept);
  return out;
}

std::string render_tools(const json& tools, const std::string& where) {
  if (!tools.is_array()) refuse(where, "must be a list");
  std::string schemas;
  for (std::size_t i = 0; i < tools.size(); ++i) {
    const std::string w = where + "[" + std::to_string(i) + "]";
    const json* fn = field(tools[i], "function");
    if (!fn) refuse(w, "needs \"function\" (OpenAI's {\"type\": \"function\", \"function\": {...}})");
    if (i) schemas += "\n";
    schemas += dumps(*fn, w + ".function");
  }
  return tools_section(schemas);
}

std::string response_format_section(const json& format, const std::string& where) {
  return "## Response Format:\n\nYou MUST strictly adhere to the following schema to reply:\n" + dumps(format, where);
}

// A call's arguments as DSML parameters, one a line: text values as they are (string="true"), others as JSON.
std::string dsml_arguments(const json& arguments, const std::string& where) {
  json args;
  if (arguments.is_string()) {
    std::optional<json> loaded;
    try {
      loaded = py_json_loads(arguments.get<std::string>());
    } catch (const std::invalid_argument& e) {
      refuse(where, std::string("holds ") + e.what() + ", which this encoder does not take");
    }
    if (!loaded)
      args = {{"arguments", arguments}};  // not JSON: the reference keeps the text whole
    else if (loaded->is_object())
      args = std::move(*loaded);
    else
      refuse(where, "must be a JSON object (the reference reads its keys)");
  } else if (arguments.is_object()) {
    args = arguments;  // already parsed (the Hugging Face convention)
  } else {
    args = {{"arguments", arguments}};  // as json.loads() of a non-string raises: the reference's fallback
  }
  std::string out;
  bool first = true;
  for (const auto& [key, value] : args.items()) {
    if (!first) out += "\n";
    first = false;
    const bool text = value.is_string();
    out += "<" + kDsml + "parameter name=\"" + key + "\" string=\"" + (text ? "true" : "false") + "\">";
    out += text ? value.get<std::string>() : dumps(value, where + "." + key);
    out += "</" + kDsml + "parameter>";
  }
  return out;
}

std::string dsml_calls(const json& calls, const std::string& where) {
  std::string list;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const std::string w = where + "[" + std::to_string(i) + "]";
    const json* fn = field(calls[i], "function");
    if (!fn || !fn->is_object()) refuse(w, "needs \"function\" with \"name\" and \"arguments\"");
    const json* name = field(*fn, "name");
    const json* arguments = field(*fn, "arguments");
    if (!name || !arguments) refuse(w + ".function", "needs \"name\" and \"arguments\"");
    if (i) list += "\n";
    list += "<" + kDsml + "invoke name=\"" + formatted(name, w + ".function.name") + "\">\n" +
            dsml_arguments(*arguments, w + ".function.arguments") + "\n</" + kDsml + "invoke>";
  }
  return "\n\n<" + kDsml + "tool_calls>\n" + list + "\n</" + kDsml + "tool_calls>";
}

std::string user_text(const json& msg, const std::string& where) {
  const json* blocks = field(msg, "content_blocks");
  if (!truthy(blocks)) return text_or_empty(field(msg, "content"), where + ".content");
  if (!blocks->is_array()) refuse(where + ".content_blocks", "must be a list");
  std::string out;
  for (std::size_t i = 0; i < blocks->size(); ++i) {
    const json& block = (*blocks)[i];
    const std::string w = where + ".content_blocks[" + std::to_string(i) + "]";
    if (!block.is_object()) refuse(w, "must be an object");
    if (i) out += "\n\n";
    const json* type = field(block, "type");
    const std::string t = type && type->is_string() ? type->get<std::string>() : std::string();
    if (t == "text") {
      const json* text = field(block, "text");
      if (!text) continue;
      if (!text->is_string()) refuse(where + ".content", "must be text");
      out += text->get<std::string>();
    } else if (t == "tool_result") {
      const json* content = field(block, "content");
      std::string result;
      if (content && content->is_array()) {
        for (std::size_t j = 0; j < content->size(); ++j) {
          const json& part = (*content)[j];
          const std::string pw = w + ".content[" + std::to_string(j) + "]";
          if (!part.is_object()) refuse(pw, "must be an object");
          if (j) result += "\n\n";
          const json* pt = field(part, "type");
          if (pt && *pt == "text") {
            const json* text = field(part, "text");
            if (text) result += formatted(text, pw + ".text");
          } else {
            result += "[Unsupported " + formatted(pt, pw + ".type") + "]";
          }
        }
      } else {
        result = content ? formatted(content, w + ".content") : std::string();
      }
      out += "<tool_result>" + result + "</tool_result>";
    } else {
      out += "[Unsupported " + formatted(type, w + ".type") + "]";
    }
  }
  return out;
}

std::string render_message(std::size_t index, const json& messages, const std::vector<std::size_t>& origin,
                           const Dsv4Options& o) {
  const json& msg = messages[index];
  const std::string where = at(origin[index]);
  if (!msg.is_object()) refuse(where, "must be an object");
  const std::size_t last_user = last_user_index(messages);
  const std::string role = role_of(msg);
  const json* tools = field(msg, "tools");
  const json* response_format = field(msg, "response_format");
  std::string prompt;
  if (index == 0 && o.thinking && o.reasoning_effort == "max") prompt += kEffortMax;

  if (role == "system") {
    prompt += text_or_empty(field(msg, "content"), where + ".content");
    if (truthy(tools)) prompt += "\n\n" + render_tools(*tools, where + ".tools");
    if (truthy(response_format))
      prompt += "\n\n" + response_format_section(*response_format, where + ".response_format");
  } else if (role == "developer") {
    const json* content = field(msg, "content");
    if (!truthy(content)) refuse(where + ".content", "a developer message needs content");
    if (!content->is_string()) refuse(where + ".content", "must be text");
    prompt += kUser + content->get<std::string>();
    if (truthy(tools)) prompt += "\n\n" + render_tools(*tools, where + ".tools");
    if (truthy(response_format))
      prompt += "\n\n" + response_format_section(*response_format, where + ".response_format");
  } else if (role == "user") {
    prompt += kUser + user_text(msg, where);
  } else if (role == "latest_reminder") {
    prompt += kLatestReminder + formatted(field(msg, "content"), where + ".content");
  } else if (role == "assistant") {
    std::string calls;
    const json* tool_calls = field(msg, "tool_calls");
    if (truthy(tool_calls)) {
      if (!tool_calls->is_array()) refuse(where + ".tool_calls", "must be a list");
      calls = dsml_calls(*tool_calls, where + ".tool_calls");
    }
    const std::string content = text_or_empty(field(msg, "content"), where + ".content");
    const std::string reasoning = text_or_empty(field(msg, "reasoning_content"), where + ".reasoning_content");
    const bool after_task = index > 0 && !is_none(field(messages[index - 1], "task"));
    std::string thinking;
    if (o.thinking && !after_task && (!o.drop_thinking || last_user == npos || index > last_user))
      thinking = reasoning + kThinkClose;
    prompt += thinking + content + calls;
    if (!truthy(field(msg, "wo_eos"))) prompt += kEos;
  } else {
    const json* r = field(msg, "role");
    refuse(where + ".role", r && r->is_string() ? "unknown role '" + r->get<std::string>() + "'" : "missing");
  }

  // What follows the message: nothing before another user-side turn; the reply's opening after the last one.
  if (index + 1 < messages.size()) {
    const std::string next = role_of(messages[index + 1]);
    if (next != "assistant" && next != "latest_reminder") return prompt;
  }
  const json* task = field(msg, "task");
  if (!is_none(task)) {
    const auto it = task->is_string() ? kTaskTokens.find(task->get<std::string>()) : kTaskTokens.end();
    if (it == kTaskTokens.end())
      refuse(where + ".task", "must be one of action, query, authority, domain, title, read_url");
    if (it->first != "action")
      prompt += it->second;
    else
      prompt += kAssistant + (o.thinking ? kThinkOpen : kThinkClose) + it->second;
  } else if (role == "user" || role == "developer") {
    prompt += kAssistant;
    const bool open = o.thinking && (!o.drop_thinking || last_user == npos || index >= last_user);
    prompt += open ? kThinkOpen : kThinkClose;
  }
  return prompt;
}

}  // namespace

std::string encode_dsv4_messages(const json& messages, const Dsv4Options& options) {
  if (!messages.is_array()) refuse("messages", "must be a list");
  if (options.reasoning_effort && *options.reasoning_effort != "max" && *options.reasoning_effort != "high")
    refuse("reasoning_effort", "must be 'max' or 'high' (or none)");
  for (std::size_t i = 0; i < messages.size(); ++i)
    if (!messages[i].is_object()) refuse(at(i), "must be an object");
  std::vector<std::size_t> origin;
  json full = merge_tool_messages(messages, origin);
  sort_tool_results(full, origin);
  bool drop = options.drop_thinking;
  for (const auto& m : full)
    if (truthy(field(m, "tools"))) drop = false;  // with tools, earlier reasoning always stays
  if (options.thinking && drop) full = drop_thinking_messages(full, origin);
  Dsv4Options o = options;
  o.drop_thinking = drop;
  std::string prompt = kBos;
  for (std::size_t i = 0; i < full.size(); ++i) prompt += render_message(i, full, origin, o);
  return prompt;
}

json dsv4_messages(const ChatInput& input) {
  if (!input.messages.is_array()) refuse("messages", "must be a list");
  json messages = json::array();
  for (std::size_t i = 0; i < input.messages.size(); ++i) {
    json m = input.messages[i];
    if (!m.is_object()) refuse(at(i), "must be an object");
    // Content as a list of parts: its text. A tool result's list stays (the reference reads its parts).
    if (m.contains("content") && m["content"].is_array() && role_of(m) != "tool") {
      std::string text;
      for (std::size_t j = 0; j < m["content"].size(); ++j) {
        const json& part = m["content"][j];
        const std::string w = at(i) + ".content[" + std::to_string(j) + "]";
        if (!part.is_object() || part.value("type", json()) != "text" || !part.contains("text") ||
            !part["text"].is_string())
          refuse(w, "DeepSeek-V4's encoding takes text parts only ({\"type\": \"text\", \"text\": ...})");
        text += part["text"].get<std::string>();
      }
      m["content"] = text;
    }
    messages.push_back(std::move(m));
  }
  if (input.tools && input.tools->is_array() && !input.tools->empty())
    messages.insert(messages.begin(), json{{"role", "system"}, {"tools", *input.tools}});
  else if (input.tools && !input.tools->is_null() && !input.tools->is_array())
    refuse("tools", "must be a list");
  if (input.continue_final_message) {
    if (messages.empty() || role_of(messages.back()) != "assistant")
      refuse("continue_final_message", "the final message must be the assistant's");
    messages.back()["wo_eos"] = true;
  }
  return messages;
}

Dsv4Options dsv4_options(const ChatInput& input, const json& messages) {
  Dsv4Options o;
  const json& k = input.kwargs;
  const auto flag = [&](const char* key) -> bool {
    const json& v = k[key];
    if (v.is_boolean()) return v.get<bool>();
    if (v.is_null()) return false;
    if (std::string(key) == "thinking" && v.is_object() && v.contains("type") && v["type"].is_string()) {
      const auto t = v["type"].get<std::string>();
      if (t == "enabled" || t == "disabled") return t == "enabled";
    }
    refuse(
        std::string("chat_template_kwargs.") + key,
        std::string("must be true or false") + (std::string(key) == "thinking" ? " (or {\"type\": \"enabled\"})" : ""));
  };
  if (k.contains("thinking")) o.thinking = flag("thinking");
  if (k.contains("enable_thinking")) o.thinking = o.thinking || flag("enable_thinking");
  if (k.contains("thinking_mode") && !k["thinking_mode"].is_null()) {
    const json& m = k["thinking_mode"];
    if (m != "chat" && m != "thinking") refuse("chat_template_kwargs.thinking_mode", "must be 'chat' or 'thinking'");
    o.thinking = m == "thinking";
  }
  if (k.contains("drop_thinking") && !k["drop_thinking"].is_null())
    o.drop_thinking = flag("drop_thinking");
  else
    o.drop_thinking = !messages.empty() && role_of(messages.back()) == "user";
  if (k.contains("reasoning_effort") && !k["reasoning_effort"].is_null()) {
    const json& e = k["reasoning_effort"];
    static const std::vector<std::string> none = {"none", "minimal", "low", "medium"};
    if (e == "max" || e == "xhigh")
      o.reasoning_effort = "max";
    else if (e == "high")
      o.reasoning_effort = "high";
    else if (!e.is_string() || std::find(none.begin(), none.end(), e.get<std::string>()) == none.end())
      refuse("reasoning_effort", "must be one of none, minimal, low, medium, high, xhigh, max");
  }
  return o;
}

std::string encode_dsv4(const ChatInput& input) {
  const json messages = dsv4_messages(input);
  std::string prompt = encode_dsv4_messages(messages, dsv4_options(input, messages));
  if (!input.add_generation_prompt && !input.continue_final_message) {
    // The reference always opens the reply after a user turn; without a generation prompt we stop before it.
    for (const std::string& tail : {kAssistant + kThinkOpen, kAssistant + kThinkClose})
      if (prompt.size() >= tail.size() && prompt.compare(prompt.size() - tail.size(), tail.size(), tail) == 0) {
        prompt.resize(prompt.size() - tail.size());
        break;
      }
  }
  return prompt;
}

}  // namespace tf
