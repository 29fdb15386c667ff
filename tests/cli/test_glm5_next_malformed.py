"""A glm5_next checkpoint the family cannot serve correctly is refused by `tensorfold serve` with one line naming
config.json and the key (or the checkpoint and the tensor), exit 1: a rotary part in latent attention, an activation
not read, a shared indexer layer with no full indexer layer before it, an index_topk of part pools, a tail that is
not attended, key/value groups, a decay bound that is not negative, a layer_types list of the wrong length, NVFP4
and FP8 without blocks, float8 weights without their scales, weights the config's sizes disagree with, and an MTP
layer that is not latent attention."""
import json
import shutil
from pathlib import Path

import pytest

from ._builders import assert_clean_failure

GOLDEN = Path(__file__).resolve().parents[1] / "goldens" / "glm5_next" / "bf16"


def edited_copy(tmp_path: Path, edit, top=None) -> Path:
    d = tmp_path / "ckpt"
    shutil.copytree(GOLDEN, d)
    config = json.loads((d / "config.json").read_text())
    edit(config["text_config"])
    if top:
        top(config)
    (d / "config.json").write_text(json.dumps(config))
    return d


def setter(key, value):
    return lambda c: c.__setitem__(key, value)


def shared_after_kda(c):
    c["indexer_types"][1] = "shared"


CASES = [
    ("rope", setter("qk_rope_head_dim", 16),
     "'qk_rope_head_dim' > 0 (a rotary part in latent attention) is not served: GLM-5.3's latent attention is NoPE "
     "(transformers' glm5_next refuses a RoPE part too)"),
    ("activation", setter("hidden_act", "gelu"), "hidden_act 'gelu' is not read (silu is)"),
    ("shared_first", shared_after_kda,
     "layer 1 shares an indexer, but the layer before it is not a latent-attention layer with its own indexer"),
    ("topk", setter("index_topk", 6), "'index_topk' must be a multiple of index_kpool"),
    ("no_tail", setter("index_kpool_always_select_tail", False),
     "'index_kpool_always_select_tail' false is not served (the tail is always attended)"),
    ("kv_groups", setter("num_key_value_heads", 2), "'num_key_value_heads' must equal num_attention_heads"),
    ("bound", setter("linear_lower_bound", 1.0), "'linear_lower_bound' must be negative (or null: no bound)"),
    ("layer_types", lambda c: c["layer_types"].pop(), "'layer_types' must list num_hidden_layers (5) entries"),
]


@pytest.mark.parametrize("edit,expected", [pytest.param(e, x, id=i) for i, e, x in CASES])
def test_serve_refuses_what_glm5_next_cannot_serve(edit, expected, tmp_path, tensorfold, serving_build):
    d = edited_copy(tmp_path, edit)
    assert_clean_failure(tensorfold("serve", d, "--port", "0"), d / "config.json", expected, command="serve")


@pytest.mark.parametrize("quant,expected", [
    ({"quant_method": "modelopt", "quant_algo": "NVFP4"},
     "glm5_next: NVFP4 checkpoints are not served: use the FP8 or BF16 release"),
    ({"quant_method": "fp8", "fmt": "e4m3"}, "glm5_next: quantization 'fp8' is not read yet (block FP8 and bf16 are)"),
], ids=["nvfp4", "fp8_per_tensor"])
def test_serve_refuses_quantizations_glm5_next_does_not_read(quant, expected, tmp_path, tensorfold, serving_build):
    d = edited_copy(tmp_path, lambda c: None, top=setter("quantization_config", quant))
    assert_clean_failure(tensorfold("serve", d, "--port", "0"), d, expected, command="serve")


def test_serve_refuses_float8_weights_without_scales(tmp_path, tensorfold, serving_build):
    d = tmp_path / "ckpt"
    shutil.copytree(GOLDEN.parent / "fp8", d)
    data = (d / "model.safetensors").read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = data[8:8 + n].decode()
    # Rename one scale tensor (same length) so that its weight has none.
    name = "model.language_model.layers.0.self_attn.q_proj.weight_scale_inv"
    assert name in header
    patched = header.replace(name, name.replace("weight_scale_inv", "weight_scale_inx"))
    (d / "model.safetensors").write_bytes(data[:8] + patched.encode() + data[8 + n:])
    assert_clean_failure(tensorfold("serve", d, "--port", "0"), d,
                         "'model.language_model.layers.0.self_attn.q_proj.weight' is float8 without its "
                         "weight_scale_inv", command="serve")


def test_serve_refuses_weights_of_another_shape(tmp_path, tensorfold, serving_build):
    d = edited_copy(tmp_path, setter("linear_num_heads", 4))
    assert_clean_failure(tensorfold("serve", d, "--port", "0"), d,
                         "model.language_model.layers.0.self_attn.q_proj.weight", command="serve")


def test_serve_refuses_an_mtp_layer_that_is_not_latent_attention(tmp_path, tensorfold, serving_build):
    """The MTP layer (flat: model.layers.5.*) is served as latent attention + experts; one without latent attention
    (a KDA layer, say) would need a rollback of its own: one line naming the layer."""
    d = tmp_path / "ckpt"
    shutil.copytree(GOLDEN.parent / "flat", d)
    data = (d / "model.safetensors").read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = data[8:8 + n].decode()
    name = "model.layers.5.self_attn.kv_a_proj_with_mqa.weight"
    assert name in header
    patched = header.replace(name, name.replace("kv_a_proj", "kv_x_proj"))
    (d / "model.safetensors").write_bytes(data[:8] + patched.encode() + data[8 + n:])
    assert_clean_failure(tensorfold("serve", d, "--port", "0"), d,
                         "the MTP layer model.layers.5.* is not a latent-attention layer: only such a head is served",
                         command="serve")
