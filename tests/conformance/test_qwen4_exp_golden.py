"""The qwen4_exp family (Qwen3.8 Flash Next) on the MLX backend against transformers (float64), on a tiny random
checkpoint in the two Hugging Face layouts (tests/goldens/qwen4_exp/{bf16,text}: Qwen4ExpForConditionalGeneration's
model.language_model.* with a vision tensor to skip, and Qwen4ExpForCausalLM's model.*) and in mlx-lm's conventions
(mlx-mixed: a second model with MLX affine 4-bit weights, 8-bit routers, 4-bit n-gram table shards read row by row
from the mapped file, norms stored with their + 1 and a sigmoid output gate on the linear layers), made on a CPU by
scripts/golden/make_qwen4_exp_tiny.py: sparse attention whose indexer drops blocks past position 11 (prompts of 17
and 40 tokens and 16 greedy steps past each), two hyper-connection streams around every block, hashed n-gram
embeddings on two linear layers (the 40-token prompt holds EOS twice), experts with a gated shared expert.
The checks are qwen3_5_golden_check.py's: the prompts' last 3 logits rows within the tolerance, greedy tokens
equal (a divergence only at a near-tie), and verify windows with wrong drafts rejected mid-window equal to serial
decoding bit for bit (the indexer's rows and the n-gram windows roll back with them)."""
from pathlib import Path

import pytest

from .qwen3_5_golden_check import check_variant

GOLDENS = Path(__file__).resolve().parents[1] / "goldens" / "qwen4_exp"
LOGIT_TOL = 1e-5  # float32 on the CPU against float64; the observed worst is printed (4.5e-8 when written)


@pytest.mark.parametrize("variant", ["bf16", "text", "mlx-mixed"])
def test_qwen4_exp_matches_transformers(variant, build_dir, tmp_path, capsys):
    summary = check_variant(build_dir / "tf_greedy_tool", GOLDENS / variant, LOGIT_TOL, tmp_path, family="qwen4_exp")
    with capsys.disabled():
        print(f"\n{summary}")
