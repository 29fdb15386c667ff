"""Diagnostic checkpoints: the tiny mlx-4bit qwen3_5 checkpoint with chosen modules dequantized to float32 the
way the golden's reference dequantized them (bf16(bf16(s*q) + b), exact in float32), their quantization
overrides set to false, each with the golden.json it must still match. Made for the CUDA backend's 4-bit logits
bug (docs/cuda.md, "Gated DeltaNet and gated attention"): the variant whose dense modules make CUDA match points
at the quantized path that does not. On the CPU every variant matches the golden to 8.6e-7.

  python3 scripts/golden/qwen3_5_dequant_variants.py [OUT_DIR] [--exact]    (default .cuda-carry/diag)
--exact dequantizes in float32 without the rounding (s*q + b): the values the CUDA kernels multiply by; on the
CPU that variant misses the golden by the same 2.16e-2 as CUDA does (session 24).
  python3 tests/conformance/qwen3_5_golden_check.py TOOL - 1e-4 OUT_DIR/q4-all-dense OUT_DIR/q4-ab-dense ...
"""
import json, shutil, struct, sys
from pathlib import Path
import numpy as np

SRC = Path(__file__).resolve().parents[2] / "tests" / "goldens" / "qwen3_5" / "mlx-4bit"
ARGS = [a for a in sys.argv[1:] if a != "--exact"]
EXACT = "--exact" in sys.argv[1:]
OUT = Path(ARGS[0]) if ARGS else Path(".cuda-carry/diag")

def read(path):
    b = path.read_bytes(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n]); return h, b[8 + n:]

def bf16_round(x):
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return u.astype(np.uint32).view(np.float32)

def tensor(h, data, name):
    m = h[name]; a, b = m["data_offsets"]; raw = data[a:b]
    if m["dtype"] == "BF16":
        return (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(m["shape"])
    dt = {"F32": np.float32, "U32": np.uint32, "F16": np.float16}[m["dtype"]]
    return np.frombuffer(raw, dt).reshape(m["shape"])

def make(tag, pick):
    h, data = read(SRC / "model.safetensors"); meta = h.pop("__metadata__")
    cfg = json.loads((SRC / "config.json").read_text())
    out = {}
    mods = sorted({k[:-len(".scales")] for k in h if k.endswith(".scales")})
    for mod in mods:
        if not pick(mod):
            continue
        q = tensor(h, data, mod + ".weight"); s = tensor(h, data, mod + ".scales"); bi = tensor(h, data, mod + ".biases")
        rows, wpr = q.shape; cols = wpr * 8; g = cols // s.shape[1]
        codes = ((q[:, :, None] >> (4 * np.arange(8, dtype=np.uint32))) & 0xF).reshape(rows, cols).astype(np.float32)
        sc = np.repeat(s, g, axis=1); bb = np.repeat(bi, g, axis=1)
        w = (sc * codes + bb) if EXACT else bf16_round(bf16_round(sc * codes) + bb)
        out[mod + ".weight"] = ("F32", [rows, cols], w.astype(np.float32).tobytes())
        for suf in (".weight", ".scales", ".biases"):
            del h[mod + suf]
        key = mod
        cfg["quantization"][key] = False
        cfg.setdefault("quantization_config", cfg["quantization"])
        cfg["quantization_config"][key] = False
    tensors = {}
    for k, m in h.items():
        a, b = m["data_offsets"]; tensors[k] = (m["dtype"], m["shape"], data[a:b])
    tensors.update(out)
    header, blobs, off = {"__metadata__": meta}, [], 0
    for k in sorted(tensors):
        dt, shape, raw = tensors[k]; header[k] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
        blobs.append(raw); off += len(raw)
    hb = json.dumps(header).encode(); hb += b" " * ((8 - len(hb) % 8) % 8)
    d = OUT / tag; d.mkdir(parents=True, exist_ok=True)
    (d / "model.safetensors").write_bytes(struct.pack("<Q", len(hb)) + hb + b"".join(blobs))
    idx = {"metadata": {}, "weight_map": {k: "model.safetensors" for k in sorted(tensors)}}
    (d / "model.safetensors.index.json").write_text(json.dumps(idx))
    (d / "config.json").write_text(json.dumps(cfg, indent=1))
    for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json", "golden.json"):
        shutil.copy(SRC / f, d / f)
    print(tag, "dequantized", sum(1 for m in mods if pick(m)), "of", len(mods))

if EXACT:
    make("q4-all-exact", lambda m: True)
    sys.exit(0)
make("q4-ab-dense", lambda m: m.endswith("in_proj_a") or m.endswith("in_proj_b"))
make("q4-embed-dense", lambda m: m.endswith("embed_tokens"))
make("q4-all-dense", lambda m: True)
make("q4-attn-dense", lambda m: ".self_attn." in m)
make("q4-gdn-dense", lambda m: ".linear_attn." in m)
make("q4-mlp-dense", lambda m: ".mlp." in m)
