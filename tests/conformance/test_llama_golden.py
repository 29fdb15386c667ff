"""Greedy output of the default model on the MLX backend against the transformers golden.

tests/goldens/smollm2_greedy_golden.json was made on the device machine by
scripts/golden/make_llama_golden.py (transformers, float64, the same GGUF weights). Each case must match
token for token, or diverge only at a near-tie: where the golden's top-2 logit gap is below 1e-3.
"""
import json
import subprocess
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[1] / "goldens" / "smollm2_greedy_golden.json"
NEAR_TIE = 1e-3


def test_greedy_matches_transformers_golden(build_dir, default_model_path, capsys):
    golden = json.loads(GOLDEN.read_text())
    assert len(golden["cases"]) >= 10 and golden["steps"] >= 64
    tool = build_dir / "tf_greedy_tool"
    assert tool.exists(), f"{tool} is missing: build the tf_greedy_tool target"
    run = subprocess.run([str(tool), str(default_model_path), str(GOLDEN), str(golden["steps"])],
                         capture_output=True, text=True, timeout=1200)
    assert run.returncode == 0, run.stderr
    ours = json.loads(run.stdout)["cases"]
    assert len(ours) == len(golden["cases"])
    exact, near_ties, failures = 0, 0, []
    for i, (g, o) in enumerate(zip(golden["cases"], ours)):
        at = next((k for k, (a, b) in enumerate(zip(g["greedy"], o["greedy"])) if a != b), None)
        if at is None:
            exact += 1
        elif g["top2_gap"][at] < NEAR_TIE:
            near_ties += 1
        else:
            failures.append(f"case {i}: token {at} is {o['greedy'][at]}, golden {g['greedy'][at]} "
                            f"(golden top-2 gap {g['top2_gap'][at]:.4f})")
    with capsys.disabled():
        print(f"\ngolden: {exact} of {len(ours)} cases match all {golden['steps']} tokens, "
              f"{near_ties} diverge at a near-tie, {len(failures)} diverge otherwise")
    assert not failures, "\n".join(failures)
