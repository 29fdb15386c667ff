"""The nemotron_h family on the MLX backend against transformers (float64), on tiny random checkpoints in two
formats: bf16 Hugging Face layout as save_pretrained writes it (backbone.*, one tensor per expert; sharded) and
mlx-community's (experts stacked as switch_mlp.fc1/fc2, MLX affine 4-bit g64 with 8-bit modules). Both have
Mamba-2, attention without RoPE, relu2 MLP and sigmoid-routed expert layers (group-limited top-2 of 8 with a
correction bias and a shared expert). tests/goldens/nemotron_h/*/ were made on a CPU by
scripts/golden/make_nemotron_h_tiny.py. The checks are qwen3_5_golden_check.py's: the prompts' last 3 logits rows
within the tolerance, greedy tokens equal (a divergence only at a near-tie), and verify windows with wrong drafts
rejected mid-window equal to serial decoding bit for bit before and after each rollback of the Mamba-2 state.
The bf16 checkpoint also has an MTP head (an attention then an experts sublayer), checked against
mtp_golden.json: transformers' own NemotronHBlock modules in float64 loaded with the head's weights (transformers
does not run MTP heads itself)."""
from pathlib import Path

import pytest

from .qwen3_5_golden_check import check_mtp, check_variant

GOLDENS = Path(__file__).resolve().parents[1] / "goldens" / "nemotron_h"
VARIANTS = ["bf16", "mlx-4bit"]
LOGIT_TOL = 1e-5  # float32 on the CPU against float64; the observed worst is printed


@pytest.mark.parametrize("variant", VARIANTS)
def test_nemotron_h_matches_transformers(variant, build_dir, tmp_path, capsys):
    summary = check_variant(build_dir / "tf_greedy_tool", GOLDENS / variant, LOGIT_TOL, tmp_path, family="nemotron_h")
    with capsys.disabled():
        print(f"\n{summary}")


def test_nemotron_h_mtp_head_matches_reference(build_dir, tmp_path, capsys):
    summary = check_mtp(build_dir / "tf_mtp_tool", LOGIT_TOL, tmp_path, GOLDENS / "bf16", family="nemotron_h")
    with capsys.disabled():
        print(f"\n{summary}")
