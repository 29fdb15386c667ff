#!/usr/bin/env python3
"""Writes a random-weight gemma4 checkpoint slice at Gemma 4 26B-A4B's width, in mlx-community's layout (MLX affine
4-bit g64, the MLPs and routers 8-bit, experts as SwitchGLU stacks under language_model.model.*), for CPU
benchmarks: hidden 2816, 16 query heads; sliding layers 8 KV heads x 256 over a window of 1024; full layers 2 KV
heads x 512 with k_eq_v and proportional RoPE (a quarter of the pairs turning); a gelu-tanh MLP of 2112 beside
128 experts of 704 (top 8); vocab 262,144, tied and soft-capped (families-and-formats §2.5; the MLP width is the
published config's as recalled, not checked here). The plan is one period of the 5:1 pattern by default
("SSSSSF": 5 sliding layers, then a full one; the real model has 30 layers, 25 and 5).

    bench/gemma4/make_random_checkpoint.py OUT_DIR [--pattern SSSSSF]

Codes are random, scales small and biases centring them: the forward pass costs what the real model's does; the
tokens it predicts mean nothing. The tokenizer files are the tiny golden's (ids < 320 only). Needs numpy only."""
import argparse
import importlib.util
import json
import os
import shutil

import numpy as np

H, V, HEADS = 2816, 262144, 16
S_KV, S_HD, F_KV, F_HD, WINDOW = 8, 256, 2, 512, 1024
FFN, E, TOP, I_MOE = 2112, 128, 8, 704
HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "..", "tests", "goldens", "gemma4", "bf16")

# The nemotron_h slice's streaming safetensors writer and bf16 rounding (one definition).
_spec = importlib.util.spec_from_file_location("nh_slice", os.path.join(HERE, "..", "nemotron_h",
                                                                         "make_random_checkpoint.py"))
_nh = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_nh)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--pattern", default="SSSSSF")
    a = ap.parse_args()
    if set(a.pattern) - {"S", "F"} or not a.pattern.endswith("F"):
        raise SystemExit("pattern letters are S (sliding) and F (full), ending with F (the last layer is full)")
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(0)
    w = _nh.Writer()
    q = {"group_size": 64, "bits": 4, "mode": "affine"}

    def quantized(module, lead, out, inn, bits=4):
        shape = [*lead, out]
        w.add(module + ".weight", "U32", [*shape, inn * bits // 32],
              lambda: rng.integers(0, 2**32, size=[*shape, inn * bits // 32], dtype=np.uint64).astype(np.uint32))
        top = 2**bits - 1
        scale = 0.02 / (top / 2)
        w.add(module + ".scales", "BF16", [*shape, inn // 64], lambda: _nh.bf16(np.full([*shape, inn // 64], scale)))
        w.add(module + ".biases", "BF16", [*shape, inn // 64],
              lambda: _nh.bf16(np.full([*shape, inn // 64], -top / 2 * scale)))
        if bits != 4:
            q[module] = {"group_size": 64, "bits": bits}

    def dense(name, shape, value):
        w.add(name, "BF16", shape, lambda: _nh.bf16(np.full(shape, value, np.float32)))

    body = "language_model.model."
    quantized(body + "embed_tokens", [], V, H)
    for i, kind in enumerate(a.pattern):
        p = f"{body}layers.{i}."
        kv, hd = (S_KV, S_HD) if kind == "S" else (F_KV, F_HD)
        for n in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                  "post_feedforward_layernorm", "post_feedforward_layernorm_1", "pre_feedforward_layernorm_2",
                  "post_feedforward_layernorm_2"):
            dense(p + n + ".weight", [H], 1.0)
        quantized(p + "self_attn.q_proj", [], HEADS * hd, H)
        quantized(p + "self_attn.k_proj", [], kv * hd, H)
        if kind == "S":
            quantized(p + "self_attn.v_proj", [], kv * hd, H)
        quantized(p + "self_attn.o_proj", [], H, HEADS * hd)
        dense(p + "self_attn.q_norm.weight", [hd], 1.0)
        dense(p + "self_attn.k_norm.weight", [hd], 1.0)
        quantized(p + "mlp.gate_proj", [], FFN, H, 8)
        quantized(p + "mlp.up_proj", [], FFN, H, 8)
        quantized(p + "mlp.down_proj", [], H, FFN, 8)
        quantized(p + "router.proj", [], E, H, 8)
        dense(p + "router.scale", [H], 1.0)
        dense(p + "router.per_expert_scale", [E], 1.0)
        quantized(p + "experts.switch_glu.gate_proj", [E], I_MOE, H)
        quantized(p + "experts.switch_glu.up_proj", [E], I_MOE, H)
        quantized(p + "experts.switch_glu.down_proj", [E], H, I_MOE)
        dense(p + "layer_scalar", [1], 1.0)
    dense(body + "norm.weight", [H], 1.0)
    w.write(os.path.join(a.out, "model.safetensors"))

    types = ["sliding_attention" if k == "S" else "full_attention" for k in a.pattern]
    text = {
        "model_type": "gemma4_text", "vocab_size": V, "hidden_size": H, "intermediate_size": FFN,
        "num_hidden_layers": len(a.pattern), "num_attention_heads": HEADS, "num_key_value_heads": S_KV,
        "head_dim": S_HD, "global_head_dim": F_HD, "num_global_key_value_heads": F_KV, "attention_k_eq_v": True,
        "sliding_window": WINDOW, "layer_types": types, "final_logit_softcapping": 30.0, "enable_moe_block": True,
        "num_experts": E, "top_k_experts": TOP, "moe_intermediate_size": I_MOE, "hidden_size_per_layer_input": 0,
        "num_kv_shared_layers": 0, "max_position_embeddings": 262144, "rms_norm_eps": 1e-6,
        "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": True, "eos_token_id": 258,
        "pad_token_id": 256, "bos_token_id": 256,
        "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                            "full_attention": {"rope_type": "proportional", "rope_theta": 1000000.0,
                                               "partial_rotary_factor": 0.25}}}
    config = {"architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4", "text_config": text,
              "tie_word_embeddings": True, "quantization": q, "quantization_config": q}
    json.dump(config, open(os.path.join(a.out, "config.json"), "w"), indent=2)
    for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        shutil.copy(os.path.join(GOLDEN, f), a.out)
    print(f"wrote {a.out}: pattern {a.pattern}, {os.path.getsize(os.path.join(a.out, 'model.safetensors')) / 2**30:.2f} GiB")


if __name__ == "__main__":
    main()
