"""Malformed checkpoints: `tensorfold info` must refuse each one cleanly. For every case: exit 1, empty
stdout, exactly ONE stderr line "tensorfold info: <file>: <problem>" that names the offending file, a
problem holding a per-case substring (so the right check is proven to fire), and no crash (no signal,
no 'terminate called').

Every file is built here, byte by byte: GGUF files, safetensors files inside a checkpoint directory
with a valid config.json, sharded-index problems, and malformed MLX quantization blocks in config.json.
"""

from __future__ import annotations

import json
import struct

import pytest

from ._builders import (
    ARRAY,
    BOOL,
    GGML_F32,
    GGML_Q4_0,
    LLAMA_KVS,
    STRING,
    U8,
    U32,
    U64,
    assert_clean_failure,
    gguf_bytes,
    kv,
    kv_array,
    kv_str,
    kv_u32,
    st_bytes,
    st_entry,
    tensor_info,
    valid_gguf,
    write_hf_dir,
)

# ---- GGUF ----------------------------------------------------------------------------------------

ONE_F32 = [tensor_info("t", [8], GGML_F32, 0)]


def _data_section_past_eof() -> bytes:
    body = gguf_bytes(LLAMA_KVS, ONE_F32)
    assert len(body) % 32 not in (0, 31), "the case needs a header that does not end on the alignment"
    return body + b"\0"  # part of the padding, none of the data


def _truncated_in_tensor_infos() -> bytes:
    full = gguf_bytes(LLAMA_KVS, ONE_F32, bytes(32))
    return full[: len(gguf_bytes(LLAMA_KVS, [])) + 5]  # inside the length of the tensor's name


GGUF_CASES = [
    ("empty", b"", "empty file"),
    ("three-bytes", b"GGU", "wrong magic"),
    ("wrong-magic", b"GGML" + valid_gguf()[4:], "wrong magic"),
    ("version-1", gguf_bytes(version=1), "unsupported GGUF version 1"),
    ("version-4", gguf_bytes(version=4), "unsupported GGUF version 4"),
    ("big-endian", b"GGUF" + struct.pack(">IQQ", 3, 0, 1), "big-endian"),
    ("truncated-in-version", b"GGUF\x03\x00", "truncated: version"),
    ("truncated-in-tensor-count", b"GGUF" + struct.pack("<I", 3) + b"\0" * 5, "truncated: tensor count"),
    ("truncated-in-kv-count", b"GGUF" + struct.pack("<IQ", 3, 0) + b"\1", "truncated: metadata count"),
    ("truncated-in-key", gguf_bytes([kv_u32("general.block_count", 1)])[:24 + 8 + 5],
     "truncated: metadata key needs 19 bytes"),
    ("truncated-header-claims-4-kvs", gguf_bytes()[:30], "absurd metadata count 4 for a file of 30 bytes (truncated"),
    ("truncated-in-value", gguf_bytes([kv_u32("x", 1)])[:-2], "truncated: u32 value"),
    ("truncated-in-tensor-infos", _truncated_in_tensor_infos(), "truncated: tensor name"),
    ("truncated-in-data", valid_gguf()[:-1], "runs past the end of the file"),
    ("data-section-past-eof", _data_section_past_eof(), "data section would start past the end"),
    ("absurd-kv-count", gguf_bytes(n_kv=1 << 60), "absurd metadata count 1152921504606846976"),
    ("absurd-tensor-count", gguf_bytes(n_tensors=1 << 60), "absurd tensor count 1152921504606846976"),
    ("key-too-long", gguf_bytes([kv("k" * 70000, U32, b"\0" * 4)]), "metadata key length 70000 exceeds 65535"),
    ("huge-string-length", gguf_bytes([kv("s", STRING, struct.pack("<Q", 1 << 40) + b"abc")]),
     "truncated: string value needs 1099511627776 bytes"),
    ("unknown-value-type", gguf_bytes([kv("x", 13, b"\0" * 8)]), "metadata key 'x' has unknown value type 13"),
    ("unknown-array-element-type", gguf_bytes([kv_array("x", 99, 1, b"\0" * 8)]), "unknown array element type 99"),
    ("absurd-array-length", gguf_bytes([kv_array("x", U32, 1 << 62, b"\0" * 16)]),
     "array of 4611686018427387904 u32 values cannot fit"),
    ("arrays-nested-too-deep",
     gguf_bytes([kv("x", ARRAY, struct.pack("<IQ", ARRAY, 1) * 5 + struct.pack("<IQ", U8, 0))]),
     "arrays nested deeper than 4"),
    ("bool-not-0-or-1", gguf_bytes([kv("b", BOOL, b"\x02")]), "bool value 2 is neither 0 nor 1"),
    ("duplicate-key", gguf_bytes([*LLAMA_KVS, kv_str("general.architecture", "gpt2")]),
     "duplicate metadata key 'general.architecture'"),
    ("alignment-not-power-of-two", gguf_bytes([*LLAMA_KVS, kv_u32("general.alignment", 48)], ONE_F32, bytes(32)),
     "general.alignment must be a u32 power of two"),
    ("alignment-zero", gguf_bytes([*LLAMA_KVS, kv_u32("general.alignment", 0)], ONE_F32, bytes(32)),
     "general.alignment must be a u32 power of two"),
    ("alignment-wrong-type", gguf_bytes([*LLAMA_KVS, kv("general.alignment", U64, struct.pack("<Q", 32))]),
     "general.alignment must be a u32 power of two"),
    ("tensor-name-too-long", gguf_bytes(LLAMA_KVS, [tensor_info("n" * 65, [8], GGML_F32, 0)], bytes(32)),
     "tensor name length 65 exceeds 64"),
    ("duplicate-tensor-name",
     gguf_bytes(LLAMA_KVS, [tensor_info("t", [8], GGML_F32, 0), tensor_info("t", [8], GGML_F32, 32)], bytes(64)),
     "duplicate tensor name 't'"),
    ("zero-dimensions", gguf_bytes(LLAMA_KVS, [tensor_info("t", [], GGML_F32, 0)], bytes(32)),
     "tensor 't' has 0 dimensions"),
    ("five-dimensions", gguf_bytes(LLAMA_KVS, [tensor_info("t", [1, 1, 1, 1, 1], GGML_F32, 0)], bytes(32)),
     "tensor 't' has 5 dimensions"),
    ("absurd-shape", gguf_bytes(LLAMA_KVS, [tensor_info("t", [1 << 40, 1 << 40], GGML_F32, 0)], bytes(32)),
     "tensor 't' has an absurd shape"),
    ("byte-size-overflow", gguf_bytes(LLAMA_KVS, [tensor_info("t", [1 << 31, 1 << 31], GGML_F32, 0)], bytes(32)),
     "tensor 't' has an absurd byte size"),  # 2^62 elements x 4 bytes wraps to 0
    ("unknown-ggml-type", gguf_bytes(LLAMA_KVS, [tensor_info("t", [32], 4, 0)], bytes(32)),
     "tensor 't' has unknown ggml type 4"),
    ("row-not-multiple-of-block", gguf_bytes(LLAMA_KVS, [tensor_info("t", [33, 2], GGML_Q4_0, 0)], bytes(64)),
     "row length 33 is not a multiple of the Q4_0 block of 32"),
    ("misaligned-offset",
     gguf_bytes(LLAMA_KVS, [tensor_info("a", [8], GGML_F32, 0), tensor_info("b", [8], GGML_F32, 40)], bytes(96)),
     "tensor 'b' offset 40 is not aligned to 32"),
    ("offset-out-of-range", gguf_bytes(LLAMA_KVS, [tensor_info("t", [8], GGML_F32, 1 << 20)], bytes(32)),
     "tensor 't' (32 bytes at data offset 1048576) runs past the end of the file"),
    ("overlapping-tensors",
     gguf_bytes(LLAMA_KVS, [tensor_info("a", [16], GGML_F32, 0), tensor_info("b", [8], GGML_F32, 32)], bytes(64)),
     "tensor 'b' overlaps tensor 'a'"),
    ("no-architecture", gguf_bytes([kv_u32("llama.block_count", 2)], ONE_F32, bytes(32)),
     "GGUF has no general.architecture"),
    ("newline-in-key", gguf_bytes([kv("bad\nkey", 13, b"")]), "metadata key 'bad\\x0akey' has unknown value type 13"),
    ("newline-in-tensor-name", gguf_bytes(LLAMA_KVS, [tensor_info("a\nb", [8], 4, 0)], bytes(32)),
     "tensor 'a\\x0ab' has unknown ggml type 4"),
]


@pytest.mark.parametrize("data,expected", [pytest.param(d, e, id=i) for i, d, e in GGUF_CASES])
def test_malformed_gguf(data, expected, tmp_path, tensorfold):
    path = tmp_path / "bad.gguf"
    path.write_bytes(data)
    assert_clean_failure(tensorfold("info", path), path, expected)


def test_gguf_case_count():
    assert len(GGUF_CASES) >= 12 and len({c[0] for c in GGUF_CASES}) == len(GGUF_CASES)


def test_valid_gguf_base_is_accepted(tmp_path, tensorfold):
    """The base that most cases above break is itself fine, so each case's failure is its own defect."""
    path = tmp_path / "good.gguf"
    path.write_bytes(valid_gguf())
    r = tensorfold("info", path)
    assert r.returncode == 0, r.stderr
    assert "tensors         2 (F32 1, Q8_0 1)" in r.stdout


def test_gguf_magic_without_extension_and_neither(tmp_path, tensorfold):
    """A GGUF is recognised by magic without the .gguf name; a file that is neither format is refused."""
    good = tmp_path / "model.bin"
    good.write_bytes(valid_gguf())
    assert tensorfold("info", good).returncode == 0
    other = tmp_path / "notes.txt"
    other.write_bytes(b"hello, world\n")
    assert_clean_failure(tensorfold("info", other), other, "not a GGUF file or a checkpoint directory")
    missing = tmp_path / "missing.gguf"
    assert_clean_failure(tensorfold("info", missing), missing, "no such file or directory")


def test_every_truncation_of_a_valid_gguf(tmp_path, tensorfold):
    """Cut a valid file at every byte: each prefix fails cleanly and says it is truncated."""
    full = valid_gguf()
    path = tmp_path / "cut.gguf"
    for n in range(len(full)):
        path.write_bytes(full[:n])
        expected = "empty file" if n == 0 else "wrong magic" if n < 4 else "truncated"
        assert_clean_failure(tensorfold("info", path), path, expected)


# Files far larger than memory, made sparse so they cost nothing on disk. Their counts and lengths are
# plausible for their size, so only a limit on the parser's memory stops them (these used to die in
# std::bad_alloc: 'terminate called').
SPARSE_SIZE = 64 << 30
SPARSE_CASES = [
    ("kv-count-for-64GiB", gguf_bytes([], n_kv=SPARSE_SIZE // 14), "duplicate metadata key ''"),
    ("tensor-count-for-64GiB", gguf_bytes([], n_tensors=SPARSE_SIZE // 25), "tensor '' has 0 dimensions"),
    ("u8-array-of-60GiB", gguf_bytes([kv_array("x", U8, 60 << 30, b"")], n_kv=1), "past its 1 GiB memory limit"),
    ("string-array-of-4G", gguf_bytes([kv_array("x", STRING, 4 << 30, b"")], n_kv=1), "past its 1 GiB memory limit"),
    ("string-of-60GiB", gguf_bytes([kv("s", STRING, struct.pack("<Q", 60 << 30))], n_kv=1),
     "string value of 64424509440 bytes would take the parsed header past its 1 GiB memory limit"),
]


@pytest.mark.parametrize("head,expected", [pytest.param(h, e, id=i) for i, h, e in SPARSE_CASES])
def test_huge_sparse_gguf(head, expected, tmp_path, tensorfold):
    path = tmp_path / "huge.gguf"
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(SPARSE_SIZE)
    assert_clean_failure(tensorfold("info", path), path, expected)


# ---- safetensors (in a checkpoint directory with a valid config.json) -----------------------------

CONFIG = {"model_type": "llama", "num_hidden_layers": 1, "hidden_size": 8, "num_attention_heads": 2}
W = st_entry("F32", [2], 0, 8)  # an 8-byte tensor at the start of the buffer


def _st_cases():
    e = st_entry
    return [
        ("empty", b"", "empty file (not safetensors)"),
        ("shorter-than-8-bytes", b"\x10\0\0\0\0", "truncated: shorter than the 8-byte header length"),
        ("header-length-past-eof", st_bytes({"w": W}, bytes(8), length=1000), "truncated: header length 1000 but only"),
        ("header-length-over-100MB", st_bytes("{}", length=100_000_001), "header length 100000001 exceeds 100 MB"),
        ("header-length-zero", st_bytes(b"", bytes(8)), "header does not start with '{'"),
        ("not-a-brace", st_bytes(b"  {}"), "header does not start with '{'"),
        ("non-object-json", st_bytes(b"[1, 2, 3]"), "header does not start with '{'"),
        ("invalid-json", st_bytes(b'{"w": {"dtype": "F32",'), "header is not valid JSON"),
        ("entry-not-object", st_bytes({"w": 5}), "tensor 'w': entry is not a JSON object"),
        ("missing-dtype", st_bytes({"w": {"shape": [2], "data_offsets": [0, 8]}}, bytes(8)),
         "tensor 'w': missing or non-string 'dtype'"),
        ("unknown-dtype", st_bytes({"w": e("F12", [2], 0, 8)}, bytes(8)), "tensor 'w': unknown dtype 'F12'"),
        ("shape-offset-mismatch", st_bytes({"w": e("F32", [3], 0, 8)}, bytes(8)),
         "shape x dtype size is 12 bytes but data_offsets span 8"),
        ("end-before-begin", st_bytes({"w": e("F32", [0], 8, 4)}, bytes(8)), "data_offsets end < begin"),
        ("offsets-past-buffer", st_bytes({"w": e("F32", [4], 0, 16)}, bytes(8)),
         "tensor 'w' ends at byte 16 past the data buffer (8 bytes)"),
        ("overlapping", st_bytes({"a": e("F32", [2], 0, 8), "b": e("F32", [2], 4, 12)}, bytes(12)),
         "tensor 'b' overlaps the tensor before it"),
        ("gap", st_bytes({"a": e("F32", [1], 0, 4), "b": e("F32", [1], 8, 12)}, bytes(12)),
         "gap in the data buffer before tensor 'b'"),
        ("leading-gap", st_bytes({"a": e("F32", [1], 4, 8)}, bytes(8)), "gap in the data buffer before tensor 'a'"),
        ("trailing-bytes", st_bytes({"w": W}, bytes(12)), "data buffer has 4 trailing bytes that no tensor covers"),
        ("negative-shape", st_bytes({"w": e("F32", [-2], 0, 8)}, bytes(8)),
         "shape holds a value that is not a non-negative integer"),
        ("float-shape", st_bytes({"w": e("F32", [2.0], 0, 8)}, bytes(8)),
         "shape holds a value that is not a non-negative integer"),
        ("shape-not-array", st_bytes({"w": {"dtype": "F32", "shape": 2, "data_offsets": [0, 8]}}, bytes(8)),
         "missing or non-array 'shape'"),
        ("too-many-dimensions", st_bytes({"w": e("F32", [1] * 17, 0, 4)}, bytes(4)), "shape has 17 dimensions"),
        ("element-count-overflow", st_bytes({"w": e("U8", [1 << 32, 1 << 32, 1 << 32], 0, 8)}, bytes(8)),
         "element count overflows"),
        ("data-offsets-arity", st_bytes({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0]}}, bytes(8)),
         "'data_offsets' is not [begin, end]"),
        ("negative-offset", st_bytes({"w": e("F32", [2], -8, 0)}, bytes(8)),
         "'data_offsets' holds a value that is not a non-negative integer"),
        ("sub-byte-partial", st_bytes({"w": e("F4", [3], 0, 2)}, bytes(2)),
         "packed sub-byte tensor does not fill whole bytes"),
        ("metadata-not-object", st_bytes({"__metadata__": ["format", "mlx"], "w": W}, bytes(8)),
         "__metadata__ is not an object"),
        ("metadata-value-not-string", st_bytes({"__metadata__": {"format": 1}, "w": W}, bytes(8)),
         "__metadata__ value of 'format' is not a string"),
        ("duplicate-tensor-name",
         st_bytes('{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
                  '"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}', bytes(8)),
         "header names 'w' more than once"),
        ("newline-in-tensor-name", st_bytes({"a\nb": e("F12", [2], 0, 8)}, bytes(8)),
         "tensor 'a\\x0ab': unknown dtype 'F12'"),
    ]


ST_CASES = _st_cases()


@pytest.mark.parametrize("data,expected", [pytest.param(d, x, id=i) for i, d, x in ST_CASES])
def test_malformed_safetensors(data, expected, make_dir, tensorfold):
    d = write_hf_dir(make_dir("ck"), CONFIG, {"model.safetensors": data})
    assert_clean_failure(tensorfold("info", d), d / "model.safetensors", expected)


def test_safetensors_case_count():
    assert len(ST_CASES) >= 12 and len({c[0] for c in ST_CASES}) == len(ST_CASES)


def test_valid_safetensors_base_is_accepted(make_dir, tensorfold):
    two = {"a": st_entry("F32", [1], 8, 12), "w": W}
    d = write_hf_dir(make_dir("ck"), CONFIG, {"model.safetensors": st_bytes(two, bytes(12))})
    d2 = write_hf_dir(make_dir("ck"), CONFIG, {"model.safetensors": st_bytes({"w": W}, bytes(8))})
    for ck in (d, d2):
        r = tensorfold("info", ck)
        assert r.returncode == 0, r.stderr


def test_every_truncation_of_a_valid_safetensors(make_dir, tensorfold):
    full = st_bytes({"__metadata__": {"format": "pt"}, "a": st_entry("BF16", [2, 2], 0, 8), "w": st_entry("F32", [2], 8, 16)},
                    bytes(range(16)))
    d = write_hf_dir(make_dir("ck"), CONFIG, {})
    path = d / "model.safetensors"
    for n in range(len(full)):
        path.write_bytes(full[:n])
        expected = ("empty file" if n == 0 else "truncated: shorter" if n < 8
                    else "truncated: header length" if n < len(full) - 16 else "past the data buffer")
        assert_clean_failure(tensorfold("info", d), path, expected)


# ---- checkpoint directories: config.json, shard index ---------------------------------------------

GOOD_ST = st_bytes({"w": W}, bytes(8))


def _shard(names: list[str]) -> bytes:
    return st_bytes({n: st_entry("F32", [2], 8 * i, 8 * i + 8) for i, n in enumerate(names)}, bytes(8 * len(names)))


def _index(weight_map) -> str:
    return json.dumps({"metadata": {"total_size": 8}, "weight_map": weight_map})


DIR_CASES = [
    # (id, config, files, file named in the message (relative to the dir; "" = the dir), expected)
    ("no-config", None, {"model.safetensors": GOOD_ST}, "", "no config.json (not a checkpoint directory)"),
    ("config-not-json", "{model_type: llama}", {"model.safetensors": GOOD_ST}, "config.json", "not valid JSON"),
    ("config-not-object", "[1, 2]", {"model.safetensors": GOOD_ST}, "config.json", "is not a JSON object"),
    ("no-weights", CONFIG, {}, "", "no model.safetensors or model.safetensors.index.json"),
    ("shard-outside-dir", CONFIG, {"model.safetensors.index.json": _index({"w": "../model.safetensors"})},
     "model.safetensors.index.json", "weight_map names shard '../model.safetensors' outside the directory"),
    ("shard-absolute-path", CONFIG, {"model.safetensors.index.json": _index({"w": "/etc/passwd"})},
     "model.safetensors.index.json", "weight_map names shard '/etc/passwd' outside the directory"),
    ("shard-missing", CONFIG, {"model.safetensors.index.json": _index({"w": "model-00001-of-00002.safetensors"})},
     "model-00001-of-00002.safetensors", "cannot open: No such file or directory"),
    ("shard-lacks-tensor", CONFIG,
     {"model.safetensors.index.json": _index({"w": "s1.safetensors", "v": "s1.safetensors"}), "s1.safetensors": _shard(["w"])},
     "model.safetensors.index.json", "lists tensor 'v' in s1.safetensors, which lacks it"),
    ("tensor-in-two-shards", CONFIG,
     {"model.safetensors.index.json": _index({"a": "s1.safetensors", "b": "s2.safetensors"}),
      "s1.safetensors": _shard(["a"]), "s2.safetensors": _shard(["b", "a"])},
     "s2.safetensors", "tensor 'a' also appears in another shard"),
    ("broken-shard", CONFIG,
     {"model.safetensors.index.json": _index({"w": "s1.safetensors", "v": "s2.safetensors"}),
      "s1.safetensors": _shard(["w"]), "s2.safetensors": st_bytes({"v": st_entry("F32", [2], 0, 8)}, bytes(4))},
     "s2.safetensors", "tensor 'v' ends at byte 8 past the data buffer (4 bytes)"),
    ("index-not-json", CONFIG, {"model.safetensors.index.json": "{"}, "model.safetensors.index.json", "not valid JSON"),
    ("index-without-weight-map", CONFIG, {"model.safetensors.index.json": '{"metadata": {}}'},
     "model.safetensors.index.json", "has no weight_map object"),
    ("index-empty-weight-map", CONFIG, {"model.safetensors.index.json": _index({})},
     "model.safetensors.index.json", "has an empty weight_map"),
    ("index-value-not-string", CONFIG, {"model.safetensors.index.json": _index({"w": 1})},
     "model.safetensors.index.json", "weight_map value of 'w' is not a string"),
    ("newline-in-shard-name", CONFIG, {"model.safetensors.index.json": _index({"w": "a\nb.safetensors"})},
     "a\\x0ab.safetensors", "cannot open"),
]


@pytest.mark.parametrize("config,files,named,expected", [pytest.param(*c[1:], id=c[0]) for c in DIR_CASES])
def test_malformed_checkpoint_dir(config, files, named, expected, make_dir, tensorfold):
    d = write_hf_dir(make_dir("ck"), config, files)
    named_file = f"{d}/{named}" if named else str(d)
    assert_clean_failure(tensorfold("info", d), named_file, expected)


def test_safetensors_path_is_a_directory(make_dir, tensorfold):
    d = write_hf_dir(make_dir("ck"), CONFIG, {})
    (d / "model.safetensors").mkdir()
    assert_clean_failure(tensorfold("info", d), d / "model.safetensors", "not a regular file")


# ---- MLX quantization blocks in config.json -------------------------------------------------------

# A valid MLX-style weight set (4-bit, group 64, [2, 64] -> uint32 [2, 8], bf16 scales/biases [2, 1]).
MLX_ST = st_bytes(
    {
        "__metadata__": {"format": "mlx"},
        "model.layers.0.mlp.down_proj.weight": st_entry("U32", [2, 8], 0, 64),
        "model.layers.0.mlp.down_proj.scales": st_entry("BF16", [2, 1], 64, 68),
        "model.layers.0.mlp.down_proj.biases": st_entry("BF16", [2, 1], 68, 72),
    },
    bytes(72),
)


def _q(**quantization) -> dict:
    return {**CONFIG, "quantization": quantization}


MLX_CASES = [
    ("bits-7", _q(group_size=64, bits=7), "quantization: unsupported affine bits=7 group_size=64"),
    ("bits-1", _q(group_size=64, bits=1), "quantization: unsupported affine bits=1 group_size=64"),
    ("group-48", _q(group_size=48, bits=4), "quantization: unsupported affine bits=4 group_size=48"),
    ("group-negative", _q(group_size=-64, bits=4), "quantization: unsupported affine group_size=-64"),
    ("bits-string", _q(group_size=64, bits="4"), "quantization: bits is not an integer"),
    ("bits-float", _q(group_size=64, bits=4.5), "quantization: bits is not an integer"),
    ("group-float", _q(group_size=64.0, bits=4), "quantization: group_size is not an integer"),
    ("bits-bool", _q(group_size=64, bits=True), "quantization: bits is not an integer"),
    # 2**32 + 4 must not wrap into a valid 4 when narrowed to int
    ("bits-wraps-to-4", _q(group_size=64, bits=2**32 + 4), "quantization: unsupported affine bits=4294967300"),
    ("override-bits-7", _q(group_size=64, bits=4, **{"model.layers.0.mlp.down_proj": {"bits": 7}}),
     "quantization.model.layers.0.mlp.down_proj: unsupported affine bits=7 group_size=64"),
    ("override-group-float",
     _q(group_size=64, bits=4, **{"model.layers.0.mlp.down_proj": {"bits": 8, "group_size": 6.4e1}}),
     "quantization.model.layers.0.mlp.down_proj: group_size is not an integer"),
    ("quantization-not-object", {**CONFIG, "quantization": 4}, "quantization is not an object"),
    ("mode-not-string", _q(group_size=64, bits=4, mode=1), "quantization.mode is not a string"),
]


@pytest.mark.parametrize("config,expected", [pytest.param(c, e, id=i) for i, c, e in MLX_CASES])
def test_malformed_mlx_quantization(config, expected, make_dir, tensorfold):
    d = write_hf_dir(make_dir("mlx"), config, {"model.safetensors": MLX_ST})
    assert_clean_failure(tensorfold("info", d), d / "config.json", expected)


def test_valid_mlx_base_is_accepted(make_dir, tensorfold):
    d = write_hf_dir(make_dir("mlx"), _q(group_size=64, bits=4), {"model.safetensors": MLX_ST})
    r = tensorfold("info", d)
    assert r.returncode == 0, r.stderr


def test_serve_refuses_a_malformed_file_the_same_way(tmp_path, tensorfold):
    path = tmp_path / "bad.gguf"
    path.write_bytes(gguf_bytes(version=7))
    assert_clean_failure(tensorfold("serve", path), path, "unsupported GGUF version 7", command="serve")
