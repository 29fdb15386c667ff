"""The qwen3_5 family from GGUF files as llama.cpp writes them (arch `qwen35`), on the MLX backend: the tiny
bf16-mtp golden checkpoint converted by the pinned convert_hf_to_gguf.py to F16 and quantized by llama-quantize
to Q8_0 and Q4_K_M (tests/goldens/qwen3_5/gguf/, made by scripts/golden/make_qwen3_5_gguf.py).

* F16: the same weights as the safetensors checkpoint (bf16 values are exact in f16 but for a few subnormals;
  the converter stores the norms as 1 + w and A as -exp(A_log), in float32), so the logits and greedy tokens are
  judged against the safetensors golden (transformers, float64) as test_qwen3_5_golden.py judges the
  safetensors checkpoint, within a looser logit tolerance; and the MTP head against its float64 reference.
* Every file against llama.cpp's own greedy run on it (llama_cpp_greedy.json, recorded by the script): our
  logits after the prompt within LLAMA_LOGIT_TOL of llama.cpp's, and at each of the 24 steps of llama.cpp's
  greedy continuation (fed to us as the prompt, so every step is compared, not only those before a first
  divergence) llama.cpp's token is our top token or within NEAR_TIE of it; our own free-running greedy tokens
  equal llama.cpp's up to a step where llama.cpp's top-2 gap is below NEAR_TIE. The tolerances are llama.cpp's
  arithmetic, not ours: it rounds activations to f16 for F16 weights, and to 8 bits a block of 32 (Q8_0) or 256
  (Q8_K) for the quantized blocks, as coarse as the Q8_0 weights themselves; ours are float32, or 16-bit blocks
  in the integer products (quantized_matmul.cpp), 256 times finer. The
  quantizations' own effect on the logits is larger (Q4_K_M against the float64 golden: ~0.12), so a misread
  block type fails. Each divergence and the worst differences are printed.
* Every file: verify windows with wrong drafts rejected mid-window equal serial decoding bit for bit before and
  after each rollback of the Gated DeltaNet state (tf_greedy_tool's check_rollback), so drafted == serial.
* The tokenizer and chat template from the GGUF metadata: the checkpoint's ids and chat prompt.

TF_GGUF_BACKEND=cuda runs the same checks through the CUDA tools (tf_cuda_greedy_tool, tf_cuda_mtp_tool of
TF_BUILD_DIR) on a GPU machine, prompt rows in --precision full (TF_PROMPT_PRECISION, unless set): float32
arithmetic in other summation orders, judged against float64 within CUDA_F16_LOGIT_TOL as the CUDA qwen3_5
goldens are (scripts/device/run-gpu-suite.sh).
"""
import json
import os
import subprocess
from pathlib import Path

import pytest

from .qwen3_5_golden_check import GOLDENS, check_mtp

GGUF = GOLDENS / "gguf"
CUDA = os.environ.get("TF_GGUF_BACKEND", "mlx") == "cuda"
CUDA_F16_LOGIT_TOL = 1e-4  # as the CUDA qwen3_5 goldens' QWEN_LOGIT_TOL (the F16 weights are dense there)
# float32 against float64, as the safetensors checkpoint; the worst is printed
F16_LOGIT_TOL = CUDA_F16_LOGIT_TOL if CUDA else 1e-5
if CUDA:
    os.environ.setdefault("TF_PROMPT_PRECISION", "full")


def tool_path(build_dir, name):
    """The backend's tool: tf_greedy_tool (MLX) or tf_cuda_greedy_tool (CUDA), and so for the MTP tool."""
    return build_dir / (f"tf_cuda_{name}" if CUDA else f"tf_{name}")
F16_NEAR_TIE = 1e-3  # as qwen3_5_golden_check.NEAR_TIE
# Against llama.cpp on the same file, per file: (logit tolerance, near-tie). Measured: F16 9.0e-4 and no
# divergence; Q8_0 1.8e-2, Q4_K_M 2.4e-2, and our gap to llama.cpp's token where we differ at most 1.0e-2.
LLAMA = {"F16": (2e-3, 2e-3), "Q8_0": (4e-2, 2e-2), "Q4_K_M": (4e-2, 2e-2)}


def run_tool(tool, model, prompts, steps, work_dir, logit_rows=1):
    request = Path(work_dir) / "cases.json"
    request.write_text(json.dumps({"cases": [{"prompt_ids": p} for p in prompts], "logit_rows": logit_rows,
                                   "check_rollback": True}))
    run = subprocess.run([str(tool), str(model), str(request), str(steps)], capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, f"{model.name}: the tool failed: {run.stderr.strip()[-2000:]}"
    rollback = next((line for line in run.stderr.splitlines() if "rollback:" in line), "rollback: (no line)")
    assert "rejected mid-window" in rollback and " 0 rows differ" in rollback, f"{model.name}: {rollback}"
    return json.loads(run.stdout)["cases"], rollback.split("rollback: ")[1]


def first_difference(a, b):
    return next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), None)


def test_f16_gguf_matches_the_safetensors_golden(build_dir, tmp_path, capsys):
    golden = json.loads((GOLDENS / "bf16-mtp" / "golden.json").read_text())
    ours, rollback = run_tool(tool_path(build_dir, "greedy_tool"), GGUF / "qwen3_5-tiny-F16.gguf",
                              golden["prompt_ids"], len(golden["greedy"][0]), tmp_path, logit_rows=3)
    worst, exact, near = 0.0, 0, []
    for i, o in enumerate(ours):
        want = [x for row in golden["logits"][i] for x in row]
        worst = max(worst, max(abs(a - b) for a, b in zip(o["prompt_logits"], want)))
        at = first_difference(golden["greedy"][i], o["greedy"])
        if at is None:
            exact += 1
        else:
            assert golden["gaps"][i][at] < F16_NEAR_TIE, (
                f"prompt {i}: token {at} is {o['greedy'][at]}, golden {golden['greedy'][i][at]} "
                f"(gap {golden['gaps'][i][at]:.2e})")
            near.append(f"prompt {i} token {at} gap {golden['gaps'][i][at]:.2e}")
    with capsys.disabled():
        print(f"\nqwen3_5 GGUF F16 vs the safetensors golden: logits max |diff| {worst:.2e}; greedy {exact}/{len(ours)}"
              f" exact, near-ties {near or 'none'}; {rollback}")
    assert worst < F16_LOGIT_TOL


def test_f16_gguf_mtp_head_matches_its_reference(build_dir, tmp_path, capsys):
    summary = check_mtp(tool_path(build_dir, "mtp_tool"), F16_LOGIT_TOL, tmp_path,
                        model=GGUF / "qwen3_5-tiny-F16.gguf")
    with capsys.disabled():
        print(f"\nGGUF F16: {summary}")


@pytest.mark.parametrize("quant", sorted(LLAMA))
def test_gguf_matches_llama_cpp_on_the_same_file(quant, build_dir, tmp_path, capsys):
    ref = json.loads((GGUF / "llama_cpp_greedy.json").read_text())
    logit_tol, near_tie = LLAMA[quant]
    model = GGUF / f"qwen3_5-tiny-{quant}.gguf"
    theirs = ref["files"][model.name]
    steps, vocab = ref["steps"], len(theirs["prompt_logits"][0])
    tool = tool_path(build_dir, "greedy_tool")
    # Free-running greedy decoding: the same tokens up to a near-tie of llama.cpp's.
    ours, rollback = run_tool(tool, model, ref["prompt_ids"], steps, tmp_path)
    exact, parted = 0, []
    for i, o in enumerate(ours):
        at = first_difference(theirs["greedy"][i], o["greedy"])
        if at is None:
            exact += 1
            continue
        gap = theirs["gaps"][i][at]
        assert gap < near_tie, (f"{quant} prompt {i}: token {at} is {o['greedy'][at]}, llama.cpp's "
                                f"{theirs['greedy'][i][at]} (llama.cpp's top-2 gap {gap:.2e})")
        parted.append(f"prompt {i} token {at} (llama.cpp's gap {gap:.1e})")
    # llama.cpp's continuation fed to us: its logits after the prompt, and its token at every step.
    forced = [p + g[:-1] for p, g in zip(ref["prompt_ids"], theirs["greedy"])]
    rows, _ = run_tool(tool, model, forced, 1, tmp_path, logit_rows=steps)
    worst, agree, ties = 0.0, 0, []
    for i, o in enumerate(rows):
        logits = [o["prompt_logits"][k * vocab:(k + 1) * vocab] for k in range(steps)]
        worst = max(worst, max(abs(a - b) for a, b in zip(logits[0], theirs["prompt_logits"][i])))
        for k, row in enumerate(logits):
            top, want = max(range(vocab), key=row.__getitem__), theirs["greedy"][i][k]
            if top == want:
                agree += 1
                continue
            assert row[top] - row[want] < near_tie, (
                f"{quant} prompt {i} step {k}: our top token {top} leads llama.cpp's {want} by {row[top] - row[want]:.2e}")
            ties.append(f"{row[top] - row[want]:.1e}")
    with capsys.disabled():
        print(f"\nqwen3_5 GGUF {quant} vs llama.cpp: logits after the prompt max |diff| {worst:.2e}; free-running "
              f"greedy {exact}/{len(ours)} equal, parted at {parted or 'none'}; on llama.cpp's tokens {agree}/"
              f"{len(rows) * steps} steps agree, near-ties {ties or 'none'}; {rollback}")
    assert worst < logit_tol


def test_gguf_tokenizer_and_chat_template_equal_the_checkpoints(tensorfold_bin, tmp_path):
    """The tokenizer and chat template from the GGUF metadata (tokenizer.ggml.*, tokenizer.chat_template) give the
    safetensors checkpoint's ids (tokenizer.json) for plain and special-token text, and its rendered chat prompt."""
    texts = ["Hello, world!", "  spaces\tand\nnewlines\n\n", "<|im_start|>user\nabc abc<|im_end|>", "1 2 3 10 100",
             "Copy this exactly: the cat sat on the mat."]
    lines = tmp_path / "texts.jsonl"
    lines.write_text("".join(json.dumps(t) + "\n" for t in texts))
    messages = tmp_path / "messages.json"
    messages.write_text(json.dumps([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi!"}]))

    def outputs(model):
        tok = subprocess.run([str(tensorfold_bin), "tokenize", str(model), "--jsonl", str(lines)], capture_output=True,
                             text=True, timeout=60)
        tpl = subprocess.run([str(tensorfold_bin), "template", str(model), "--messages", str(messages),
                              "--add-generation-prompt", "--tokens"], capture_output=True, text=True, timeout=60)
        assert tok.returncode == 0 and tpl.returncode == 0, tok.stderr + tpl.stderr
        return tok.stdout, tpl.stdout

    want = outputs(GOLDENS / "bf16-mtp")
    assert len(want[0].splitlines()) == len(texts) and json.loads(want[1])
    for quant in ("F16", "Q4_K_M"):
        assert outputs(GGUF / f"qwen3_5-tiny-{quant}.gguf") == want, quant
