"""Our MLX affine dequantization (src/checkpoint/mlx_affine.cpp, through tf_dequant_tool) against
mlx.core.dequantize(...).astype(float32), bit for bit (compared as uint32).

Every bits in {2,3,4,5,6,8} x group size in {32,64,128} x scale dtype in {float32, float16, bfloat16},
for two kinds of input:
  * quantized: random normal weights quantized by mx.quantize (what real checkpoints hold);
  * raw: random packed words (every code value) with random finite scales and biases of mixed
    magnitudes, which exercise the f16/bf16 rounding of scale * q and of + bias harder.
Each case is a checkpoint directory: config.json with a "quantization" block and model.safetensors
written by mx.save_safetensors. Then per-module overrides in config.json, and a sharded checkpoint
(model.safetensors.index.json over two shards, one module split across them).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import mlx.core as mx

BITS = [2, 3, 4, 5, 6, 8]
GROUPS = [32, 64, 128]
DTYPES = {"float32": mx.float32, "float16": mx.float16, "bfloat16": mx.bfloat16}
ROWS, COLS = 6, 384  # 384 is a multiple of every group size, and of 32 for every bit width


def assert_bit_identical(ours: np.ndarray, ref: np.ndarray, what: str) -> None:
    ref = np.ascontiguousarray(ref, dtype=np.float32).ravel()
    assert ours.size == ref.size, f"{what}: {ours.size} values, mlx has {ref.size}"
    a, b = ours.view(np.uint32), ref.view(np.uint32)
    if not np.array_equal(a, b):
        bad = np.flatnonzero(a != b)
        i = int(bad[0])
        pytest.fail(
            f"{what}: {bad.size} of {a.size} values differ; first at {i}: ours 0x{a[i]:08x} ({ours[i]!r}) "
            f"vs mlx 0x{b[i]:08x} ({ref[i]!r})",
            pytrace=False,
        )


def mlx_reference(wq, scales, biases, group: int, bits: int) -> np.ndarray:
    out = mx.dequantize(wq, scales, biases, group_size=group, bits=bits).astype(mx.float32)
    return np.array(out)


def write_checkpoint(d: Path, quantization: dict, tensors: dict, shards: list[list[str]] | None = None) -> Path:
    """config.json + model.safetensors, or with `shards` (lists of tensor names) an index over shards."""
    config = {"model_type": "llama", "num_hidden_layers": 1, "quantization": quantization}
    (d / "config.json").write_text(json.dumps(config))
    if shards is None:
        mx.save_safetensors(str(d / "model.safetensors"), tensors, metadata={"format": "mlx"})
        return d
    weight_map = {}
    for i, names in enumerate(shards):
        fname = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        mx.save_safetensors(str(d / fname), {n: tensors[n] for n in names}, metadata={"format": "mlx"})
        weight_map.update({n: fname for n in names})
    assert sorted(weight_map) == sorted(tensors)
    (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return d


def quantized_module(seed: int, bits: int, group: int, dtype, rows: int = ROWS, cols: int = COLS):
    mx.random.seed(seed)
    w = (mx.random.normal((rows, cols)) * 0.05).astype(dtype)
    return mx.quantize(w, group_size=group, bits=bits)


def raw_module(seed: int, bits: int, group: int, dtype, rows: int = ROWS, cols: int = COLS):
    rng = np.random.default_rng(seed)
    wq = rng.integers(0, 2**32, (rows, cols * bits // 32), dtype=np.uint64).astype(np.uint32)
    n = rows * cols // group
    # magnitudes from 1e-4 to 1e2, both signs: products and sums that round in every way
    scales = rng.standard_normal(n) * 10.0 ** rng.uniform(-4, 2, n)
    biases = rng.standard_normal(n) * 10.0 ** rng.uniform(-4, 2, n)
    s = mx.array(scales.astype(np.float32).reshape(rows, -1)).astype(dtype)
    b = mx.array(biases.astype(np.float32).reshape(rows, -1)).astype(dtype)
    return mx.array(wq), s, b


@pytest.mark.parametrize("dtype_name", list(DTYPES))
@pytest.mark.parametrize("group", GROUPS)
@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("source", ["quantized", "raw"])
def test_affine_matches_mlx(source, bits, group, dtype_name, make_dir, dequant_tool):
    dtype = DTYPES[dtype_name]
    seed = bits * 1000 + group * 10 + list(DTYPES).index(dtype_name)
    make = quantized_module if source == "quantized" else raw_module
    wq, scales, biases = make(seed, bits, group, dtype)
    assert wq.dtype == mx.uint32 and scales.dtype == dtype and biases.dtype == dtype
    module = "model.layers.0.self_attn.q_proj"
    d = write_checkpoint(
        make_dir("ck"),
        {"group_size": group, "bits": bits},
        {f"{module}.weight": wq, f"{module}.scales": scales, f"{module}.biases": biases},
    )
    ours = dequant_tool("mlx", d, module, d / "out.f32")
    ref = mlx_reference(wq, scales, biases, group, bits)
    assert ref.shape == (ROWS, COLS)
    assert np.unique(ref).size > ROWS * COLS // (group * 2), "degenerate reference: too few distinct values"
    assert_bit_identical(ours, ref, f"{source} {bits}-bit g{group} {dtype_name}")


def test_per_module_overrides(make_dir, dequant_tool, dequant_tool_bin, run_cmd):
    """config.json defaults 4-bit g64, with down_proj overridden to 8-bit g64 and gate_proj to 3-bit g32."""
    up = quantized_module(1, 4, 64, mx.bfloat16)
    down = quantized_module(2, 8, 64, mx.bfloat16, cols=256)
    gate = quantized_module(3, 3, 32, mx.bfloat16)
    modules = {
        "model.layers.0.mlp.up_proj": (up, 4, 64),
        "model.layers.0.mlp.down_proj": (down, 8, 64),
        "model.layers.0.mlp.gate_proj": (gate, 3, 32),
    }
    tensors = {}
    for m, ((wq, s, b), _, _) in modules.items():
        tensors.update({f"{m}.weight": wq, f"{m}.scales": s, f"{m}.biases": b})
    quantization = {
        "group_size": 64,
        "bits": 4,
        "model.layers.0.mlp.down_proj": {"bits": 8, "group_size": 64},
        "model.layers.0.mlp.gate_proj": {"bits": 3, "group_size": 32},
    }
    d = write_checkpoint(make_dir("overrides"), quantization, tensors)
    for m, ((wq, s, b), bits, group) in modules.items():
        ours = dequant_tool("mlx", d, m, d / f"{m}.f32")
        assert_bit_identical(ours, mlx_reference(wq, s, b, group, bits), f"{m} ({bits}-bit g{group})")

    # The overrides must be what makes it work: without them, down_proj's 8-bit words read as 4-bit
    # codes do not match its scales, and gate_proj (3-bit g32) read as 4-bit g64 comes out different.
    (d / "config.json").write_text(json.dumps({"model_type": "llama", "quantization": {"group_size": 64, "bits": 4}}))
    r = run_cmd([dequant_tool_bin, "mlx", d, "model.layers.0.mlp.down_proj", d / "x.f32"])
    assert r.returncode != 0, "8-bit down_proj was dequantized as 4-bit g64 without complaint"
    r = run_cmd([dequant_tool_bin, "mlx", d, "model.layers.0.mlp.gate_proj", d / "y.f32"])
    assert r.returncode != 0 or not np.array_equal(
        np.fromfile(d / "y.f32", dtype=np.float32).view(np.uint32), mlx_reference(*gate, 32, 3).ravel().view(np.uint32)
    )
    # An override of `false` leaves a module unquantized: the tool refuses to dequantize it.
    quantization["model.layers.0.mlp.up_proj"] = False
    (d / "config.json").write_text(json.dumps({"model_type": "llama", "quantization": quantization}))
    r = run_cmd([dequant_tool_bin, "mlx", d, "model.layers.0.mlp.up_proj", d / "z.f32"])
    assert r.returncode == 1 and "not quantized" in r.stderr, r.stderr


def test_sharded_checkpoint(make_dir, dequant_tool):
    """Two shards; q_proj's weight in shard 1 while its scales and biases sit in shard 2."""
    q = quantized_module(10, 4, 64, mx.float16)
    k = quantized_module(11, 4, 64, mx.float16, rows=2)
    tensors = {}
    for m, (wq, s, b) in {"model.layers.0.self_attn.q_proj": q, "model.layers.0.self_attn.k_proj": k}.items():
        tensors.update({f"{m}.weight": wq, f"{m}.scales": s, f"{m}.biases": b})
    shards = [
        ["model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight"],
        [
            "model.layers.0.self_attn.q_proj.scales",
            "model.layers.0.self_attn.q_proj.biases",
            "model.layers.0.self_attn.k_proj.scales",
            "model.layers.0.self_attn.k_proj.biases",
        ],
    ]
    d = write_checkpoint(make_dir("sharded"), {"group_size": 64, "bits": 4}, tensors, shards=shards)
    assert not (d / "model.safetensors").exists()
    for m, (wq, s, b) in {"model.layers.0.self_attn.q_proj": q, "model.layers.0.self_attn.k_proj": k}.items():
        ours = dequant_tool("mlx", d, m, d / f"{m}.f32")
        assert_bit_identical(ours, mlx_reference(wq, s, b, 64, 4), f"sharded {m}")


def any_bits_module(dtype_name: str):
    """4-bit g32 [16, 256] with random words and scales/biases of every bit pattern."""
    dtype = DTYPES[dtype_name]
    rng = np.random.default_rng(77)
    rows, cols, group, bits = 16, 256, 32, 4
    wq = mx.array(rng.integers(0, 2**32, (rows, cols * bits // 32), dtype=np.uint64).astype(np.uint32))
    if dtype_name == "float32":
        raw = rng.integers(0, 2**32, (2, rows, cols // group), dtype=np.uint64).astype(np.uint32)
    else:
        raw = rng.integers(0, 2**16, (2, rows, cols // group), dtype=np.uint32).astype(np.uint16)
    scales, biases = (mx.array(x).view(dtype) for x in raw)
    return wq, scales, biases, group, bits


def run_any_bits(dtype_name: str, make_dir, dequant_tool):
    wq, scales, biases, group, bits = any_bits_module(dtype_name)
    d = write_checkpoint(
        make_dir("anybits"), {"group_size": group, "bits": bits}, {"m.weight": wq, "m.scales": scales, "m.biases": biases}
    )
    ours = dequant_tool("mlx", d, "m", d / "out.f32")
    ref = mlx_reference(wq, scales, biases, group, bits).ravel()
    assert np.isnan(ref).any() and np.isinf(ref).any(), "the random scales reached no inf or NaN"
    return ours, ref


@pytest.mark.parametrize("dtype_name", list(DTYPES))
def test_affine_with_scale_and_bias_of_any_bits_non_nan(dtype_name, make_dir, dequant_tool):
    """Every non-NaN output (inf, overflow, subnormal results included) matches bit for bit, and NaN
    appears exactly where MLX has NaN."""
    ours, ref = run_any_bits(dtype_name, make_dir, dequant_tool)
    assert np.array_equal(np.isnan(ours), np.isnan(ref)), "NaN in different places"
    keep = ~np.isnan(ref)
    assert_bit_identical(ours[keep], ref[keep], f"any-bits scales {dtype_name}, non-NaN outputs")


# Half-precision scales are covered by test_affine_with_scale_and_bias_of_any_bits_non_nan: MLX's CPU
# half arithmetic replaces every NaN by one canonical NaN, while ours keeps the payload of a NaN scale.
@pytest.mark.parametrize("dtype_name", ["float32"])
def test_affine_with_scale_and_bias_of_any_bits(dtype_name, make_dir, dequant_tool):
    """Scales and biases of every bit pattern, NaN payloads included, bit for bit."""
    ours, ref = run_any_bits(dtype_name, make_dir, dequant_tool)
    assert_bit_identical(ours, ref, f"any-bits scales {dtype_name}")
