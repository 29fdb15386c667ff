"""The qwen3_5 golden comparisons, for any backend's greedy and MTP tools: the MLX tests (test_qwen3_5_golden.py,
test_qwen3_5_mtp.py) and the CUDA suite on the device machine (scripts/device/run-gpu-suite.sh runs this file as a script) share it.

For a variant and each of its prompts: the prompt's last 3 logits rows within the tolerance of the golden's
(transformers, float64), the greedy tokens equal to the golden's (a divergence only at a near-tie, top-2 gap <
NEAR_TIE), and verify windows with wrong drafts rejected mid-window equal serial decoding bit for bit before
and after each rollback of the Gated DeltaNet state (the tool fails otherwise). No pytest here: the device
machine runs it with a bare python3."""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

GOLDENS = Path(__file__).resolve().parents[1] / "goldens" / "qwen3_5"
VARIANTS = ["bf16-mtp", "mlx-4bit", "mlx-mixed", "bonsai-2bit"]
NEAR_TIE = 1e-3


class GoldenMismatch(AssertionError):
    pass


def check_variant(tool, variant, logit_tol, work_dir, exact_dequant=False, family="qwen3_5", precision=None):
    """Runs `tool` on the variant's checkpoint and prompts; returns a one-line summary, or raises
    GoldenMismatch. With `exact_dequant` a quantized variant is judged against golden_exact.json (its reference
    multiplies by the exact affine value s*q + b, as the CUDA kernels do; golden.json's rounds it as MLX does:
    scripts/golden/make_qwen3_5_exact_goldens.py), and the distance to golden.json is reported too.
    `precision` "bf16" (CUDA's default prompt precision; the tool runs with TF_PROMPT_PRECISION) judges a quantized
    variant against golden_exact.json within a bound derived from golden_bf16x.json, the same float64 model with
    the inputs of exactly the linears the bf16 prefill GEMM takes rounded to bf16 in prefill chunks
    (scripts/golden/make_qwen3_5_bf16x_goldens.py): E, that reference's distance to golden_exact.json, is the
    rounding's effect on these logits propagated through the whole model. Ours is another draw of the same
    rounding (rounding is discontinuous: our float32 x and float64's x round apart at ~sqrt(float32 error x bf16
    ulp), so the two cannot agree to float32 tolerance; measured 0.84-4.1e-3 apart), with a maximum of the same
    size (to first order the same linear map of rounding errors of the same distribution; 0.88-1.06 E
    measured): the bound is 2 E + `logit_tol`. Greedy tokens may leave golden_exact.json's only where its top-2
    gap is below that bound. "full" (or None) is the float32-close check above."""
    # A variant is a folder of tests/goldens/qwen3_5, or a checkpoint directory holding its own golden.json
    # (scripts/golden/qwen3_5_dequant_variants.py makes such diagnostic variants).
    folder = Path(variant) if Path(variant, "golden.json").is_file() else GOLDENS / variant
    name = "golden_exact.json" if exact_dequant and (folder / "golden_exact.json").is_file() else "golden.json"
    other_name = "golden.json"
    bf16_bound = None
    if precision == "bf16" and name == "golden_exact.json" and (folder / "golden_bf16x.json").is_file():
        other_name = "golden_bf16x.json"
    golden = json.loads((folder / name).read_text())
    other = None if name == "golden.json" else json.loads((folder / other_name).read_text())
    if other_name == "golden_bf16x.json":
        bf16_bound = 2 * other["logits_max_abs_diff_to_exact"] + logit_tol
    steps = len(golden["greedy"][0])
    cases = {"cases": [{"prompt_ids": p} for p in golden["prompt_ids"]], "logit_rows": 3, "check_rollback": True}
    request = Path(work_dir) / f"{folder.name}.json"
    request.write_text(json.dumps(cases))
    env = dict(os.environ)
    if precision:
        env["TF_PROMPT_PRECISION"] = precision
    run = subprocess.run([str(tool), str(folder), str(request), str(steps)],
                         capture_output=True, text=True, timeout=600, env=env)
    if run.returncode != 0:
        raise GoldenMismatch(f"{variant}: the tool failed: {run.stderr.strip()[-2000:]}")
    ours = json.loads(run.stdout)["cases"]
    worst, exact, near_ties, worst_other = 0.0, 0, 0, 0.0
    exact_near_ties = []
    for i, o in enumerate(ours):
        got = o["prompt_logits"]
        want = [x for row in golden["logits"][i] for x in row]
        if len(got) != len(want):
            raise GoldenMismatch(f"{variant}: prompt {i}: {len(got)} logits, golden {len(want)}")
        worst = max(worst, max(abs(a - b) for a, b in zip(got, want)))
        if other is not None:
            worst_other = max(worst_other, max(abs(a - b) for a, b in
                                               zip(got, [x for row in other["logits"][i] for x in row])))
        g = golden["greedy"][i]
        at = next((k for k, (a, b) in enumerate(zip(g, o["greedy"])) if a != b), None)
        if at is None:
            exact += 1
        elif golden["gaps"][i][at] < (NEAR_TIE if bf16_bound is None else bf16_bound):
            near_ties += 1
            exact_near_ties.append(f"prompt {i} token {at} gap {golden['gaps'][i][at]:.2e}")
        else:
            raise GoldenMismatch(f"{variant}: prompt {i}: token {at} is {o['greedy'][at]}, golden {g[at]}")
    rollback = next((line for line in run.stderr.splitlines() if "rollback:" in line), "rollback: (no line)")
    summary = (f"{family} {folder.name} ({name}): logits max |diff| {worst:.2e}; greedy {exact}/{len(ours)} exact, "
               f"{near_ties} near-tie; {rollback.split('rollback: ')[1]}")
    if bf16_bound is not None:
        summary += (f" (x rounded to bf16 on prefill rows: bound 2 E + tol = {bf16_bound:.2e}, E = "
                    f"{other['logits_max_abs_diff_to_exact']:.2e}; near-ties below it: {exact_near_ties or 'none'})"
                    f"; vs golden_bf16x.json (float64, another draw of the rounding) {worst_other:.2e}")
        if worst >= bf16_bound:
            raise GoldenMismatch(f"{summary} (past the bound)")
    else:
        if other is not None:
            summary += f"; vs golden.json (MLX's rounding) {worst_other:.2e}"
        if worst >= logit_tol:
            raise GoldenMismatch(f"{summary} (tolerance {logit_tol:.0e})")
    if "rejected mid-window" not in rollback or " 0 rows differ" not in rollback:
        raise GoldenMismatch(f"{summary} (rollback check)")
    return summary


def check_mtp(tool, logit_tol, work_dir, golden=None, family="qwen3_5", model=None):
    """The MTP head of `golden` (default: qwen3_5's bf16-mtp) against its float64 reference (mtp_golden.json, made
    by scripts/golden/make_<family>_tiny.py from families-and-formats §1.7's formula): for the 40-token prompt the
    head's row t pairs the main model's hidden row h_t with the token x_{t+1} (t = 39: the main model's greedy
    next token), at position t. Its logits at t = 36..39 within the tolerance, its argmax equal at all 40
    positions, and the rows run one at a time (the head's KV cache growing as a stream's drafts build it) within
    the tolerance of one pass. `model`: another file of the same weights (a GGUF conversion), run against the
    golden's reference. Returns a summary line, or raises GoldenMismatch."""
    golden = Path(golden) if golden is not None else GOLDENS / "bf16-mtp"
    model = Path(model) if model is not None else golden
    ref = json.loads((golden / "mtp_golden.json").read_text())
    prompt = ref["prompt_ids"]
    request = Path(work_dir) / "mtp.json"
    request.write_text(json.dumps({"prompt_ids": prompt}))
    run = subprocess.run([str(tool), str(model), str(request)], capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise GoldenMismatch(f"MTP: the tool failed: {run.stderr.strip()[-2000:]}")
    ours = json.loads(run.stdout)
    if ref["positions"] != list(range(len(prompt))):
        raise GoldenMismatch("MTP: the reference's positions are not 0..n-1")
    if prompt[1:] + [ours["next_token"]] != ref["input_tokens"]:
        raise GoldenMismatch(f"MTP: the main model's next token {ours['next_token']} differs from the reference's")
    worst = 0.0
    for t, want in zip((36, 37, 38, 39), ref["logits"] + [ref["logits_t39"]]):
        got = ours["logits"][t]
        if len(got) != len(want):
            raise GoldenMismatch(f"MTP: row {t} has {len(got)} logits, the reference {len(want)}")
        worst = max(worst, max(abs(a - b) for a, b in zip(got, want)))
    agree = sum(a == b for a, b in zip(ours["argmax"], ref["argmax"]))
    summary = (f"{family} MTP head: logits (t = 36..39) max |diff| {worst:.2e}; argmax {agree}/{len(ref['argmax'])} "
               f"positions agree; row-by-row vs one pass max |diff| {ours['incremental_max_diff']:.2e}")
    if worst >= logit_tol or agree != len(ref["argmax"]) or ours["incremental_max_diff"] >= logit_tol:
        raise GoldenMismatch(f"{summary} (tolerance {logit_tol:.0e})")
    return summary


def main(argv):
    """python3 qwen3_5_golden_check.py [--exact-dequant] GREEDY_TOOL MTP_TOOL LOGIT_TOL [VARIANT ...]: the
    variants' goldens (a VARIANT is a folder of tests/goldens/qwen3_5 or a checkpoint directory with its
    golden.json), then the MTP head's (MTP_TOOL "-": not); exit 1 when one fails. --exact-dequant: quantized
    variants against golden_exact.json (the CUDA backend's arithmetic; check_variant says why). --precision=bf16
    or --precision=full: the CUDA prompt precision the tool runs in (TF_PROMPT_PRECISION), and the references
    it is judged against (check_variant)."""
    exact_dequant = "--exact-dequant" in argv
    precision = next((a.split("=", 1)[1] for a in argv if a.startswith("--precision=")), None)
    argv = [a for a in argv if a != "--exact-dequant" and not a.startswith("--precision=")]
    if len(argv) < 4:
        print(main.__doc__, file=sys.stderr)
        return 2
    tool, mtp_tool, tol, variants = argv[1], argv[2], float(argv[3]), argv[4:] or VARIANTS
    checks = [(v, lambda work, v=v: check_variant(tool, v, tol, work, exact_dequant, precision=precision))
              for v in variants]
    if mtp_tool != "-":
        checks.append(("mtp", lambda work: check_mtp(mtp_tool, tol, work)))
    failed = 0
    with tempfile.TemporaryDirectory() as work:
        for _, check in checks:
            try:
                print(check(work))
            except GoldenMismatch as e:
                failed += 1
                print(f"FAILED {e}")
    print(f"qwen3_5 goldens{' (prompt precision ' + precision + ')' if precision else ''}: "
          f"{len(checks) - failed} of {len(checks)} checks pass ({', '.join(n for n, _ in checks)})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
