"""`tensorfold info`, `--version` and `models` (pull and update: tests/hub).

`info` output is parsed line by line ("key<spaces>value") and compared field by field; the embedded
GGUF's numbers are also checked against what the `gguf` package reads from the same file.
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
from pathlib import Path

import pytest

from ._builders import (
    assert_clean_failure,
    one,
    parse_info,
    st_bytes,
    st_entry,
    write_hf_dir,
)

SMOLLM2 = {
    "format": "gguf",
    "architecture": "llama",
    "layers": "30",
    "hidden size": "576",
    "ffn size": "1536",
    "heads": "9 / 3 kv",
    "head dim": "64",
    "vocab": "49152",
    "context": "8192",
    "quantization": "Q4_1",
    "tokenizer": "gpt2 (GGUF)",
    "chat template": "yes",
}


def env_with(**overrides) -> dict:
    env = dict(os.environ)
    for k, v in overrides.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = str(v)
    return env


def info_ok(tensorfold, *args, env=None) -> dict[str, list[str]]:
    r = tensorfold("info", *args, env=env)
    assert r.returncode == 0, f"info {args} exited {r.returncode}: {r.stderr}"
    assert r.stderr == "", r.stderr
    return parse_info(r.stdout)


# ---- the embedded GGUF ---------------------------------------------------------------------------


def assert_smollm2(info: dict[str, list[str]], path: Path) -> None:
    assert one(info, "path") == str(path)
    for key, value in SMOLLM2.items():
        assert one(info, key) == value, f"{key}: {one(info, key)!r} != {value!r}"
    m = re.fullmatch(r"(\d+) \((.*)\)", one(info, "tensors"))
    assert m, one(info, "tensors")
    counts = dict((t, int(n)) for t, n in (x.split(" ") for x in m.group(2).split(", ")))
    assert counts == {"F32": 61, "Q4_1": 210, "Q8_0": 1} and int(m.group(1)) == 272
    assert "override" not in info


def test_info_on_the_embedded_gguf(tensorfold, default_model_path):
    assert_smollm2(info_ok(tensorfold, default_model_path), default_model_path)


def test_info_agrees_with_the_gguf_package(tensorfold, default_model_path, default_model_reader):
    """Tensor counts, weight bytes and KV size recomputed from what gguf.GGUFReader reads."""
    reader = default_model_reader
    info = info_ok(tensorfold, default_model_path)
    types: dict[str, int] = {}
    for t in reader.tensors:
        types[t.tensor_type.name] = types.get(t.tensor_type.name, 0) + 1
    total = sum(int(t.n_bytes) for t in reader.tensors)
    assert one(info, "tensors") == f"{len(reader.tensors)} (" + ", ".join(f"{k} {v}" for k, v in sorted(types.items())) + ")"
    assert one(info, "weights").endswith(f"({total} bytes)")

    def field(key):
        return int(reader.fields[key].parts[reader.fields[key].data[0]][0])

    assert one(info, "layers") == str(field("llama.block_count"))
    assert one(info, "context") == str(field("llama.context_length"))
    assert one(info, "vocab") == str(len(reader.fields["tokenizer.ggml.tokens"].data))
    layers, kv = field("llama.block_count"), field("llama.attention.head_count_kv")
    head_dim = field("llama.embedding_length") // field("llama.attention.head_count")
    per_token = 2 * layers * kv * head_dim * 2  # K and V, f16
    assert per_token == 23040
    assert one(info, "kv cache") == "22.5 KiB per token (f16)"


def test_info_without_argument_reads_the_default_model(tensorfold, default_model_path):
    explicit = info_ok(tensorfold, default_model_path)
    implicit = info_ok(tensorfold)
    assert implicit == explicit


def test_info_default_model_follows_tensorfold_home(tensorfold, default_model_path, tmp_path):
    home = tmp_path / "models"
    home.mkdir()
    (home / default_model_path.name).symlink_to(default_model_path)
    info = info_ok(tensorfold, env=env_with(TENSORFOLD_HOME=home))
    assert_smollm2(info, home / default_model_path.name)


def test_info_default_model_missing(tensorfold, tmp_path):
    home = tmp_path / "empty-cache"
    home.mkdir()
    r = tensorfold("info", env=env_with(TENSORFOLD_HOME=home))
    assert_clean_failure(r, home / "SmolLM2-135M-Instruct.Q4_1.gguf", "scripts/fetch_default_model.sh")


def test_info_on_a_vocab_only_gguf(tensorfold, tmp_path):
    """A GGUF with metadata and a vocabulary but no tensors (as GGUFWriter writes it) is readable."""
    import gguf

    path = tmp_path / "vocab-only.gguf"
    w = gguf.GGUFWriter(str(path), arch="llama")
    w.add_block_count(2)
    w.add_context_length(512)
    w.add_embedding_length(64)
    w.add_head_count(4)
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"tok{i}" for i in range(100)])
    w.add_token_types([1] * 100)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    info = info_ok(tensorfold, path)
    assert one(info, "architecture") == "llama"
    assert one(info, "layers") == "2"
    assert one(info, "context") == "512"
    assert one(info, "vocab") == "100"
    assert one(info, "tokenizer") == "gpt2 (GGUF)"
    assert one(info, "tensors").startswith("0 ")
    assert one(info, "weights") == "0 B (0 bytes)"


# ---- checkpoint directories ----------------------------------------------------------------------

TINY_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 256,
    "max_position_embeddings": 1024,
    "torch_dtype": "bfloat16",
}


def tiny_bf16_tensors() -> dict[str, tuple[str, list[int]]]:
    return {
        "model.embed_tokens.weight": ("BF16", [256, 64]),
        "model.layers.0.self_attn.q_proj.weight": ("BF16", [64, 64]),
        "model.layers.0.mlp.down_proj.weight": ("BF16", [64, 128]),
        "model.norm.weight": ("BF16", [64]),
    }


def st_of(tensors: dict[str, tuple[str, list[int]]], metadata=None) -> bytes:
    size = {"BF16": 2, "F16": 2, "F32": 4, "U32": 4}
    header, off = {}, 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, (dtype, shape) in tensors.items():
        n = size[dtype]
        for d in shape:
            n *= d
        header[name] = st_entry(dtype, shape, off, off + n)
        off += n
    return st_bytes(header, bytes(off))


def test_info_on_a_tiny_bf16_checkpoint(tensorfold, make_dir):
    tensors = tiny_bf16_tensors()
    d = write_hf_dir(
        make_dir("tiny"),
        TINY_CONFIG,
        {"model.safetensors": st_of(tensors, {"format": "pt"}), "tokenizer.json": "{}", "chat_template.jinja": "{{ x }}"},
    )
    info = info_ok(tensorfold, d)
    expected = {
        "path": str(d),
        "format": "safetensors",
        "architecture": "llama",
        "name": "LlamaForCausalLM",
        "layers": "2",
        "hidden size": "64",
        "ffn size": "128",
        "heads": "4 / 2 kv",
        "head dim": "16",
        "vocab": "256",
        "context": "1024",
        "quantization": "BF16",
        "tensors": "4 (BF16 4)",
        "tokenizer": "tokenizer.json",
        "chat template": "yes",
        "kv cache": "256 B per token (f16)",  # K and V x 2 layers x 2 kv heads x head dim 16 x 2 bytes
    }
    for key, value in expected.items():
        assert one(info, key) == value, f"{key}: {one(info, key)!r} != {value!r}"
    total = 2 * (256 * 64 + 64 * 64 + 64 * 128 + 64)
    assert one(info, "weights").endswith(f"({total} bytes)")
    assert "override" not in info


def test_info_reads_text_config_and_null_metadata(tensorfold, make_dir):
    """A multimodal config keeps the language model's numbers under text_config; a safetensors header
    with "__metadata__": null (what mx.save_safetensors writes without metadata) is valid."""
    config = {"model_type": "qwen3_5", "text_config": {**TINY_CONFIG, "num_hidden_layers": 5, "hidden_size": 32}}
    d = write_hf_dir(make_dir("mm"), config, {"model.safetensors": st_of(tiny_bf16_tensors(), None)})
    raw = (d / "model.safetensors").read_bytes()
    header = json.loads(raw[8 : 8 + int.from_bytes(raw[:8], "little")])
    header = {"__metadata__": None, **header}
    (d / "model.safetensors").write_bytes(st_bytes(header, raw[8 + int.from_bytes(raw[:8], "little") :]))
    info = info_ok(tensorfold, d)
    assert one(info, "architecture") == "qwen3_5"
    assert one(info, "layers") == "5"
    assert one(info, "hidden size") == "32"
    assert one(info, "tokenizer") == "none found"
    assert one(info, "chat template") == "no"


def mlx_dir(make_dir, quantization: dict):
    tensors = {
        "model.embed_tokens.weight": ("U32", [256, 8]),  # 4-bit: 64 columns in 8 words
        "model.embed_tokens.scales": ("BF16", [256, 1]),
        "model.embed_tokens.biases": ("BF16", [256, 1]),
        "model.layers.0.mlp.down_proj.weight": ("U32", [64, 32]),  # 8-bit: 128 columns in 32 words
        "model.layers.0.mlp.down_proj.scales": ("BF16", [64, 2]),
        "model.layers.0.mlp.down_proj.biases": ("BF16", [64, 2]),
        "lm_head.weight": ("BF16", [256, 64]),
    }
    config = {**TINY_CONFIG, "quantization": quantization, "quantization_config": quantization}
    return write_hf_dir(make_dir("mlx"), config, {"model.safetensors": st_of(tensors, {"format": "mlx"})})


def test_info_on_an_mlx_checkpoint_shows_bits_group_and_overrides(tensorfold, make_dir):
    q = {"group_size": 64, "bits": 4, "model.layers.0.mlp.down_proj": {"group_size": 64, "bits": 8}, "lm_head": False}
    info = info_ok(tensorfold, mlx_dir(make_dir, q))
    assert one(info, "quantization") == "MLX affine 4-bit, group 64"
    assert sorted(info["override"]) == ["lm_head: not quantized", "model.layers.0.mlp.down_proj: 8-bit g64"]
    m = re.fullmatch(r"7 \((.*)\)", one(info, "tensors"))
    assert m and sorted(m.group(1).split(", ")) == ["BF16 5", "U32 2"], one(info, "tensors")


@pytest.mark.parametrize("bits,group", [(2, 32), (3, 128), (5, 64), (6, 32), (8, 128)])
def test_info_on_mlx_checkpoints_of_other_widths(bits, group, tensorfold, make_dir):
    info = info_ok(tensorfold, mlx_dir(make_dir, {"group_size": group, "bits": bits, "mode": "affine"}))
    assert one(info, "quantization") == f"MLX affine {bits}-bit, group {group}"
    assert "override" not in info


def test_info_on_a_foreign_quantization_config(tensorfold, make_dir):
    config = {**TINY_CONFIG, "quantization_config": {"quant_method": "compressed-tensors", "format": "nvfp4"}}
    d = write_hf_dir(make_dir("nvfp4"), config, {"model.safetensors": st_of(tiny_bf16_tensors())})
    assert one(info_ok(tensorfold, d), "quantization") == '"compressed-tensors" (not read yet)'


def test_info_on_a_block_fp8_config(tensorfold, make_dir):
    config = {**TINY_CONFIG, "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}}
    d = write_hf_dir(make_dir("fp8"), config, {"model.safetensors": st_of(tiny_bf16_tensors())})
    want = "FP8 E4M3 in 128x128 blocks (weight_scale_inv), read as float32"
    assert one(info_ok(tensorfold, d), "quantization") == want


def test_info_on_a_sharded_checkpoint(tensorfold, make_dir):
    tensors = tiny_bf16_tensors()
    names = list(tensors)
    first, second = {n: tensors[n] for n in names[:2]}, {n: tensors[n] for n in names[2:]}
    weight_map = {n: "model-00001-of-00002.safetensors" for n in first}
    weight_map.update({n: "model-00002-of-00002.safetensors" for n in second})
    d = write_hf_dir(
        make_dir("sharded"),
        TINY_CONFIG,
        {
            "model-00001-of-00002.safetensors": st_of(first),
            "model-00002-of-00002.safetensors": st_of(second),
            "model.safetensors.index.json": json.dumps({"metadata": {}, "weight_map": weight_map}),
        },
    )
    info = info_ok(tensorfold, d)
    assert one(info, "tensors") == "4 (BF16 4)"


# ---- other commands ------------------------------------------------------------------------------


def cmake_option(build_dir: Path, name: str) -> bool:
    cache = (build_dir / "CMakeCache.txt").read_text()
    m = re.search(rf"^{name}:BOOL=(\w+)$", cache, re.M)
    assert m, f"{name} not in {build_dir}/CMakeCache.txt"
    return m.group(1).upper() in ("ON", "TRUE", "1", "YES")


def test_version_lists_the_compiled_backends(tensorfold, build_dir):
    r = tensorfold("--version")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 2, r.stdout
    assert re.fullmatch(r"tensorfold \d+\.\d+\.\d+", lines[0]), lines[0]
    project_version = re.search(r'^version = "([^"]+)"', (Path(__file__).parents[2] / "pyproject.toml").read_text(), re.M)
    assert lines[0] == f"tensorfold {project_version.group(1)}"
    assert lines[1].startswith("backends: ")
    listed = lines[1][len("backends: ") :]
    expected = [b for b in ("mlx", "cuda") if cmake_option(build_dir, f"TENSORFOLD_{b.upper()}")]
    if not expected:
        assert listed == "none"
        return
    found = re.findall(r"(\w+) \(([^)]*)\)", listed)
    assert ", ".join(f"{n} ({v})" for n, v in found) == listed, f"unparsable backend list {listed!r}"
    assert [n for n, _ in found] == expected
    versions = dict(found)
    if "mlx" in versions:
        import mlx.core as mx

        assert versions["mlx"].split(",")[0] == mx.__version__, versions["mlx"]
    if "cuda" in versions:
        assert re.fullmatch(r"\d+\.\d+", versions["cuda"]), versions["cuda"]


def test_models_prints_a_table(tensorfold, tmp_path):
    r = tensorfold("models", env=env_with(TENSORFOLD_HOME=tmp_path / "cache"))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    header = lines[0].split()
    assert header == ["FAMILY", "MODEL_TYPE", "CHECKPOINT", "FORMAT", "STATUS"]
    starts = [lines[0].index(h) for h in header]
    rows = []
    for line in lines[1:]:
        if not line.strip():
            break
        cells = [line[a:b].strip() for a, b in zip(starts, starts[1:] + [None])]
        assert all(cells), f"empty cell in {line!r}"
        rows.append(cells)
    assert len(rows) >= 2
    assert ["llama", "llama", "SmolLM2-135M-Instruct (embedded default)", "GGUF Q4_1"] == rows[0][:4]
    # The status comes from the families' registry, the list load_model() dispatches on.
    assert rows[0][4] == "serves on MLX and CUDA"
    assert [r[4] for r in rows if r[1] == "qwen3_5"][0].startswith("serves on MLX")
    assert [r[4] for r in rows if r[1] == "nemotron_h"][0].startswith("serves on MLX (not CUDA yet)")
    assert [r[4] for r in rows if r[1] == "gemma4"][0].startswith(
        "serves Hugging Face safetensors and mlx-community quants on the MLX CPU path")
    assert [r[4] for r in rows if r[1] == "glm5_next"][0].startswith(
        "serves Hugging Face bf16, block-FP8 and MLX affine safetensors on MLX")
    assert [r[4] for r in rows if r[1] == "deepseek_v4"][0].startswith(
        "serves Hugging Face bf16, block-FP8 + MXFP4-expert and MLX affine safetensors (transformers' saved names and "
        "the release's)")
    assert f"model cache: {tmp_path / 'cache'}" in lines


def test_no_subcommand_is_a_usage_error(tensorfold):
    r = tensorfold()
    assert r.returncode not in (0, 1) and r.returncode > 0, r.returncode
    assert "serve" in (r.stdout + r.stderr) or "subcommand" in (r.stdout + r.stderr).lower()


def test_info_counts_nemotron_h_layers_state_and_experts(tensorfold):
    """A Nemotron-H plan (layers_block_type, no num_hidden_layers) "MEM*E-": 6 layers, 1 attends, 2 Mamba-2 layers
    of 4 heads x 16 with ssm_state 32 in 2 groups and conv 4 (float32: 64*32 + 3*(64 + 2*2*32) = 2624 values
    each), 2 expert layers of 8 routed experts (up and down, 64 x 64 each) with top 2."""
    golden = Path(__file__).resolve().parents[1] / "goldens" / "nemotron_h" / "bf16"
    info = info_ok(tensorfold, golden)
    assert info["architecture"] == ["nemotron_h"]
    assert info["layers"] == ["6"]
    assert info["kv cache"] == ["128 B per token (f16; 1 of 6 layers attend)"]
    assert info["recurrent"] == [f"{2 * 2624 * 4 / 1024:.1f} KiB per stream (float32; 2 linear-attention layers)"]
    assert info["experts"] == ["8 routed (top 2 per token) + 1 shared, in 2 layers; routed-expert parameters "
                               f"{2 * 8 * 2 * 64 * 64}, active {2 * 2 * 2 * 64 * 64} per token"]
    assert info["family"][0].startswith("nemotron_h: serves on MLX")


@pytest.mark.parametrize("variant", ["bf16", "mlx-4bit"])
def test_info_counts_gemma4_full_layers_per_token_and_windows_per_stream(tensorfold, variant):
    """The tiny gemma4 ([S, S, F, S, S, F], window 8): its 2 full layers of 1 KV head x 32 grow with the context
    (f16 K and V: 2 * 2 * 2 * 32 = 256 B a token), its 4 sliding layers of 2 KV heads x 16 hold only their window
    (2 * 2 * 4 * 2 * 16 * 8 = 4096 B a stream)."""
    golden = Path(__file__).resolve().parents[1] / "goldens" / "gemma4" / variant
    info = info_ok(tensorfold, golden)
    assert info["architecture"] == ["gemma4"]
    assert info["kv cache"] == ["256 B per token (f16; the 2 full-attention layers) + 4.0 KiB per stream (the 4 "
                                "sliding-window layers' last 8 positions)"]
    assert info["memory"][0].endswith("-token KV cache (full layers) + the sliding windows")


@pytest.mark.parametrize("variant", ["bf16", "fp8-mxfp4", "mlx-4bit"])
def test_info_counts_deepseek_v4_entries_per_token_and_recent_rows_per_stream(tensorfold, variant):
    """The tiny deepseek_v4 ([sliding, CSA 4, HCA 8, CSA 4], head 32, index head 16, window 8): per token, each
    compressed layer's entries compacted (CSA: (32 + 16) / 4 = 12 floats, HCA: 32 / 8 = 4: 2 x 48 + 16 = 112 B);
    per stream, each layer's recent rows ((reach + a 512-row chunk) x its row width, float32)."""
    golden = Path(__file__).resolve().parents[1] / "goldens" / "deepseek_v4" / variant
    info = info_ok(tensorfold, golden)
    assert info["architecture"] == ["deepseek_v4"]
    # Recent rows: sliding (7 + 512) x 32, 2 x CSA (7 + 512) x (32 + 2 x 64 + 32 + 5 x 16), HCA (8 + 512) x
    # (32 + 2 x 32 + 32) floats: 1,462,016 B.
    assert info["kv cache"] == ["112 B per token (float32 compressed entries; + 1.4 MiB per stream of recent rows)"]
    assert info["memory"][0].endswith("-token KV cache + the recent rows")


def _safetensors_parameters(folder):
    """(all, mtp.*) parameter counts from the safetensors headers: a U32 `.weight` with `.scales` beside it packs
    32 / bits values a word (bits from config.json's quantization: 4 by default, per-module overrides); its scales
    and biases are not parameters."""
    config = json.loads((folder / "config.json").read_text())
    quant = config.get("quantization") or {}
    header = {}
    for f in sorted(folder.glob("*.safetensors")):
        raw = f.read_bytes()
        size = struct.unpack("<Q", raw[:8])[0]
        header.update({k: v for k, v in json.loads(raw[8:8 + size]).items() if k != "__metadata__"})
    total = mtp = 0
    for name, t in header.items():
        module, _, leaf = name.rpartition(".")
        packed = header.get(module + ".weight", {}).get("dtype") == "U32" and module + ".scales" in header
        if packed and leaf in ("scales", "biases"):
            continue
        n = 1
        for d in t["shape"]:
            n *= d
        if packed and leaf == "weight":
            spec = quant.get(module, {})
            n = n * 32 // (spec.get("bits", quant.get("bits", 4)) if isinstance(spec, dict) else quant.get("bits", 4))
        total += n
        mtp += n if name.startswith("mtp.") else 0
    return total, mtp


@pytest.mark.parametrize("variant", ["bf16", "mlx-4bit"])
def test_info_counts_nemotron_h_parameters_total_mtp_and_active(tensorfold, variant):
    """Total parameters from the files (MLX codes counted as values), the MTP head's apart (bf16 has one), and
    the active ones: all but the MTP head and the routed experts, plus top-2 of each expert layer's 8."""
    golden = Path(__file__).resolve().parents[1] / "goldens" / "nemotron_h" / variant
    total, mtp = _safetensors_parameters(golden)
    assert (mtp > 0) == (variant == "bf16")
    routed, active_routed = 2 * 8 * 2 * 64 * 64, 2 * 2 * 2 * 64 * 64
    want = str(total)
    if mtp:
        want += f" ({mtp} of them the MTP head's, run only to draft)"
    want += f"; active per token {total - mtp - routed + active_routed} (routed experts: top-k of each layer's)"
    assert info_ok(tensorfold, golden)["parameters"] == [want]


def test_info_counts_the_glm5_next_mtp_layer_apart(tensorfold):
    """GLM-5.3's MTP layer is layers.{num_hidden_layers}.* (flat: model.layers.5.*): its parameters are the MTP
    head's, apart from the body's; the bf16 variant has none."""
    root = Path(__file__).resolve().parents[1] / "goldens" / "glm5_next"
    raw = (root / "flat" / "model.safetensors").read_bytes()
    header = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
    mtp = sum(math.prod(t["shape"]) for k, t in header.items() if k.startswith("model.layers.5."))
    assert mtp > 0
    assert f"({mtp} of them the MTP head's, run only to draft)" in info_ok(tensorfold, root / "flat")["parameters"][0]
    assert "MTP head" not in info_ok(tensorfold, root / "bf16")["parameters"][0]


@pytest.mark.parametrize("quant", ["F16", "Q8_0", "Q4_K_M"])
def test_info_reads_a_qwen35_gguf_as_its_safetensors_checkpoint(tensorfold, quant):
    """The tiny qwen3_5 checkpoint as llama.cpp writes it (tests/goldens/qwen3_5/gguf): the arch `qwen35` from the
    header, served by the qwen3_5 family; block_count 9 less the MTP head's nextn layer, and the layer plan from
    attention.recurrent_layers with the Gated DeltaNet state from the ssm.* keys, as the safetensors checkpoint's
    config.json gives them; the MTP head's parameters (blk.8.*) as many as its mtp.* ones."""
    goldens = Path(__file__).resolve().parents[1] / "goldens" / "qwen3_5"
    st = info_ok(tensorfold, goldens / "bf16-mtp")
    info = info_ok(tensorfold, goldens / "gguf" / f"qwen3_5-tiny-{quant}.gguf")
    assert info["format"] == ["gguf"] and info["architecture"] == ["qwen35"]
    assert info["family"][0].startswith("qwen3_5: serves llama.cpp's GGUF")
    for key in ("layers", "hidden size", "ffn size", "heads", "head dim", "vocab", "context", "kv cache", "recurrent",
                "chat template"):
        assert info[key] == st[key], key
    assert info["kv cache"] == ["512 B per token (f16; 2 of 8 layers attend)"]
    # The tiny rows of 128 are not whole Q4_K blocks: llama-quantize stored most of the Q4_K_M mix as Q5_0.
    assert info["quantization"] == [{"Q4_K_M": "Q5_0 (file type Q4_K_M)"}.get(quant, quant)]
    mtp = re.search(r"\((\d+) of them the MTP head's", one(info, "parameters"))
    assert mtp and mtp.group(1) == re.search(r"\((\d+) of them the MTP head's", one(st, "parameters")).group(1)


def test_info_shows_a_vision_tower(tensorfold):
    """A checkpoint with a vision tower (tests/goldens/qwen3_5/vision) says so, with the tower's parameters (its
    model.visual.* values, counted from the safetensors header); a text-only one (mlx-4bit) has no such line."""
    goldens = Path(__file__).resolve().parents[1] / "goldens" / "qwen3_5"
    raw = (goldens / "vision" / "model.safetensors").read_bytes()
    header = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
    visual = 0
    for name, t in header.items():
        if name.startswith("model.visual."):
            n = 1
            for d in t["shape"]:
                n *= d
            visual += n
    assert visual > 0
    info = info_ok(tensorfold, goldens / "vision")
    assert info["vision tower"] == [f"{visual} parameters (model.visual.*; images with serve --vision, docs/vision.md)"]
    assert "vision tower" not in info_ok(tensorfold, goldens / "mlx-4bit")
