"""The last log-probability pieces of issue 37, through the official SDK: completions' `echo` with `logprobs`
(the prompt scored, `max_tokens: 0` for the prompt alone, as lm-eval asks for a log-likelihood) and the
Responses API's `include: ["message.output_text.logprobs"]` with `top_logprobs`, streamed and not.

Values are checked against a log-softmax recomputed here from the model's own logits, computed by
`tf_greedy_tool` as the server computes them (test_sampling.py): prompt rows from one forward pass over the
prompt (`prefill_rows`), a reply's rows as the server decodes them (`reply_rows`). Prompt rows are the raw model
distribution (the whole row at temperature 1, whatever the request's sampling settings); reply rows the processed
one. Tolerance: LOGPROB_TOL absolute (the same rows; float32 log-softmax against float64 here). Every
case also compares drafted output (the default) with serial output (`"draft": false`): equal exactly.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from ._serve import sse_events
from .test_sampling import LOGPROB_TOL, MODEL, complete, prefill_rows, processed_log_softmax, reply_rows

PROMPTS = [
    "The quick brown fox jumps over the lazy dog. The quick brown fox",
    "Water boils at 100 degrees Celsius at sea level, and freezes at",
]


def prompt_ids(server, text):
    """The ids completions prefills for a text prompt (the tokenizer's special tokens added)."""
    r = server.raw("POST", "/tokenize", {"prompt": text, "add_special": True})
    assert r.status == 200, r.body
    return r.json()["tokens"]


def legacy(lp):
    return lp.tokens, lp.token_logprobs, lp.top_logprobs, lp.text_offset


def check_prompt_rows(lp, ids, rows, top):
    """The prompt part of an echo's logprobs against the recomputed raw distribution; the worst difference."""
    n = len(ids)
    assert lp.token_logprobs[0] is None and lp.top_logprobs[0] is None  # no row comes before the first token
    assert lp.text_offset[0] == 0
    worst = 0.0
    for i in range(1, n):
        ref = processed_log_softmax(rows[i - 1], 0.0)  # temperature 0: the whole row at temperature 1
        worst = max(worst, abs(lp.token_logprobs[i] - ref[ids[i]]))
        best = np.sort(ref)[::-1][:top]
        alts = lp.top_logprobs[i]
        # The k best (entries of equal text fold into one), and the prompt's token when it is not among them.
        assert 1 <= len(alts) <= top + 1 and lp.tokens[i] in alts
        assert abs(max(alts.values()) - best[0]) < LOGPROB_TOL
        assert all(v >= best[-1] - LOGPROB_TOL for k, v in alts.items() if k != lp.tokens[i])
        assert lp.text_offset[i] == lp.text_offset[i - 1] + len(lp.tokens[i - 1].encode())
    return worst


@pytest.mark.parametrize("max_tokens", [0, 6])
@pytest.mark.parametrize("case", range(len(PROMPTS)))
def test_echo_logprobs_score_the_prompt(client, server, build_dir, default_model_path, tmp_path, capsys, case,
                                        max_tokens):
    text = PROMPTS[case]
    ids = prompt_ids(server, text)
    n = len(ids)
    kw = dict(echo=True, logprobs=3, max_tokens=max_tokens, temperature=0.8, seed=13)
    drafted = complete(client, text, **kw)
    serial = complete(client, text, draft=False, **kw)
    d = drafted.choices[0]
    assert legacy(d.logprobs) == legacy(serial.choices[0].logprobs), "drafted log-probabilities differ from serial"
    assert d.text == serial.choices[0].text and d.text.startswith(text)
    generated = d.model_extra["token_ids"]
    assert len(d.logprobs.tokens) == n + len(generated)
    assert drafted.usage.prompt_tokens == n and drafted.usage.completion_tokens == len(generated)
    if max_tokens == 0:
        assert d.text == text and generated == [] and d.finish_reason == "length"
    else:
        assert len(generated) >= 1
        # The reply and its records are the plain request's, bit for bit: scoring never changes the decode row.
        plain = complete(client, text, **{**kw, "echo": False}).choices[0]
        assert plain.model_extra["token_ids"] == generated
        assert d.text == text + plain.text
        lp = d.logprobs
        assert lp.tokens[n:] == plain.logprobs.tokens
        assert lp.token_logprobs[n:] == plain.logprobs.token_logprobs
        assert lp.top_logprobs[n:] == plain.logprobs.top_logprobs
        assert lp.text_offset[n:] == [len(text) + o for o in plain.logprobs.text_offset]
    rows = prefill_rows(build_dir, default_model_path, ids, tmp_path)
    worst = check_prompt_rows(d.logprobs, ids, rows, 3)
    with capsys.disabled():
        print(f"\nprompt logprobs case {case}: max |ours - recomputed| {worst:.2e} over {n - 1} rows")
    assert worst < LOGPROB_TOL

    # Streamed: the prompt's chunk, then the reply's; the records joined are the non-streamed ones.
    stream = client.completions.create(model=MODEL, prompt=text, stream=True, **kw)
    joined, tokens, logprobs, tops, offsets = "", [], [], [], []
    for chunk in stream:
        for c in chunk.choices:
            joined += c.text
            if c.logprobs:
                tokens += c.logprobs.tokens
                logprobs += c.logprobs.token_logprobs
                tops += c.logprobs.top_logprobs
                offsets += c.logprobs.text_offset
    assert joined == d.text
    assert (tokens, logprobs, tops, offsets) == legacy(d.logprobs)


def test_echo_logprobs_of_token_prompts_and_choices(client, server):
    """Token-id prompts, several prompts and n > 1: each choice scores its own prompt."""
    texts = ["One, two, three, four,", "Roses are red, violets are"]
    lists = [prompt_ids(server, t) for t in texts]
    r = complete(client, lists, echo=True, logprobs=1, max_tokens=0, n=2)
    assert [c.index for c in r.choices] == [0, 1, 2, 3]
    for c in r.choices:
        ids = lists[c.index // 2]
        alone = complete(client, ids, echo=True, logprobs=1, max_tokens=0).choices[0]
        assert legacy(c.logprobs) == legacy(alone.logprobs)
        assert len(c.logprobs.tokens) == len(ids)
        assert all(v is not None and v <= 0 for v in c.logprobs.token_logprobs[1:])
    assert r.usage.completion_tokens == 0
    assert r.usage.prompt_tokens == sum(len(ids) for ids in lists)


def test_prompt_scoring_does_not_restore_a_cached_prefix(client, server):
    """A scored prompt needs every row's logits, which a restored prefix lacks: it prefills from the start
    (cached_tokens 0) and scores the same as before, while the same prompt unscored does restore."""
    messages = [{"role": "system", "content": "You are a careful assistant who answers in full sentences."},
                {"role": "user", "content": "Explain in two sentences why the sky looks blue on a clear day."}]
    ids = server.raw("POST", "/tokenize", {"messages": messages}).json()["tokens"]
    first = complete(client, ids, echo=True, logprobs=2, max_tokens=2, temperature=0)
    warm = complete(client, ids, max_tokens=2, temperature=0)  # fills or hits the cache
    again = complete(client, ids, max_tokens=2, temperature=0)
    assert again.usage.prompt_tokens_details.cached_tokens > 0, "the prompt cache never restored this prompt"
    scored = complete(client, ids, echo=True, logprobs=2, max_tokens=2, temperature=0)
    assert scored.usage.prompt_tokens_details.cached_tokens == 0
    assert legacy(scored.choices[0].logprobs) == legacy(first.choices[0].logprobs)
    assert warm.choices[0].model_extra["token_ids"] == scored.choices[0].model_extra["token_ids"]


def response_records(content):
    return [(lp.token, lp.logprob, lp.bytes, [(t.token, t.logprob, t.bytes) for t in lp.top_logprobs])
            for lp in content.logprobs]


@pytest.mark.parametrize("temperature", [0.0, 0.9])
def test_responses_include_output_text_logprobs(client, server, build_dir, default_model_path, tmp_path, capsys,
                                                temperature):
    content = "List four fruits, separated by commas."
    kw = dict(model=MODEL, input=content, max_output_tokens=12, temperature=temperature, top_logprobs=4,
              include=["message.output_text.logprobs"])
    extra = {"seed": 17}
    drafted = client.responses.create(**kw, extra_body=extra)
    serial = client.responses.create(**kw, extra_body={**extra, "draft": False})
    part = drafted.output[0].content[0]
    records = response_records(part)
    assert records == response_records(serial.output[0].content[0]), "drafted log-probabilities differ from serial"
    assert len(records) == drafted.usage.output_tokens >= 2
    assert part.text in b"".join(bytes(b) for _, _, b, _ in records).decode("utf-8", "replace")
    # The same request as a chat completion gives the same tokens and records (a response runs as that chat).
    chat = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": content}], max_tokens=12,
                                          temperature=temperature, logprobs=True, top_logprobs=4,
                                          extra_body={**extra, "return_token_ids": True})
    ids = chat.choices[0].model_extra["token_ids"]
    assert [(c.token, c.logprob, c.bytes, [(t.token, t.logprob, t.bytes) for t in c.top_logprobs])
            for c in chat.choices[0].logprobs.content] == records
    # Against the recomputed processed distribution of the reply rows.
    prompt = server.raw("POST", "/tokenize", {"messages": [{"role": "user", "content": content}]}).json()["tokens"]
    rows = reply_rows(build_dir, default_model_path, prompt, ids, tmp_path)
    worst = 0.0
    for i, (tok, rec) in enumerate(zip(ids, part.logprobs)):
        ref = processed_log_softmax(rows[i], temperature)
        worst = max(worst, abs(rec.logprob - ref[tok]))
        best = np.sort(ref[np.isfinite(ref)])[::-1][: len(rec.top_logprobs)]
        assert len(rec.top_logprobs) == min(4, int(np.isfinite(ref).sum()))
        worst = max(worst, float(np.max(np.abs(np.array([t.logprob for t in rec.top_logprobs]) - best))))
    with capsys.disabled():
        print(f"\nresponses logprobs T={temperature}: max |ours - recomputed| {worst:.2e} over {len(ids)} rows")
    assert worst < LOGPROB_TOL

    # Streamed: each output_text.delta carries its tokens' records (without bytes); the done event and the
    # final part carry them all.
    r = server.raw("POST", "/v1/responses", {**{k: v for k, v in kw.items()}, **extra, "stream": True})
    assert r.status == 200
    deltas, done, final = [], None, None
    for name, data in sse_events(r.body):
        if name == "response.output_text.delta":
            deltas += json.loads(data)["logprobs"]
        elif name == "response.output_text.done":
            done = json.loads(data)["logprobs"]
        elif name == "response.completed" or name == "response.incomplete":
            final = json.loads(data)["response"]["output"][0]["content"][0]["logprobs"]
    no_bytes = [{"token": t, "logprob": lp, "top_logprobs": [{"token": a, "logprob": b} for a, b, _ in top]}
                for t, lp, _, top in records]
    assert deltas == no_bytes
    assert done == no_bytes
    assert [(e["token"], e["logprob"], e["bytes"], [(a["token"], a["logprob"], a["bytes"]) for a in e["top_logprobs"]])
            for e in final] == records
    # Stored: GET returns the parts with their records.
    got = client.responses.retrieve(drafted.id)
    assert response_records(got.output[0].content[0]) == records


def test_responses_logprobs_with_tools_streamed_and_not(client, server):
    """With tools the stream's items are found as the reply goes (reasoning, message, calls): the message part
    still carries every generated token's record, streamed as not, and the deltas carry them in order."""
    body = {"model": MODEL, "input": "Say hello to me in one short sentence.", "max_output_tokens": 10,
            "temperature": 0, "include": ["message.output_text.logprobs"], "top_logprobs": 2,
            "tools": [{"type": "function", "name": "get_weather", "description": "Weather of a city",
                       "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]}
    whole = server.raw("POST", "/v1/responses", body)
    assert whole.status == 200, whole.body
    messages = [o for o in whole.json()["output"] if o["type"] == "message"]
    r = server.raw("POST", "/v1/responses", {**body, "stream": True})
    assert r.status == 200
    deltas, final = [], None
    for name, data in sse_events(r.body):
        if name == "response.output_text.delta":
            deltas += json.loads(data)["logprobs"]
        elif name in ("response.completed", "response.incomplete"):
            final = json.loads(data)["response"]
    streamed = [o for o in final["output"] if o["type"] == "message"]
    assert [m["content"][0]["logprobs"] for m in streamed] == [m["content"][0]["logprobs"] for m in messages]
    assert messages, "the reply had no message to carry records"
    records = messages[0]["content"][0]["logprobs"]
    assert len(records) == whole.json()["usage"]["output_tokens"] and deltas
    assert deltas == [{"token": e["token"], "logprob": e["logprob"],
                       "top_logprobs": [{"token": t["token"], "logprob": t["logprob"]} for t in e["top_logprobs"]]}
                      for e in records[: len(deltas)]]


def test_responses_without_include_carry_no_logprobs(client):
    r = client.responses.create(model=MODEL, input="Say hi.", max_output_tokens=4, temperature=0)
    assert r.output[0].content[0].logprobs == []


@pytest.mark.parametrize("body,param", [
    ({"include": ["reasoning.encrypted_content"]}, "include"),
    ({"include": ["message.output_text.logprobs", "nonsense"]}, "include"),
    ({"include": "message.output_text.logprobs"}, "include"),
    ({"include": [5]}, "include"),
    ({"top_logprobs": 3}, "top_logprobs"),
    ({"include": ["message.output_text.logprobs"], "top_logprobs": 21}, "top_logprobs"),
    ({"include": ["message.output_text.logprobs"], "top_logprobs": -1}, "top_logprobs"),
])
def test_responses_logprobs_errors(server, body, param):
    r = server.raw("POST", "/v1/responses", {"input": "hi", **body})
    assert r.status == 400, r.body
    assert r.json()["error"]["param"] == param


@pytest.mark.parametrize("body,param", [
    ({"max_tokens": 0}, "max_tokens"),
    ({"echo": True, "max_tokens": -1}, "max_tokens"),
    ({"echo": True, "logprobs": 21}, "logprobs"),
    ({"echo": True, "logprobs": -1}, "logprobs"),
])
def test_echo_logprobs_errors(server, body, param):
    r = server.raw("POST", "/v1/completions", {"prompt": "x", **body})
    assert r.status == 400, r.body
    assert r.json()["error"]["param"] == param
