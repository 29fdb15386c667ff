"""A deepseek_v4 checkpoint the family cannot serve correctly is refused by `tensorfold serve` with one line naming
config.json and the key (or the checkpoint and the tensor), exit 1: key/value groups, an unknown layer type or
router score, a YaRN attention factor other than 1, a layer_types list of the wrong length, a quantization not
read, an MXFP4 expert without its scales, and weights the config's sizes disagree with."""
import json
import shutil
from pathlib import Path

import pytest

from ._builders import assert_clean_failure

GOLDEN = Path(__file__).resolve().parents[1] / "goldens" / "deepseek_v4" / "bf16"


def edited_copy(tmp_path: Path, edit, source=GOLDEN) -> Path:
    d = tmp_path / "ckpt"
    shutil.copytree(source, d)
    config = json.loads((d / "config.json").read_text())
    edit(config)
    (d / "config.json").write_text(json.dumps(config))
    return d


def setter(key, value):
    return lambda c: c.__setitem__(key, value)


def layer_type(c):
    c["layer_types"][1] = "full_attention"


def yarn_factor(c):
    c["rope_parameters"]["compress"]["attention_factor"] = 1.3


CASES = [
    ("kv_groups", setter("num_key_value_heads", 2), "'num_key_value_heads' must be 1 (one shared key/value head)"),
    ("layer_type", layer_type, "'layer_types' entries must be sliding_attention, compressed_sparse_attention or "
                               "heavily_compressed_attention, not \"full_attention\""),
    ("score", setter("scoring_func", "relu"), "'scoring_func' must be sqrtsoftplus, sigmoid or softmax, not 'relu'"),
    ("yarn", yarn_factor, "rope_parameters.compress: a YaRN attention_factor other than 1 is not read"),
    ("layer_types", lambda c: c["layer_types"].pop(), "'layer_types' must list num_hidden_layers (4) entries"),
    ("activation", setter("hidden_act", "gelu"), "hidden_act 'gelu' is not read (silu is)"),
]


@pytest.mark.parametrize("edit,expected", [pytest.param(e, x, id=i) for i, e, x in CASES])
def test_serve_refuses_what_deepseek_v4_cannot_serve(edit, expected, tmp_path, tensorfold, serving_build):
    d = edited_copy(tmp_path, edit)
    assert_clean_failure(tensorfold("serve", d, "--port", "0"), d / "config.json", expected, command="serve")


def test_serve_refuses_a_quantization_not_read(tmp_path, tensorfold, serving_build):
    d = edited_copy(tmp_path, setter("quantization_config", {"quant_method": "modelopt", "quant_algo": "NVFP4"}))
    assert_clean_failure(tensorfold("serve", d, "--port", "0"), d,
                         "deepseek_v4: quantization 'modelopt' is not read yet", command="serve")


def test_serve_refuses_an_mxfp4_expert_without_scales(tmp_path, tensorfold, serving_build):
    d = tmp_path / "ckpt"
    shutil.copytree(GOLDEN.parent / "fp8-mxfp4", d)
    data = (d / "model.safetensors").read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = data[8:8 + n].decode()
    name = "model.layers.0.ffn.experts.0.w1.scale"
    assert name in header
    patched = header.replace(name, name.replace(".scale", ".scalx"))  # same length: its weight has no scales
    (d / "model.safetensors").write_bytes(data[:8] + patched.encode() + data[8 + n:])
    assert_clean_failure(tensorfold("serve", d, "--port", "0"), d,
                         "'model.layers.0.ffn.experts.0.w1.weight' has dtype I8, which is not a float weight",
                         command="serve")


def test_serve_refuses_weights_of_another_shape(tmp_path, tensorfold, serving_build):
    d = edited_copy(tmp_path, setter("q_lora_rank", 16))
    assert_clean_failure(tensorfold("serve", d, "--port", "0"), d, "model.layers.0.attn.wq_a.weight",
                         command="serve")


def test_serve_refuses_a_nan_ue8m0_scale(tmp_path, tensorfold, serving_build):
    """0xFF is UE8M0's NaN: a tile scale holding it is refused, naming the tensor."""
    d = tmp_path / "ckpt"
    shutil.copytree(GOLDEN.parent / "fp8-mxfp4", d)
    data = bytearray((d / "model.safetensors").read_bytes())
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    name = "model.layers.0.attn.wq_a.scale"
    assert header[name]["dtype"] == "F8_E8M0"
    data[8 + n + header[name]["data_offsets"][0]] = 0xFF
    (d / "model.safetensors").write_bytes(bytes(data))
    assert_clean_failure(tensorfold("serve", d, "--port", "0"), d, f"'{name}' holds a NaN scale (0xFF)",
                         command="serve")
