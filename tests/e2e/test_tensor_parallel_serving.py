"""`serve --tp 2` end to end on the MLX backend (two ranks in one process, summing on the host; the CUDA suite
runs the same file on the device): rank 0's results answer the openai SDK, drafted output equals serial
(`"draft": false`) and concurrent output equals solo on two ranks, greedy output equals one rank's, and a
checkpoint whose heads do not divide among the ranks fails at startup in one line."""
from __future__ import annotations

import itertools
import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ._serve import start_serve

CHECKPOINT = Path(__file__).resolve().parents[1] / "goldens" / "qwen3_5" / "mlx-4bit"
PROMPTS = ["Repeat: abc abc abc abc abc abc", "1 2 3 4 5 6 7 8 9 10 1 2 3 4 5", "Hello!"]
SAMPLING = [{"temperature": 0.0}, {"temperature": 0.7, "top_p": 0.9}]
MAX_TOKENS = 24


# On MLX the ranks run in turn, or apart (TF_TP_APART=1: each on its own thread, as CUDA ranks run); the CUDA
# device run sets TF_TP_ONE_DEVICE=1 and both mean the same there.
@pytest.fixture(scope="module", params=["in turn", "apart"])
def two_ranks(request, tensorfold_bin, tmp_path_factory):
    before = os.environ.get("TF_TP_APART")
    os.environ["TF_TP_APART"] = "1" if request.param == "apart" else "0"
    try:
        server = start_serve(tensorfold_bin, CHECKPOINT, ["--tp", "2", "--parallel", "4", "--max-drafts", "8"],
                             tmp_path_factory.mktemp("tp2"))
    finally:
        if before is None:
            os.environ.pop("TF_TP_APART")
        else:
            os.environ["TF_TP_APART"] = before
    yield server
    server.stop()


@pytest.fixture(scope="module")
def one_rank(tensorfold_bin, tmp_path_factory):
    server = start_serve(tensorfold_bin, CHECKPOINT, ["--parallel", "4", "--max-drafts", "8"],
                         tmp_path_factory.mktemp("tp1"))
    yield server
    server.stop()


def token_ids(server, prompt, sampling, seed, draft=True):
    r = server.client().chat.completions.create(
        model=server.model_id, messages=[{"role": "user", "content": prompt}], max_tokens=MAX_TOKENS, seed=seed,
        extra_body={"draft": draft, "return_token_ids": True}, **sampling)
    assert r.choices[0].message.content is not None
    return r.choices[0].model_extra["token_ids"]


def test_the_report_names_the_ranks(two_ranks):
    assert re.search(r"^\s*backend\s+\S+ \(tensor parallel over 2 ranks\)$", two_ranks.report, re.M), two_ranks.report


@pytest.mark.parametrize("prompt_i,sampling_i", list(itertools.product(range(len(PROMPTS)), range(len(SAMPLING)))))
def test_drafted_serial_and_concurrent_agree_on_two_ranks(two_ranks, prompt_i, sampling_i):
    prompt, sampling = PROMPTS[prompt_i], SAMPLING[sampling_i]
    drafted = token_ids(two_ranks, prompt, sampling, 5)
    assert len(drafted) > 0
    assert token_ids(two_ranks, prompt, sampling, 5, draft=False) == drafted
    others = [(PROMPTS[(prompt_i + k) % len(PROMPTS)], SAMPLING[(sampling_i + k) % len(SAMPLING)], 5 + k)
              for k in (1, 2, 3)]
    with ThreadPoolExecutor(4) as pool:
        mine = pool.submit(token_ids, two_ranks, prompt, sampling, 5)
        for p, s, seed in others:
            pool.submit(token_ids, two_ranks, p, s, seed)
        assert mine.result() == drafted


@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_output_equals_one_rank(two_ranks, one_rank, prompt):
    assert token_ids(two_ranks, prompt, SAMPLING[0], 1) == token_ids(one_rank, prompt, SAMPLING[0], 1)


@pytest.mark.skipif(os.environ.get("TF_TP_ONE_DEVICE") == "1", reason="the CUDA device run carries no default model")
def test_heads_that_do_not_divide_fail_in_one_line(tensorfold, default_model_path):
    r = tensorfold("serve", default_model_path, "--port", "0", "--tp", "2")
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot divide tensor" in lines[0] and "9 heads of 64 rows" in lines[0], r.stderr
