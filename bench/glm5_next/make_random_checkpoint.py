#!/usr/bin/env python3
"""Writes a random-weight glm5_next checkpoint slice at GLM-5.3-Flash's width (families-and-formats §2.4), MLX affine
4-bit g64 under the Hugging Face names (mlx-lm has no glm5_next model to rename them; routers 8-bit), for CPU
benchmarks: hidden 4096; Kimi delta attention 64 heads x 128; latent attention 64 heads, q_lora 1536, kv_lora 512,
qk_nope 256 (NoPE), v 256, with a KPool indexer of 32 heads x 128, pools of 16, top 2048; mHC over 4 streams; experts
of 2048, top 8, one shared; vocab 154,880. The plan is one period of the 45-layer model past its dense prefix
(default "KKKM": three KDA layers then a latent-attention one, each with experts). The slice holds 32 routed experts
a layer, not 288: a token's cost is its top 8 and the shared one, the same either way; only the file is smaller.

    bench/glm5_next/make_random_checkpoint.py OUT_DIR [--plan KKKM] [--experts 32]

Codes are random, scales small and biases centring them: the forward pass costs what the real model's does; the
tokens it predicts mean nothing. The tokenizer files are the tiny golden's (ids < 320 only). Needs numpy only."""
import argparse
import json
import os
import shutil
import struct

import numpy as np

H, V = 4096, 154880
KDA_HEADS, KDA_DIM, CONV = 64, 128, 4
HEADS, Q_RANK, KV_RANK, NOPE, V_DIM = 64, 1536, 512, 256, 256
IX_HEADS, IX_DIM, KPOOL, TOPK = 32, 128, 16, 2048
TOP, I_MOE, HC = 8, 2048, 4
GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "goldens", "glm5_next", "bf16")


def bf16(a):
    u = np.ascontiguousarray(a, np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


class Writer:
    """Streams tensors into one safetensors file: the header first (shapes known up front), then the data."""

    def __init__(self):
        self.entries = []  # (name, dtype, shape, nbytes, make)

    def add(self, name, dtype, shape, make):
        size = {"BF16": 2, "F32": 4, "U32": 4}[dtype] * int(np.prod(shape))
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
    ap.add_argument("--plan", default="KKKM")
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

    body = "model.language_model."
    quantized(body + "embed_tokens", V, H)
    kda_w = KDA_HEADS * KDA_DIM

    def layer(p, kind):
        dense(p + "input_layernorm.weight", [H], 1.0)
        dense(p + "post_attention_layernorm.weight", [H], 1.0)
        for hc in ("attn_hc.", "ffn_hc."):
            dense(p + hc + "fn", [(2 + HC) * HC, HC * H])
            dense(p + hc + "base", [(2 + HC) * HC], 0.0, "F32")
            dense(p + hc + "scale", [3], 1.0, "F32")
        s = p + "self_attn."
        if kind == "K":
            for proj in ("q_proj", "k_proj", "v_proj"):
                quantized(s + proj, kda_w, H)
            dense(s + "conv1d.weight", [3 * kda_w, 1, CONV], None, "F32", 0.3)
            quantized(s + "forget_gate.f_a_proj", KDA_DIM, H)
            quantized(s + "forget_gate.f_b_proj", kda_w, KDA_DIM)
            dense(s + "forget_gate.dt_bias", [kda_w], 0.0, "F32")
            dense(s + "forget_gate.A_log", [KDA_HEADS], 0.0, "F32")
            quantized(s + "b_proj", KDA_HEADS, H)
            quantized(s + "g_a_proj", KDA_DIM, H)
            quantized(s + "g_b_proj", kda_w, KDA_DIM)
            dense(s + "o_norm.weight", [KDA_DIM], 1.0)
            quantized(s + "o_proj", H, kda_w)
        elif kind == "M":
            quantized(s + "q_a_proj", Q_RANK, H)
            dense(s + "q_a_layernorm.weight", [Q_RANK], 1.0)
            quantized(s + "q_b_proj", HEADS * NOPE, Q_RANK)
            quantized(s + "kv_a_proj_with_mqa", KV_RANK, H)
            dense(s + "kv_a_layernorm.weight", [KV_RANK], 1.0)
            quantized(s + "kv_b_proj", HEADS * (NOPE + V_DIM), KV_RANK)
            quantized(s + "o_proj", H, HEADS * V_DIM)
            ix = s + "indexer."
            quantized(ix + "wq_b", IX_HEADS * IX_DIM, Q_RANK)
            quantized(ix + "wk", IX_DIM, H)
            dense(ix + "k_norm.weight", [IX_DIM], 1.0)
            dense(ix + "k_norm.bias", [IX_DIM], 0.0)
            quantized(ix + "weights_proj", IX_HEADS, H)
            dense(ix + "index_kpool_compress_ape", [KPOOL, IX_DIM], None, "BF16", 0.5)
            dense(ix + "index_kpool_compress_gate", [IX_DIM, H])
        else:
            raise SystemExit(f"plan letters are K (KDA) and M (latent attention), not {kind!r}")
        m = p + "mlp."
        quantized(m + "gate", E, H, 8)
        dense(m + "gate.e_score_correction_bias", [E], 0.0, "F32")
        for e in range(E):
            quantized(f"{m}experts.{e}.gate_proj", I_MOE, H)
            quantized(f"{m}experts.{e}.up_proj", I_MOE, H)
            quantized(f"{m}experts.{e}.down_proj", H, I_MOE)
        quantized(m + "shared_experts.gate_proj", I_MOE, H)
        quantized(m + "shared_experts.up_proj", I_MOE, H)
        quantized(m + "shared_experts.down_proj", H, I_MOE)

    for i, kind in enumerate(a.plan):
        layer(f"{body}layers.{i}.", kind)
    dense(body + "norm.weight", [H], 1.0)
    quantized("lm_head", V, H)
    w.write(os.path.join(a.out, "model.safetensors"))

    q = {"group_size": 64, "bits": 4, "mode": "affine", **overrides}
    n = len(a.plan)
    text = {
        "model_type": "glm5_next_text", "vocab_size": V, "hidden_size": H, "intermediate_size": 12288,
        "moe_intermediate_size": I_MOE, "num_hidden_layers": n,
        "layer_types": ["linear_attention" if k == "K" else "indexed_attention" for k in a.plan],
        "indexer_types": ["full"] * n, "mlp_layer_types": ["sparse"] * n,
        "num_attention_heads": HEADS, "num_key_value_heads": HEADS, "q_lora_rank": Q_RANK, "kv_lora_rank": KV_RANK,
        "qk_nope_head_dim": NOPE, "qk_rope_head_dim": 0, "v_head_dim": V_DIM, "n_routed_experts": E,
        "n_shared_experts": 1, "num_experts_per_tok": TOP, "n_group": 1, "topk_group": 1, "norm_topk_prob": True,
        "routed_scaling_factor": 2.5, "swiglu_limit": 10.0, "index_topk": TOPK, "index_head_dim": IX_DIM,
        "index_n_heads": IX_HEADS, "index_kpool": KPOOL, "linear_head_dim": KDA_DIM, "linear_num_heads": KDA_HEADS,
        "linear_conv_kernel_dim": CONV, "linear_lower_bound": -5.0, "hc_mult": HC, "hc_sinkhorn_iters": 20,
        "hc_eps": 1e-6, "rms_norm_eps": 1e-5, "max_position_embeddings": 8192, "tie_word_embeddings": False,
        "eos_token_id": 258, "pad_token_id": 0,
    }
    config = {"architectures": ["Glm5NextForConditionalGeneration"], "model_type": "glm5_next", "text_config": text,
              "tie_word_embeddings": False, "quantization": q, "quantization_config": q}
    json.dump(config, open(os.path.join(a.out, "config.json"), "w"), indent=2)
    for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        shutil.copy(os.path.join(GOLDEN, f), a.out)
    print(f"wrote {a.out}: plan {a.plan}, {E} experts, "
          f"{os.path.getsize(os.path.join(a.out, 'model.safetensors')) / 2**30:.2f} GiB")


if __name__ == "__main__":
    main()
