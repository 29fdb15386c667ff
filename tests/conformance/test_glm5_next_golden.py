"""The glm5_next family (GLM-5.3-Flash) on the MLX backend against transformers (float64), on a tiny random checkpoint
in four variants (tests/goldens/glm5_next/{bf16,flat,fp8,mlx-4bit}: Glm5NextForConditionalGeneration's
model.language_model.* with per-expert tensors and a vision tensor to skip, a flat text config with model.* and stacked
experts, the first with its decoder linears as float8 E4M3 in 128x128 blocks with weight_scale_inv, and the first as MLX
affine 4-bit codes in groups of 32 (routers 8-bit), each quantized one judged against the float64 reference over its
weights dequantized as the format says), made on a CPU by scripts/golden/make_glm5_next_tiny.py: Kimi delta attention
layers, latent attention whose KPool indexer drops pools past position 11 (prompts of 17 and 40 tokens and 16 greedy
steps past each) with a shared indexer layer, manifold hyper-connections over two streams, a dense first layer and
experts under the swiglu clamp. The checks are qwen3_5_golden_check.py's: the prompts' last 3 logits rows within the
tolerance, greedy tokens equal (a divergence only at a near-tie), and verify windows with wrong drafts rejected
mid-window equal to serial decoding bit for bit (the KDA state and the latent rows roll back with them)."""
from pathlib import Path

import pytest

from .qwen3_5_golden_check import check_mtp, check_variant

GOLDENS = Path(__file__).resolve().parents[1] / "goldens" / "glm5_next"
LOGIT_TOL = 1e-5  # float32 on the CPU against float64; the observed worst is printed


@pytest.mark.parametrize("variant", ["bf16", "flat", "fp8", "mlx-4bit"])
def test_glm5_next_matches_transformers(variant, build_dir, tmp_path, capsys):
    summary = check_variant(build_dir / "tf_greedy_tool", GOLDENS / variant, LOGIT_TOL, tmp_path, family="glm5_next")
    with capsys.disabled():
        print(f"\n{summary}")


def test_glm5_next_mtp_head_matches_reference(build_dir, tmp_path, capsys):
    summary = check_mtp(build_dir / "tf_mtp_tool", LOGIT_TOL, tmp_path, GOLDENS / "flat", family="glm5_next")
    with capsys.disabled():
        print(f"\n{summary}")
