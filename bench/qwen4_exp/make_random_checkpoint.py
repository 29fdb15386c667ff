#!/usr/bin/env python3
"""Writes a random-weight qwen4_exp checkpoint slice at Qwen3.8 Flash Next's width, in mlx-lm's conventions (MLX
affine 4-bit g64, routers 8-bit, experts as switch_mlp stacks under language_model.model.*), for CPU benchmarks:
hidden 2048, 4 hyper-connection streams of low rank 320; Gated DeltaNet layers of 16 key / 32 value heads x 128;
indexed attention of 16 query / 2 KV heads x 256 (a quarter of the dims turning) with an indexer of 16 heads x 128
keeping a budget of 2,048 tokens in blocks of 64; 512 experts of 512 (top 10) beside a gated shared expert of 512;
vocab 248,320, untied (families-and-formats §2.3 and transformers' Qwen4ExpTextConfig defaults; the indexer's sizes
and the n-gram layer's place are not published: chosen here). The plan is one period of the 3:1 pattern by default
("LLLI": three linear layers, then an indexed one; the real model has 40 layers), the first linear layer with
hashed n-gram embeddings at the real size: 320,001,536 table rows of 128 in 512 shards, 4-bit (24 GiB as stored).

    bench/qwen4_exp/make_random_checkpoint.py OUT_DIR [--pattern LLLI] [--ple-layer 1]

Codes are random, scales small and biases centring them: the forward pass costs what the real model's does; the
tokens it predicts mean nothing. The n-gram tables are left as holes in a sparse file (they read as zeros, and take
no disk): a row costs its page of the page cache, as a hot table's would; a cold one costs a disk read more. The
tokenizer files are the tiny golden's (ids < 320 only). Needs numpy only."""
import argparse
import importlib.util
import json
import os
import shutil

import numpy as np

H, V, STREAMS, HC_RANK = 2048, 248320, 4, 320
GDN_K, GDN_V, GDN_DIM, CONV = 16, 32, 128, 4
HEADS, KV, HD = 16, 2, 256
IDX_HEADS, IDX_DIM, BUDGET, BLOCK = 16, 128, 2048, 64
E, TOP, I_MOE, I_SHARED = 512, 10, 512, 512
NGRAM, HEADS_PER_NGRAM, NGRAM_BASE, SHARDS, PLE_DIM = 3, 8, 20_000_000, 512, 2048
TABLE_ROWS = 320_001_536  # NgramHash's padded sum of the 16 heads' prime sizes >= 20,000,000 (layer 0)
HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "..", "tests", "goldens", "qwen4_exp", "bf16")
EOS = 258

# The nemotron_h slice's streaming safetensors writer and bf16 rounding (one definition).
_spec = importlib.util.spec_from_file_location("nh_slice", os.path.join(HERE, "..", "nemotron_h",
                                                                         "make_random_checkpoint.py"))
_nh = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_nh)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--pattern", default="LLLI")
    ap.add_argument("--ple-layer", type=int, default=1, help="the one-indexed linear layer with n-gram embeddings "
                    "(0: none; one layer only, as TABLE_ROWS is the first n-gram layer's)")
    a = ap.parse_args()
    if set(a.pattern) - {"L", "I"}:
        raise SystemExit("pattern letters are L (Gated DeltaNet) and I (indexed attention)")
    ple = [a.ple_layer] if a.ple_layer else []
    if any(not 1 <= i <= len(a.pattern) or a.pattern[i - 1] != "L" for i in ple):
        raise SystemExit("--ple-layer must name a linear (L) layer, one-indexed")
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(0)
    w = _nh.Writer()
    q = {"group_size": 64, "bits": 4, "mode": "affine"}

    def quantized(module, lead, out, inn, bits=4, hole=False):
        shape = [*lead, out]
        top = 2**bits - 1
        scale = 0.02 / (top / 2)
        codes = [*shape, inn * bits // 32]
        w.add(module + ".weight", "U32", codes,
              None if hole else lambda: rng.integers(0, 2**32, size=codes, dtype=np.uint64).astype(np.uint32))
        for leaf, value in ((".scales", scale), (".biases", -top / 2 * scale)):
            w.add(module + leaf, "BF16", [*shape, inn // 64],
                  None if hole else lambda v=value: _nh.bf16(np.full([*shape, inn // 64], v)))
        if bits != 4:
            q[module] = {"group_size": 64, "bits": bits}

    def dense(name, shape, value, dtype="BF16"):
        w.add(name, dtype, shape, lambda: (_nh.bf16(np.full(shape, value, np.float32)) if dtype == "BF16"
                                           else np.full(shape, value, np.float32)))

    def hyper(p):
        dense(p + "hc_norm.weight", [STREAMS * H], 1.0)
        quantized(p + "input_mix_weight_down", [], HC_RANK, STREAMS * H)
        dense(p + "input_mix_weight_up.weight", [STREAMS * H, HC_RANK], 0.01)  # 320 wide: not a group multiple
        quantized(p + "block_inject_weight", [], STREAMS, STREAMS * H)

    body = "language_model.model."
    quantized(body + "embed_tokens", [], V, H)
    conv_dim = 2 * GDN_K * GDN_DIM + GDN_V * GDN_DIM
    for i, kind in enumerate(a.pattern):
        p = f"{body}layers.{i}."
        if kind == "L":
            la = p + "linear_attn."
            quantized(la + "in_proj_qkv", [], conv_dim, H)
            quantized(la + "in_proj_z", [], GDN_V * GDN_DIM, H)
            quantized(la + "in_proj_b", [], GDN_V, H)
            quantized(la + "in_proj_a", [], GDN_V, H)
            dense(la + "conv1d.weight", [conv_dim, CONV, 1], 0.25)
            dense(la + "dt_bias", [GDN_V], 0.0)
            dense(la + "A_log", [GDN_V], 0.0, "F32")
            dense(la + "norm.weight", [GDN_DIM], 1.0)
            quantized(la + "out_proj", [], H, GDN_V * GDN_DIM)
        else:
            sa = p + "self_attn."
            quantized(sa + "q_proj", [], 2 * HEADS * HD, H)  # the query and its output gate
            quantized(sa + "k_proj", [], KV * HD, H)
            quantized(sa + "v_proj", [], KV * HD, H)
            quantized(sa + "o_proj", [], H, HEADS * HD)
            dense(sa + "q_norm.weight", [HD], 1.0)
            dense(sa + "k_norm.weight", [HD], 1.0)
            quantized(sa + "indexer.index_qk_proj", [], (IDX_HEADS + 1) * IDX_DIM, H)
            dense(sa + "indexer.q_layernorm.weight", [IDX_DIM], 1.0)
            dense(sa + "indexer.k_layernorm.weight", [IDX_DIM], 1.0)
        m = p + "mlp."
        quantized(m + "gate", [], E, H, 8)
        quantized(m + "switch_mlp.gate_proj", [E], I_MOE, H)
        quantized(m + "switch_mlp.up_proj", [E], I_MOE, H)
        quantized(m + "switch_mlp.down_proj", [E], H, I_MOE)
        quantized(m + "shared_expert.gate_proj", [], I_SHARED, H)
        quantized(m + "shared_expert.up_proj", [], I_SHARED, H)
        quantized(m + "shared_expert.down_proj", [], H, I_SHARED)
        quantized(m + "shared_expert_gate", [], 1, H, 8)
        hyper(p + "attn_hyper_connection.")
        hyper(p + "mlp_hyper_connection.")
        if i + 1 in ple:
            e = p + "ple."
            per = -(-TABLE_ROWS // SHARDS)
            for s, at in enumerate(range(0, TABLE_ROWS, per)):
                quantized(e + f"ple_embedding.ngram_embedding.shard_{s}", [], min(per, TABLE_ROWS - at),
                          PLE_DIM // (2 * HEADS_PER_NGRAM), hole=True)
            quantized(e + "key_proj", [], STREAMS * H, PLE_DIM)
            quantized(e + "value_proj", [], H, PLE_DIM)
            for n in ("norm_key", "norm_query", "norm_conv"):
                dense(e + n + ".weight", [STREAMS * H], 1.0)
            dense(e + "conv1d.weight", [STREAMS * H, 4, 1], 0.25)
    hyper(body + "hyper_connection_mixer.")
    quantized("language_model.lm_head", [], V, H)
    w.write(os.path.join(a.out, "model.safetensors"))

    types = ["linear_attention" if k == "L" else "indexed_attention" for k in a.pattern]
    text = {
        "model_type": "qwen4_exp_text", "vocab_size": V, "hidden_size": H, "num_hidden_layers": len(a.pattern),
        "num_attention_heads": HEADS, "num_key_value_heads": KV, "head_dim": HD, "layer_types": types,
        "linear_num_key_heads": GDN_K, "linear_num_value_heads": GDN_V, "linear_key_head_dim": GDN_DIM,
        "linear_value_head_dim": GDN_DIM, "linear_conv_kernel_dim": CONV, "output_gate_type": "sigmoid",
        "num_experts": E, "num_experts_per_tok": TOP, "moe_intermediate_size": I_MOE,
        "shared_expert_intermediate_size": I_SHARED, "norm_topk_prob": True, "hc_count": STREAMS,
        "hc_lowrank": HC_RANK, "indexer_n_heads": IDX_HEADS, "indexer_kv_heads": 1, "indexer_head_dim": IDX_DIM,
        "indexer_budget": BUDGET, "indexer_compress_ratio": BLOCK, "ple_layer_ids": ple, "ngram_size": NGRAM,
        "heads_per_ngram": HEADS_PER_NGRAM, "ngram_vocab_size_base": NGRAM_BASE, "split_ngram_parts": SHARDS,
        "ple_embed_dim": PLE_DIM, "ple_conv_kernel_size": 4, "max_position_embeddings": 262144,
        "rms_norm_eps": 1e-6, "hidden_act": "silu", "tie_word_embeddings": False, "eos_token_id": EOS,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25}}
    config = {"architectures": ["Qwen4ExpForConditionalGeneration"], "model_type": "qwen4_exp", "text_config": text,
              "tie_word_embeddings": False, "quantization": q, "quantization_config": q}
    json.dump(config, open(os.path.join(a.out, "config.json"), "w"), indent=2)
    for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        shutil.copy(os.path.join(GOLDEN, f), a.out)
    st = os.stat(os.path.join(a.out, "model.safetensors"))
    print(f"wrote {a.out}: pattern {a.pattern}, n-gram layers {ple}, {st.st_size / 2**30:.2f} GiB "
          f"({st.st_blocks * 512 / 2**30:.2f} GiB on disk)")


if __name__ == "__main__":
    main()
