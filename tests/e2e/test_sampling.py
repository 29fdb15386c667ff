"""OpenAI's sampling surface through the official SDK (issue 37): logprobs (chat and completions, streamed and
not), logit_bias, presence/frequency/repetition penalties, n > 1, completions with a list of prompts, echo and
best_of. Every case compares drafted output (the default) with serial output (`"draft": false`): tokens and
log-probabilities equal bit for bit.

Log-probabilities are checked against a log-softmax recomputed here (numpy, float64) from the model's own
logits: `tf_greedy_tool` prefills the prompt in the chunks the server's chunk plan cuts (at each message start)
and feeds the reply a token at a time, as the server decodes it, and returns every reply row's logits, which
are processed as the server documents (temperature, top-k, top-p, min-p; at temperature 0 the row at
temperature 1). Tolerance: LOGPROB_TOL absolute (the same rows' bits; the server's float32 log-softmax against
float64 here; the worst difference is printed).

The same arithmetic matters: on the CPU the products quantize activations to 16 bits per block of 32
(quantized_matmul.cpp), and two computations of a row whose float sums differ in order (another chunking) drift
apart by ~1e-3 in log-probability, not ~1e-5 as with float activations. How far decode rows are from one prefill
pass over the same tokens is checked too, against DECODE_VS_PREFILL_TOL (docs/benchmarks.md).
"""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from ._serve import sse_events

MODEL = "SmolLM2-135M-Instruct.Q4_1"
LOGPROB_TOL = 2e-5
DECODE_VS_PREFILL_TOL = 5e-3
M64 = (1 << 64) - 1
_worst = {"diff": 0.0, "rows": 0}


def mix64(z: int) -> int:
    z = (z + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def choice_seed(seed: int, i: int) -> int:
    """The documented seed of choice i (engine/sampler.h choice_seed)."""
    return seed if i == 0 else mix64((seed + i * 0x9E3779B97F4A7C15) & M64)


def chat(client, content, draft=True, **kw):
    extra = {"draft": draft, "return_token_ids": True}
    extra.update(kw.pop("extra_body", {}))
    return client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": content}],
                                          extra_body=extra, **kw)


def complete(client, prompt, draft=True, **kw):
    extra = {"draft": draft, "return_token_ids": True}
    extra.update(kw.pop("extra_body", {}))
    return client.completions.create(model=MODEL, prompt=prompt, extra_body=extra, **kw)


def chat_records(choice):
    return [(c.token, c.logprob, c.bytes, [(t.token, t.logprob) for t in c.top_logprobs])
            for c in choice.logprobs.content]


def _tool_rows(build_dir, model_path, ids, rows, tmp_path, **options):
    case = tmp_path / "case.json"
    case.write_text(json.dumps({"cases": [{"prompt_ids": ids}], "logit_rows": rows, **options}))
    run = subprocess.run([str(build_dir / "tf_greedy_tool"), str(model_path), str(case), "1"], capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    flat = np.array(json.loads(run.stdout)["cases"][0]["prompt_logits"], dtype=np.float64)
    return flat.reshape(rows, -1)


def reply_rows(build_dir, model_path, prompt_ids, reply_ids, tmp_path):
    """The logits rows that sampled each reply token of a chat, computed as the server computes them: the prompt
    prefilled in the chunk plan's chunks (engine/chunk_plan.h: cut at each message start, the token a chat
    prompt opens with), then reply[:-1] a token at a time."""
    return _tool_rows(build_dir, model_path, prompt_ids + reply_ids[:-1], len(reply_ids), tmp_path,
                      decode_rows=len(reply_ids) - 1, message_start=prompt_ids[0])


def prefill_rows(build_dir, model_path, ids, tmp_path, rows=None):
    """The last `rows` (default: all) logits rows of one forward pass over ids (row i predicts ids[i + 1])."""
    return _tool_rows(build_dir, model_path, ids, rows or len(ids), tmp_path)


def processed_log_softmax(row, temperature, top_k=0, top_p=1.0, min_p=0.0):
    """The documented distribution: -inf for the tokens the filters drop."""
    if temperature == 0:
        x = row.copy()
        return x - (x.max() + np.log(np.exp(x - x.max()).sum()))
    x = row / temperature
    order = sorted(range(len(x)), key=lambda i: (-x[i], i))
    keep = order
    if top_k > 0:
        keep = keep[:top_k]
    w = np.exp(x[keep] - x[keep[0]])
    if top_p < 1.0:
        cum = np.cumsum(w / w.sum())
        n = int(np.searchsorted(cum, top_p) + 1)
        keep, w = keep[:n], w[:n]
    if min_p > 0:
        keep = [k for k, wk in zip(keep, w) if wk >= min_p] or keep[:1]
    out = np.full(len(x), -np.inf)
    kept = x[keep]
    out[keep] = kept - (kept.max() + np.log(np.exp(kept - kept.max()).sum()))
    return out


SETTINGS = [
    {"temperature": 0.0},
    {"temperature": 0.8},
    {"temperature": 1.0, "top_k": 40},
    {"temperature": 0.7, "top_p": 0.9},
    {"temperature": 0.9, "min_p": 0.05},
]


@pytest.mark.parametrize("setting", range(len(SETTINGS)))
def test_chat_logprobs_match_the_model_and_drafts(client, server, build_dir, default_model_path, tmp_path, capsys,
                                                  setting):
    s = SETTINGS[setting]
    content = "Repeat exactly: one two three four five six seven eight."
    kw = dict(max_tokens=16, seed=7, logprobs=True, top_logprobs=5, temperature=s["temperature"])
    if "top_p" in s:
        kw["top_p"] = s["top_p"]
    extra = {k: s[k] for k in ("top_k", "min_p") if k in s}
    drafted = chat(client, content, extra_body=extra, **kw)
    serial = chat(client, content, draft=False, extra_body=extra, **kw)
    d, sr = drafted.choices[0], serial.choices[0]
    ids = d.model_extra["token_ids"]
    assert ids == sr.model_extra["token_ids"]
    assert chat_records(d) == chat_records(sr), "drafted log-probabilities differ from serial"
    assert len(d.logprobs.content) == len(ids) >= 2
    assert d.message.content in b"".join(bytes(c.bytes) for c in d.logprobs.content).decode("utf-8", "replace")
    prompt_ids = server.raw("POST", "/tokenize", {"messages": [{"role": "user", "content": content}]}).json()["tokens"]
    rows = reply_rows(build_dir, default_model_path, prompt_ids, ids, tmp_path)
    worst = 0.0
    for i, (tok, rec) in enumerate(zip(ids, d.logprobs.content)):
        ref = processed_log_softmax(rows[i], s["temperature"], s.get("top_k", 0), s.get("top_p", 1.0),
                                    s.get("min_p", 0.0))
        try:
            assert bytes(rec.bytes).decode("utf-8") == rec.token
        except UnicodeDecodeError:
            pass  # part of a character: "token" shows U+FFFD, "bytes" the exact bytes
        worst = max(worst, abs(rec.logprob - ref[tok]))
        assert len(rec.top_logprobs) == min(5, int(np.isfinite(ref).sum()))
        for alt in rec.top_logprobs:
            assert alt.logprob <= rec.top_logprobs[0].logprob
        best = np.sort(ref[np.isfinite(ref)])[::-1][: len(rec.top_logprobs)]
        worst = max(worst, float(np.max(np.abs(np.array([a.logprob for a in rec.top_logprobs]) - best))))
        if s["temperature"] == 0:
            assert rec.top_logprobs[0].logprob == rec.logprob  # greedy takes the best
    _worst["diff"] = max(_worst["diff"], worst)
    _worst["rows"] += len(ids)
    # The same rows from one prefill pass over prompt + reply: close, not equal (the module's text).
    one_pass = prefill_rows(build_dir, default_model_path, prompt_ids + ids[:-1], tmp_path, rows=len(ids))
    apart = max(abs(processed_log_softmax(rows[i], 0)[tok] - processed_log_softmax(one_pass[i], 0)[tok])
                for i, tok in enumerate(ids))
    with capsys.disabled():
        print(f"\nlogprobs {s}: max |ours - recomputed| {worst:.2e} over {len(ids)} rows; the rows against one "
              f"prefill pass {apart:.2e}")
    assert worst < LOGPROB_TOL
    assert apart < DECODE_VS_PREFILL_TOL


def test_streamed_chat_logprobs_equal_the_reply(client):
    kw = dict(max_tokens=14, seed=3, logprobs=True, top_logprobs=2, temperature=0.8)
    whole = chat(client, "Name three colors.", **kw).choices[0]
    stream = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Name three colors."}],
                                            stream=True, **kw)
    records, text = [], ""
    for chunk in stream:
        for c in chunk.choices:
            text += c.delta.content or ""
            if c.logprobs and c.logprobs.content:
                records += [(r.token, r.logprob, r.bytes, [(t.token, t.logprob) for t in r.top_logprobs])
                            for r in c.logprobs.content]
    assert text == whole.message.content
    assert records == chat_records(whole)


def test_completion_logprobs_legacy_shape(client):
    prompt = "The capital of France is"
    kw = dict(max_tokens=10, seed=5, logprobs=3, temperature=0.7)
    drafted = complete(client, prompt, **kw).choices[0]
    serial = complete(client, prompt, draft=False, **kw).choices[0]
    lp = drafted.logprobs
    assert drafted.model_extra["token_ids"] == serial.model_extra["token_ids"]
    assert lp.tokens == serial.logprobs.tokens and lp.token_logprobs == serial.logprobs.token_logprobs
    assert lp.top_logprobs == serial.logprobs.top_logprobs
    n = len(drafted.model_extra["token_ids"])
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset) == n
    assert lp.text_offset[0] == 0
    assert all(1 <= len(t) <= 3 + 1 for t in lp.top_logprobs)  # the 3 best, and the chosen token when not among them
    assert all(t[tok] == v for t, tok, v in zip(lp.top_logprobs, lp.tokens, lp.token_logprobs))
    assert all(max(t.values()) >= v - 1e-6 for t, v in zip(lp.top_logprobs, lp.token_logprobs))
    # Streamed: the chunks' records, concatenated, are the reply's.
    stream = client.completions.create(model=MODEL, prompt=prompt, stream=True, **kw)
    tokens, logprobs, offsets = [], [], []
    for chunk in stream:
        for c in chunk.choices:
            if c.logprobs:
                tokens += c.logprobs.tokens
                logprobs += c.logprobs.token_logprobs
                offsets += c.logprobs.text_offset
    assert (tokens, logprobs, offsets) == (lp.tokens, lp.token_logprobs, lp.text_offset)


def test_logit_bias_bans_and_forces_tokens_exactly(client):
    content = "Write the word hello five times separated by spaces."
    plain = chat(client, content, max_tokens=12, temperature=0)
    first = plain.choices[0].model_extra["token_ids"][0]
    banned = chat(client, content, max_tokens=12, temperature=0, logit_bias={str(first): -100})
    ids = banned.choices[0].model_extra["token_ids"]
    assert first not in ids
    assert ids == chat(client, content, draft=False, max_tokens=12, temperature=0,
                       logit_bias={str(first): -100}).choices[0].model_extra["token_ids"]
    forced_token = 28  # any ordinary token: +100 outweighs every logit
    for t in (0.0, 1.0):
        forced = chat(client, content, max_tokens=12, temperature=t, seed=1, logit_bias={str(forced_token): 100})
        f_ids = forced.choices[0].model_extra["token_ids"]
        assert f_ids == [forced_token] * 12
        assert forced.usage.model_extra["tensorfold"]["accepted"] > 0  # drafts of the repeated token were taken
        serial = chat(client, content, draft=False, max_tokens=12, temperature=t, seed=1,
                      logit_bias={str(forced_token): 100})
        assert serial.choices[0].model_extra["token_ids"] == f_ids


PENALTIES = [
    {"frequency_penalty": 1.5},
    {"presence_penalty": 2.0},
    {"extra_body": {"repetition_penalty": 1.8}},
    {"frequency_penalty": 0.5, "presence_penalty": 0.5, "extra_body": {"repetition_penalty": 1.2}},
]


@pytest.mark.parametrize("penalty", range(len(PENALTIES)))
@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_penalties_change_the_reply_and_drafts_stay_exact(client, penalty, temperature):
    content = "Repeat this list exactly: apples, apples, apples, apples, apples, apples, apples."
    p = dict(PENALTIES[penalty])
    base = dict(max_tokens=24, seed=11, temperature=temperature)
    plain = chat(client, content, **base).choices[0].model_extra["token_ids"]
    drafted = chat(client, content, **base, **{k: (dict(v) if isinstance(v, dict) else v) for k, v in p.items()})
    serial = chat(client, content, draft=False, **base, **{k: (dict(v) if isinstance(v, dict) else v)
                                                           for k, v in p.items()})
    ids = drafted.choices[0].model_extra["token_ids"]
    assert ids == serial.choices[0].model_extra["token_ids"]
    assert drafted.choices[0].message.content == serial.choices[0].message.content
    assert ids != plain, "the penalty changed nothing"


def test_n_choices_are_the_requests_with_their_seeds(client):
    content = "Tell me a short fact about the sea."
    kw = dict(max_tokens=12, temperature=1.0, seed=1234)
    r = chat(client, content, n=3, **kw)
    assert [c.index for c in r.choices] == [0, 1, 2]
    texts = set()
    total = 0
    for c in r.choices:
        ids = c.model_extra["token_ids"]
        alone = chat(client, content, draft=False, **{**kw, "seed": choice_seed(1234, c.index)}).choices[0]
        assert alone.model_extra["token_ids"] == ids
        assert alone.message.content == c.message.content
        texts.add(c.message.content)
        total += len(ids)
    assert len(texts) > 1, "three choices at temperature 1 all gave the same text"
    assert r.usage.completion_tokens == total
    serial = chat(client, content, n=3, draft=False, **kw)
    assert [c.model_extra["token_ids"] for c in serial.choices] == [c.model_extra["token_ids"] for c in r.choices]
    # Streamed: each index's deltas join to its choice's text.
    stream = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": content}], n=3,
                                            stream=True, **kw)
    joined = {}
    for chunk in stream:
        for c in chunk.choices:
            joined[c.index] = joined.get(c.index, "") + (c.delta.content or "")
    assert joined == {c.index: c.message.content for c in r.choices}


def test_completions_prompt_list_n_and_echo(client, server):
    prompts = ["Once upon a time", "The best way to cook rice is", "1, 2, 3,"]
    kw = dict(max_tokens=8, temperature=0.9, seed=21)
    r = complete(client, prompts, n=2, **kw)
    assert [c.index for c in r.choices] == list(range(6))
    for c in r.choices:
        p, i = divmod(c.index, 2)
        alone = complete(client, prompts[p], draft=False, **{**kw, "seed": choice_seed(21, i)}).choices[0]
        assert alone.model_extra["token_ids"] == c.model_extra["token_ids"]
        assert alone.text == c.text
    serial = complete(client, prompts, n=2, draft=False, **kw)
    assert [c.text for c in serial.choices] == [c.text for c in r.choices]
    # echo: the prompt, then the completion; token-id prompts echo their text.
    e = complete(client, prompts, echo=True, **kw)
    plain = complete(client, prompts, **kw)
    for p, c, q in zip(prompts, e.choices, plain.choices):
        assert c.text == p + q.text
    ids = [1, 504, 2391, 282]
    e_ids = complete(client, [ids], echo=True, max_tokens=4, temperature=0).choices[0]
    detok = server.raw("POST", "/detokenize", {"tokens": ids}).json()["content"]
    assert e_ids.text.startswith(detok)
    # Streamed several prompts: each index's text.
    stream = client.completions.create(model=MODEL, prompt=prompts, stream=True, **kw)
    joined = {}
    for chunk in stream:
        for c in chunk.choices:
            joined[c.index] = joined.get(c.index, "") + c.text
    assert joined == {c.index: c.text for c in plain.choices}


def test_best_of_returns_the_most_likely_candidate(client):
    prompt = "My favourite animal is"
    kw = dict(max_tokens=8, temperature=1.0, seed=99)
    best = complete(client, prompt, best_of=3, logprobs=0, **kw)
    assert len(best.choices) == 1
    sums = []
    for i in range(3):
        c = complete(client, prompt, draft=False, logprobs=0, **{**kw, "seed": choice_seed(99, i)}).choices[0]
        sums.append((sum(c.logprobs.token_logprobs), -i, c.text))
    assert best.choices[0].text == max(sums)[2]
    assert best.usage.completion_tokens >= len(best.choices[0].model_extra["token_ids"])


@pytest.mark.parametrize("body,param", [
    ({"messages": [{"role": "user", "content": "hi"}], "logprobs": True, "top_logprobs": 21}, "top_logprobs"),
    ({"messages": [{"role": "user", "content": "hi"}], "top_logprobs": 2}, "top_logprobs"),
    ({"messages": [{"role": "user", "content": "hi"}], "logit_bias": {"x": 1}}, "logit_bias"),
    ({"messages": [{"role": "user", "content": "hi"}], "logit_bias": {"99999999": 1}}, "logit_bias"),
    ({"messages": [{"role": "user", "content": "hi"}], "logit_bias": {"5": 200}}, "logit_bias.5"),
    ({"messages": [{"role": "user", "content": "hi"}], "presence_penalty": 3}, "presence_penalty"),
    ({"messages": [{"role": "user", "content": "hi"}], "n": 0}, "n"),
])
def test_chat_sampling_errors(server, body, param):
    r = server.raw("POST", "/v1/chat/completions", body)
    assert r.status == 400, r.body
    assert r.json()["error"]["param"] == param


@pytest.mark.parametrize("body,param", [
    ({"prompt": "x", "max_tokens": 0}, "max_tokens"),
    ({"prompt": "x", "echo": True, "logprobs": 21}, "logprobs"),
    ({"prompt": "x", "logprobs": 21}, "logprobs"),
    ({"prompt": "x", "n": 3, "best_of": 2}, "best_of"),
    ({"prompt": "x", "best_of": 2, "stream": True}, "best_of"),
])
def test_completion_sampling_errors(server, body, param):
    r = server.raw("POST", "/v1/completions", body)
    assert r.status == 400, r.body
    assert r.json()["error"]["param"] == param
