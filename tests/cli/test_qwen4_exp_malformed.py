"""A qwen4_exp checkpoint the family cannot serve correctly is refused by `tensorfold serve` with one line naming
config.json and the key (or the checkpoint and the tensor), exit 1: an output gate or activation not read yet, an
indexer of more than one key head or a budget of part blocks, n-gram embeddings on an attention layer or without
an EOS to restart their windows, a single residual stream, a layer_types list of the wrong length, and n-gram tables
the config's sizes disagree with."""
import json
import shutil
from pathlib import Path

import pytest

from ._builders import assert_clean_failure

GOLDEN = Path(__file__).resolve().parents[1] / "goldens" / "qwen4_exp" / "bf16"


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
    ("output_gate", setter("output_gate_type", "relu"), "output_gate_type 'relu' is not read (silu or sigmoid)"),
    ("activation", setter("hidden_act", "gelu"), "hidden_act 'gelu' is not read (silu is)"),
    ("index_kv_heads", setter("indexer_kv_heads", 2), "'indexer_kv_heads' must be 1 (one index key head)"),
    ("budget", setter("indexer_budget", 6), "'indexer_budget' must be a multiple of indexer_compress_ratio"),
    ("ple_on_attention", setter("ple_layer_ids", [2]), "'ple_layer_ids' may name linear_attention layers only"),
    ("no_eos", setter("eos_token_id", None), "'eos_token_id' must be a token id: the n-gram windows restart after it"),
    ("one_stream", setter("hc_count", 1), "'hc_count' must be at least 2"),
    ("layer_types", lambda c: c["layer_types"].pop(), "'layer_types' must list num_hidden_layers (4) entries"),
    ("table_rows", setter("ngram_vocab_size_base", 200),
     "the n-gram table 'model.language_model.layers.0.ple.ple_embedding.ngram_embedding.shard_0.weight' holds 256 "
     "rows, the config gives"),
]


@pytest.mark.parametrize("edit,expected", [pytest.param(e, x, id=i) for i, e, x in CASES])
def test_serve_refuses_what_qwen4_exp_cannot_serve(edit, expected, tmp_path, tensorfold, serving_build):
    d = edited_copy(tmp_path, edit)
    where = d if "tensor '" in expected or "n-gram table" in expected else d / "config.json"
    assert_clean_failure(tensorfold("serve", d, "--port", "0"), where, expected, command="serve")
