"""Our GGUF dequantization (src/checkpoint/ggml_dequant.cpp, through tf_dequant_tool) against the `gguf`
package's numpy reference, `gguf.quants.dequantize`, bit for bit: outputs are compared as uint32.

Two sources of blocks:
  * real blocks: tensors of the embedded SmolLM2-135M-Instruct Q4_1 GGUF (Q4_1, Q8_0, F32);
  * random blocks: GGUF files written with gguf.GGUFWriter(raw_dtype=...) from random bytes, for every
    type we dequantize, in several shapes (one block, multi-row, many blocks per row, 3-D).

NaN policy (checked against numpy, not assumed):
  * quantized types: the f16 scale fields (d, m, dmin) are either kept finite (random sign, exponent
    and mantissa, subnormals and zeros included; exponent 31 is remapped), or left fully random so that
    inf/NaN scales occur too. Both variants must match bit for bit.
  * BF16 and F32: every bit pattern, NaNs of every payload included, must match bit for bit.
  * F16: numpy's float16 -> float32 cast keeps a signaling NaN signaling on builds without F16C in the
    baseline (x86-64 wheels), whereas our converter quiets it (as F16C hardware and MLX do). All other
    65536 - 1022 patterns must match; the signaling-NaN patterns have their own test, which is an
    expected failure exactly when the installed numpy keeps them signaling.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import gguf
from gguf import GGMLQuantizationType as Q
from gguf.constants import GGML_QUANT_SIZES

SUPPORTED = [Q.F32, Q.F16, Q.BF16, Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q8_0, Q.Q4_K, Q.Q5_K, Q.Q6_K]

# Byte offsets of the f16 scale fields inside one block, per type.
F16_FIELDS = {
    Q.Q4_0: [0],  # d
    Q.Q4_1: [0, 2],  # d, m
    Q.Q5_0: [0],  # d
    Q.Q5_1: [0, 2],  # d, m
    Q.Q8_0: [0],  # d
    Q.Q4_K: [0, 2],  # d, dmin
    Q.Q5_K: [0, 2],  # d, dmin
    Q.Q6_K: [208],  # d (after ql[128], qh[64], scales[16])
}

# (rows..., blocks per row): one block, one row of many, multi-row, 3-D.
SHAPES = [(1, 1), (1, 7), (5, 3), (2, 3, 2)]


def assert_bit_identical(ours: np.ndarray, ref: np.ndarray, what: str) -> None:
    ref = np.ascontiguousarray(ref, dtype=np.float32).ravel()
    assert ours.dtype == np.float32 and ours.size == ref.size, f"{what}: {ours.size} values, reference has {ref.size}"
    a, b = ours.view(np.uint32), ref.view(np.uint32)
    if not np.array_equal(a, b):
        bad = np.flatnonzero(a != b)
        i = int(bad[0])
        pytest.fail(
            f"{what}: {bad.size} of {a.size} values differ; first at {i}: ours 0x{a[i]:08x} ({ours[i]!r}) "
            f"vs gguf 0x{b[i]:08x} ({ref[i]!r})",
            pytrace=False,
        )


def finite_f16_bits(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random f16 bit patterns that are finite: random sign/mantissa, exponent 0..30 (subnormals, zero included)."""
    sign = rng.integers(0, 2, n, dtype=np.uint16) << 15
    exp = rng.integers(0, 31, n, dtype=np.uint16) << 10
    mant = rng.integers(0, 1024, n, dtype=np.uint16)
    return (sign | exp | mant).astype(np.uint16)


def random_blocks(rng: np.random.Generator, qtype: Q, shape: tuple[int, ...], scales: str) -> np.ndarray:
    """uint8 array (*rows, blocks * type_size) of random blocks of `qtype`."""
    *rows, nblocks = shape
    _, type_size = GGML_QUANT_SIZES[qtype]
    data = rng.integers(0, 256, (*rows, nblocks * type_size), dtype=np.uint8)
    if qtype == Q.F16:
        # Every pattern but signaling NaNs (covered by test_f16_signaling_nan_patterns).
        h = data.view(np.uint16)
        snan = ((h & 0x7C00) == 0x7C00) & ((h & 0x03FF) != 0) & ((h & 0x0200) == 0)
        h[snan] |= 0x0200
    elif qtype in F16_FIELDS and scales == "finite":
        blocks = data.reshape(-1, type_size)
        for off in F16_FIELDS[qtype]:
            blocks[:, off : off + 2] = finite_f16_bits(rng, blocks.shape[0]).view(np.uint8).reshape(-1, 2)
    return data


def write_gguf(path: Path, tensors: dict[str, tuple[np.ndarray, Q]]) -> None:
    w = gguf.GGUFWriter(str(path), arch="llama")
    for name, (raw, qtype) in tensors.items():
        w.add_tensor(name, raw, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# ---- random blocks ---------------------------------------------------------------------------------


def _variants():
    for qtype in SUPPORTED:
        if qtype in F16_FIELDS:
            yield pytest.param(qtype, "finite", id=f"{qtype.name}-finite-scales")
            yield pytest.param(qtype, "any", id=f"{qtype.name}-any-scale-bits")
        else:
            yield pytest.param(qtype, "any", id=f"{qtype.name}-random-bits")


@pytest.mark.parametrize("qtype,scales", list(_variants()))
def test_random_blocks_match_gguf(qtype, scales, tmp_path, dequant_tool):
    rng = np.random.default_rng([int(qtype), scales == "finite"])
    tensors = {f"t{i}": (random_blocks(rng, qtype, shape, scales), qtype) for i, shape in enumerate(SHAPES)}
    path = tmp_path / f"random-{qtype.name}.gguf"
    write_gguf(path, tensors)
    for name, (raw, _) in tensors.items():
        ours = dequant_tool("gguf", path, name, tmp_path / f"{name}.f32")
        with np.errstate(all="ignore"):
            ref = gguf.quants.dequantize(raw, qtype)
        block_size, _ = GGML_QUANT_SIZES[qtype]
        assert ref.shape[-1] == raw.shape[-1] // GGML_QUANT_SIZES[qtype][1] * block_size
        assert_bit_identical(ours, ref, f"{qtype.name} {name} shape {raw.shape}")


def test_random_blocks_really_hold_nan_and_inf_scales():
    """The 'any-scale-bits' variants above are only worth something if they hit non-finite scales."""
    rng = np.random.default_rng([int(Q.Q4_K), False])
    raw = random_blocks(rng, Q.Q4_K, (64, 4), "any")
    d = raw.reshape(-1, 144)[:, 0:2].copy().view(np.uint16).ravel()
    assert ((d & 0x7C00) == 0x7C00).any(), "no inf/NaN scale in 256 random Q4_K blocks"
    raw = random_blocks(np.random.default_rng(0), Q.Q4_K, (64, 4), "finite")
    d = raw.reshape(-1, 144)[:, 0:2].copy().view(np.uint16).ravel()
    assert not ((d & 0x7C00) == 0x7C00).any()


# ---- exhaustive half floats ------------------------------------------------------------------------


def _all_f16_patterns() -> np.ndarray:
    return np.arange(65536, dtype=np.uint32).astype(np.uint16)


def _is_snan16(h: np.ndarray) -> np.ndarray:
    return ((h & 0x7C00) == 0x7C00) & ((h & 0x03FF) != 0) & ((h & 0x0200) == 0)


@pytest.mark.parametrize("qtype", [Q.F16, Q.BF16], ids=["F16", "BF16"])
def test_every_half_pattern_but_f16_snan_matches(qtype, tmp_path, dequant_tool):
    h = _all_f16_patterns()
    if qtype == Q.F16:
        h = h[~_is_snan16(h)]
    assert h.size == (64514 if qtype == Q.F16 else 65536)
    raw = h.view(np.uint8).reshape(1, -1)
    path = tmp_path / "halves.gguf"
    write_gguf(path, {"h": (raw, qtype)})
    ours = dequant_tool("gguf", path, "h", tmp_path / "h.f32")
    assert_bit_identical(ours, gguf.quants.dequantize(raw, qtype), f"every {qtype.name} pattern")


def test_f16_signaling_nan_patterns(tmp_path, dequant_tool):
    h = _all_f16_patterns()
    h = h[_is_snan16(h)]
    assert h.size == 2 * 511  # two signs x 511 non-zero payloads with the quiet bit clear
    raw = h.view(np.uint8).reshape(-1, 4)  # 511 rows of 2
    path = tmp_path / "snan.gguf"
    write_gguf(path, {"h": (raw, Q.F16)})
    ours = dequant_tool("gguf", path, "h", tmp_path / "h.f32")
    assert_bit_identical(ours, gguf.quants.dequantize(raw, Q.F16), "signaling f16 NaNs")


# ---- real blocks -----------------------------------------------------------------------------------

REAL_TENSORS = [
    "token_embd.weight",  # Q8_0, 576 x 49152
    "blk.0.attn_norm.weight",  # F32
    "blk.0.ffn_down.weight",  # Q4_1, rows of 1536
    "blk.0.attn_k.weight",  # Q4_1, rows of 576
    "blk.29.ffn_gate.weight",  # Q4_1, last layer
    "output_norm.weight",  # F32
]


@pytest.fixture(scope="module")
def real_reader(default_model_reader):
    return default_model_reader


def test_real_model_has_the_expected_types(real_reader):
    types = {t.name: t.tensor_type for t in real_reader.tensors}
    assert types["token_embd.weight"] == Q.Q8_0
    assert types["blk.0.ffn_down.weight"] == Q.Q4_1
    assert types["blk.0.attn_norm.weight"] == Q.F32
    assert set(REAL_TENSORS) <= set(types)


@pytest.mark.parametrize("name", REAL_TENSORS)
def test_real_tensor_matches_gguf(name, real_reader, default_model_path, dequant_tool, tmp_path):
    t = next(t for t in real_reader.tensors if t.name == name)
    ours = dequant_tool("gguf", default_model_path, name, tmp_path / "out.f32")
    ref = gguf.quants.dequantize(t.data, t.tensor_type)
    assert ref.size == int(np.prod(t.shape)), f"{name}: reference has {ref.size} values for shape {t.shape}"
    assert np.isfinite(ref).all() and np.count_nonzero(ref) > ref.size // 2, f"{name}: implausible weights"
    assert_bit_identical(ours, ref, f"{name} ({t.tensor_type.name})")
