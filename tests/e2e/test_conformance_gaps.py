"""Smaller conformance cases found by porting llama.cpp's server suite and running the SDKs (issue 51): each
field is honoured or answered 4xx naming it, never silently ignored.

llama.cpp's top-level `json_schema` and `response_format: {type: json_object, schema}`; vLLM's
`continue_final_message`; two trailing assistant messages (400); X-Api-Key on every route; Anthropic's
stop_reason "stop_sequence" with the sequence; Anthropic thinking blocks of earlier turns reaching the
template; Anthropic's own ranges and rules with its error shape; JSON that does not parse (a lone surrogate,
1e999) answered with the field it broke in."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import jsonschema
import pytest

from ._serve import ALIAS, API_KEYS, REQUEST_TIMEOUT_S, start_serve

CHAT = "/v1/chat/completions"
USER = [{"role": "user", "content": "Give me a number."}]
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 99}}, "required": ["n"]}
QWEN = Path(__file__).resolve().parents[1] / "goldens" / "qwen3_5" / "mlx-4bit"


def chat(server, **body):
    return server.raw("POST", CHAT, {"model": ALIAS, "messages": USER, "temperature": 0, **body})


@pytest.mark.parametrize("field", [
    {"json_schema": SCHEMA},
    {"response_format": {"type": "json_object", "schema": SCHEMA}},
])
def test_llama_cpp_schema_fields_hold_the_reply(server, field):
    r = chat(server, max_tokens=48, **field)
    assert r.status == 200, r.body
    choice = r.json()["choices"][0]
    assert choice["finish_reason"] == "stop"
    jsonschema.validate(json.loads(choice["message"]["content"]), SCHEMA)


def test_a_bad_json_schema_field_is_a_400_naming_it(server):
    r = chat(server, json_schema={"type": "object", "not": {}})
    assert r.status == 400 and r.json()["error"]["param"] == "json_schema"
    r = chat(server, json_schema=SCHEMA, regex="[0-9]+")
    assert r.status == 400


def test_continue_final_message_continues_the_assistant_text(server, render_chat, tokenize):
    messages = USER + [{"role": "assistant", "content": "My number is"}]
    r = server.raw("POST", CHAT, {"model": ALIAS, "messages": messages, "temperature": 0, "max_tokens": 4,
                                  "continue_final_message": True, "add_generation_prompt": False})
    assert r.status == 200, r.body
    # The prompt is the rendered conversation cut right after the final message's text (vLLM's rule).
    rendered = render_chat(messages, add_generation_prompt=False)
    cut = rendered[:rendered.rfind("My number is") + len("My number is")]
    assert r.json()["usage"]["prompt_tokens"] == len(tokenize(cut))
    # Without add_generation_prompt given, continue_final_message alone does the same.
    same = server.raw("POST", CHAT, {"model": ALIAS, "messages": messages, "temperature": 0, "max_tokens": 4,
                                     "continue_final_message": True})
    assert same.json()["choices"][0]["message"]["content"] == r.json()["choices"][0]["message"]["content"]
    both = server.raw("POST", CHAT, {"model": ALIAS, "messages": messages, "continue_final_message": True,
                                     "add_generation_prompt": True})
    assert both.status == 400 and both.json()["error"]["param"] == "continue_final_message"


def test_two_trailing_assistant_messages_are_a_400(server):
    messages = USER + [{"role": "assistant", "content": "One"}, {"role": "assistant", "content": "Two"}]
    r = server.raw("POST", CHAT, {"model": ALIAS, "messages": messages})
    assert r.status == 400 and r.json()["error"]["param"] == "messages[2]"


def test_x_api_key_is_taken_on_every_route(server):
    for method, path, body in [("GET", "/v1/models", None), ("POST", CHAT, {"model": ALIAS, "messages": USER,
                                                                              "max_tokens": 1}),
                               ("POST", "/v1/completions", {"model": ALIAS, "prompt": "a", "max_tokens": 1})]:
        ok = server.raw(method, path, body, headers={"x-api-key": API_KEYS[1]}, auth=False)
        assert ok.status == 200, (path, ok.body)
        bad = server.raw(method, path, body, headers={"x-api-key": "sk-wrong"}, auth=False)
        assert bad.status == 401, path


@pytest.fixture(scope="module")
def claude(server):
    return anthropic.Anthropic(base_url=f"http://127.0.0.1:{server.port}", api_key=API_KEYS[1], max_retries=0,
                               timeout=REQUEST_TIMEOUT_S)


def test_anthropic_stop_sequence_is_named(claude, server):
    ask = [{"role": "user", "content": "Write a sentence about the sea."}]
    m = claude.messages.create(model=server.model_id, max_tokens=32, messages=ask, stop_sequences=[" "],
                               extra_body={"temperature": 0})
    assert m.stop_reason == "stop_sequence" and m.stop_sequence == " "
    with claude.messages.stream(model=server.model_id, max_tokens=32, messages=ask, stop_sequences=[" "],
                                extra_body={"temperature": 0}) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "stop_sequence" and final.stop_sequence == " "
    # No stop sequence met: end_turn or max_tokens, and stop_sequence null.
    m = claude.messages.create(model=server.model_id, max_tokens=4, messages=ask, stop_sequences=["\u2603"],
                               extra_body={"temperature": 0})
    assert m.stop_reason in ("end_turn", "max_tokens") and m.stop_sequence is None


@pytest.mark.parametrize("body,param", [
    ({"temperature": 1.5}, "temperature"),
    ({"top_p": 1.5}, "top_p"),
    ({"stop_sequences": "END"}, "stop_sequences"),
    ({"messages": [{"role": "assistant", "content": "Hi"}, {"role": "user", "content": "Hi"}]}, "messages[0].role"),
])
def test_anthropic_ranges_are_anthropics_with_its_error_shape(server, body, param):
    full = {"model": "claude-sonnet-4", "max_tokens": 4, "messages": [{"role": "user", "content": "Hi"}], **body}
    r = server.raw("POST", "/v1/messages", full, headers={"x-api-key": API_KEYS[0]}, auth=False)
    assert r.status == 400, r.body
    err = r.json()
    assert err["type"] == "error" and err["error"]["type"] == "invalid_request_error"
    assert param in err["error"]["message"]


@pytest.mark.parametrize("raw,param", [
    (b'{"model": "m", "messages": [{"role": "user", "content": "a\\ud800b"}]}', "messages[0].content"),
    (b'{"model": "m", "temperature": 1e999, "messages": [{"role": "user", "content": "a"}]}', "temperature"),
])
def test_json_that_breaks_in_a_field_names_it(server, raw, param):
    r = server.raw("POST", CHAT, raw)
    assert r.status == 400, r.body
    assert r.json()["error"]["param"] == param
    assert param in r.json()["error"]["message"]


@pytest.fixture(scope="module")
def qwen_server(tensorfold_bin, tmp_path_factory):
    srv = start_serve(tensorfold_bin, QWEN, ["--reasoning", "off"], tmp_path_factory.mktemp("qwen-gaps"))
    yield srv
    srv.stop()


def test_anthropic_thinking_blocks_of_earlier_turns_reach_the_template(qwen_server):
    """The tiny qwen3_5's template writes an assistant turn's reasoning_content: a thinking block of an earlier
    turn is counted (and rendered), a redacted one is not."""
    def count(assistant_content):
        body = {"model": "m", "messages": [{"role": "user", "content": "Hi"},
                                           {"role": "assistant", "content": assistant_content},
                                           {"role": "user", "content": "And?"}]}
        r = qwen_server.raw("POST", "/v1/messages/count_tokens", body)
        assert r.status == 200, r.body
        return r.json()["input_tokens"]

    text = [{"type": "text", "text": "Hello."}]
    thinking = [{"type": "thinking", "thinking": "The user greets me; greet back.", "signature": ""}]
    redacted = [{"type": "redacted_thinking", "data": "opaque"}]
    assert count(thinking + text) > count(text)
    assert count(redacted + text) == count(text)
