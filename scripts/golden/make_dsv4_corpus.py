#!/usr/bin/env python3
"""DeepSeek-V4 prompt-encoding corpus: conversations and the prompts the reference encoder builds for them.

DeepSeek-V4 ships no Jinja chat template; its checkpoint carries encoding/encoding_dsv4.py, which we reproduce
in C++ (src/text/template/dsv4_encoding.cpp). This script runs the reference over the conversations below and
writes tests/conformance/templates/dsv4_corpus.json, which tests/unit/template/dsv4_encoding_test.cpp and
tests/unit/tool_calls/dsml_parser_test.cpp compare against byte for byte.

It needs the reference file, which is not in this repository (download it from the checkpoint repo, e.g.
deepseek-ai/DeepSeek-V4-Flash's encoding/encoding_dsv4.py; the V4-Flash release: reasoning_effort 'max' adds
a prefix, 'high' nothing):

    python3 scripts/golden/make_dsv4_corpus.py /path/to/encoding_dsv4.py

Two kinds of cases:
  - "encode": encode_messages(messages, thinking_mode, drop_thinking, reasoning_effort) called as given;
  - "chat": a chat request (messages, tools, chat_template_kwargs, add_generation_prompt, continue_final_message)
    turned into that call as vLLM's DeepSeek tokenizer wrapper does (chat_to_reference below, documented in
    src/text/template/dsv4_encoding.h), which is how our server and `tensorfold template` call it.
And "parse" cases: model replies and what the reference's parse_message_from_completion_text reads in them.
"""
import copy
import importlib.util
import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "tests/conformance/templates/dsv4_corpus.json"

BOS, EOS = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"
D = "｜DSML｜"

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city — °C, ☀️",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name"},
        "days": {"type": "integer", "minimum": 1, "maximum": 7},
        "units": {"type": "string", "enum": ["metric", "imperial"]}},
        "required": ["city"]}}}
SEARCH = {"type": "function", "function": {
    "name": "search", "description": "Search the web",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string"},
        "filters": {"type": "object", "properties": {"site": {"type": "string"}, "year": {"type": "integer"}}},
        "limit": {"type": "number"}, "tags": {"type": "array", "items": {"type": "string"}},
        "safe": {"type": "boolean"}}, "required": ["query"]}}}
NOARGS = {"type": "function", "function": {"name": "now", "description": "The time",
                                           "parameters": {"type": "object", "properties": {}}}}


def call(id_, name, arguments):
    return {"id": id_, "type": "function", "function": {"name": name, "arguments": arguments}}


NESTED_ARGS = json.dumps({"query": "naïve café \"quotes\" \\ back\nslash 日本語 😀", "filters": {"site": "example.org",
                          "year": 2024, "deep": {"a": [1, 2.5, None, True], "b": {}}}, "limit": 1e-05,
                          "tags": ["a", "ü", ""], "safe": False, "big": 12345678901234567890, "neg": -0.0,
                          "f": 1.50, "exp": 1e22, "tiny": 5e-324})

CHAT = [
    ("single_user_chat", {"messages": [{"role": "user", "content": "Hello!"}]}),
    ("single_user_thinking", {"messages": [{"role": "user", "content": "Hello!"}],
                              "chat_template_kwargs": {"thinking": True}}),
    ("enable_thinking_kwarg", {"messages": [{"role": "user", "content": "Hi"}],
                               "chat_template_kwargs": {"enable_thinking": True}}),
    ("thinking_type_enabled", {"messages": [{"role": "user", "content": "Hi"}],
                               "chat_template_kwargs": {"thinking": {"type": "enabled"}}}),
    ("thinking_type_disabled", {"messages": [{"role": "user", "content": "Hi"}],
                                "chat_template_kwargs": {"thinking": {"type": "disabled"}}}),
    ("system_prompt", {"messages": [{"role": "system", "content": "You are terse."},
                                    {"role": "user", "content": "Say hi."}]}),
    ("multi_turn_chat", {"messages": [
        {"role": "system", "content": "Be kind."}, {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4."}, {"role": "user", "content": "And 3+3?"},
        {"role": "assistant", "content": "6."}, {"role": "user", "content": "Thanks"}]}),
    ("multi_turn_thinking_drops_history", {"messages": [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4.", "reasoning_content": "Add two and two."},
        {"role": "user", "content": "And 3+3?"}], "chat_template_kwargs": {"thinking": True}}),
    ("multi_turn_thinking_keep_history", {"messages": [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4.", "reasoning_content": "Add two and two."},
        {"role": "user", "content": "And 3+3?"}],
        "chat_template_kwargs": {"thinking": True, "drop_thinking": False}}),
    ("multi_turn_chat_reasoning_ignored", {"messages": [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4.", "reasoning_content": "Add two and two."},
        {"role": "user", "content": "And 3+3?"}]}),
    ("effort_max_thinking", {"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Prove it."}],
                             "chat_template_kwargs": {"thinking": True, "reasoning_effort": "max"}}),
    ("effort_xhigh_is_max", {"messages": [{"role": "user", "content": "Prove it."}],
                             "chat_template_kwargs": {"thinking": True, "reasoning_effort": "xhigh"}}),
    ("effort_high_thinking", {"messages": [{"role": "user", "content": "Prove it."}],
                              "chat_template_kwargs": {"thinking": True, "reasoning_effort": "high"}}),
    ("effort_low_adds_nothing", {"messages": [{"role": "user", "content": "Prove it."}],
                                 "chat_template_kwargs": {"thinking": True, "reasoning_effort": "low"}}),
    ("effort_max_chat_mode_ignored", {"messages": [{"role": "user", "content": "Prove it."}],
                                      "chat_template_kwargs": {"reasoning_effort": "max"}}),
    ("tools_defined_chat", {"messages": [{"role": "user", "content": "Weather in Paris?"}],
                            "tools": [WEATHER, SEARCH]}),
    ("tools_with_system_prompt", {"messages": [{"role": "system", "content": "Use tools."},
                                               {"role": "user", "content": "Weather in Paris?"}],
                                  "tools": [WEATHER]}),
    ("tools_defined_thinking", {"messages": [{"role": "user", "content": "Weather in Paris?"}],
                                "tools": [WEATHER, NOARGS], "chat_template_kwargs": {"thinking": True}}),
    ("tool_call_and_result_chat", {"messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [call("c1", "get_weather", '{"city": "Paris", "days": 3}')]},
        {"role": "tool", "tool_call_id": "c1", "content": "{\"temp\": 21}"}], "tools": [WEATHER]}),
    ("tool_call_nested_unicode_numbers", {"messages": [
        {"role": "user", "content": "Find it"},
        {"role": "assistant", "content": "Searching.", "tool_calls": [call("c1", "search", NESTED_ARGS)]},
        {"role": "tool", "tool_call_id": "c1", "content": "no results"},
        {"role": "assistant", "content": "Nothing found."}, {"role": "user", "content": "ok"}],
        "tools": [SEARCH]}),
    ("parallel_calls_results_out_of_order_thinking", {"messages": [
        {"role": "system", "content": "You may call several tools."},
        {"role": "user", "content": "Paris and Rome?"},
        {"role": "assistant", "content": None, "reasoning_content": "Two cities: call twice.",
         "tool_calls": [call("a", "get_weather", '{"city": "Paris"}'), call("b", "get_weather", '{"city": "Rome"}'),
                        call("c", "now", "{}")]},
        {"role": "tool", "tool_call_id": "c", "content": "12:00"},
        {"role": "tool", "tool_call_id": "b", "content": "Rome: 25"},
        {"role": "tool", "tool_call_id": "a", "content": "Paris: 18"}],
        "tools": [WEATHER, NOARGS], "chat_template_kwargs": {"thinking": True}}),
    ("tool_results_then_user_text", {"messages": [
        {"role": "user", "content": "Paris?"},
        {"role": "assistant", "tool_calls": [call("a", "get_weather", '{"city": "Paris"}')]},
        {"role": "tool", "tool_call_id": "a", "content": "18"},
        {"role": "user", "content": "Also in F please."}], "tools": [WEATHER]}),
    ("tool_result_content_parts", {"messages": [
        {"role": "user", "content": "Paris?"},
        {"role": "assistant", "tool_calls": [call("a", "get_weather", '{"city": "Paris"}')]},
        {"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": "18 C"},
                                                          {"type": "image_url", "image_url": {"url": "x"}},
                                                          {"type": "text", "text": "sunny"}]}],
        "tools": [WEATHER], "chat_template_kwargs": {"thinking": True}}),
    ("tool_history_thinking_keeps_reasoning", {"messages": [
        {"role": "user", "content": "Paris?"},
        {"role": "assistant", "reasoning_content": "Need weather.", "content": "",
         "tool_calls": [call("a", "get_weather", '{"city": "Paris", "units": "metric"}')]},
        {"role": "tool", "tool_call_id": "a", "content": "18"},
        {"role": "assistant", "reasoning_content": "Answer now.", "content": "18 C in Paris."},
        {"role": "user", "content": "Rome?"}], "tools": [WEATHER], "chat_template_kwargs": {"thinking": True}}),
    ("call_history_without_tools_thinking", {"messages": [
        {"role": "user", "content": "Paris?"},
        {"role": "assistant", "reasoning_content": "Need weather.", "content": "",
         "tool_calls": [call("a", "get_weather", '{"city": "Paris"}')]},
        {"role": "tool", "tool_call_id": "a", "content": "18"},
        {"role": "assistant", "reasoning_content": "Answer now.", "content": "18 C in Paris."},
        {"role": "user", "content": "Rome?"}], "chat_template_kwargs": {"thinking": True}}),
    ("ends_with_tool_result_thinking", {"messages": [
        {"role": "user", "content": "Paris?"},
        {"role": "assistant", "reasoning_content": "Need weather.",
         "tool_calls": [call("a", "get_weather", '{"city": "Paris"}')]},
        {"role": "tool", "tool_call_id": "a", "content": "18"}], "chat_template_kwargs": {"thinking": True}}),
    ("arguments_not_json", {"messages": [
        {"role": "user", "content": "x"},
        {"role": "assistant", "tool_calls": [call("a", "search", "not json {")]},
        {"role": "tool", "tool_call_id": "a", "content": "r"}]}),
    ("arguments_empty_object", {"messages": [
        {"role": "user", "content": "time?"},
        {"role": "assistant", "tool_calls": [call("a", "now", "{}")]},
        {"role": "tool", "tool_call_id": "a", "content": "noon"}]}),
    ("arguments_duplicate_keys_and_spacing", {"messages": [
        {"role": "user", "content": "x"},
        {"role": "assistant", "tool_calls": [call("a", "search", '{ "query" : "a" ,"limit":1.0, "query": "b",'
                                                                 ' "esc": "\\u00e9\\/\\t" }')]},
        {"role": "tool", "tool_call_id": "a", "content": "r"}]}),
    ("no_generation_prompt", {"messages": [{"role": "user", "content": "Hello!"}], "add_generation_prompt": False,
                              "chat_template_kwargs": {"thinking": True}}),
    ("no_generation_prompt_after_assistant", {"messages": [{"role": "user", "content": "Hi"},
                                                           {"role": "assistant", "content": "Hello."}],
                                              "add_generation_prompt": False}),
    ("continue_final_message_chat", {"messages": [{"role": "user", "content": "Write a haiku."},
                                                  {"role": "assistant", "content": "Autumn moon"}],
                                     "continue_final_message": True, "add_generation_prompt": False}),
    ("continue_final_message_thinking", {"messages": [
        {"role": "user", "content": "Write a haiku."},
        {"role": "assistant", "reasoning_content": "Five seven five.", "content": "Autumn moon"}],
        "continue_final_message": True, "add_generation_prompt": False, "chat_template_kwargs": {"thinking": True}}),
    ("assistant_last_thinking_drop", {"messages": [
        {"role": "user", "content": "Q1"}, {"role": "assistant", "reasoning_content": "r1", "content": "A1"}],
        "chat_template_kwargs": {"thinking": True}}),
    ("content_parts_joined", {"messages": [
        {"role": "system", "content": [{"type": "text", "text": "Sys "}, {"type": "text", "text": "prompt"}]},
        {"role": "user", "content": [{"type": "text", "text": "Part one. "}, {"type": "text", "text": "Part two."}]}]}),
    ("empty_and_null_content", {"messages": [
        {"role": "system", "content": None}, {"role": "user", "content": ""},
        {"role": "assistant", "content": None}, {"role": "user", "content": "again"}]}),
    ("special_text_in_content", {"messages": [
        {"role": "user", "content": "Literal <think> and </think> and {braces} and %s and \\n"}]}),
    ("developer_message", {"messages": [
        {"role": "developer", "content": "Dev rules."}, {"role": "user", "content": "Go"}],
        "chat_template_kwargs": {"thinking": True}}),
]

ENCODE = [
    ("developer_with_tools_and_response_format", {"messages": [
        {"role": "developer", "content": "Answer in JSON.", "tools": [WEATHER],
         "response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": {"type": "object"}}}},
        {"role": "assistant", "content": "{}"},
        {"role": "user", "content": "again"}], "thinking_mode": "thinking"}),
    ("system_response_format", {"messages": [
        {"role": "system", "content": "S", "response_format": {"type": "json_object"}},
        {"role": "user", "content": "u"}], "thinking_mode": "chat"}),
    ("latest_reminder", {"messages": [
        {"role": "user", "content": "u1"}, {"role": "latest_reminder", "content": "Today is Monday."},
        {"role": "assistant", "content": "a1"}, {"role": "user", "content": "u2"},
        {"role": "latest_reminder", "content": "Be brief."}], "thinking_mode": "thinking"}),
    ("developer_dropped_before_last_user", {"messages": [
        {"role": "developer", "content": "old dev"}, {"role": "assistant", "content": "a", "reasoning_content": "r"},
        {"role": "user", "content": "u"}], "thinking_mode": "thinking"}),
    ("task_title", {"messages": [
        {"role": "user", "content": "Long conversation text", "task": "title"}], "thinking_mode": "chat"}),
    ("task_action_thinking", {"messages": [
        {"role": "user", "content": "Do it", "task": "action"}], "thinking_mode": "thinking"}),
    ("task_output_no_thinking", {"messages": [
        {"role": "user", "content": "Conversation", "task": "query"}, {"role": "assistant", "content": "q1"},
        {"role": "user", "content": "next"}], "thinking_mode": "thinking", "drop_thinking": False}),
    ("wo_eos_assistant_middle", {"messages": [
        {"role": "user", "content": "u"}, {"role": "assistant", "content": "partial", "wo_eos": True},
        {"role": "user", "content": "u2"}], "thinking_mode": "chat"}),
    ("no_user_thinking", {"messages": [
        {"role": "system", "content": "S"}, {"role": "assistant", "content": "a", "reasoning_content": "r"}],
        "thinking_mode": "thinking"}),
    ("effort_max_chat", {"messages": [{"role": "user", "content": "u"}], "thinking_mode": "chat",
                         "reasoning_effort": "max"}),
    ("effort_high", {"messages": [{"role": "user", "content": "u"}], "thinking_mode": "thinking",
                     "reasoning_effort": "high"}),
    ("tool_null_content_and_missing_id", {"messages": [
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "", "tool_calls": [call("x", "now", "{}"), call("y", "now", "{}")]},
        {"role": "tool", "content": None}, {"role": "tool", "tool_call_id": "x", "content": "first"}],
        "thinking_mode": "chat"}),
    ("function_id_used_for_order", {"messages": [
        {"role": "user", "content": "u"},
        {"role": "assistant", "tool_calls": [{"type": "function", "function": {"id": "p", "name": "now", "arguments": "{}"}},
                                              {"type": "function", "function": {"id": "q", "name": "now", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "q", "content": "Q"}, {"role": "tool", "tool_call_id": "p", "content": "P"}],
        "thinking_mode": "chat"}),
    ("tools_on_first_user_only_disable_drop", {"messages": [
        {"role": "user", "content": "u", "tools": [NOARGS]}, {"role": "assistant", "content": "a", "reasoning_content": "r"},
        {"role": "user", "content": "u2"}], "thinking_mode": "thinking"}),
    ("empty_messages", {"messages": [], "thinking_mode": "thinking"}),
]

PARSE = [
    ("chat_plain", "Hello there." + EOS, "chat"),
    ("thinking_plain", "Let me think.</think>The answer is 4." + EOS, "thinking"),
    ("chat_one_call", "\n\n<" + D + "tool_calls>\n<" + D + "invoke name=\"get_weather\">\n<" + D +
     "parameter name=\"city\" string=\"true\">Paris</" + D + "parameter>\n<" + D +
     "parameter name=\"days\" string=\"false\">3</" + D + "parameter>\n</" + D + "invoke>\n</" + D + "tool_calls>" + EOS,
     "chat"),
    ("thinking_two_calls_with_content", "Need both.</think>Checking.\n\n<" + D + "tool_calls>\n<" + D +
     "invoke name=\"search\">\n<" + D + "parameter name=\"query\" string=\"true\">naïve \"café\"\nline2 😀</" + D +
     "parameter>\n<" + D + "parameter name=\"filters\" string=\"false\">{\"site\": \"a.org\", \"year\": 2024}</" + D +
     "parameter>\n<" + D + "parameter name=\"safe\" string=\"false\">false</" + D + "parameter>\n</" + D +
     "invoke>\n<" + D + "invoke name=\"now\">\n\n</" + D + "invoke>\n</" + D + "tool_calls>" + EOS, "thinking"),
    ("call_value_with_markup", "\n\n<" + D + "tool_calls>\n<" + D + "invoke name=\"search\">\n<" + D +
     "parameter name=\"query\" string=\"true\">a < b > c </parameter></" + D + "parameter>\n</" + D + "invoke>\n</" +
     D + "tool_calls>" + EOS, "chat"),
]


def random_replies(ref, count=24, seed=7):
    """Replies the reference's own encoder writes for random calls (seeded): an assistant turn rendered after a
    user turn, less the prompt before it. Texts have no whitespace at their ends (our reasoning splitter drops it
    around the reasoning, by design)."""
    import random
    rng = random.Random(seed)
    texts = ["", "hi", "naïve 😀 \"q\" \\ \n line", "{a}", "日本語", "x < y > z"]

    def value(depth=0):
        r = rng.random()
        if depth > 2 or r < 0.4:
            return rng.choice([0, -7, 3.5, 1e-07, 1e+21, True, False, None, "s", "ü\n\"q\"", 1.0, "a</b>", ""])
        if r < 0.7:
            return [value(depth + 1) for _ in range(rng.randint(0, 3))]
        return {rng.choice(["a", "é", "k k"]): value(depth + 1) for _ in range(rng.randint(0, 3))}

    out = []
    for i in range(count):
        mode = rng.choice(["chat", "thinking"])
        calls = [call(f"c{k}", rng.choice(["get_weather", "search", "now"]),
                      json.dumps({rng.choice(["city", "q", "n", "ü"]): value() for _ in range(rng.randint(0, 4))},
                                 ensure_ascii=rng.random() < 0.5))
                 for k in range(rng.randint(0, 3))]
        turn = {"role": "assistant", "content": rng.choice(texts)}
        if calls:
            turn["tool_calls"] = calls
        if mode == "thinking":
            turn["reasoning_content"] = rng.choice(texts)
        user = [{"role": "user", "content": "u"}]
        prompt = ref.encode_messages(user, thinking_mode=mode)
        full = ref.encode_messages(user + [turn], thinking_mode=mode)
        assert full.startswith(prompt)
        out.append((f"random_{i}", full[len(prompt):], mode))
    return out


def load_reference(path):
    spec = importlib.util.spec_from_file_location("encoding_dsv4", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def chat_to_reference(req):
    """A chat request as the reference call: the rules in src/text/template/dsv4_encoding.h (vLLM's wrapper)."""
    messages = copy.deepcopy(req["messages"])
    for m in messages:
        if isinstance(m.get("content"), list) and m.get("role") != "tool":
            m["content"] = "".join(p["text"] for p in m["content"])
    tools = req.get("tools")
    if tools:
        messages.insert(0, {"role": "system", "tools": tools})
    kw = req.get("chat_template_kwargs", {})

    def flag(v):
        return v["type"] == "enabled" if isinstance(v, dict) else bool(v)
    thinking = flag(kw.get("thinking", False)) or flag(kw.get("enable_thinking", False))
    if "thinking_mode" in kw:
        thinking = kw["thinking_mode"] == "thinking"
    drop = kw["drop_thinking"] if "drop_thinking" in kw else bool(messages) and messages[-1]["role"] == "user"
    effort = {"max": "max", "xhigh": "max", "high": "high"}.get(kw.get("reasoning_effort"))
    if req.get("continue_final_message"):
        messages[-1]["wo_eos"] = True
    return messages, dict(thinking_mode="thinking" if thinking else "chat", drop_thinking=drop,
                          reasoning_effort=effort)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    ref = load_reference(sys.argv[1])
    cases = []
    for name, req in CHAT:
        messages, args = chat_to_reference(req)
        prompt = ref.encode_messages(messages, **args)
        if not req.get("add_generation_prompt", True) and not req.get("continue_final_message"):
            for tail in ("<｜Assistant｜><think>", "<｜Assistant｜></think>"):
                if prompt.endswith(tail):
                    prompt = prompt[: -len(tail)]
                    break
        cases.append({"name": name, "kind": "chat", "request": req, "reference_call": args, "expected": prompt})
    for name, req in ENCODE:
        args = {k: req[k] for k in ("thinking_mode", "drop_thinking", "reasoning_effort") if k in req}
        prompt = ref.encode_messages(copy.deepcopy(req["messages"]), **args)
        cases.append({"name": name, "kind": "encode", "messages": req["messages"], "options": args, "expected": prompt})
    parses = []
    for name, text, mode in PARSE + random_replies(ref):
        parsed = ref.parse_message_from_completion_text(text, mode)
        parses.append({"name": name, "text": text, "thinking_mode": mode, "expected": {
            "content": parsed["content"], "reasoning_content": parsed["reasoning_content"],
            "tool_calls": [{"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                           for c in parsed["tool_calls"]]}})
    OUT.write_text(json.dumps({"generated_by": "scripts/golden/make_dsv4_corpus.py (encoding/encoding_dsv4.py, "
                                               "DeepSeek-V4-Flash)", "cases": cases, "parse": parses},
                              ensure_ascii=False, indent=1) + "\n")
    print(f"{OUT}: {len(cases)} prompts, {len(parses)} replies")


if __name__ == "__main__":
    main()
