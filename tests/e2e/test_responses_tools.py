"""Function calls on the Responses API through the `openai` SDK: function_call output items (forced with
tool_choice), function_call_output input items continuing the conversation with previous_response_id, the
streamed response.function_call_arguments events, and the 400s."""

from __future__ import annotations

import json

import openai
import pytest

TOOLS = [
    {"type": "function", "name": "get_weather", "description": "Get the current weather in a city.",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
    {"type": "function", "name": "get_time", "description": "Get the time.",
     "parameters": {"type": "object", "properties": {}}},
]
ASK = "What is the weather like in Paris today?"


def calls_of(response):
    return [item for item in response.output if item.type == "function_call"]


def test_a_function_call_and_the_next_turn_by_previous_response_id(client, server):
    r = client.responses.create(model=server.model_id, input=ASK, tools=TOOLS[:1], tool_choice="required", parallel_tool_calls=False,
                                max_output_tokens=96, temperature=0)
    calls = calls_of(r)
    assert len(calls) == 1
    call = calls[0]
    assert call.id.startswith("fc_") and call.call_id.startswith("call_") and call.status == "completed"
    assert call.name in ("get_weather", "get_time") and isinstance(json.loads(call.arguments), dict)
    follow = client.responses.create(
        model=server.model_id, previous_response_id=r.id, tools=TOOLS[:1], max_output_tokens=12, temperature=0,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "18 C and clear"}])
    assert follow.status in ("completed", "incomplete")
    assert follow.previous_response_id == r.id
    assert any(item.type in ("message", "function_call") for item in follow.output)


def test_a_named_function_streams_its_arguments(client, server):
    whole = client.responses.create(model=server.model_id, input=ASK, tools=TOOLS[:1], max_output_tokens=96,
                                    temperature=0, tool_choice={"type": "function", "name": "get_weather"}, parallel_tool_calls=False)
    assert calls_of(whole)[0].name == "get_weather"
    kinds, pieces, done, final = [], [], None, None
    for event in client.responses.create(model=server.model_id, input=ASK, tools=TOOLS[:1], max_output_tokens=96,
                                         temperature=0, stream=True,
                                         tool_choice={"type": "function", "name": "get_weather"}, parallel_tool_calls=False):
        kinds.append(event.type)
        if event.type == "response.function_call_arguments.delta":
            pieces.append(event.delta)
        if event.type == "response.function_call_arguments.done":
            done = event.arguments
        if event.type == "response.completed":
            final = event.response
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[2] == "response.output_item.added"
    assert len(pieces) >= 2, "the arguments came in one piece"
    assert done == "".join(pieces)
    assert json.loads(done) == json.loads(calls_of(whole)[0].arguments)
    assert kinds[-1] == "response.completed" and calls_of(final)[0].arguments == done


def test_a_tool_output_for_no_call_is_a_400(client, server):
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=server.model_id, tools=TOOLS[:1],
                                input=[{"type": "function_call_output", "call_id": "call_none", "output": "x"}])
    assert e.value.body["param"] == "input[0].call_id"
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=server.model_id, input=ASK, tools=TOOLS[:1],
                                tool_choice={"type": "function", "name": "nope"})
    assert e.value.body["param"] == "tool_choice.name"
