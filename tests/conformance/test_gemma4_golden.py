"""The gemma4 family on the MLX backend against transformers (float64), on tiny random checkpoints in the two
Hugging Face layouts (tests/goldens/gemma4/{bf16,text}: Gemma4ForConditionalGeneration's model.language_model.*
with a vision tensor to skip, and Gemma4ForCausalLM's model.*) and mlx-community's (mlx-4bit: language_model.model.*,
experts as SwitchGLU stacks, affine 4-bit g32 with 8-bit MLPs and routers, a quantized tied embedding; its golden
is the float64 forward of the dequantized weights), made on a CPU by scripts/golden/make_gemma4_tiny.py:
sliding-window layers (window 8 under prompts of 17 and 40 tokens, and 16 greedy steps past every prompt) beside
full layers of their own head shape with k_eq_v and proportional RoPE, experts beside the MLP, soft-capped logits.
The checks are qwen3_5_golden_check.py's: the prompts' last 3 logits rows within the tolerance, greedy tokens
equal (a divergence only at a near-tie), and verify windows with wrong drafts rejected mid-window equal to serial
decoding bit for bit."""
from pathlib import Path

import pytest

from .qwen3_5_golden_check import check_variant

GOLDENS = Path(__file__).resolve().parents[1] / "goldens" / "gemma4"
LOGIT_TOL = 1e-5  # float32 on the CPU against float64; the observed worst is printed


@pytest.mark.parametrize("variant", ["bf16", "text", "mlx-4bit"])
def test_gemma4_matches_transformers(variant, build_dir, tmp_path, capsys):
    summary = check_variant(build_dir / "tf_greedy_tool", GOLDENS / variant, LOGIT_TOL, tmp_path, family="gemma4")
    with capsys.disabled():
        print(f"\n{summary}")
