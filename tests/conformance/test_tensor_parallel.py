"""Tensor parallelism (--tp, backends/tensor_parallel/) on the MLX backend: two ranks in one process, each holding
its part of every layer's heads and features, summing on the host; the ranks in turn on the caller's thread
(what --tp does on MLX), and apart (TF_TP_APART=1: each rank on its own thread with its ops queued, the path
CUDA ranks take).

- The qwen3_5 goldens (transformers, float64) hold on two ranks as on one: logits, greedy tokens, and verify
  windows with rejected drafts equal to serial decoding bit for bit before and after each rollback (drafted ==
  serial on two ranks), and the MTP head's reference.
- Two ranks against one on the same checkpoint, qwen3_5 and a tiny llama made here (MLX 4-bit): prompt logits
  within 1e-5, the same greedy tokens.
- A checkpoint whose heads do not divide among the ranks is refused at load, naming the tensor.
The device suite runs the same checks on CUDA (scripts/device/run-gpu-suite.sh)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

try:
    from .qwen3_5_golden_check import GOLDENS, VARIANTS, check_mtp, check_variant
except ImportError:  # run as a script (the CUDA device run)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from qwen3_5_golden_check import GOLDENS, VARIANTS, check_mtp, check_variant

LOGIT_TOL = 1e-5


def run_tool(tool: Path, model: Path, request: dict, steps: int, work: Path, tp: int) -> dict:
    req = work / f"request-{tp}.json"
    req.write_text(json.dumps(request))
    run = subprocess.run([str(tool), str(model), str(req), str(steps)], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "TF_TP": str(tp)})
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout)


def write_tiny_llama(d: Path, seed: int = 7) -> Path:
    """A llama checkpoint in MLX's layout: 4 query and 2 key/value heads of 32, 2 layers, 4-bit groups of 64."""
    d.mkdir(parents=True, exist_ok=True)
    hidden, ffn, heads, kv_heads, head_dim, vocab, layers = 128, 256, 4, 2, 32, 320, 2
    config = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": hidden,
              "intermediate_size": ffn, "num_attention_heads": heads, "num_key_value_heads": kv_heads,
              "head_dim": head_dim, "num_hidden_layers": layers, "vocab_size": vocab, "rms_norm_eps": 1e-5,
              "rope_theta": 10000.0, "max_position_embeddings": 2048, "tie_word_embeddings": True,
              "quantization": {"group_size": 64, "bits": 4}}
    (d / "config.json").write_text(json.dumps(config))
    import mlx.core as mx  # here: the device machine runs compare_ranks without MLX

    key = mx.random.key(seed)
    tensors = {}

    def quantized(name, rows, cols):
        nonlocal key
        key, sub = mx.random.split(key)
        w = (mx.random.normal((rows, cols), key=sub) * 0.08).astype(mx.bfloat16)
        wq, scales, biases = mx.quantize(w, group_size=64, bits=4)
        tensors[name + ".weight"], tensors[name + ".scales"], tensors[name + ".biases"] = wq, scales, biases

    def norm(name):
        nonlocal key
        key, sub = mx.random.split(key)
        tensors[name] = (1.0 + 0.1 * mx.random.normal((hidden,), key=sub)).astype(mx.bfloat16)

    quantized("model.embed_tokens", vocab, hidden)
    for i in range(layers):
        p = f"model.layers.{i}."
        norm(p + "input_layernorm.weight")
        norm(p + "post_attention_layernorm.weight")
        quantized(p + "self_attn.q_proj", heads * head_dim, hidden)
        quantized(p + "self_attn.k_proj", kv_heads * head_dim, hidden)
        quantized(p + "self_attn.v_proj", kv_heads * head_dim, hidden)
        quantized(p + "self_attn.o_proj", hidden, heads * head_dim)
        quantized(p + "mlp.gate_proj", ffn, hidden)
        quantized(p + "mlp.up_proj", ffn, hidden)
        quantized(p + "mlp.down_proj", hidden, ffn)
    norm("model.norm.weight")
    mx.save_safetensors(str(d / "model.safetensors"), tensors, metadata={"format": "mlx"})
    return d


MODES = ["in turn", "apart"]


def use_mode(monkeypatch, mode):
    monkeypatch.setenv("TF_TP", "2")
    monkeypatch.setenv("TF_TP_APART", "1" if mode == "apart" else "0")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_qwen3_5_goldens_hold_on_two_ranks(variant, mode, build_dir, tmp_path, capsys, monkeypatch):
    use_mode(monkeypatch, mode)
    summary = check_variant(build_dir / "tf_greedy_tool", variant, LOGIT_TOL, tmp_path)
    with capsys.disabled():
        print(f"\ntp 2, {mode}: {summary}")


@pytest.mark.parametrize("mode", MODES)
def test_qwen3_5_mtp_head_on_two_ranks(mode, build_dir, tmp_path, capsys, monkeypatch):
    use_mode(monkeypatch, mode)
    summary = check_mtp(build_dir / "tf_mtp_tool", LOGIT_TOL, tmp_path)
    with capsys.disabled():
        print(f"\ntp 2, {mode}: {summary}")


def compare_ranks(tool: Path, model: Path, work: Path, tol: float = LOGIT_TOL) -> str:
    """Two ranks against one on `model`: prompt logits within `tol`, the same greedy tokens, and verify windows
    equal to serial decoding on two ranks (the tool checks). Returns a summary line."""
    prompts = [[(7 * i + 3 * k) % 320 for i in range(n)] for k, n in ((1, 5), (2, 17), (3, 40))]
    request = {"cases": [{"prompt_ids": p} for p in prompts], "logit_rows": 3, "check_rollback": True}
    one = run_tool(tool, model, request, 24, work, 1)["cases"]
    two = run_tool(tool, model, request, 24, work, 2)["cases"]
    worst = max(abs(a - b) for o, t in zip(one, two) for a, b in zip(o["prompt_logits"], t["prompt_logits"]))
    assert worst < tol, f"{model.name}: two ranks' logits differ from one rank's by {worst:.2e} (tolerance {tol:.0e})"
    assert [c["greedy"] for c in two] == [c["greedy"] for c in one], f"{model.name}: greedy tokens differ"
    assert len(two) == 3 and all(len(c["greedy"]) == 24 for c in two)
    return f"{model.name}: two ranks vs one: logits max |diff| {worst:.2e}, greedy 3/3 cases equal (24 tokens)"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("family", ["llama", "qwen3_5"])
def test_two_ranks_match_one(family, mode, build_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TF_TP_APART", "1" if mode == "apart" else "0")
    model = write_tiny_llama(tmp_path / "llama") if family == "llama" else GOLDENS / "mlx-4bit"
    summary = compare_ranks(build_dir / "tf_greedy_tool", model, tmp_path)
    with capsys.disabled():
        print(f"\n{family}, {mode}: {summary}")


def test_heads_that_do_not_divide_are_refused(build_dir, default_model_path, tmp_path):
    # SmolLM2-135M has 9 query heads of 64: two ranks cannot hold whole heads alike.
    req = tmp_path / "r.json"
    req.write_text(json.dumps({"cases": [{"prompt_ids": [1, 2, 3]}]}))
    run = subprocess.run([str(build_dir / "tf_greedy_tool"), str(default_model_path), str(req), "2"],
                         capture_output=True, text=True, timeout=120, env={**os.environ, "TF_TP": "2"})
    assert run.returncode != 0
    assert "cannot divide tensor" in run.stderr and ("q_proj" in run.stderr or "attn_q" in run.stderr), run.stderr
    assert "9 heads of 64 rows" in run.stderr, run.stderr


if __name__ == "__main__":
    # python3 test_tensor_parallel.py GREEDY_TOOL WORK TOL MODEL...: compare_ranks on each (the CUDA device run,
    # whose kernels' float32 arithmetic is judged with the CUDA goldens' tolerance).
    import tempfile

    for m in sys.argv[4:]:
        with tempfile.TemporaryDirectory(dir=sys.argv[2]) as w:
            print(compare_ranks(Path(sys.argv[1]), Path(m), Path(w), float(sys.argv[3])))
