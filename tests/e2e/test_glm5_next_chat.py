"""GLM-5.3-Flash's chat template and tool-call format end to end, through the official `openai` client against
`tensorfold serve` on the tiny glm5_next checkpoint (tests/goldens/glm5_next/bf16: GLM's special tokens in its
tokenizer, the release's chat_template.jinja beside it, made by scripts/golden/make_glm5_next_tiny.py).

- The chat prompt: for each case of chat_golden.json (thinking on by default and off through enable_thinking, a
  system turn with tools, a tool round trip with reasoning_content and tool_calls in the history, an earlier
  <think> in an assistant turn with reasoning_effort low) the server's prompt is transformers' apply_chat_template
  byte for byte: /tokenize's ids equal transformers' ids, /detokenize gives back its text, and a chat completion
  through the client counts the same prompt tokens.
- Reasoning: with thinking on the generation prompt opens <think>, and the reply's text comes back as
  reasoning_content; with it off the reply is content.
- Tool calls: the server detects GLM's format from the template (<arg_key>); a forced call (tool_choice required
  or named) is held to its schema by the call grammar, written in GLM's syntax (<tool_call>NAME<arg_key>..
  </arg_key><arg_value>..</arg_value></tool_call>, seen in the generated ids) and parsed back into tool_calls whose
  arguments validate; a lazy call (auto) opens when a logit_bias nudges the random model to <tool_call>. Whole and
  streamed replies agree, drafted and serial replies are equal token for token."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from ._serve import start_serve

GLM = Path(__file__).resolve().parents[1] / "goldens" / "glm5_next" / "bf16"
GOLDEN = json.loads((GLM / "chat_golden.json").read_text())
CASES = {c["name"]: c for c in GOLDEN["cases"]}
WEATHER = {
    "name": "get_weather",
    "description": "Get the weather forecast for a city.",
    "parameters": {
        "type": "object",
        "properties": {
            # The random model never ends a free-text string by itself: the grammar bounds it.
            "city": {"type": "string", "maxLength": 24},
            "days": {"type": "integer", "minimum": 1, "maximum": 14},
        },
        "required": ["city", "days"],
        "additionalProperties": False,
    },
}
SEARCH = {
    "name": "search",
    "description": "Search the web.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string", "maxLength": 24},
                                                    "fresh": {"type": "boolean"}}, "required": ["query"]},
}
TOOLS = [{"type": "function", "function": t} for t in (WEATHER, SEARCH)]
SCHEMAS = {t["name"]: t["parameters"] for t in (WEATHER, SEARCH)}
ASK = [{"role": "user", "content": "Weather in Paris for 3 days?"}]
OFF = {"chat_template_kwargs": {"enable_thinking": False}}
# A call's string of 24 characters may take 4 byte tokens a character in the tiny byte-level vocabulary.
MAX_TOKENS = 192


@pytest.fixture(scope="module")
def glm(tensorfold_bin, tmp_path_factory):
    srv = start_serve(tensorfold_bin, GLM, ["--parallel", "2"], tmp_path_factory.mktemp("glm5_next_chat"))
    yield srv
    srv.stop()


def wire(messages):
    """The golden's messages as the OpenAI wire carries them: tool-call arguments as a JSON string."""
    out = json.loads(json.dumps(messages))
    for m in out:
        for call in m.get("tool_calls") or []:
            call["function"]["arguments"] = json.dumps(call["function"]["arguments"])
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_chat_prompt_is_transformers_byte_for_byte(glm, name):
    case = CASES[name]
    body = {"messages": wire(case["messages"]), "add_generation_prompt": True,
            "chat_template_kwargs": case["kwargs"]}
    if case["tools"]:
        body["tools"] = case["tools"]
    reply = glm.raw("POST", "/tokenize", body)
    assert reply.status == 200, reply.body
    assert reply.json()["tokens"] == case["ids"]
    text = glm.raw("POST", "/detokenize", {"tokens": case["ids"]}).json()["content"]
    assert text == case["text"]
    # The same prompt through the client's chat completions.
    extra = {"chat_template_kwargs": case["kwargs"]}
    kw = {"tools": case["tools"]} if case["tools"] else {}
    r = glm.client().chat.completions.create(model=glm.model_id, messages=wire(case["messages"]), max_tokens=1,
                                             temperature=0, extra_body=extra, **kw)
    assert r.usage.prompt_tokens == len(case["ids"])


def test_the_golden_covers_thinking_on_and_off():
    on, off = CASES["thinking on (default)"]["text"], CASES["thinking off"]["text"]
    assert on.startswith("[gMASK]<sop>") and on.endswith("<|assistant|><think>")
    assert off.endswith("<|assistant|><think></think>")
    assert "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>" in \
        CASES["tool round trip, thinking off"]["text"]


def test_thinking_on_and_off(glm):
    client = glm.client()
    on = client.chat.completions.create(model=glm.model_id, messages=ASK, max_tokens=8, temperature=0)
    reasoning = (on.choices[0].message.model_extra or {}).get("reasoning_content")
    assert reasoning, "with thinking on the reply opens inside <think>: its text is reasoning"
    assert "<think>" not in (on.choices[0].message.content or "")
    off = client.chat.completions.create(model=glm.model_id, messages=ASK, max_tokens=8, temperature=0,
                                         extra_body=OFF)
    assert "reasoning_content" not in (off.choices[0].message.model_extra or {})
    assert off.choices[0].message.content


def call(glm, tool_choice, sampling, draft, stream=False, logit_bias=None):
    """One reply to ASK with TOOLS: (calls [(name, arguments)], finish_reason, generated ids or None)."""
    extra = dict(OFF, draft=draft)
    if logit_bias:
        extra["logit_bias"] = logit_bias
    kw = dict(model=glm.model_id, messages=ASK, tools=TOOLS, tool_choice=tool_choice, max_tokens=MAX_TOKENS,
              parallel_tool_calls=False, **sampling)
    client = glm.client()
    if not stream:
        c = client.chat.completions.create(**kw, extra_body=dict(extra, return_token_ids=True)).choices[0]
        calls = [(t.function.name, t.function.arguments) for t in c.message.tool_calls or []]
        return calls, c.finish_reason, c.model_extra["token_ids"]
    by_index, finish = {}, None
    for chunk in client.chat.completions.create(stream=True, **kw, extra_body=extra):
        if not chunk.choices:
            continue
        for t in chunk.choices[0].delta.tool_calls or []:
            entry = by_index.setdefault(t.index, ["", ""])
            if t.function:
                entry[0] += t.function.name or ""
                entry[1] += t.function.arguments or ""
        finish = chunk.choices[0].finish_reason or finish
    return [tuple(by_index[i]) for i in sorted(by_index)], finish, None


def glm_syntax(glm, ids):
    return glm.raw("POST", "/detokenize", {"tokens": ids}).json()["content"]


SAMPLINGS = {"t0": {"temperature": 0.0}, "t08": {"temperature": 0.8, "seed": 3}}
CHOICES = {"required": "required", "named": {"type": "function", "function": {"name": "search"}}}


@pytest.mark.parametrize("sampling", list(SAMPLINGS))
@pytest.mark.parametrize("choice", list(CHOICES))
def test_forced_call_in_glm_syntax_is_parsed(glm, choice, sampling):
    calls, finish, ids = call(glm, CHOICES[choice], SAMPLINGS[sampling], draft=True)
    assert finish == "tool_calls" and len(calls) == 1, (calls, finish)
    name, arguments = calls[0]
    if choice == "named":
        assert name == "search"
    jsonschema.validate(json.loads(arguments), SCHEMAS[name])
    text = glm_syntax(glm, ids).lstrip()  # the grammar lets whitespace come first
    assert text.startswith(f"<tool_call>{name}") and "<arg_key>" in text and "</arg_value>" in text, text
    assert "</tool_call>" in text
    serial = call(glm, CHOICES[choice], SAMPLINGS[sampling], draft=False)
    assert serial[2] == ids and serial[0] == calls
    assert call(glm, CHOICES[choice], SAMPLINGS[sampling], draft=True, stream=True)[:2] == (calls, finish)


def test_lazy_call_opens_with_a_nudge(glm):
    opener = glm.raw("POST", "/tokenize", {"prompt": "<tool_call>", "add_special_tokens": False}).json()["tokens"]
    assert len(opener) == 1  # a special token of GLM's vocabulary
    calls, finish, ids = call(glm, "auto", {"temperature": 0.0}, draft=True, logit_bias={str(opener[0]): 30})
    assert ids[0] == opener[0]
    assert finish == "tool_calls" and len(calls) == 1, (calls, finish, glm_syntax(glm, ids))
    jsonschema.validate(json.loads(calls[0][1]), SCHEMAS[calls[0][0]])
    assert call(glm, "auto", {"temperature": 0.0}, draft=False, logit_bias={str(opener[0]): 30})[2] == ids
