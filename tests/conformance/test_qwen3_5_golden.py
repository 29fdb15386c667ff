"""The qwen3_5 family on the MLX backend against transformers (float64), on tiny random checkpoints in the
four formats the family reads: bf16 Hugging Face layout (sharded, with an MTP head), MLX affine 4-bit g64,
mixed 2/4/8-bit per module, and Ternary-Bonsai-style 2-bit g128 with quantized embedding and head.
tests/goldens/qwen3_5/*/ were made on the device machine by scripts/golden/make_qwen3_5_tiny.py.

For each variant and prompt: the prompt's last 3 logits rows within LOGIT_TOL of the golden's, 24 greedy
tokens equal to the golden's (a divergence only at a near-tie, top-2 gap < NEAR_TIE), and verify windows with
wrong drafts rejected mid-window equal serial decoding bit for bit before and after each rollback of the
Gated DeltaNet state (the tool fails otherwise)."""
import json
import subprocess
from pathlib import Path

import pytest

GOLDENS = Path(__file__).resolve().parents[1] / "goldens" / "qwen3_5"
VARIANTS = ["bf16-mtp", "mlx-4bit", "mlx-mixed", "bonsai-2bit"]
LOGIT_TOL = 1e-5  # float32 on the CPU against float64; the observed worst (~7e-7) is printed
NEAR_TIE = 1e-3


@pytest.mark.parametrize("variant", VARIANTS)
def test_qwen3_5_matches_transformers(variant, build_dir, tmp_path, capsys):
    golden = json.loads((GOLDENS / variant / "golden.json").read_text())
    steps = len(golden["greedy"][0])
    cases = {"cases": [{"prompt_ids": p} for p in golden["prompt_ids"]], "logit_rows": 3, "check_rollback": True}
    (tmp_path / "in.json").write_text(json.dumps(cases))
    tool = build_dir / "tf_greedy_tool"
    run = subprocess.run([str(tool), str(GOLDENS / variant), str(tmp_path / "in.json"), str(steps)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    ours = json.loads(run.stdout)["cases"]
    worst, exact, near_ties = 0.0, 0, 0
    for i, o in enumerate(ours):
        got = o["prompt_logits"]
        want = [x for row in golden["logits"][i] for x in row]
        assert len(got) == len(want)
        worst = max(worst, max(abs(a - b) for a, b in zip(got, want)))
        g = golden["greedy"][i]
        at = next((k for k, (a, b) in enumerate(zip(g, o["greedy"])) if a != b), None)
        if at is None:
            exact += 1
        else:
            assert golden["gaps"][i][at] < NEAR_TIE, f"prompt {i}: token {at} is {o['greedy'][at]}, golden {g[at]}"
            near_ties += 1
    rollback = next(line for line in run.stderr.splitlines() if "rollback:" in line)
    with capsys.disabled():
        print(f"\nqwen3_5 {variant}: logits max |diff| {worst:.2e}; greedy {exact}/{len(ours)} exact, {near_ties} near-tie;"
              f" {rollback.split('rollback: ')[1]}")
    assert worst < LOGIT_TOL
    assert "rejected mid-window" in rollback and " 0 rows differ" in rollback
