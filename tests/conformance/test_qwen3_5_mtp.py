"""The qwen3_5 MTP head on the MLX backend against a float64 reference built by hand (transformers does not
run MTP heads): tests/goldens/qwen3_5/bf16-mtp/mtp_golden.json, made by scripts/golden/make_qwen3_5_tiny.py
from the formula in its `formula` field (families-and-formats §1.7). For the 40-token prompt: the head's row t
pairs the main model's hidden row h_t (after the final norm) with the token x_{t+1} (t = 39: the main model's
greedy next token), at position t. Its logits at t = 36, 37, 38 and 39 must be within LOGIT_TOL of the
reference's and its argmax equal at all 40 positions; running the rows one at a time (the head's KV cache
growing as a stream's drafts build it) must give the same logits within the same tolerance."""
import json
import subprocess
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[1] / "goldens" / "qwen3_5" / "bf16-mtp"
LOGIT_TOL = 1e-5  # float32 on the CPU against float64, as the main model's logits; the worst is printed


def test_mtp_head_matches_reference(build_dir, tmp_path, capsys):
    ref = json.loads((GOLDEN / "mtp_golden.json").read_text())
    prompt = ref["prompt_ids"]
    (tmp_path / "in.json").write_text(json.dumps({"prompt_ids": prompt}))
    run = subprocess.run([str(build_dir / "tf_mtp_tool"), str(GOLDEN), str(tmp_path / "in.json")],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    ours = json.loads(run.stdout)
    assert ref["positions"] == list(range(len(prompt)))
    # x_{t+1}: the prompt shifted by one, then the main model's greedy next token.
    assert prompt[1:] + [ours["next_token"]] == ref["input_tokens"]
    worst = 0.0
    for t, want in zip((36, 37, 38, 39), ref["logits"] + [ref["logits_t39"]]):
        got = ours["logits"][t]
        assert len(got) == len(want)
        worst = max(worst, max(abs(a - b) for a, b in zip(got, want)))
    agree = sum(a == b for a, b in zip(ours["argmax"], ref["argmax"]))
    with capsys.disabled():
        print(f"\nqwen3_5 MTP head: logits (t = 36..39) max |diff| {worst:.2e}; argmax {agree}/{len(ref['argmax'])} "
              f"positions agree; row-by-row vs one pass max |diff| {ours['incremental_max_diff']:.2e}")
    assert worst < LOGIT_TOL
    assert agree == len(ref["argmax"])
    assert ours["incremental_max_diff"] < LOGIT_TOL
