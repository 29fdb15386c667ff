"""Tool calls through the official `openai` SDK against the default model. The 135M model rarely calls a tool by
itself, so most tests force a call with tool_choice "required" or a named function: the server then holds the
reply to the calls' grammar (the format's syntax, each function's arguments held to its schema: a token mask),
and the reply must come back as a well-formed call. tests/e2e/test_tool_grammar.py runs the schema matrix."""

from __future__ import annotations

import json

import openai
import pytest

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "The city, e.g. Paris"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Get the current time in a time zone.",
            "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}},
        },
    },
]
ASK = [{"role": "user", "content": "What is the weather like in Paris today?"}]
LIMIT = 96


def forced_call(client, server, tools=TOOLS, **kwargs):
    # One call: with parallel calls allowed the grammar lets the model add more (the 135M model often repeats its
    # call), which test_parallel_calls_get_distinct_ids_and_indexes covers.
    kwargs.setdefault("parallel_tool_calls", False)
    return client.chat.completions.create(
        model=server.model_id, messages=ASK, tools=tools, tool_choice="required", max_tokens=LIMIT, temperature=0,
        **kwargs)


def check_call(call, name=None):
    assert call.type == "function"
    assert call.id.startswith("call_")
    assert call.function.name in ("get_weather", "get_time")
    if name:
        assert call.function.name == name
    assert isinstance(json.loads(call.function.arguments), dict)


def test_required_forces_a_well_formed_call_and_the_round_trip_answers(client, server):
    r = forced_call(client, server)
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    assert len(choice.message.tool_calls) == 1
    call = choice.message.tool_calls[0]
    check_call(call)
    # The tool's result goes back and the model answers in text.
    history = ASK + [
        {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"temperature_c": 18, "sky": "clear"})},
    ]
    answer = client.chat.completions.create(model=server.model_id, messages=history, tools=TOOLS, max_tokens=16,
                                            temperature=0)
    assert answer.choices[0].finish_reason in ("stop", "length", "tool_calls")
    if answer.choices[0].finish_reason != "tool_calls":
        assert isinstance(answer.choices[0].message.content, str) and answer.choices[0].message.content


def test_a_streamed_call_sends_id_and_name_first_then_the_arguments(client, server):
    whole = forced_call(client, server).choices[0].message.tool_calls[0]
    stream = forced_call(client, server, stream=True)
    deltas, finish, content = [], None, ""
    for chunk in stream:
        d = chunk.choices[0].delta
        content += d.content or ""
        deltas += d.tool_calls or []
        finish = chunk.choices[0].finish_reason or finish
    assert finish == "tool_calls"
    assert content == ""
    assert deltas[0].index == 0 and deltas[0].id.startswith("call_")
    assert deltas[0].function.name == whole.function.name
    arguments = "".join(d.function.arguments or "" for d in deltas)
    assert len([d for d in deltas if d.function.arguments]) >= 2, "the arguments came in one piece"
    assert all(d.index == 0 for d in deltas)
    # The same sampling streamed and not: the same call.
    assert json.loads(arguments) == json.loads(whole.function.arguments)
    history = ASK + [
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": deltas[0].id, "type": "function",
                         "function": {"name": deltas[0].function.name, "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": deltas[0].id, "content": "18 C and sunny"},
    ]
    text = ""
    for chunk in client.chat.completions.create(model=server.model_id, messages=history, tools=TOOLS,
                                                max_tokens=16, temperature=0, stream=True):
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
    assert isinstance(text, str)


def test_a_named_function_is_the_one_called(client, server):
    r = client.chat.completions.create(
        model=server.model_id, messages=ASK, tools=TOOLS[:1], max_tokens=LIMIT, temperature=0,
        tool_choice={"type": "function", "function": {"name": "get_weather"}})
    assert r.choices[0].finish_reason == "tool_calls"
    check_call(r.choices[0].message.tool_calls[0], "get_weather")
    # Two tools declared, the named one is the one called (the reply may run out of tokens inside its arguments).
    r = client.chat.completions.create(
        model=server.model_id, messages=ASK, tools=TOOLS, max_tokens=24, temperature=0,
        tool_choice={"type": "function", "function": {"name": "get_time"}}, stream=True)
    names = [d.function.name for c in r for d in (c.choices[0].delta.tool_calls or []) if d.function.name]
    assert names == ["get_time"]


def test_parallel_calls_get_distinct_ids_and_indexes(client, server):
    # With parallel_tool_calls the grammar allows one or more calls, each with its own id; without, exactly one.
    r = forced_call(client, server, parallel_tool_calls=True)
    calls = r.choices[0].message.tool_calls
    assert len({c.id for c in calls}) == len(calls) >= 1
    r = forced_call(client, server, parallel_tool_calls=False)
    assert len(r.choices[0].message.tool_calls) == 1


def test_a_turn_of_parallel_calls_goes_back_with_both_results_and_is_answered(client, server):
    # Two calls in one assistant turn and their two results, as a client sends them after parallel calls: both
    # calls and both results reach the prompt the template renders, and the model answers.
    calls = [{"id": f"call_{city.lower()}", "type": "function",
              "function": {"name": "get_weather", "arguments": json.dumps({"city": city})}} for city in ("Paris", "Oslo")]
    history = ASK + [{"role": "assistant", "content": None, "tool_calls": calls}] + [
        {"role": "tool", "tool_call_id": c["id"], "content": f"{t} C in {city}"}
        for c, t, city in zip(calls, (18, 4), ("Paris", "Oslo"))]
    reply = server.raw("POST", "/tokenize", {"messages": history, "tools": TOOLS})
    assert reply.status == 200, reply.body
    prompt = server.raw("POST", "/detokenize", {"tokens": reply.json()["tokens"]}).json()["content"]
    for needle in ('"city":"Paris"', '"city":"Oslo"', "18CinParis", "4CinOslo"):
        assert needle in prompt.replace(" ", ""), (needle, prompt[-600:])
    assert prompt.index("18 C in Paris") < prompt.index("4 C in Oslo")
    answer = client.chat.completions.create(model=server.model_id, messages=history, tools=TOOLS, max_tokens=16,
                                            temperature=0)
    assert answer.choices[0].finish_reason in ("stop", "length", "tool_calls")


def test_tool_choice_none_answers_in_text(client, server):
    r = client.chat.completions.create(model=server.model_id, messages=ASK, tools=TOOLS, tool_choice="none",
                                       max_tokens=12, temperature=0)
    assert r.choices[0].message.tool_calls is None
    assert r.choices[0].finish_reason in ("stop", "length")


def test_a_forced_call_is_the_same_drafted_and_serial(client, server):
    # The constraint masks each verify row by its own prefix: drafts change nothing, token for token.
    drafted = forced_call(client, server, extra_body={"return_token_ids": True})
    serial = forced_call(client, server, extra_body={"return_token_ids": True, "draft": False})
    d = drafted.choices[0].model_extra["token_ids"]
    s = serial.choices[0].model_extra["token_ids"]
    assert d == s
    assert drafted.choices[0].message.tool_calls[0].function.arguments == \
        serial.choices[0].message.tool_calls[0].function.arguments


@pytest.mark.parametrize("change, param", [
    (lambda b: b["tools"][0]["function"].update(parameters="object"), "tools[0].function.parameters"),
    (lambda b: b.update(tool_choice={"type": "function", "function": {"name": "nope"}}), "tool_choice.function.name"),
    (lambda b: b["messages"].append({"role": "tool", "tool_call_id": "call_x", "content": "1"}),
     "messages[1].tool_call_id"),
    (lambda b: b["messages"][0].update(content=[{"type": "hologram", "text": "x"}]), "messages[0].content[0].type"),
])
def test_bad_tool_input_is_a_400_naming_the_field(client, server, change, param):
    body = {"model": server.model_id, "messages": json.loads(json.dumps(ASK)), "tools": json.loads(json.dumps(TOOLS))}
    change(body)
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(**body)
    assert e.value.status_code == 400
    assert e.value.body["param"] == param
