"""Exact speculative decoding through the HTTP API (ARCHITECTURE §4): for every case the token ids with
drafts equal those with `"draft": false`, at temperatures 0, 0.7 and 1.0 with top-p/top-k/min-p mixes,
and drafts are really accepted. Prints the acceptance rate."""

from __future__ import annotations

import itertools

import pytest

# Copy-heavy prompts (where context copies draft well) and open ones.
PROMPTS = [
    "Repeat this list exactly: apples, bananas, cherries, dates, elderberries, figs, grapes.",
    "Copy this code exactly:\ndef add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n",
    "Write the word hello five times separated by spaces.",
    "Tell me about the sea.",
    "Quote: 'To be, or not to be, that is the question.' Now repeat the quote twice.",
]
SAMPLING = [
    {"temperature": 0.0},
    {"temperature": 0.7},
    {"temperature": 1.0},
    {"temperature": 0.7, "top_p": 0.9},
    {"temperature": 1.0, "top_k": 40},
    {"temperature": 0.7, "top_k": 20, "min_p": 0.05},
]
SEEDS = [1, 2]
CASES = list(itertools.product(range(len(PROMPTS)), range(len(SAMPLING)), SEEDS))  # 60 cases
MAX_TOKENS = 20

_totals = {"drafted": 0, "accepted": 0, "cases": 0}


def generate(client, prompt, sampling, seed, draft):
    r = client.chat.completions.create(
        model="SmolLM2-135M-Instruct.Q4_1", messages=[{"role": "user", "content": prompt}], max_tokens=MAX_TOKENS,
        seed=seed, extra_body={"draft": draft, "return_token_ids": True, **{k: v for k, v in sampling.items()
                                                                            if k in ("top_k", "min_p")}},
        **{k: v for k, v in sampling.items() if k in ("temperature", "top_p")})
    extra = r.model_extra or {}
    ids = r.choices[0].model_extra["token_ids"]
    return ids, r.choices[0].message.content, r.usage.model_extra["tensorfold"]


@pytest.mark.parametrize("prompt_i,sampling_i,seed", CASES)
def test_drafted_equals_serial(client, prompt_i, sampling_i, seed):
    prompt, sampling = PROMPTS[prompt_i], SAMPLING[sampling_i]
    serial_ids, serial_text, serial_counters = generate(client, prompt, sampling, seed, draft=False)
    drafted_ids, drafted_text, counters = generate(client, prompt, sampling, seed, draft=True)
    assert serial_counters["drafted"] == 0
    assert drafted_ids == serial_ids
    assert drafted_text == serial_text
    assert counters["accepted"] <= counters["drafted"]
    _totals["drafted"] += counters["drafted"]
    _totals["accepted"] += counters["accepted"]
    _totals["cases"] += 1


def test_drafts_were_accepted(capsys):
    """Runs after the cases above (file order): over all of them, drafts were proposed and accepted."""
    assert _totals["cases"] == len(CASES), "run the whole file: the totals need every case"
    with capsys.disabled():
        rate = _totals["accepted"] / max(1, _totals["drafted"])
        print(f"\ndrafting: {_totals['cases']} cases, {_totals['drafted']} drafted, {_totals['accepted']} accepted "
              f"({rate:.0%})")
    assert _totals["drafted"] > 0 and _totals["accepted"] > 0
