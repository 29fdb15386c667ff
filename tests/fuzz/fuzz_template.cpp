// libFuzzer target: compile and render arbitrary template text with a small fixed context (messages
// with tool calls, tools, special tokens). Bad templates may only throw tf::TemplateError; the limits
// (output size, work, depth) must stop every input quickly, and a rendered prompt stays within them.
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "text/template/chat_template.h"

namespace {

const nlohmann::ordered_json& context() {
  static const nlohmann::ordered_json vars = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "sys"},
      {"role": "user", "content": [{"type": "text", "text": "hé {{ x }}"}, {"type": "image"}]},
      {"role": "assistant", "content": null, "reasoning_content": "think",
       "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"a": 1, "b": [1.5, null]}}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "42"}],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "enable_thinking": false,
    "n": 3, "f": 2.5, "s": "Hello", "d": {"k": "v", "items": 1}, "l": [3, 1, 2]
  })");
  return vars;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 32 * 1024) return 0;
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  tf::RenderOptions opts;
  opts.limits.max_output_bytes = 1 << 16;
  opts.limits.max_work = 300000;
  opts.limits.max_depth = 150;
  opts.now = tf::parse_template_time("2026-03-14T15:09:26");
  try {
    const tf::JinjaTemplate t = tf::JinjaTemplate::compile(source);
    const std::string out = t.render(context(), opts);
    FUZZ_CHECK(out.size() <= opts.limits.max_output_bytes, "output of %zu bytes exceeds the limit", out.size());
    // a second render of the same compiled template gives the same text (renders share no state)
    FUZZ_CHECK(t.render(context(), opts) == out, "two renders differ");
  } catch (const tf::TemplateError& e) {
    FUZZ_CHECK(e.what()[0] != '\0', "empty error message");
  }
  return 0;
}
