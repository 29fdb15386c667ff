"""The deepseek_v4 family (DeepSeek-V4-Flash) on the MLX backend against transformers (float64), on a tiny random
checkpoint in three variants (tests/goldens/deepseek_v4/{bf16,fp8-mxfp4,mlx-4bit}: the names transformers'
save_pretrained writes, in bf16; the same with the attention and shared-expert linears as float8 E4M3 with UE8M0
128x128 `.scale` tiles and the routed experts as MXFP4; and as MLX affine 4-bit codes in groups of 32 (routers
8-bit); each quantized one judged against the float64 reference over its weights dequantized as the format says;
and the second under the release's own names and legacy config keys, tests/goldens/deepseek_v4/release),
made on a CPU by scripts/golden/make_deepseek_v4_tiny.py: a sliding layer, two compressed-sparse layers (overlapping pools, the
indexer dropping entries past position 19) and a heavily compressed layer, all with a window of 8 that slides, sinks
and the grouped output; hash-routed experts on the first two layers and sqrtsoftplus routing after, under the swiglu
clamp; manifold hyper-connections over two streams with the learned head. Prompts of 5, 17 and 40 tokens and 16
greedy steps past each. The checks are qwen3_5_golden_check.py's: the prompts' last 3 logits rows within the
tolerance, greedy tokens equal (a divergence only at a near-tie), and verify windows with wrong drafts rejected
mid-window equal to serial decoding bit for bit (the window, compressor and indexer rows roll back with them)."""
from pathlib import Path

import pytest

from .qwen3_5_golden_check import check_variant

GOLDENS = Path(__file__).resolve().parents[1] / "goldens" / "deepseek_v4"
LOGIT_TOL = 1e-5  # float32 on the CPU against float64; the observed worst is printed


@pytest.mark.parametrize("variant", ["bf16", "fp8-mxfp4", "mlx-4bit", "release"])
def test_deepseek_v4_matches_transformers(variant, build_dir, tmp_path, capsys):
    summary = check_variant(build_dir / "tf_greedy_tool", GOLDENS / variant, LOGIT_TOL, tmp_path,
                            family="deepseek_v4")
    with capsys.disabled():
        print(f"\n{summary}")
