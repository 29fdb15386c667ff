#include "server/tool_fields.h"

#include <fmt/format.h>

#include <cctype>
#include <set>

#include "server/api_error.h"
#include "text/grammar/json_schema.h"

namespace tf::server {

namespace {

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  for (const char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == ':')) return false;
  return true;
}

}  // namespace

tools::ToolSpec read_tool_function(const nlohmann::ordered_json& function, const std::string& param) {
  if (!function.is_object())
    throw invalid_request(fmt::format("Invalid type for '{}': expected an object, but got {} instead.", param,
                                      json_type_name(function)),
                          param, "invalid_type");
  const JsonFields f(function, param + ".");
  const auto name = f.string("name");
  if (!name) throw invalid_request(fmt::format("Missing required parameter: '{}.name'.", param), param + ".name");
  if (!valid_name(*name))
    throw invalid_request(fmt::format("Invalid '{}.name': '{}' is not a function name (letters, digits, '_', '-', "
                                      "'.' and ':', at most 128).",
                                      param, *name),
                          param + ".name", "invalid_value");
  f.string("description");
  tools::ToolSpec spec{*name, nlohmann::ordered_json::object()};
  if (const auto* p = f.get("parameters")) {
    if (!p->is_object())
      throw invalid_request(fmt::format("Invalid '{}.parameters': a tool's parameters must be a JSON Schema object, "
                                        "but got {}.",
                                        param, json_type_name(*p)),
                            param + ".parameters", "invalid_type");
    spec.parameters = *p;
  }
  // strict: the arguments must be held to the schema exactly, so it must be one the grammar supports (a 400
  // naming the keyword, as structured output's); other tools' unsupported schemas fall back to any object.
  if (const auto strict = f.boolean("strict")) spec.strict = *strict;
  if (spec.strict) {
    try {
      grammar::json_schema_grammar(spec.parameters);
    } catch (const grammar::GrammarError& e) {
      throw invalid_request(fmt::format("Invalid '{}.parameters': {}.", param, e.what()), param + ".parameters",
                            e.keyword().empty() ? "invalid_value" : "unsupported_schema_keyword");
    }
  }
  return spec;
}

ToolSettings parse_tool_settings(const JsonFields& f) {
  ToolSettings s;
  if (const auto* tools = f.array("tools"); tools && !tools->empty()) {
    // OpenAI's limit; every declared tool is rendered into the prompt.
    constexpr std::size_t kMaxTools = 128;
    if (tools->size() > kMaxTools)
      throw invalid_request(fmt::format("Invalid 'tools': array too long. Expected an array with maximum length {}, "
                                        "but got an array with length {} instead.",
                                        kMaxTools, tools->size()),
                            "tools", "array_above_max_length");
    std::set<std::string> names;
    for (std::size_t i = 0; i < tools->size(); ++i) {
      const auto& tool = (*tools)[i];
      const std::string p = fmt::format("tools[{}]", i);
      if (!tool.is_object())
        throw invalid_request(fmt::format("Invalid type for '{}': expected an object, but got {} instead.", p,
                                          json_type_name(tool)),
                              p, "invalid_type");
      const JsonFields t(tool, p + ".");
      const auto type = t.string("type");
      // OpenAI requires the type; an entry without it is not a tool the request can be said to declare.
      if (!type) throw invalid_request(fmt::format("Missing required parameter: '{}.type'.", p), p + ".type");
      if (*type != "function")
        throw unsupported(fmt::format("'{}.type' '{}' is not supported: this server calls functions only.", p, *type),
                          p + ".type");
      const auto* function = t.get("function");
      if (!function) throw invalid_request(fmt::format("Missing required parameter: '{}.function'.", p), p + ".function");
      auto spec = read_tool_function(*function, p + ".function");
      if (!names.insert(spec.name).second)
        throw invalid_request(fmt::format("Invalid '{}.function.name': '{}' is declared twice.", p, spec.name),
                              p + ".function.name", "invalid_value");
      s.specs.push_back(std::move(spec));
    }
    s.tools = *tools;
  }
  if (const auto* choice = f.get("tool_choice")) {
    if (choice->is_string()) {
      const auto c = choice->get<std::string>();
      if (c == "auto") s.choice = ToolSettings::Choice::Auto;
      else if (c == "none") s.choice = ToolSettings::Choice::None;
      else if (c == "required") s.choice = ToolSettings::Choice::Required;
      else
        throw invalid_request(fmt::format("Invalid value for 'tool_choice': '{}'. Supported values are 'none', "
                                          "'auto', 'required' or a named function.",
                                          c),
                              "tool_choice", "invalid_value");
    } else if (choice->is_object()) {
      const JsonFields c(*choice, "tool_choice.");
      const auto* function = c.object("function");
      const auto name = function ? JsonFields(*function, "tool_choice.function.").string("name") : std::nullopt;
      if (!name)
        throw invalid_request("Missing required parameter: 'tool_choice.function.name'.", "tool_choice.function.name");
      s.choice = ToolSettings::Choice::Named;
      s.named = *name;
    } else {
      throw invalid_request(fmt::format("Invalid type for 'tool_choice': expected a string or an object, but got {} "
                                        "instead.",
                                        json_type_name(*choice)),
                            "tool_choice", "invalid_type");
    }
  }
  if (s.choice == ToolSettings::Choice::Required && s.specs.empty())
    throw invalid_request("Invalid 'tool_choice': \"required\" needs 'tools'.", "tool_choice", "invalid_value");
  if (s.choice == ToolSettings::Choice::Named) {
    bool known = false;
    for (const auto& spec : s.specs) known = known || spec.name == s.named;
    if (!known)
      throw invalid_request(fmt::format("Invalid 'tool_choice': no tool named '{}' is in 'tools'.", s.named),
                            "tool_choice.function.name", "invalid_value");
  }
  if (auto p = f.boolean("parallel_tool_calls")) s.parallel = *p;
  return s;
}

void check_tool_history(const nlohmann::ordered_json& messages) {
  std::set<std::string> ids;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const auto& m = messages[i];
    const std::string p = fmt::format("messages[{}]", i);
    if (const auto calls = m.find("tool_calls"); calls != m.end()) {
      for (std::size_t k = 0; k < calls->size(); ++k) {
        const auto& call = (*calls)[k];
        const std::string cp = fmt::format("{}.tool_calls[{}]", p, k);
        if (!call.is_object())
          throw invalid_request(fmt::format("Invalid type for '{}': expected an object.", cp), cp, "invalid_type");
        const JsonFields c(call, cp + ".");
        // Every field OpenAI requires of a call: a tool message answers it by id, and a template renders
        // its name and arguments; one without them would be rendered as something else than was sent.
        const auto id = c.string("id");
        if (!id) throw invalid_request(fmt::format("Missing required parameter: '{}.id'.", cp), cp + ".id");
        ids.insert(*id);
        const auto type = c.string("type");
        if (!type) throw invalid_request(fmt::format("Missing required parameter: '{}.type'.", cp), cp + ".type");
        if (*type != "function")
          throw invalid_request(
              fmt::format("Invalid value for '{}.type': '{}'. Supported values are: 'function'.", cp, *type),
              cp + ".type", "invalid_value");
        const auto* function = c.object("function");
        if (!function) throw invalid_request(fmt::format("Missing required parameter: '{}.function'.", cp), cp + ".function");
        const JsonFields fn(*function, cp + ".function.");
        if (!fn.string("name"))
          throw invalid_request(fmt::format("Missing required parameter: '{}.function.name'.", cp), cp + ".function.name");
        const auto* args = fn.get("arguments");
        if (!args)
          throw invalid_request(fmt::format("Missing required parameter: '{}.function.arguments'.", cp),
                                cp + ".function.arguments");
        if (!args->is_string() && !args->is_object())
          throw invalid_request(fmt::format("Invalid type for '{}.function.arguments': expected a JSON string.", cp),
                                cp + ".function.arguments", "invalid_type");
      }
    }
    if (m.value("role", "") == "tool") {
      const auto id = m.find("tool_call_id");
      if (id == m.end() || !id->is_string())
        throw invalid_request(fmt::format("Missing required parameter: '{}.tool_call_id'.", p), p + ".tool_call_id");
      if (!ids.count(id->get<std::string>()))
        throw invalid_request(fmt::format("Invalid '{}.tool_call_id': '{}' answers no tool call of an earlier "
                                          "assistant message.",
                                          p, id->get<std::string>()),
                              p + ".tool_call_id", "invalid_value");
    }
  }
}

}  // namespace tf::server
