"""The qwen3_5 family served end to end (tiny random checkpoint, tests/goldens/qwen3_5/mlx-4bit: MLX affine 4-bit, tied, with its own
tokenizer.json and chat template): exact drafting through Gated DeltaNet state. For every case the token ids
with drafts (context copies) equal those with `"draft": false` and those of the same request run while three
others run beside it (--parallel 4, shared rounds), at temperatures 0, 0.7 and 1.0; drafts are really accepted
and rejected (a rejection rolls the recurrent state back inside its window). Prints the acceptance rate."""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ._serve import start_serve

CHECKPOINT = Path(__file__).resolve().parents[1] / "goldens" / "qwen3_5" / "mlx-4bit"
PROMPTS = [
    "Repeat: abc abc abc abc abc abc",
    "Copy this exactly: the cat sat on the mat, the cat sat on the mat.",
    "1 2 3 4 5 6 7 8 9 10 1 2 3 4 5",
    "Hello!",
    "xyzzy plugh xyzzy plugh xyzzy",
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
MAX_TOKENS = 32
_totals = {"drafted": 0, "accepted": 0, "cases": 0, "rejected_rounds": 0}


@pytest.fixture(scope="module")
def qwen_server(tensorfold_bin, tmp_path_factory):
    server = start_serve(tensorfold_bin, CHECKPOINT, ["--parallel", "4", "--max-drafts", "8"],
                         tmp_path_factory.mktemp("qwen3_5"))
    yield server
    server.stop()


def generate(client, model, prompt, sampling, seed, draft):
    r = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": prompt}], max_tokens=MAX_TOKENS, seed=seed,
        extra_body={"draft": draft, "return_token_ids": True,
                    **{k: v for k, v in sampling.items() if k in ("top_k", "min_p")}},
        **{k: v for k, v in sampling.items() if k in ("temperature", "top_p")})
    return r.choices[0].model_extra["token_ids"], r.usage.model_extra["tensorfold"]


def concurrent_ids(client, model, prompt_i, sampling_i, seed, settings):
    """The token ids of case (prompt_i, settings[sampling_i], seed) run beside three other drafting requests
    (other prompts, settings and seeds)."""
    others = [(PROMPTS[(prompt_i + k) % len(PROMPTS)], settings[(sampling_i + k) % len(settings)], seed + 10 * k)
              for k in (1, 2, 3)]
    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(generate, client, model, PROMPTS[prompt_i], settings[sampling_i], seed, True)]
        futures += [pool.submit(generate, client, model, p, s, sd, True) for p, s, sd in others]
        for f in futures[1:]:
            f.result()
        return futures[0].result()[0]


def test_startup_report_names_the_family(qwen_server):
    assert "family    qwen3_5" in qwen_server.report
    assert "bytes of fixed state" in qwen_server.report
    # No MTP head in this checkpoint: --drafter auto drafts from context copies.
    assert "drafting  context copies" in qwen_server.report


@pytest.mark.parametrize("prompt_i,sampling_i,seed", CASES)
def test_drafted_equals_serial_and_concurrent(qwen_server, prompt_i, sampling_i, seed):
    client, model = qwen_server.client(), qwen_server.model_id
    prompt, sampling = PROMPTS[prompt_i], SAMPLING[sampling_i]
    serial, serial_counters = generate(client, model, prompt, sampling, seed, draft=False)
    drafted, counters = generate(client, model, prompt, sampling, seed, draft=True)
    assert serial_counters["drafted"] == 0
    assert drafted == serial
    assert concurrent_ids(client, model, prompt_i, sampling_i, seed, SAMPLING) == serial
    _totals["drafted"] += counters["drafted"]
    _totals["accepted"] += counters["accepted"]
    _totals["rejected_rounds"] += 1 if counters["accepted"] < counters["drafted"] else 0
    _totals["cases"] += 1


def test_drafts_were_accepted_and_rejected(capsys):
    """Runs after the cases above (file order): drafts were accepted, and some rounds rejected drafts."""
    assert _totals["cases"] == len(CASES), "run the whole file: the totals need every case"
    with capsys.disabled():
        rate = _totals["accepted"] / max(1, _totals["drafted"])
        print(f"\nqwen3_5 drafting: {_totals['cases']} cases, {_totals['drafted']} drafted, {_totals['accepted']} "
              f"accepted ({rate:.0%}); {_totals['rejected_rounds']} cases with rejected drafts")
    assert _totals["accepted"] > 0 and _totals["rejected_rounds"] > 0
