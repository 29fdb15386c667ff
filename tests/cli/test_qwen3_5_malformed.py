"""A malformed qwen3_5 checkpoint is refused by `tensorfold serve` with one line naming the file and the
tensor or key, exit 1, never a crash: layer_types of the wrong length or with an unknown kind, a tensor of
the wrong shape, a quantization block that does not match the stored codes, and a missing tensor; and in a GGUF
(llama.cpp's qwen35, tests/goldens/qwen3_5/gguf), a missing key, a missing tensor, MTP layers that leave no
model, and a decay rate A = -exp(A_log) that is not negative."""
import json
import shutil
import struct
from pathlib import Path

import pytest

from ._builders import assert_clean_failure

GOLDEN = Path(__file__).resolve().parents[1] / "goldens" / "qwen3_5" / "mlx-4bit"


def edited_copy(tmp_path: Path, edit) -> Path:
    d = tmp_path / "ckpt"
    shutil.copytree(GOLDEN, d)
    config = json.loads((d / "config.json").read_text())
    edit(config)
    (d / "config.json").write_text(json.dumps(config))
    return d


def set_text(key, value):
    return lambda c: c["text_config"].__setitem__(key, value)


def set_quant(c, **kw):
    for block in ("quantization", "quantization_config"):
        c[block].update(kw)


CASES = [
    ("layer_types_length", set_text("layer_types", ["linear_attention"] * 3 + ["full_attention"]), "config.json",
     "'layer_types' must list num_hidden_layers (8) entries"),
    ("layer_types_kind", set_text("layer_types", ["linear_attention"] * 7 + ["mamba"]), "config.json",
     "'layer_types' entries must be full_attention or linear_attention"),
    ("wrong_shape", set_text("linear_value_head_dim", 16), "",
     "tensor 'language_model.model.layers.0.linear_attn.in_proj_qkv.weight' is 256x128, expected 192x128"),
    ("bad_quant_block", lambda c: set_quant(c, group_size=32), "", "scales/biases do not match 4-bit group 32"),
    ("missing_head", lambda c: (c.__setitem__("tie_word_embeddings", False),
                                c["text_config"].__setitem__("tie_word_embeddings", False)), "",
     "missing tensor 'language_model.lm_head.weight'"),
    ("value_heads", set_text("linear_num_value_heads", 3), "config.json",
     "linear_num_value_heads must be a multiple of linear_num_key_heads"),
]



@pytest.mark.parametrize("edit,file,expected", [pytest.param(e, f, x, id=i) for i, e, f, x in CASES])
def test_serve_refuses_a_malformed_qwen3_5_checkpoint(edit, file, expected, tmp_path, tensorfold, serving_build):
    d = edited_copy(tmp_path, edit)
    named = d / file if file else d
    assert_clean_failure(tensorfold("serve", d, "--port", "0"), named, expected, command="serve")


GGUF = Path(__file__).resolve().parents[1] / "goldens" / "qwen3_5" / "gguf" / "qwen3_5-tiny-F16.gguf"


def renamed(old: bytes, new: bytes):
    """A key or tensor name replaced by another of the same length (the file's layout unchanged)."""
    def edit(raw: bytearray):
        assert raw.count(old) == 1 and len(new) == len(old)
        at = raw.index(old)
        raw[at:at + len(old)] = new
    return edit


def u32_value_of(key: bytes, value: int):
    """A u32 metadata value rewritten: after the key come its type (u32 4) and the value."""
    def edit(raw: bytearray):
        at = raw.index(key) + len(key)
        assert struct.unpack_from("<I", raw, at)[0] == 4
        struct.pack_into("<I", raw, at + 4, value)
    return edit


def positive_a(raw: bytearray):
    """blk.0.ssm_a (4 float32 values of A = -exp(A_log)) made positive: found by its values, which are unique."""
    import gguf
    t = next(t for t in gguf.GGUFReader(GGUF).tensors if t.name == "blk.0.ssm_a")
    at = raw.index(bytes(t.data.tobytes()))
    raw[at:at + 16] = struct.pack("<4f", 1.0, 1.0, 1.0, 1.0)


GGUF_CASES = [
    ("missing_key", renamed(b"qwen35.ssm.group_count", b"qwen35.ssm.group_counX"),
     "'qwen35.ssm.group_count' must be a positive integer"),
    ("missing_tensor", renamed(b"blk.0.ssm_out.weight", b"blk.0.ssm_ouX.weight"), "missing tensor 'blk.0.ssm_out.weight'"),
    ("mtp_layers", u32_value_of(b"qwen35.nextn_predict_layers", 9),
     "'qwen35.nextn_predict_layers' must be fewer than block_count (9)"),
    ("positive_a", positive_a, "(A = -exp(A_log)) holds 1.000000, not a negative decay rate"),
]


@pytest.mark.parametrize("edit,expected", [pytest.param(e, x, id=i) for i, e, x in GGUF_CASES])
def test_serve_refuses_a_malformed_qwen35_gguf(edit, expected, tmp_path, tensorfold, serving_build):
    raw = bytearray(GGUF.read_bytes())
    edit(raw)
    f = tmp_path / "model.gguf"
    f.write_bytes(bytes(raw))
    assert_clean_failure(tensorfold("serve", f, "--port", "0"), f, expected, command="serve")
