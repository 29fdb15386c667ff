"""A gemma4 checkpoint the family cannot serve correctly is refused by `tensorfold serve` with one line naming
config.json and the key, exit 1: the E2B/E4B variants' per-layer input embeddings and KV sharing (not read yet:
refused, never mis-served), an untied output, another activation or RoPE type, a layer_types list of the wrong
length, and an expert count the tensors disagree with (the tensor named)."""
import json
import shutil
from pathlib import Path

import pytest

from ._builders import assert_clean_failure

GOLDEN = Path(__file__).resolve().parents[1] / "goldens" / "gemma4" / "bf16"


def edited_copy(tmp_path: Path, edit) -> Path:
    d = tmp_path / "ckpt"
    shutil.copytree(GOLDEN, d)
    config = json.loads((d / "config.json").read_text())
    edit(config["text_config"])
    (d / "config.json").write_text(json.dumps(config))
    return d


def setter(key, value):
    return lambda c: c.__setitem__(key, value)


CASES = [
    ("per_layer_inputs", setter("hidden_size_per_layer_input", 256),
     "per-layer input embeddings (hidden_size_per_layer_input: Gemma 4 E2B/E4B) are not read yet"),
    ("kv_sharing", setter("num_kv_shared_layers", 2), "KV sharing (num_kv_shared_layers) is not read yet"),
    ("untied", setter("tie_word_embeddings", False), "'tie_word_embeddings' false is not read yet"),
    ("activation", setter("hidden_activation", "silu"), "hidden_activation 'silu' is not read"),
    ("rope", lambda c: c["rope_parameters"]["full_attention"].__setitem__("rope_type", "yarn"),
     "rope type 'yarn' is not read for gemma4"),
    ("layer_types", lambda c: c["layer_types"].pop(), "'layer_types' must list num_hidden_layers (6) entries"),
    ("experts", setter("num_experts", 16),
     "tensor 'model.language_model.layers.0.router.per_expert_scale' should be 16 float values, is 1x8"),
]



@pytest.mark.parametrize("edit,expected", [pytest.param(e, x, id=i) for i, e, x in CASES])
def test_serve_refuses_what_gemma4_cannot_serve(edit, expected, tmp_path, tensorfold, serving_build):
    d = edited_copy(tmp_path, edit)
    where = d if "tensor '" in expected else d / "config.json"
    assert_clean_failure(tensorfold("serve", d, "--port", "0"), where, expected, command="serve")
