"""The qwen3_5 family on the MLX backend against transformers (float64), on tiny random checkpoints in the
four formats the family reads: bf16 Hugging Face layout (sharded, with an MTP head), MLX affine 4-bit g64,
mixed 2/4/8-bit per module, and Ternary-Bonsai-style 2-bit g128 with quantized embedding and head.
tests/goldens/qwen3_5/*/ were made on the device machine by scripts/golden/make_qwen3_5_tiny.py. The checks
(logits, greedy tokens, rollback of the Gated DeltaNet state) are qwen3_5_golden_check.py's, which the CUDA
suite runs too."""
import pytest

from .qwen3_5_golden_check import VARIANTS, check_variant

LOGIT_TOL = 1e-5  # float32 on the CPU against float64; the observed worst (~7e-7) is printed


@pytest.mark.parametrize("variant", VARIANTS)
def test_qwen3_5_matches_transformers(variant, build_dir, tmp_path, capsys):
    summary = check_variant(build_dir / "tf_greedy_tool", variant, LOGIT_TOL, tmp_path)
    with capsys.disabled():
        print(f"\n{summary}")
