#!/usr/bin/env python3
"""Random-weight llama GGUF files for the prompt-cache benchmark on the device (no network there, 64 MiB of
carry a call, ~10 minutes a command): the weights are made there, in seconds, with numpy.

  random_llama_gguf.py vocab SRC.gguf OUT.gguf
      OUT: SRC's tokenizer.* metadata alone (the chat template among it), no tensors (~2 MB for the default
      model): what travels to the device.
  random_llama_gguf.py model --vocab VOCAB.gguf --shape 8b|small [--seed N] OUT.gguf
      OUT: a llama of that shape (8b: llama-3-8B's 32 layers of 4096, 32/8 heads of 128, FFN 14336, rope base
      500000, context 32768; small: SmolLM2-135M's) over VOCAB's tokenizer, every matrix Q4_0 with random codes
      and per-block scales of about 1/(4.6 sqrt(K)) (rows of unit RMS in, about unit RMS out), norms 1. The 8B
      file is 4.5 GB.

GGUF's own byte layout is written here with tests/cli/_builders.py's encoders (one definition of the format's
pieces); the tensor data is streamed to disk. Needs numpy.
"""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "cli"))
from _builders import (ARRAY, BOOL, F32, F64, GGML_F32, GGML_Q4_0, I8, I16, I32, I64, STRING, U8, U16, U32,  # noqa: E402
                       U64, gstr, kv, kv_str, kv_u32, tensor_info)

SHAPES = {  # layers, hidden, heads, kv heads, head dim, ffn, rope base, context
    "8b": (32, 4096, 32, 8, 128, 14336, 500000.0, 32768),
    "small": (30, 576, 9, 3, 64, 1536, 100000.0, 8192),
}
SCALAR_BYTES = {U8: 1, I8: 1, BOOL: 1, U16: 2, I16: 2, U32: 4, I32: 4, F32: 4, U64: 8, I64: 8, F64: 8}
ALIGN = 32
Q4_0_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])  # x = d * (q - 8), 32 weights a block


def read_metadata(path: str) -> tuple[list[tuple[str, bytes]], int]:
    """Each metadata entry of a GGUF file as (key, its whole encoded bytes), and the tensor count."""
    data = Path(path).read_bytes()
    if data[:4] != b"GGUF":
        raise SystemExit(f"{path}: not a GGUF file")
    n_tensors, n_kv = struct.unpack_from("<QQ", data, 8)
    at = 24

    def string(at: int) -> int:
        (n,) = struct.unpack_from("<Q", data, at)
        return at + 8 + n

    def value(vtype: int, at: int) -> int:
        if vtype == STRING:
            return string(at)
        if vtype == ARRAY:
            etype, count = struct.unpack_from("<IQ", data, at)
            at += 12
            if etype in SCALAR_BYTES:
                return at + SCALAR_BYTES[etype] * count
            for _ in range(count):
                at = value(etype, at)
            return at
        return at + SCALAR_BYTES[vtype]

    entries = []
    for _ in range(n_kv):
        start = at
        (klen,) = struct.unpack_from("<Q", data, at)
        key = data[at + 8:at + 8 + klen].decode()
        at += 8 + klen
        (vtype,) = struct.unpack_from("<I", data, at)
        at = value(vtype, at + 4)
        entries.append((key, data[start:at]))
    return entries, n_tensors


def cmd_vocab(src: str, out: str) -> None:
    entries, _ = read_metadata(src)
    kvs = [kv_str("general.architecture", "llama")] + [raw for key, raw in entries if key.startswith("tokenizer.")]
    Path(out).write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs))
    print(f"{out}: {len(kvs) - 1} tokenizer entries, {Path(out).stat().st_size} bytes")


def vocab_size(entries: list[tuple[str, bytes]]) -> int:
    raw = dict(entries)["tokenizer.ggml.tokens"]
    (klen,) = struct.unpack_from("<Q", raw, 0)
    return struct.unpack_from("<Q", raw, 8 + klen + 4 + 4)[0]


def kv_f32(key: str, value: float) -> bytes:
    return kv(key, F32, struct.pack("<f", value))


def cmd_model(vocab: str, shape: str, seed: int, out: str) -> None:
    layers, hidden, heads, kv_heads, head_dim, ffn, rope_base, context = SHAPES[shape]
    entries, _ = read_metadata(vocab)
    n_vocab = vocab_size(entries)
    a = "llama."
    kvs = [kv_str("general.architecture", "llama"), kv_str("general.name", f"random-llama-{shape}"),
           kv_u32("general.file_type", 2), kv_u32(a + "block_count", layers), kv_u32(a + "context_length", context),
           kv_u32(a + "embedding_length", hidden), kv_u32(a + "feed_forward_length", ffn),
           kv_u32(a + "attention.head_count", heads), kv_u32(a + "attention.head_count_kv", kv_heads),
           kv_u32(a + "rope.dimension_count", head_dim), kv_u32(a + "vocab_size", n_vocab),
           kv_f32(a + "rope.freq_base", rope_base), kv_f32(a + "attention.layer_norm_rms_epsilon", 1e-5)]
    kvs += [raw for key, raw in entries if key.startswith("tokenizer.")]
    # (name, [cols, rows] as GGUF lists them, type); matrices are [rows, K = cols] in row-major blocks of 32.
    tensors = [("token_embd.weight", [hidden, n_vocab], GGML_Q4_0)]
    for i in range(layers):
        b = f"blk.{i}."
        tensors += [(b + "attn_norm.weight", [hidden], GGML_F32),
                    (b + "attn_q.weight", [hidden, heads * head_dim], GGML_Q4_0),
                    (b + "attn_k.weight", [hidden, kv_heads * head_dim], GGML_Q4_0),
                    (b + "attn_v.weight", [hidden, kv_heads * head_dim], GGML_Q4_0),
                    (b + "attn_output.weight", [heads * head_dim, hidden], GGML_Q4_0),
                    (b + "ffn_norm.weight", [hidden], GGML_F32),
                    (b + "ffn_gate.weight", [hidden, ffn], GGML_Q4_0),
                    (b + "ffn_up.weight", [hidden, ffn], GGML_Q4_0),
                    (b + "ffn_down.weight", [ffn, hidden], GGML_Q4_0)]
    tensors += [("output_norm.weight", [hidden], GGML_F32), ("output.weight", [hidden, n_vocab], GGML_Q4_0)]

    def nbytes(dims: list[int], gtype: int) -> int:
        n = int(np.prod(dims))
        return n * 4 if gtype == GGML_F32 else n // 32 * Q4_0_BLOCK.itemsize

    infos, offset = [], 0
    for name, dims, gtype in tensors:
        infos.append(tensor_info(name, dims, gtype, offset))
        offset += nbytes(dims, gtype) + (-nbytes(dims, gtype)) % ALIGN
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs) + b"".join(infos)
    rng = np.random.default_rng(seed)
    with open(out + ".part", "wb") as f:
        f.write(head + b"\0" * ((-len(head)) % ALIGN))
        for name, dims, gtype in tensors:
            if gtype == GGML_F32:
                data = np.ones(int(np.prod(dims)), dtype="<f4").tobytes()
            else:
                k, rows = dims
                blocks = np.empty(rows * (k // 32), dtype=Q4_0_BLOCK)
                blocks["d"] = rng.uniform(0.5, 1.5, blocks.shape) / (4.6 * np.sqrt(k))
                blocks["qs"] = np.frombuffer(rng.bytes(blocks.size * 16), dtype=np.uint8).reshape(-1, 16)
                data = blocks.tobytes()
            f.write(data + b"\0" * ((-len(data)) % ALIGN))
    Path(out + ".part").rename(out)
    print(f"{out}: random llama ({shape}), {len(tensors)} tensors, vocab {n_vocab}, "
          f"{Path(out).stat().st_size / 1e9:.2f} GB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("vocab")
    v.add_argument("src")
    v.add_argument("out")
    m = sub.add_parser("model")
    m.add_argument("--vocab", required=True)
    m.add_argument("--shape", choices=sorted(SHAPES), required=True)
    m.add_argument("--seed", type=int, default=1234)
    m.add_argument("out")
    args = ap.parse_args()
    if args.cmd == "vocab":
        cmd_vocab(args.src, args.out)
    else:
        cmd_model(args.vocab, args.shape, args.seed, args.out)


if __name__ == "__main__":
    main()
