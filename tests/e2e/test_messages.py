"""Anthropic's Messages API (/v1/messages, /v1/messages/count_tokens) through the official `anthropic` SDK: text,
tool_use forced with tool_choice "any"/"tool", streamed and not, a tool round trip, counting, the error envelope
and x-api-key auth."""

from __future__ import annotations

import anthropic
import pytest

from ._serve import API_KEYS, REQUEST_TIMEOUT_S

TOOLS = [
    {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
    {"name": "get_time", "description": "Get the time.", "input_schema": {"type": "object", "properties": {}}},
]
ASK = [{"role": "user", "content": "What is the weather like in Paris today?"}]


@pytest.fixture(scope="module")
def claude(server):
    return anthropic.Anthropic(base_url=f"http://127.0.0.1:{server.port}", api_key=API_KEYS[1], max_retries=0,
                               timeout=REQUEST_TIMEOUT_S)


def test_a_text_reply(claude, server):
    m = claude.messages.create(model=server.model_id, max_tokens=12, system="You are terse.", messages=ASK,
                               extra_body={"temperature": 0})
    assert m.type == "message" and m.role == "assistant" and m.id.startswith("msg_")
    assert m.content[0].type == "text" and m.content[0].text
    assert m.stop_reason in ("end_turn", "max_tokens")
    assert m.usage.input_tokens > 0 and 0 < m.usage.output_tokens <= 12


def test_tool_use_and_the_round_trip(claude, server):
    m = claude.messages.create(model=server.model_id, max_tokens=96, messages=ASK, tools=TOOLS[:1],
                               tool_choice={"type": "any", "disable_parallel_tool_use": True}, extra_body={"temperature": 0})
    assert m.stop_reason == "tool_use"
    uses = [b for b in m.content if b.type == "tool_use"]
    assert len(uses) == 1
    use = uses[0]
    assert use.id.startswith("toolu_") and use.name in ("get_weather", "get_time") and isinstance(use.input, dict)
    history = ASK + [
        {"role": "assistant", "content": [b.model_dump() for b in m.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "18 C, clear"}]},
    ]
    answer = claude.messages.create(model=server.model_id, max_tokens=12, messages=history, tools=TOOLS[:1],
                                    extra_body={"temperature": 0})
    assert answer.stop_reason in ("end_turn", "max_tokens", "tool_use")


def test_a_streamed_tool_use_sends_anthropics_events_in_order(claude, server):
    whole = claude.messages.create(model=server.model_id, max_tokens=96, messages=ASK, tools=TOOLS[:1],
                                   extra_body={"temperature": 0}, tool_choice={"type": "tool", "name": "get_weather"})
    kinds, partial = [], ""
    with claude.messages.stream(model=server.model_id, max_tokens=96, messages=ASK, tools=TOOLS[:1],
                                extra_body={"temperature": 0}, tool_choice={"type": "tool", "name": "get_weather"}) as stream:
        for event in stream:
            if event.type in ("message_start", "content_block_start", "content_block_delta", "content_block_stop",
                              "message_delta", "message_stop"):
                kinds.append(event.type)
            if event.type == "content_block_start":
                assert event.content_block.type == "tool_use" and event.content_block.name == "get_weather"
            if event.type == "content_block_delta":
                assert event.delta.type == "input_json_delta"
                partial += event.delta.partial_json
        final = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[1] == "content_block_start"
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert kinds.count("content_block_delta") >= 2, "the input came in one piece"
    assert final.stop_reason == "tool_use"
    assert final.content[0].input == whole.content[0].input


def test_count_tokens(claude, server):
    n = claude.messages.count_tokens(model=server.model_id, messages=ASK, tools=TOOLS)
    plain = claude.messages.count_tokens(model=server.model_id, messages=ASK)
    assert n.input_tokens > plain.input_tokens > 0


def test_errors_use_anthropics_envelope(claude, server):
    with pytest.raises(anthropic.BadRequestError) as e:
        claude.messages.create(model=server.model_id, max_tokens=8,
                               messages=[{"role": "user", "content": [{"type": "hologram"}]}])
    assert e.value.body["type"] == "error"
    assert e.value.body["error"]["type"] == "invalid_request_error"
    assert e.value.body["error"]["param"] == "messages[0].content[0].type"
    with pytest.raises(anthropic.BadRequestError):
        claude.messages.create(model=server.model_id, max_tokens=8, messages=ASK,
                               tools=[{"name": "f", "input_schema": "object"}])
    wrong = anthropic.Anthropic(base_url=f"http://127.0.0.1:{server.port}", api_key="sk-wrong", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as e:
        wrong.messages.create(model=server.model_id, max_tokens=8, messages=ASK)
    assert e.value.body["error"]["type"] == "authentication_error"
