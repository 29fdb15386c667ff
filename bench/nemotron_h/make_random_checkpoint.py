#!/usr/bin/env python3
"""Writes a random-weight nemotron_h checkpoint slice at a real model's width, in mlx-community's layout (MLX
affine 4-bit g64, experts stacked as switch_mlp.fc1/fc2), for CPU benchmarks: hidden 2688, 128 routed experts of
1856 with top-6 and a shared expert of 3712, Mamba-2 64 heads x 64 with ssm_state 128 in 8 groups, attention
32 q / 2 kv heads x 128 (the families-and-formats §2.1 figures for Nemotron 3 Nano 30B-A3B; the widths not
listed there are those of its published config as recalled, not checked here), over a short plan of layers
(default "ME*MEM*E": 3 Mamba-2, 3 expert, 2 attention layers) and a 131072 vocabulary, with an MTP head (an
attention then an experts sublayer, as Nemotron-H's).

    bench/nemotron_h/make_random_checkpoint.py OUT_DIR [--pattern ME*MEM*E]

Codes are random, scales small and biases centring them: the forward pass costs what the real model's does; the
tokens it predicts mean nothing. The tokenizer files are the tiny golden's (ids < 320 only). Needs numpy only."""
import argparse
import json
import os
import shutil
import struct

import numpy as np

H, V = 2688, 131072
HEADS, KV, HD = 32, 2, 128
M_HEADS, M_DIM, STATE, GROUPS, CONV = 64, 64, 128, 8, 4
E, TOP, I_MOE, I_SHARED = 128, 6, 1856, 3712
GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "goldens", "nemotron_h", "bf16")


def bf16(a):
    u = np.ascontiguousarray(a, np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


class Writer:
    """Streams tensors into one safetensors file: the header first (shapes known up front), then the data. A tensor
    added with make None is left a hole (zeros that take no disk: the file is sparse)."""

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
            for _, _, _, size, make in self.entries:
                if make is None:
                    f.seek(size, os.SEEK_CUR)
                else:
                    f.write(make().tobytes())
            f.truncate()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--pattern", default="ME*MEM*E")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(0)
    w = Writer()

    def quantized(module, lead, out, inn):
        shape = [*lead, out]
        w.add(module + ".weight", "U32", [*shape, inn // 8],
              lambda: rng.integers(0, 2**32, size=[*shape, inn // 8], dtype=np.uint64).astype(np.uint32))
        scale = 0.02 / 8
        w.add(module + ".scales", "BF16", [*shape, inn // 64], lambda: bf16(np.full([*shape, inn // 64], scale)))
        w.add(module + ".biases", "BF16", [*shape, inn // 64], lambda: bf16(np.full([*shape, inn // 64], -8 * scale)))

    def dense(name, shape, value=None, dtype="BF16"):
        def make():
            v = np.full(shape, value, np.float32) if value is not None else rng.normal(0, 0.02, shape).astype(np.float32)
            return bf16(v) if dtype == "BF16" else v
        w.add(name, dtype, shape, make)

    quantized("backbone.embeddings", [], V, H)
    inner, channels = M_HEADS * M_DIM, M_HEADS * M_DIM + 2 * GROUPS * STATE
    def layer(p, kind):
        dense(p + "norm.weight", [H], 1.0)
        m = p + "mixer."
        if kind == "M":
            quantized(m + "in_proj", [], inner + channels + M_HEADS, H)
            dense(m + "conv1d.weight", [channels, CONV, 1])
            dense(m + "conv1d.bias", [channels], 0.0)
            dense(m + "A_log", [M_HEADS], 0.0, "F32")
            dense(m + "D", [M_HEADS], 1.0)
            dense(m + "dt_bias", [M_HEADS], 0.0)
            dense(m + "norm.weight", [inner], 1.0)
            quantized(m + "out_proj", [], H, inner)
        elif kind == "*":
            quantized(m + "q_proj", [], HEADS * HD, H)
            quantized(m + "k_proj", [], KV * HD, H)
            quantized(m + "v_proj", [], KV * HD, H)
            quantized(m + "o_proj", [], H, HEADS * HD)
        elif kind == "E":
            dense(m + "gate.weight", [E, H])
            dense(m + "gate.e_score_correction_bias", [E], 0.0, "F32")
            quantized(m + "switch_mlp.fc1", [E], I_MOE, H)
            quantized(m + "switch_mlp.fc2", [E], H, I_MOE)
            quantized(m + "shared_experts.up_proj", [], I_SHARED, H)
            quantized(m + "shared_experts.down_proj", [], H, I_SHARED)
        else:
            raise SystemExit(f"pattern letters are M * E, not {kind!r}")

    for i, kind in enumerate(a.pattern):
        layer(f"backbone.layers.{i}.", kind)
    # The MTP head ("*E", as Nemotron-H's): fusion on its first sublayer, the final norm on its last. The real
    # checkpoints ship it in bf16 and mlx-lm's conversion drops it; here it is 4-bit like the rest, so that
    # tf_model_speed_bench's MTP_DRAFTS can time drafting at this width.
    dense("mtp.layers.0.enorm.weight", [H], 1.0)
    dense("mtp.layers.0.hnorm.weight", [H], 1.0)
    quantized("mtp.layers.0.eh_proj", [], H, 2 * H)
    layer("mtp.layers.0.", "*")
    layer("mtp.layers.1.", "E")
    dense("mtp.layers.1.final_layernorm.weight", [H], 1.0)
    dense("backbone.norm_f.weight", [H], 1.0)
    quantized("lm_head", [], V, H)
    w.write(os.path.join(a.out, "model.safetensors"))

    q = {"group_size": 64, "bits": 4, "mode": "affine"}
    config = {
        "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "vocab_size": V, "hidden_size": H,
        "hybrid_override_pattern": a.pattern, "num_hidden_layers": len(a.pattern), "num_attention_heads": HEADS,
        "num_key_value_heads": KV, "head_dim": HD, "mamba_num_heads": M_HEADS, "mamba_head_dim": M_DIM,
        "ssm_state_size": STATE, "n_groups": GROUPS, "conv_kernel": CONV, "use_conv_bias": True,
        "n_routed_experts": E, "num_experts_per_tok": TOP, "moe_intermediate_size": I_MOE,
        "moe_shared_expert_intermediate_size": I_SHARED, "n_shared_experts": 1, "n_group": 1, "topk_group": 1,
        "norm_topk_prob": True, "routed_scaling_factor": 2.5, "mlp_hidden_act": "relu2", "layer_norm_epsilon": 1e-5,
        "max_position_embeddings": 8192, "tie_word_embeddings": False, "eos_token_id": 258, "pad_token_id": 256,
        "num_nextn_predict_layers": 1, "mtp_hybrid_override_pattern": "*E",
        "quantization": q, "quantization_config": q,
    }
    json.dump(config, open(os.path.join(a.out, "config.json"), "w"), indent=2)
    for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        shutil.copy(os.path.join(GOLDEN, f), a.out)
    print(f"wrote {a.out}: pattern {a.pattern}, {os.path.getsize(os.path.join(a.out, 'model.safetensors')) / 2**30:.2f} GiB")


if __name__ == "__main__":
    main()
