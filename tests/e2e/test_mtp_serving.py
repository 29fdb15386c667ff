"""MTP drafting served end to end with `--drafter mtp`, for each family with an MTP head: tests/goldens/qwen3_5/bf16-mtp
(a tiny random qwen3_5 checkpoint: one gated-attention + SwiGLU MTP layer; Gated DeltaNet state), the same checkpoint
as llama.cpp's Q4_K_M GGUF (tests/goldens/qwen3_5/gguf: its tokenizer and chat template from the GGUF metadata) and
tests/goldens/nemotron_h/bf16 (a tiny random nemotron_h: an attention then an experts MTP sublayer; Mamba-2
state, so every rejected draft rolls the Mamba-2 layers back) and tests/goldens/glm5_next/flat (a tiny random
glm5_next: a latent-attention + experts MTP layer whose KPool indexer keeps its own rows; a rejected draft rolls
the Kimi delta attention state back and truncates the latent and indexer rows of the model and of the head). For
every case the token ids with MTP drafts equal those with `"draft": false` and those of the same request run while
three others draft beside it (--parallel 4, shared rounds: each stream has
its own MTP state), at temperatures 0, 0.7 and 1.0. Prints drafted and accepted counts and the acceptance rate
per sampling setting.

The head's weights are random, so its distribution has nothing to do with the model's: greedy drafts are
almost never right. Drafts are picked with the stream's own keyed noise (MtpDrafter), so where the logits are
flat and the noise decides (the full distribution: top_k 0, top_p 1) the draft and the target's sample often
agree; with the checkpoint's top_k 20 the two top-20 sets differ and drafts mostly fail. Both kinds of case
are here, so drafts are accepted and rejected, honestly. Also: `--drafter mtp` on a checkpoint without a head
is one clear line and exit 1; `--drafter auto` picks the head where there is one."""

from __future__ import annotations

import itertools
import os
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from ._serve import start_serve
from .test_qwen3_5_serving import PROMPTS, SEEDS, drafted_serial_concurrent  # the same prompts and seeds

GOLDENS = Path(__file__).resolve().parents[1] / "goldens" / "qwen3_5"
CHECKPOINTS = {"qwen3_5": GOLDENS / "bf16-mtp",
               "qwen3_5_gguf": GOLDENS / "gguf" / "qwen3_5-tiny-Q4_K_M.gguf",
               "nemotron_h": Path(__file__).resolve().parents[1] / "goldens" / "nemotron_h" / "bf16",
               "glm5_next": Path(__file__).resolve().parents[1] / "goldens" / "glm5_next" / "flat"}
if os.environ.get("TF_E2E_BACKEND") == "cuda":  # the device suite: these do not run on CUDA yet
    del CHECKPOINTS["nemotron_h"], CHECKPOINTS["qwen3_5_gguf"], CHECKPOINTS["glm5_next"]
SAMPLING = [
    {"temperature": 0.0},
    {"temperature": 0.7},
    {"temperature": 1.0},
    {"temperature": 0.7, "top_k": 0, "top_p": 1.0},
    {"temperature": 1.0, "top_k": 0, "top_p": 1.0},
    {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.05},
]
CASES = list(itertools.product(range(len(PROMPTS)), range(len(SAMPLING)), SEEDS))  # 60 cases a family
_totals = defaultdict(lambda: {"drafted": 0, "accepted": 0, "cases": 0, "mixed": 0})  # (family, sampling i)


@pytest.fixture(scope="module", params=sorted(CHECKPOINTS))
def mtp_server(request, tensorfold_bin, tmp_path_factory):
    server = start_serve(tensorfold_bin, CHECKPOINTS[request.param],
                         ["--parallel", "4", "--drafter", "mtp", "--max-drafts", "8"],
                         tmp_path_factory.mktemp(f"{request.param}_mtp"))
    server.family = request.param
    yield server
    server.stop()


def test_startup_report_and_health_name_the_mtp_head(mtp_server):
    assert "drafting  the checkpoint's MTP head, up to" in mtp_server.report
    assert mtp_server.raw("GET", "/health", auth=False).json()["drafter"] == "mtp"


@pytest.mark.parametrize("prompt_i,sampling_i,seed", CASES)
def test_mtp_drafted_equals_serial_and_concurrent(mtp_server, prompt_i, sampling_i, seed):
    counters = drafted_serial_concurrent(mtp_server, prompt_i, sampling_i, seed, SAMPLING)
    assert counters["drafted"] > 0
    t = _totals[(mtp_server.family, sampling_i)]
    t["drafted"] += counters["drafted"]
    t["accepted"] += counters["accepted"]
    t["mixed"] += 1 if 0 < counters["accepted"] < counters["drafted"] else 0
    t["cases"] += 1


@pytest.mark.parametrize("family", sorted(CHECKPOINTS))
def test_mtp_drafts_were_accepted_and_rejected(family, capsys):
    """Runs after the cases above (file order)."""
    mine = {i: t for (f, i), t in _totals.items() if f == family}
    assert sum(t["cases"] for t in mine.values()) == len(CASES), "run the whole file: the totals need every case"
    drafted = sum(t["drafted"] for t in mine.values())
    accepted = sum(t["accepted"] for t in mine.values())
    mixed = sum(t["mixed"] for t in mine.values())
    with capsys.disabled():
        print(f"\n{family} MTP drafting: {len(CASES)} cases, {drafted} drafted, {accepted} accepted "
              f"({accepted / max(1, drafted):.1%}); {mixed} cases with drafts both accepted and rejected")
        for i, t in sorted(mine.items()):
            print(f"  {SAMPLING[i]}: {t['drafted']} drafted, {t['accepted']} accepted "
                  f"({t['accepted'] / max(1, t['drafted']):.1%})")
    assert accepted > 0 and accepted < drafted and mixed > 0


def _serve_once(tensorfold_bin, checkpoint, drafter):
    return subprocess.run([str(tensorfold_bin), "serve", str(checkpoint), "--port", "0", "--drafter", drafter],
                          capture_output=True, text=True, timeout=120)


def test_drafter_mtp_without_a_head_is_one_clear_line(tensorfold_bin):
    run = _serve_once(tensorfold_bin, GOLDENS / "mlx-4bit", "mtp")
    assert run.returncode == 1
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, run.stderr
    assert "--drafter mtp" in lines[0] and "no MTP head" in lines[0]


@pytest.mark.parametrize("family", sorted(CHECKPOINTS))
def test_drafter_auto_picks_the_mtp_head(family, tensorfold_bin, tmp_path):
    server = start_serve(tensorfold_bin, CHECKPOINTS[family], ["--drafter", "auto"], tmp_path)
    try:
        assert "drafting  the checkpoint's MTP head" in server.report
    finally:
        server.stop()
