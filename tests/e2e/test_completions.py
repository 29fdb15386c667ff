"""POST /v1/completions: a text prompt, token ids in both list forms, and streaming."""

from __future__ import annotations

from ._serve import ALIAS

PROMPT = "The capital of France is"


def test_text_prompt(client, server, tokenize):
    r = client.completions.create(model=server.model_id, prompt=PROMPT, max_tokens=6, temperature=0)
    assert r.id.startswith("cmpl-")
    assert r.object == "text_completion"
    assert r.model == server.model_id
    assert len(r.choices) == 1 and r.choices[0].index == 0
    assert isinstance(r.choices[0].text, str) and r.choices[0].text
    assert r.choices[0].finish_reason in ("stop", "length")
    if r.choices[0].finish_reason == "length":
        assert r.usage.completion_tokens == 6
    # A text prompt is tokenized with the tokenizer's special tokens, as HF does by default.
    assert r.usage.prompt_tokens == len(tokenize(PROMPT, add_special=True))
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens


def test_token_ids_give_the_same_completion(client, tokenize):
    ids = tokenize(PROMPT, add_special=True)
    by_text = client.completions.create(model=ALIAS, prompt=PROMPT, max_tokens=6, temperature=0)
    by_ids = client.completions.create(model=ALIAS, prompt=ids, max_tokens=6, temperature=0)
    nested = client.completions.create(model=ALIAS, prompt=[ids], max_tokens=6, temperature=0)
    one_string = client.completions.create(model=ALIAS, prompt=[PROMPT], max_tokens=6, temperature=0)
    assert by_ids.usage.prompt_tokens == len(ids) == nested.usage.prompt_tokens
    assert by_text.choices[0].text == by_ids.choices[0].text == nested.choices[0].text == one_string.choices[0].text


def test_length_finish(client):
    r = client.completions.create(model=ALIAS, prompt="1, 2, 3, 4,", max_tokens=4, temperature=0)
    assert r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == 4


def test_stream_with_usage(client):
    plain = client.completions.create(model=ALIAS, prompt=PROMPT, max_tokens=6, temperature=0)
    chunks = list(client.completions.create(model=ALIAS, prompt=PROMPT, max_tokens=6, temperature=0, stream=True,
                                            stream_options={"include_usage": True}))
    assert all(c.object == "text_completion" for c in chunks)
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == plain.usage.completion_tokens
    text = "".join(c.choices[0].text for c in chunks[:-1])
    assert text == plain.choices[0].text
    assert chunks[-2].choices[0].finish_reason == plain.choices[0].finish_reason
