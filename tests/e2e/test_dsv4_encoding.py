"""DeepSeek-V4's builtin encoding served (`serve --chat-template builtin:deepseek_v4`, on the small default model:
its tokenizer spells DeepSeek's markers as plain text, which is all these tests need): chat completions, Responses
and Anthropic messages render their prompts with it (the ids of the reference's prompt, dsv4_corpus.json), forced
tool calls are written in DSML and come back as OpenAI tool calls (whole and streamed), and input the encoding
refuses is a 400 naming the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ._serve import API_KEYS, start_serve

CORPUS = json.loads((Path(__file__).resolve().parents[1] / "conformance/templates/dsv4_corpus.json")
                    .read_text(encoding="utf-8"))
# Cases whose messages the server passes through as given (it joins content parts with newlines and renders a
# developer message as a system one before any template sees them).
SERVED = ["single_user_chat", "single_user_thinking", "thinking_type_enabled", "system_prompt", "multi_turn_chat",
          "multi_turn_thinking_drops_history", "multi_turn_thinking_keep_history", "effort_max_thinking",
          "effort_high_thinking", "tools_defined_chat", "tools_with_system_prompt", "tools_defined_thinking",
          "tool_call_and_result_chat", "tool_call_nested_unicode_numbers",
          "parallel_calls_results_out_of_order_thinking", "tool_results_then_user_text",
          "tool_history_thinking_keeps_reasoning", "arguments_duplicate_keys_and_spacing", "no_generation_prompt",
          "special_text_in_content"]
# SmolLM2 spells every DSML marker in several tokens: a call takes ~100 of them.
# One call the grammar decides but for the choice of a city (a text value) and a day count (a JSON value).
CITY = {"type": "function", "function": {"name": "weather", "description": "Weather",
                                         "parameters": {"type": "object", "properties": {
                                             "city": {"type": "string", "enum": ["Paris", "Rome"]},
                                             "days": {"type": "integer", "minimum": 1, "maximum": 7}},
                                             "required": ["city", "days"]}}}
ASK = [{"role": "user", "content": "What is the weather in Paris for 3 days?"}]


@pytest.fixture(scope="module")
def dsv4(tensorfold_bin, default_model_path, tmp_path_factory):
    srv = start_serve(tensorfold_bin, default_model_path,
                      ["--chat-template", "builtin:deepseek_v4", "--api-key", API_KEYS[0], "--max-tokens", "400"],
                      tmp_path_factory.mktemp("dsv4"), API_KEYS[0])
    yield srv
    assert srv.stop() == 0, srv.stderr()


def case(name):
    return next(c for c in CORPUS["cases"] if c["name"] == name)


@pytest.mark.parametrize("name", SERVED)
def test_prompt_is_the_reference_encoding(dsv4, name):
    c = case(name)
    req = c["request"]
    body = {"messages": req["messages"], "add_generation_prompt": req.get("add_generation_prompt", True)}
    for key in ("tools", "chat_template_kwargs"):
        if key in req:
            body[key] = req[key]
    got = dsv4.raw("POST", "/tokenize", body)
    assert got.status == 200, got.json()
    want = dsv4.raw("POST", "/tokenize", {"prompt": c["expected"], "add_special_tokens": False}).json()["tokens"]
    assert got.json()["tokens"] == want


def check_call(name, arguments):
    assert name == "weather"
    args = json.loads(arguments)
    assert set(args) == {"city", "days"} and args["city"] in ("Paris", "Rome") and 1 <= args["days"] <= 7, arguments


def test_forced_call_comes_back_as_tool_calls(dsv4):
    client = dsv4.client()
    kw = dict(model=dsv4.model_id, messages=ASK, tools=[CITY], tool_choice="required", temperature=0, max_tokens=400,
              parallel_tool_calls=False)
    c = client.chat.completions.create(**kw).choices[0]
    assert c.finish_reason == "tool_calls", c
    assert len(c.message.tool_calls) == 1
    check_call(c.message.tool_calls[0].function.name, c.message.tool_calls[0].function.arguments)
    assert not c.message.content
    # Streamed: the same call, its arguments in pieces.
    name, pieces = None, []
    for chunk in client.chat.completions.create(stream=True, **kw):
        for d in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            name = name or d.function.name
            if d.function.arguments:
                pieces.append(d.function.arguments)
            assert "DSML" not in (chunk.choices[0].delta.content or "")
    check_call(name, "".join(pieces))
    assert "".join(pieces) == c.message.tool_calls[0].function.arguments
    assert len(pieces) > 1
    # Thinking: the prompt opens <think>; the budget closes it and the call follows.
    kw["extra_body"] = {"chat_template_kwargs": {"thinking": True}, "thinking_budget": 4}
    t = client.chat.completions.create(**kw).choices[0]
    assert t.finish_reason == "tool_calls", t
    check_call(t.message.tool_calls[0].function.name, t.message.tool_calls[0].function.arguments)
    assert t.message.model_extra.get("reasoning_content"), t


def test_named_call_history_and_results_round_trip(dsv4):
    client = dsv4.client()
    first = client.chat.completions.create(model=dsv4.model_id, messages=ASK, tools=[CITY], temperature=0, max_tokens=400,
                                           parallel_tool_calls=False,
                                           tool_choice={"type": "function", "function": {"name": "weather"}})
    call = first.choices[0].message.tool_calls[0]
    check_call(call.function.name, call.function.arguments)
    history = ASK + [{"role": "assistant", "content": None, "tool_calls": [call.model_dump(exclude_none=True)]},
                     {"role": "tool", "tool_call_id": call.id, "content": "Sunny, 21 C"}]
    body = {"messages": history, "tools": [CITY]}
    ids = dsv4.raw("POST", "/tokenize", body).json()["tokens"]
    text = dsv4.raw("POST", "/detokenize", {"tokens": ids}).json()["content"]
    args = json.loads(call.function.arguments)
    assert f'<｜DSML｜parameter name="city" string="true">{args["city"]}</｜DSML｜parameter>' in text
    assert "<｜User｜><tool_result>Sunny, 21 C</tool_result><｜Assistant｜></think>" in text
    second = client.chat.completions.create(model=dsv4.model_id, messages=history, tools=[CITY], max_tokens=8)
    assert second.choices[0].finish_reason in ("stop", "length", "tool_calls")


def test_responses_and_messages_use_the_encoding(dsv4):
    r = dsv4.raw("POST", "/v1/responses", {
        "model": dsv4.model_id, "input": ASK[0]["content"], "tool_choice": "required", "temperature": 0,
        "max_output_tokens": 400, "parallel_tool_calls": False,
        "tools": [{"type": "function", **CITY["function"]}]})
    assert r.status == 200, r.json()
    items = [i for i in r.json()["output"] if i["type"] == "function_call"]
    assert len(items) == 1
    check_call(items[0]["name"], items[0]["arguments"])
    m = dsv4.raw("POST", "/v1/messages", {
        "model": dsv4.model_id, "max_tokens": 400, "messages": ASK, "tool_choice": {"type": "any", "disable_parallel_tool_use": True}, "temperature": 0,
        "tools": [{"name": "weather", "description": "Weather", "input_schema": CITY["function"]["parameters"]}]})
    assert m.status == 200, m.json()
    uses = [b for b in m.json()["content"] if b["type"] == "tool_use"]
    assert len(uses) == 1
    check_call(uses[0]["name"], json.dumps(uses[0]["input"]))


@pytest.mark.parametrize("messages,kwargs,field", [
    ([{"role": "user", "content": "u"},
      {"role": "assistant", "content": None,
       "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "[1, 2]"}}]},
      {"role": "tool", "tool_call_id": "a", "content": "r"}],
     {}, "messages[1].tool_calls[0].function.arguments"),
    (ASK, {"thinking": "yes"}, "chat_template_kwargs.thinking"),
    (ASK, {"reasoning_effort": "extreme"}, "reasoning_effort"),
])
def test_refused_input_is_a_400_naming_the_field(dsv4, messages, kwargs, field):
    r = dsv4.raw("POST", "/v1/chat/completions", {"model": dsv4.model_id, "messages": messages,
                                                  "chat_template_kwargs": kwargs, "max_tokens": 4})
    assert r.status == 400, r.json()
    assert field in r.json()["error"]["message"], r.json()
    assert dsv4.raw("GET", "/health", auth=False).status == 200
