"""Byte-level builders for GGUF and safetensors files (valid or deliberately broken), checkpoint
directories, and checks on `tensorfold info` output. Used by tests/cli/test_*.py."""

from __future__ import annotations

import json
import re
import struct
import subprocess
from pathlib import Path

# ---- GGUF ----------------------------------------------------------------------------------------

# GGUF metadata value types
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
# ggml tensor types
GGML_F32, GGML_F16, GGML_Q4_0, GGML_Q4_1, GGML_Q8_0 = 0, 1, 2, 3, 8


def gstr(s: str | bytes) -> bytes:
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def kv(key: str | bytes, vtype: int, payload: bytes) -> bytes:
    """One metadata entry: key, value type, value bytes (already encoded)."""
    return gstr(key) + struct.pack("<I", vtype) + payload


def kv_str(key: str, value: str) -> bytes:
    return kv(key, STRING, gstr(value))


def kv_u32(key: str, value: int) -> bytes:
    return kv(key, U32, struct.pack("<I", value))


def kv_array(key: str, elem_type: int, count: int, items: bytes) -> bytes:
    return kv(key, ARRAY, struct.pack("<IQ", elem_type, count) + items)


def tensor_info(name: str | bytes, dims: list[int], ggml_type: int, offset: int) -> bytes:
    return gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims) + struct.pack(
        "<IQ", ggml_type, offset
    )


LLAMA_KVS = [
    kv_str("general.architecture", "llama"),
    kv_u32("llama.block_count", 2),
    kv_u32("llama.embedding_length", 8),
    kv_u32("llama.attention.head_count", 2),
]


def gguf_bytes(
    kvs: list[bytes] | None = None,
    tensors: list[bytes] | None = None,
    data: bytes = b"",
    *,
    version: int = 3,
    magic: bytes = b"GGUF",
    n_kv: int | None = None,
    n_tensors: int | None = None,
    alignment: int = 32,
) -> bytes:
    """A GGUF file: header, metadata, tensor infos, padding to `alignment`, then `data`."""
    kvs = LLAMA_KVS if kvs is None else kvs
    tensors = tensors or []
    head = magic + struct.pack("<IQQ", version, len(tensors) if n_tensors is None else n_tensors,
                               len(kvs) if n_kv is None else n_kv)
    body = head + b"".join(kvs) + b"".join(tensors)
    if not data:
        return body
    pad = (-len(body)) % alignment
    return body + b"\0" * pad + data


def valid_gguf() -> bytes:
    """A small valid GGUF: llama metadata, an F32 [8] tensor at 0 and a Q8_0 [32] tensor at 32."""
    return gguf_bytes(
        LLAMA_KVS,
        [tensor_info("a", [8], GGML_F32, 0), tensor_info("b", [32], GGML_Q8_0, 32)],
        bytes(32) + bytes(34),
    )


# ---- safetensors ---------------------------------------------------------------------------------


def st_bytes(header, data: bytes = b"", *, length: int | None = None) -> bytes:
    """A safetensors file: u64 header length, header (dict -> JSON, or str/bytes as given), data."""
    if isinstance(header, dict):
        header = json.dumps(header)
    hb = header.encode() if isinstance(header, str) else header
    return struct.pack("<Q", len(hb) if length is None else length) + hb + data


def st_entry(dtype: str, shape: list, begin: int, end: int) -> dict:
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def write_hf_dir(d: Path, config, files: dict[str, bytes | str]) -> Path:
    """config.json (dict -> JSON, or str/bytes as given; None: no config.json) plus `files`."""
    if config is not None:
        text = json.dumps(config) if isinstance(config, dict) else config
        (d / "config.json").write_bytes(text.encode() if isinstance(text, str) else text)
    for name, content in files.items():
        (d / name).write_bytes(content.encode() if isinstance(content, str) else content)
    return d


# ---- checks on the CLI ---------------------------------------------------------------------------


def assert_clean_failure(r: subprocess.CompletedProcess, named_file: str | Path, expected: str, command: str = "info"):
    """`tensorfold <command>` refused a bad input: exit 1, nothing on stdout, ONE stderr line
    "tensorfold <command>: <file>: <problem>" whose problem holds `expected`, and no crash."""
    err = r.stderr
    assert r.returncode >= 0, f"killed by signal {-r.returncode}; stderr: {err!r}"
    assert "terminate called" not in err and "Sanitizer" not in err and "runtime error" not in err, err
    assert r.returncode == 1, f"exit {r.returncode}, expected 1; stderr: {err!r}; stdout: {r.stdout[:300]!r}"
    assert r.stdout == "", f"stdout should be empty: {r.stdout[:300]!r}"
    assert err.endswith("\n") and err.count("\n") == 1, f"stderr should be exactly one line: {err!r}"
    prefix = f"tensorfold {command}: {named_file}: "
    assert err.startswith(prefix), f"stderr should start with {prefix!r}: {err!r}"
    problem = err[len(prefix) :].strip()
    assert problem, f"no problem description: {err!r}"
    assert expected in problem, f"expected {expected!r} in the problem: {problem!r}"
    return problem


_INFO_LINE = re.compile(r"^(\s*\S+(?: \S+)*)\s{2,}(\S.*)$")


def parse_info(stdout: str) -> dict[str, list[str]]:
    """`tensorfold info` output -> {key: [values]} (a key such as 'override' may repeat). Every line
    must be a 'key<spaces>value' line."""
    out: dict[str, list[str]] = {}
    lines = stdout.splitlines()
    assert lines, "no output"
    for line in lines:
        m = _INFO_LINE.match(line)
        assert m, f"not a 'key  value' line: {line!r}"
        out.setdefault(m.group(1).strip(), []).append(m.group(2).rstrip())
    return out


def one(info: dict[str, list[str]], key: str) -> str:
    values = info.get(key)
    assert values is not None, f"no {key!r} line in {sorted(info)}"
    assert len(values) == 1, f"{key!r} appears {len(values)} times"
    return values[0]
