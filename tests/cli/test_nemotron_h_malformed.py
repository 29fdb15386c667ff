"""A malformed nemotron_h checkpoint is refused by `tensorfold serve` with one line naming the file and the
tensor or key, exit 1, never a crash: a layer plan of the wrong length or with an unknown kind, a wrong stack
shape (mlx-community's stacked experts), an expert missing from a Hugging Face checkpoint (one tensor per
expert), an inconsistent router config and a bad time_step_limit."""
import json
import shutil
import struct
from pathlib import Path

import pytest

from ._builders import assert_clean_failure

GOLDENS = Path(__file__).resolve().parents[1] / "goldens" / "nemotron_h"


def edited_copy(tmp_path: Path, variant: str, edit) -> Path:
    d = tmp_path / "ckpt"
    shutil.copytree(GOLDENS / variant, d)
    config = json.loads((d / "config.json").read_text())
    edit(config)
    (d / "config.json").write_text(json.dumps(config))
    return d


def without_tensor(d: Path, name: str) -> None:
    """Rewrites the shard holding `name` without it, and the index without its entry."""
    index = json.loads((d / "model.safetensors.index.json").read_text())
    shard = d / index["weight_map"].pop(name)
    (d / "model.safetensors.index.json").write_text(json.dumps(index))
    raw = shard.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    data = raw[8 + n :]
    header.pop(name)
    blobs, offset = [], 0
    for key in [k for k in header if k != "__metadata__"]:
        begin, end = header[key]["data_offsets"]
        blobs.append(data[begin:end])
        header[key]["data_offsets"] = [offset, offset + end - begin]
        offset += end - begin
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    shard.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def setter(key, value):
    return lambda c: c.__setitem__(key, value)


CASES = [
    ("plan_length", "bf16", setter("num_hidden_layers", 7), "config.json",
     "the layer plan has 6 layers, num_hidden_layers says 7"),
    ("plan_kind", "bf16", setter("layers_block_type", ["linear_attention", "moe", "sliding_attention"]), "config.json",
     "unknown layer kind 'sliding_attention'"),
    ("legacy_pattern_length", "bf16",
     lambda c: (c.pop("layers_block_type"), c.__setitem__("hybrid_override_pattern", "MEM*E"),
                c.__setitem__("num_hidden_layers", 6)), "config.json",
     "the layer plan has 5 layers, num_hidden_layers says 6"),
    ("stack_shape", "mlx-4bit", setter("moe_intermediate_size", 32), "",
     "tensor 'backbone.layers.1.mixer.switch_mlp.fc1.weight' is 8x64x64, expected a stack 8x32x64"),
    ("top_k", "bf16", setter("num_experts_per_tok", 9), "config.json",
     "num_experts_per_tok must be between 1 and the experts"),
    ("time_step_limit", "bf16", setter("time_step_limit", [0.0, "fast"]), "config.json",
     "'time_step_limit' values must be numbers"),
    ("mamba_groups", "bf16", setter("n_groups", 3), "config.json", "mamba_num_heads must be a multiple of n_groups"),
    ("mtp_kind", "bf16", setter("mtp_layers_block_type", ["linear_attention", "moe"]), "config.json",
     "'mtp_layers_block_type' must hold an attention layer and no mamba layer"),
    ("mtp_steps", "bf16", setter("num_nextn_predict_layers", -1), "config.json",
     "'num_nextn_predict_layers' must be an integer >= 0"),
]



@pytest.mark.parametrize("variant,edit,file,expected", [pytest.param(v, e, f, x, id=i) for i, v, e, f, x in CASES])
def test_serve_refuses_a_malformed_nemotron_h_checkpoint(variant, edit, file, expected, tmp_path, tensorfold,
                                                         serving_build):
    d = edited_copy(tmp_path, variant, edit)
    assert_clean_failure(tensorfold("serve", d, "--port", "0"), d / file if file else d, expected, command="serve")


def test_serve_refuses_a_missing_expert(tmp_path, tensorfold, serving_build):
    d = edited_copy(tmp_path, "bf16", lambda c: None)
    without_tensor(d, "backbone.layers.4.mixer.experts.5.down_proj.weight")
    assert_clean_failure(tensorfold("serve", d, "--port", "0"), d,
                         "missing tensor 'backbone.layers.4.mixer.experts.5.down_proj.weight'", command="serve")


def test_serve_refuses_an_mtp_head_without_its_final_norm(tmp_path, tensorfold, serving_build):
    d = edited_copy(tmp_path, "bf16", lambda c: None)
    without_tensor(d, "mtp.layers.1.final_layernorm.weight")
    assert_clean_failure(tensorfold("serve", d, "--port", "0"), d, "missing tensor 'mtp.layers.1.final_layernorm.weight'",
                         command="serve")


def test_serve_refuses_tensor_parallel_ranks(tmp_path, tensorfold, serving_build):
    """Tensor-parallel ranks do not divide the Mamba-2 and expert ops yet: one line, exit 1, not a crash."""
    d = GOLDENS / "bf16"
    assert_clean_failure(tensorfold("serve", d, "--port", "0", "--tp", "2"), d,
                         "needs Mamba-2 and mixture-of-experts layers, which this mlx backend does not run yet "
                         "(they run on --backend mlx without --tp)", command="serve")
