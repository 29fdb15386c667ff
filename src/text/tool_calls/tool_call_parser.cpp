#include "text/tool_calls/tool_call_parser.h"

#include <map>

#include "text/tool_calls/format_parsers.h"

namespace tf::tools {

namespace {

struct FormatInfo {
  ToolFormat format;
  const char* name;
  std::vector<std::string> openers;
};

const std::vector<FormatInfo>& formats() {
  static const std::vector<FormatInfo> all = {
      {ToolFormat::Hermes, "hermes", {"<tool_call>"}},
      {ToolFormat::XmlFunction, "xml", {"<tool_call>", "<function="}},
      {ToolFormat::Llama3Json, "llama3_json", {"<|python_tag|>"}},
      {ToolFormat::Glm, "glm", {"<tool_call>"}},
      {ToolFormat::Gemma4, "gemma4", {"<|tool_call>"}},
      {ToolFormat::DeepSeek, "deepseek", {"<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>"}},
      {ToolFormat::Nemotron, "nemotron", {"<TOOLCALL>"}},
      {ToolFormat::Dsml, "dsml", {"\n\n<｜DSML｜tool_calls>", "<｜DSML｜tool_calls>"}},
  };
  return all;
}

const FormatInfo& info(ToolFormat f) {
  for (const auto& i : formats())
    if (i.format == f) return i;
  return formats().front();
}

bool has(std::string_view text, std::string_view marker) { return text.find(marker) != std::string_view::npos; }

}  // namespace

const char* tool_format_name(ToolFormat f) { return info(f).name; }

std::optional<ToolFormat> tool_format_from_name(std::string_view name) {
  for (const auto& i : formats())
    if (name == i.name) return i.format;
  return std::nullopt;
}

const std::vector<ToolFormat>& all_tool_formats() {
  static const std::vector<ToolFormat> all = [] {
    std::vector<ToolFormat> v;
    for (const auto& i : formats()) v.push_back(i.format);
    return v;
  }();
  return all;
}

std::vector<std::string> tool_call_openers(ToolFormat f) { return info(f).openers; }

std::string call_opening(ToolFormat f, const std::string& name) {
  const std::string quoted = nlohmann::json(name).dump();
  switch (f) {
    case ToolFormat::Hermes:
      return "<tool_call>\n{\"name\": " + quoted + ", \"arguments\": ";
    case ToolFormat::XmlFunction:
      return "<tool_call>\n<function=" + name + ">\n";
    case ToolFormat::Llama3Json:
      return "{\"name\": " + quoted + ", \"parameters\": ";
    case ToolFormat::Glm:
      return "<tool_call>" + name + "\n";
    case ToolFormat::Gemma4:
      return "<|tool_call>call:" + name + "{";
    case ToolFormat::DeepSeek:
      return "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>" + name + "<｜tool▁sep｜>";
    case ToolFormat::Nemotron:
      return "<TOOLCALL>[{\"name\": " + quoted + ", \"arguments\": ";
    case ToolFormat::Dsml:
      return "<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"" + name + "\">\n";
  }
  return {};
}

bool json_arguments(ToolFormat f) {
  return f == ToolFormat::Hermes || f == ToolFormat::Llama3Json || f == ToolFormat::Nemotron ||
         f == ToolFormat::DeepSeek;
}

std::string call_closing(ToolFormat f) {
  switch (f) {
    case ToolFormat::Hermes:
      return "}\n</tool_call>";
    case ToolFormat::Llama3Json:
      return "}";
    case ToolFormat::Nemotron:
      return "}]</TOOLCALL>";
    case ToolFormat::DeepSeek:
      return "<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    default:
      return {};
  }
}

std::optional<ToolFormat> detect_tool_format(std::string_view t) {
  // The most specific markers first: several formats share <tool_call>.
  if (has(t, "｜DSML｜")) return ToolFormat::Dsml;
  if (has(t, "<|tool_call>")) return ToolFormat::Gemma4;
  if (has(t, "tool▁call▁begin") || has(t, "tool▁calls▁begin")) return ToolFormat::DeepSeek;
  if (has(t, "<TOOLCALL>")) return ToolFormat::Nemotron;
  if (has(t, "<arg_key>")) return ToolFormat::Glm;
  if (has(t, "<function=") && has(t, "<parameter=")) return ToolFormat::XmlFunction;
  if (has(t, "<tool_call>")) return ToolFormat::Hermes;
  // Llama 3.1+: the header tokens, and a template that passes tools ("parameters" in its instructions).
  if (has(t, "<|start_header_id|>") && has(t, "tools") && (has(t, "<|python_tag|>") || has(t, "\"parameters\"")))
    return ToolFormat::Llama3Json;
  return std::nullopt;
}

std::unique_ptr<ToolCallParser> make_tool_call_parser(ToolFormat format, std::vector<ToolSpec> tools) {
  switch (format) {
    case ToolFormat::Hermes:
      return make_hermes_parser(std::move(tools));
    case ToolFormat::XmlFunction:
      return make_xml_function_parser(std::move(tools));
    case ToolFormat::Llama3Json:
      return make_llama3_json_parser(std::move(tools));
    case ToolFormat::Glm:
      return make_glm_parser(std::move(tools));
    case ToolFormat::Gemma4:
      return make_gemma4_parser(std::move(tools));
    case ToolFormat::DeepSeek:
      return make_deepseek_parser(std::move(tools));
    case ToolFormat::Nemotron:
      return make_nemotron_parser(std::move(tools));
    case ToolFormat::Dsml:
      return make_dsml_parser(std::move(tools));
  }
  return make_hermes_parser(std::move(tools));
}

CollectedReply collect_tool_calls(const std::vector<ToolEvent>& events) {
  CollectedReply reply;
  std::map<int, CollectedCall> open;
  for (const auto& e : events) {
    switch (e.kind) {
      case ToolEvent::Kind::Content:
        reply.content += e.text;
        break;
      case ToolEvent::Kind::CallStart:
        open[e.index] = {e.text, ""};
        break;
      case ToolEvent::Kind::Arguments:
        open[e.index].arguments += e.text;
        break;
      case ToolEvent::Kind::CallEnd:
        reply.calls.push_back(std::move(open[e.index]));
        open.erase(e.index);
        break;
      case ToolEvent::Kind::CallInvalid:
        open.erase(e.index);
        reply.content += e.text;
        break;
    }
  }
  return reply;
}

}  // namespace tf::tools
