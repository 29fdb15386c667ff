#pragma once
// DeepSeek-V4's prompt encoding. The model ships no Jinja template: its prompts are built by Python code
// (encoding/encoding_dsv4.py in the checkpoint). This reproduces that code's encode_messages() byte for byte
// (tests/unit/template/dsv4_encoding_test.cpp renders tests/conformance/templates/dsv4_corpus.json, whose
// expected prompts scripts/golden/make_dsv4_corpus.py computes with the reference file):
//
//   <｜begin▁of▁sentence｜>{system}[\n\n## Tools
//   ...]<｜User｜>{user}<｜Assistant｜></think>{answer}<｜end▁of▁sentence｜>...
//
// chat turns; thinking ("<think>" opens the reply) or chat ("</think>"); reasoning_effort "max" prepends an
// instruction; earlier turns' reasoning dropped or kept; tool schemas in the system (or developer) turn; calls
// written in DSML; tool results folded into the next user turn as <tool_result> blocks, sorted by call order;
// the reference's extra roles and fields (developer, latest_reminder, task, wo_eos, response_format,
// content_blocks).
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace tf {

struct ChatInput;

// encode_messages()'s own arguments (the reference's names; `context` is not offered).
struct Dsv4Options {
  bool thinking = false;  // thinking_mode "thinking" (else "chat")
  bool drop_thinking = true;
  std::optional<std::string> reasoning_effort;  // "max", "high" or none
};

// encode_messages(messages, ...) itself: `messages` in the reference's shape (OpenAI messages; tools set on a
// system or developer message under "tools"). Throws TemplateError (Input) naming the message and field where
// the reference would raise (or where it would write something no caller means, as a Python repr).
std::string encode_dsv4_messages(const nlohmann::ordered_json& messages, const Dsv4Options& options);

// The chat-template interface over it, as vLLM's DeepSeek tokenizer wrapper calls the reference:
//  - thinking: kwargs "thinking" (true/false or {"type": "enabled"|"disabled"}) or "enable_thinking"; or
//    "thinking_mode" ("chat"/"thinking"); chat by default;
//  - tools: a system message {"role": "system", "tools": [...]} put first;
//  - drop_thinking: kwargs "drop_thinking", else whether the last message is the user's;
//  - reasoning_effort: "max" (and "xhigh", the nearest) or "high"; "none" to "medium" add nothing;
//  - content given as a list of parts: its text parts joined;
//  - add_generation_prompt false: the prompt stops before the trailing "<｜Assistant｜>" and think marker;
//  - continue_final_message: the final (assistant) message is left open (the reference's wo_eos).
std::string encode_dsv4(const ChatInput& input);

// What the reference is given for `input` (the messages after the rules above, and the options).
nlohmann::ordered_json dsv4_messages(const ChatInput& input);
Dsv4Options dsv4_options(const ChatInput& input, const nlohmann::ordered_json& messages);

}  // namespace tf
