"""POST /v1/chat/completions through the official SDK: plain, streamed with usage, stops, seeds, and a
client that leaves."""

from __future__ import annotations

import http.client
import json
import time

import pytest

from ._serve import ALIAS, DEFAULT_MAX_TOKENS

MESSAGES = [{"role": "user", "content": "What is the capital of France?"}]


def check_usage(usage, prompt_tokens=None):
    assert usage.prompt_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert usage.prompt_tokens_details.cached_tokens >= 0
    if prompt_tokens is not None:
        assert usage.prompt_tokens == prompt_tokens


def check_finish(finish_reason, completion_tokens, limit):
    assert finish_reason in ("stop", "length")
    if finish_reason == "length":
        assert completion_tokens == limit
    else:
        assert completion_tokens <= limit


def test_chat_completion(client, server, render_chat, tokenize):
    r = client.chat.completions.create(model=server.model_id, messages=MESSAGES, max_tokens=8, temperature=0)
    assert r.id.startswith("chatcmpl-")
    assert r.object == "chat.completion"
    assert isinstance(r.created, int) and r.created > 1_600_000_000
    assert r.model == server.model_id
    assert r.system_fingerprint.startswith("fp_tensorfold_")
    assert len(r.choices) == 1
    choice = r.choices[0]
    assert choice.index == 0
    assert choice.message.role == "assistant"
    assert isinstance(choice.message.content, str) and choice.message.content
    check_finish(choice.finish_reason, r.usage.completion_tokens, 8)
    # The prompt is the model's chat template rendered as transformers renders it, then tokenized.
    check_usage(r.usage, len(tokenize(render_chat(MESSAGES))))


def test_length_finish_counts_exactly_max_tokens(client):
    r = client.chat.completions.create(model=ALIAS, messages=[{"role": "user", "content": "Count from 1 to 100."}],
                                       max_completion_tokens=5, temperature=0)
    assert r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == 5


def test_the_server_default_limit_applies_without_max_tokens(client):
    r = client.chat.completions.create(model=ALIAS, messages=[{"role": "user", "content": "Write a long poem."}],
                                       temperature=0)
    check_finish(r.choices[0].finish_reason, r.usage.completion_tokens, DEFAULT_MAX_TOKENS)


def test_stream_with_usage_matches_the_plain_reply(client, server):
    kwargs = dict(model=server.model_id, messages=MESSAGES, max_tokens=8, temperature=0)
    plain = client.chat.completions.create(**kwargs)
    chunks = list(client.chat.completions.create(**kwargs, stream=True, stream_options={"include_usage": True}))
    assert len(chunks) >= 3
    ids = {c.id for c in chunks}
    assert len(ids) == 1 and ids.pop().startswith("chatcmpl-")
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    body, usage_chunk = chunks[:-1], chunks[-1]
    assert all(c.usage is None for c in body)
    text = "".join(c.choices[0].delta.content or "" for c in body)
    finishes = [c.choices[0].finish_reason for c in body if c.choices[0].finish_reason]
    assert finishes == [plain.choices[0].finish_reason]
    assert body[-1].choices[0].finish_reason is not None
    assert usage_chunk.choices == []
    assert usage_chunk.usage.prompt_tokens == plain.usage.prompt_tokens
    assert usage_chunk.usage.completion_tokens == plain.usage.completion_tokens
    assert usage_chunk.usage.total_tokens == plain.usage.total_tokens
    # Same prompt, settings and seed: the same text, streamed or not.
    assert text == plain.choices[0].message.content


def test_stream_without_usage_has_no_usage_chunk(client):
    chunks = list(client.chat.completions.create(model=ALIAS, messages=MESSAGES, max_tokens=3, stream=True))
    assert chunks[-1].choices[0].finish_reason in ("stop", "length")
    assert all(c.usage is None for c in chunks)


def test_content_parts_and_system_messages(client, render_chat, tokenize):
    messages = [
        {"role": "system", "content": "You answer in one word."},
        {"role": "user", "content": [{"type": "text", "text": "Name a fruit."}, {"type": "text", "text": "Quick!"}]},
    ]
    r = client.chat.completions.create(model=ALIAS, messages=messages, max_tokens=4, temperature=0)
    flattened = [messages[0], {"role": "user", "content": "Name a fruit.\nQuick!"}]
    check_usage(r.usage, len(tokenize(render_chat(flattened))))


def test_stop_strings_end_the_reply_and_are_not_returned(client):
    kwargs = dict(model=ALIAS, messages=[{"role": "user", "content": "List three colors, separated by commas."}],
                  temperature=0, max_tokens=20)
    free = client.chat.completions.create(**kwargs).choices[0].message.content
    assert " " in free.strip(), free
    stopped = client.chat.completions.create(**kwargs, stop=[" "])
    assert stopped.choices[0].finish_reason == "stop"
    assert " " not in stopped.choices[0].message.content
    assert free.startswith(stopped.choices[0].message.content)


def test_seeds_make_sampling_repeatable(client):
    kwargs = dict(model=ALIAS, messages=[{"role": "user", "content": "Tell me a story about a cat."}],
                  temperature=1.0, top_p=0.95, max_tokens=10, extra_body={"top_k": 50, "min_p": 0.01})
    a = client.chat.completions.create(**kwargs, seed=1234).choices[0].message.content
    b = client.chat.completions.create(**kwargs, seed=1234).choices[0].message.content
    assert a == b
    others = {client.chat.completions.create(**kwargs, seed=s).choices[0].message.content for s in (1, 2, 3)}
    assert len(others | {a}) > 1


def test_accepted_extensions(client):
    r = client.chat.completions.create(
        model=ALIAS, messages=MESSAGES, max_tokens=2, n=1, user="e2e",
        extra_body={"draft": False, "chat_template_kwargs": {"enable_thinking": False}, "top_k": 0, "min_p": 0.0},
    )
    assert r.usage.completion_tokens <= 2


def test_a_client_that_leaves_cancels_its_generation(server):
    """Requests for thousands of tokens are dropped early, streamed and not; the server must be free for the
    next request at once (one generation runs at a time here, so an uncancelled one would block it for
    minutes). Greedy counting does not end on its own."""
    headers = {"Authorization": f"Bearer {server.api_key}", "Content-Type": "application/json"}
    request = {"model": ALIAS, "prompt": "1, 2, 3, 4, 5, 6, 7, 8, 9, 10,", "max_tokens": 4000, "temperature": 0}

    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    conn.request("POST", "/v1/completions", body=json.dumps({**request, "stream": True}), headers=headers)
    resp = conn.getresponse()
    assert resp.status == 200
    seen = b""
    while seen.count(b"\n\n") < 2:
        seen += resp.read1(4096)
    conn.sock.close()
    conn.close()

    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=1)
    conn.request("POST", "/v1/completions", body=json.dumps(request), headers=headers)
    with pytest.raises(OSError):  # a read timeout: we leave before the reply
        conn.getresponse()
    conn.close()

    t0 = time.monotonic()
    r = server.raw("POST", "/v1/chat/completions",
                   {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}, timeout=60)
    assert r.status == 200
    assert time.monotonic() - t0 < 15, "the abandoned generations kept the engine busy"


def test_concurrent_requests_all_complete_like_solo_ones(client):
    from concurrent.futures import ThreadPoolExecutor

    prompts = ["Name a planet.", "Name an animal.", "Name a country."]

    def ask(p):
        r = client.chat.completions.create(model=ALIAS, messages=[{"role": "user", "content": p}], max_tokens=6,
                                           temperature=0)
        return r.choices[0].message.content

    solo = [ask(p) for p in prompts]
    with ThreadPoolExecutor(len(prompts)) as pool:
        together = list(pool.map(ask, prompts))
    assert together == solo


def test_seeded_sampling_survives_a_restart(client, tensorfold_bin, default_model_path, tmp_path):
    """The same (prompt, seed, settings) gives the same tokens from a freshly started server process."""
    from ._serve import start_serve

    kwargs = dict(model=ALIAS, messages=[{"role": "user", "content": "Describe a sunset in one sentence."}],
                  temperature=0.9, max_tokens=12, seed=77, extra_body={"return_token_ids": True})
    before = client.chat.completions.create(**kwargs)
    other = start_serve(tensorfold_bin, default_model_path, ["--alias", ALIAS], tmp_path)
    try:
        after = other.client().chat.completions.create(**kwargs)
    finally:
        assert other.stop() == 0
    assert after.choices[0].model_extra["token_ids"] == before.choices[0].model_extra["token_ids"]
    assert after.choices[0].message.content == before.choices[0].message.content
