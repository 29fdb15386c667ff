"""A malformed qwen3_5 checkpoint is refused by `tensorfold serve` with one line naming the file and the
tensor or key, exit 1, never a crash: layer_types of the wrong length or with an unknown kind, a tensor of
the wrong shape, a quantization block that does not match the stored codes, and a missing tensor."""
import json
import shutil
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
