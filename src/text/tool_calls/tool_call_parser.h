#pragma once
// Tool calls in generated text, read incrementally. A parser is fed the model's text in whatever pieces it
// arrives and returns events: plain content, the start of a call (its name), pieces of the call's JSON
// arguments as they are generated, and the call's end. One parser per format (one file each); this header
// is the one interface the server sees.
//
// The promises every parser keeps (tests/unit/tool_calls check them on recorded text split at every byte):
//  - the events, with adjacent pieces of the same kind merged, do not depend on how the text was split;
//  - a call starts (CallStart) only once its opener and a declared tool's name were read; text that merely
//    looks like a call (an unknown name, a broken opener) stays content;
//  - a call that breaks after it started ends with CallInvalid carrying the call's raw text, so a reply that
//    is not streamed can put that text back into its content (collect_tool_calls does);
//  - every byte is read once: no backtracking over the whole text, so no input can make a parser hang.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace tf::tools {

struct ToolEvent {
  enum class Kind {
    Content,      // text: plain text for message.content
    CallStart,    // index, text: the function's name
    Arguments,    // index, text: the next piece of the call's arguments (JSON text)
    CallEnd,      // index: the call is complete; its arguments are one JSON object
    CallInvalid,  // index, text: the call broke after it started; text is its raw source
  };
  Kind kind = Kind::Content;
  int index = -1;  // 0, 1, ... in the order calls start; -1 for Content
  std::string text;
  bool operator==(const ToolEvent&) const = default;
};

// A declared tool: its name and its JSON schema for the arguments ("parameters"), which types the values of
// formats that carry every argument as text (the XML formats).
struct ToolSpec {
  std::string name;
  nlohmann::ordered_json parameters = nlohmann::ordered_json::object();
  bool strict = false;  // function.strict: the schema must be one the grammar holds calls to exactly
};

enum class ToolFormat {
  Hermes,       // <tool_call>{"name": ..., "arguments": {...}}</tool_call>        (Hermes, Qwen2.5, Qwen3)
  XmlFunction,  // <tool_call><function=NAME><parameter=KEY>VALUE</parameter>...  (Qwen3-Coder, Qwen3.5, Nemotron 3)
  Llama3Json,   // {"name": ..., "parameters": {...}} as the whole reply, ';' between calls (Llama 3.1+)
  Glm,          // <tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>...</tool_call> (GLM-4.5+)
  Gemma4,       // <|tool_call>call:NAME{key:<|"|>text<|"|>,n:1}<tool_call|>             (Gemma 4)
  DeepSeek,  // <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>... (V3, R1, V3.1)
  Nemotron,  // <TOOLCALL>[{"name": ..., "arguments": {...}}, ...]</TOOLCALL>   (Nemotron Nano 2, Llama-Nemotron)
  Dsml,      // <｜DSML｜tool_calls><｜DSML｜invoke name="N"><｜DSML｜parameter name="K"
         // string="true">V</｜DSML｜parameter>... (DeepSeek-V4: text/template/dsv4_encoding.h)
};

// "hermes", "xml", "llama3_json", "glm", "gemma4", "deepseek", "nemotron", "dsml"
const char* tool_format_name(ToolFormat f);
std::optional<ToolFormat> tool_format_from_name(std::string_view name);
const std::vector<ToolFormat>& all_tool_formats();

// The format a chat template writes tool calls in, from the markers its text contains; nullopt when the
// template shows none (it has no tool support: the server then describes the tools itself, in Hermes format).
std::optional<ToolFormat> detect_tool_format(std::string_view template_source);

// The text a call of this format starts with (used to end an unclosed reasoning block at a call).
std::vector<std::string> tool_call_openers(ToolFormat f);

// How a call of `name` starts in this format, up to where its arguments begin: forcing a reply to start
// with it (tool_choice "required" or a named function) makes the reply that call.
std::string call_opening(ToolFormat f, const std::string& name);
// Whether the format writes a call's arguments as one JSON object right after call_opening(), and the text
// that then closes the call: with both, a constraint can hold the whole call to the format's syntax.
bool json_arguments(ToolFormat f);
std::string call_closing(ToolFormat f);

class ToolCallParser {
 public:
  virtual ~ToolCallParser() = default;
  // The next piece of generated text (any split, even inside a UTF-8 character); events are appended.
  virtual void feed(std::string_view piece, std::vector<ToolEvent>& out) = 0;
  // The end of the text: what was held back is decided. A call whose arguments are complete but whose
  // closing marker never came (the model stopped) ends normally; one cut short is CallInvalid.
  virtual void finish(std::vector<ToolEvent>& out) = 0;
};

// `tools` empty: any name is accepted and XML values stay strings.
std::unique_ptr<ToolCallParser> make_tool_call_parser(ToolFormat format, std::vector<ToolSpec> tools);

// Everything a whole reply's events say: the content and the complete calls. A CallInvalid call is dropped
// and its raw text appended to the content; a call that never ended (finish() not called) is dropped too.
struct CollectedCall {
  std::string name;
  std::string arguments;  // JSON object text
};
struct CollectedReply {
  std::string content;
  std::vector<CollectedCall> calls;
};
CollectedReply collect_tool_calls(const std::vector<ToolEvent>& events);

}  // namespace tf::tools
