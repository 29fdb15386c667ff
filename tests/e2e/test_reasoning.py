"""Reasoning through the `openai` SDK on a server whose chat template opens a <think> block in its generation
prompt (tests/e2e/data/thinking_template.jinja, a small template with thinking) and whose --reasoning-budget
closes the block after a fixed number of tokens: the reply's reasoning and answer come apart, the budget is
exact, drafted and serial replies are equal."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._serve import start_serve

TEMPLATE = Path(__file__).parent / "data" / "thinking_template.jinja"
BUDGET = 6
ASK = [{"role": "user", "content": "Why is the sky blue?"}]


@pytest.fixture(scope="module")
def thinking_server(tensorfold_bin, default_model_path, tmp_path_factory):
    srv = start_serve(tensorfold_bin, default_model_path,
                      ["--chat-template", TEMPLATE, "--reasoning-budget", BUDGET, "--max-tokens", 40],
                      tmp_path_factory.mktemp("thinking"))
    yield srv
    assert srv.stop() == 0, srv.stderr()


@pytest.fixture(scope="module")
def thinking(thinking_server):
    return thinking_server.client()


def test_reasoning_and_answer_come_apart_at_the_budget(thinking, thinking_server):
    r = thinking.chat.completions.create(model=thinking_server.model_id, messages=ASK, max_tokens=30, temperature=0,
                                         extra_body={"return_token_ids": True})
    message = r.choices[0].message
    reasoning = message.model_extra["reasoning_content"]
    assert reasoning and message.model_extra["reasoning"] == reasoning
    assert "<think>" not in message.content and "</think>" not in message.content
    # Exactly BUDGET tokens of reasoning, then the forced close.
    ids = r.choices[0].model_extra["token_ids"]
    decode = lambda part: thinking_server.raw("POST", "/detokenize", {"tokens": part}).json()["content"]
    assert "</think>" not in decode(ids[:BUDGET])
    assert decode(ids[BUDGET:]).startswith("\n</think>\n\n")
    assert message.content


def test_the_budget_is_exact_under_drafts(thinking, thinking_server):
    def run(draft):
        return thinking.chat.completions.create(model=thinking_server.model_id, messages=ASK, max_tokens=30,
                                                temperature=0, extra_body={"return_token_ids": True, "draft": draft})
    assert run(True).choices[0].model_extra["token_ids"] == run(False).choices[0].model_extra["token_ids"]


def test_a_streamed_reply_sends_reasoning_first(thinking, thinking_server):
    whole = thinking.chat.completions.create(model=thinking_server.model_id, messages=ASK, max_tokens=30,
                                             temperature=0)
    reasoning, content, order = "", "", []
    for chunk in thinking.chat.completions.create(model=thinking_server.model_id, messages=ASK, max_tokens=30,
                                                  temperature=0, stream=True):
        d = chunk.choices[0].delta
        extra = d.model_extra or {}
        if extra.get("reasoning_content"):
            reasoning += extra["reasoning_content"]
            order.append("r")
        if d.content:
            content += d.content
            order.append("c")
    assert reasoning == whole.choices[0].message.model_extra["reasoning_content"]
    assert content == whole.choices[0].message.content
    assert order[0] == "r" and "c" in order
    assert "r" not in order[order.index("c"):]


def test_thinking_off_per_request(thinking, thinking_server):
    r = thinking.chat.completions.create(model=thinking_server.model_id, messages=ASK, max_tokens=12, temperature=0,
                                         extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    assert "reasoning_content" not in (r.choices[0].message.model_extra or {})
    assert r.choices[0].message.content


def test_tokenize_counts_the_chat_prompt(thinking_server, tokenize):
    reply = thinking_server.raw("POST", "/tokenize", {"messages": ASK})
    assert reply.status == 200
    body = reply.json()
    assert body["count"] == len(body["tokens"]) > 0
    back = thinking_server.raw("POST", "/detokenize", {"tokens": body["tokens"]}).json()
    assert back["content"].endswith("<|im_start|>assistant\n<think>\n")
    assert thinking_server.raw("POST", "/v1/tokenize", {"prompt": "Hello"}).json()["tokens"] == tokenize("Hello")
