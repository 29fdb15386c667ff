#!/usr/bin/env python3
"""Writes a random-weight deepseek_v4 checkpoint slice at DeepSeek-V4-Flash's width (families-and-formats §2.6), MLX
affine 4-bit g64 under the names transformers' save_pretrained writes (mlx-lm has no deepseek_v4 model to rename
them; routers 8-bit), for CPU benchmarks: hidden 4096; 64 heads x 512 sharing one key/value head, q_lora 1024, rope
on the last 64 dims, window 128, sinks, o_groups 8 x 1024; compressed sparse layers (rate 4, an indexer of 64 heads
x 128 keeping 512) and heavily compressed ones (rate 128); experts of 2048, top 6, one shared, sqrtsoftplus; mHC
over 4 streams; vocab 129,280. The plan is a slice of the 43-layer model (default "HC": a heavily compressed layer
with hash-routed experts, then a compressed sparse one with learned routing). The slice holds 32 routed experts a
layer, not 256: a token's cost is its top 6 and the shared one, the same either way; only the file is smaller.

    bench/deepseek_v4/make_random_checkpoint.py OUT_DIR [--plan HC] [--experts 32]

Codes are random, scales small and biases centring them: the forward pass costs what the real model's does; the
tokens it predicts mean nothing. The tokenizer files are the tiny golden's (ids < 320 only). Needs numpy only."""
import argparse
import json
import os
import shutil
import struct

import numpy as np

H, V = 4096, 129280
HEADS, HEAD_DIM, Q_RANK, ROPE = 64, 512, 1024, 64
IX_HEADS, IX_DIM, TOPK, WINDOW = 64, 128, 512, 128
O_GROUPS, O_RANK = 8, 1024
TOP, I_MOE, HC = 6, 2048, 4
RATES = {"C": 4, "H": 128}
GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "goldens", "deepseek_v4",
                      "bf16")


def bf16(a):
    u = np.ascontiguousarray(a, np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


class Writer:
    """Streams tensors into one safetensors file: the header first (shapes known up front), then the data."""

    def __init__(self):
        self.entries = []  # (name, dtype, shape, nbytes, make)

    def add(self, name, dtype, shape, make):
        size = {"BF16": 2, "F32": 4, "U32": 4, "I64": 8}[dtype] * int(np.prod(shape))
        self.entries.append((name, dtype, list(shape), size, make))

    def write(self, path):
        header, off = {"__metadata__": {"format": "mlx"}}, 0
        for name, dtype, shape, size, _ in self.entries:
            header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + size]}
            off += size
        text = json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text)
            for _, _, _, _, make in self.entries:
                f.write(make().tobytes())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--plan", default="HC")
    ap.add_argument("--experts", type=int, default=32)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(0)
    w = Writer()
    E = a.experts
    overrides = {}

    def quantized(module, out, inn, bits=4):
        per = 32 // bits
        w.add(module + ".weight", "U32", [out, inn // per],
              lambda: rng.integers(0, 2**32, size=[out, inn // per], dtype=np.uint64).astype(np.uint32))
        scale = 0.02 / (1 << (bits - 1))
        w.add(module + ".scales", "BF16", [out, inn // 64], lambda: bf16(np.full([out, inn // 64], scale)))
        w.add(module + ".biases", "BF16", [out, inn // 64],
              lambda: bf16(np.full([out, inn // 64], -(1 << (bits - 1)) * scale)))
        if bits != 4:
            overrides[module] = {"group_size": 64, "bits": bits}

    def dense(name, shape, value=None, dtype="BF16", std=0.02):
        def make():
            v = np.full(shape, value, np.float32) if value is not None else rng.normal(0, std, shape).astype(np.float32)
            return bf16(v) if dtype == "BF16" else v
        w.add(name, dtype, shape, make)

    def pool(p, dim, width, rate):
        quantized(p + "wkv", width, H)
        quantized(p + "wgate", width, H)
        dense(p + "ape", [rate, width], None, "F32", 0.5)
        dense(p + "norm.weight", [dim], 1.0, "F32")

    body = "model."
    quantized(body + "embed_tokens", V, H)

    def layer(p, kind, hashed):
        if kind not in RATES:
            raise SystemExit(f"plan letters are C (compressed sparse) and H (heavily compressed), not {kind!r}")
        dense(p + "attn_norm.weight", [H], 1.0, "F32")
        dense(p + "ffn_norm.weight", [H], 1.0, "F32")
        for hc in ("hc_attn_", "hc_ffn_"):
            dense(p + hc + "fn", [(2 + HC) * HC, HC * H], None, "F32")
            dense(p + hc + "base", [(2 + HC) * HC], 0.0, "F32")
            dense(p + hc + "scale", [3], 1.0, "F32")
        s = p + "attn."
        quantized(s + "wq_a", Q_RANK, H)
        dense(s + "q_norm.weight", [Q_RANK], 1.0, "F32")
        quantized(s + "wq_b", HEADS * HEAD_DIM, Q_RANK)
        quantized(s + "wkv", HEAD_DIM, H)
        dense(s + "norm.weight", [HEAD_DIM], 1.0, "F32")
        quantized(s + "wo_a", O_GROUPS * O_RANK, HEADS * HEAD_DIM // O_GROUPS)
        quantized(s + "wo_b", H, O_GROUPS * O_RANK)
        dense(s + "attn_sink", [HEADS], 0.0, "F32")
        rate = RATES[kind]
        pool(s + "compressor.", HEAD_DIM, 2 * HEAD_DIM if kind == "C" else HEAD_DIM, rate)
        if kind == "C":
            quantized(s + "indexer.wq_b", IX_HEADS * IX_DIM, Q_RANK)
            quantized(s + "indexer.weights_proj", IX_HEADS, H)
            pool(s + "indexer.compressor.", IX_DIM, 2 * IX_DIM, rate)
        m = p + "ffn."
        quantized(m + "gate", E, H, 8)
        if hashed:  # distinct experts a token: (7 t + k) mod E
            w.add(m + "gate.tid2eid", "I64", [V, TOP],
                  lambda: ((np.arange(V)[:, None] * 7 + np.arange(TOP)[None, :]) % E).astype(np.int64))
        else:
            dense(m + "gate.bias", [E], 0.0, "F32")
        for e in range(E):
            quantized(f"{m}experts.{e}.w1", I_MOE, H)
            quantized(f"{m}experts.{e}.w3", I_MOE, H)
            quantized(f"{m}experts.{e}.w2", H, I_MOE)
        quantized(m + "shared_experts.w1", I_MOE, H)
        quantized(m + "shared_experts.w3", I_MOE, H)
        quantized(m + "shared_experts.w2", H, I_MOE)

    for i, kind in enumerate(a.plan):
        layer(f"{body}layers.{i}.", kind, hashed=i == 0)  # the first hash-routed, as the model's first three
    dense(body + "hc_head.hc_fn", [HC, HC * H], None, "F32")
    dense(body + "hc_head.hc_base", [HC], 0.0, "F32")
    dense(body + "hc_head.hc_scale", [1], 1.0, "F32")
    dense(body + "norm.weight", [H], 1.0, "F32")
    quantized("head", V, H)
    w.write(os.path.join(a.out, "model.safetensors"))

    q = {"group_size": 64, "bits": 4, "mode": "affine", **overrides}
    n = len(a.plan)
    config = {
        "architectures": ["DeepseekV4ForCausalLM"], "model_type": "deepseek_v4", "vocab_size": V, "hidden_size": H,
        "num_hidden_layers": n, "num_attention_heads": HEADS, "num_key_value_heads": 1, "head_dim": HEAD_DIM,
        "q_lora_rank": Q_RANK, "partial_rotary_factor": ROPE / HEAD_DIM, "sliding_window": WINDOW,
        "o_groups": O_GROUPS, "o_lora_rank": O_RANK, "index_n_heads": IX_HEADS, "index_head_dim": IX_DIM,
        "index_topk": TOPK, "compress_rates": {"compressed_sparse_attention": 4, "heavily_compressed_attention": 128},
        "layer_types": ["compressed_sparse_attention" if k == "C" else "heavily_compressed_attention"
                        for k in a.plan],
        "mlp_layer_types": ["hash_moe" if i == 0 else "moe" for i in range(n)],
        "rope_parameters": {
            "main": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": ROPE / HEAD_DIM},
            "compress": {"rope_type": "yarn", "rope_theta": 160000.0, "factor": 16.0,
                         "original_max_position_embeddings": 65536, "beta_fast": 32, "beta_slow": 1,
                         "attention_factor": 1.0, "partial_rotary_factor": ROPE / HEAD_DIM}},
        "n_routed_experts": E, "n_shared_experts": 1, "num_experts_per_tok": TOP, "moe_intermediate_size": I_MOE,
        "scoring_func": "sqrtsoftplus", "norm_topk_prob": True, "routed_scaling_factor": 1.5, "swiglu_limit": 10.0,
        "hc_mult": HC, "hc_sinkhorn_iters": 20, "hc_eps": 1e-6, "rms_norm_eps": 1e-6,
        "max_position_embeddings": 1048576, "tie_word_embeddings": False, "eos_token_id": 258, "pad_token_id": 0,
        "quantization": q, "quantization_config": q,
    }
    json.dump(config, open(os.path.join(a.out, "config.json"), "w"), indent=2)
    for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        shutil.copy(os.path.join(GOLDEN, f), a.out)
    print(f"wrote {a.out}: plan {a.plan}, {E} experts, "
          f"{os.path.getsize(os.path.join(a.out, 'model.safetensors')) / 2**30:.2f} GiB")


if __name__ == "__main__":
    main()
