#!/usr/bin/env python3
"""Writes a random-weight qwen3_5 checkpoint (Hugging Face layout, bf16 safetensors, with an MTP head) of a
real model's shape, for benchmarks: the default is the 0.8B class (Qwen3.5-0.8B's shape: 24 layers, hidden 1024,
18 Gated DeltaNet + 6 gated full-attention layers, vocab 248320, tied embeddings).

    bench/qwen3_5/make_random_checkpoint.py OUT_DIR [--layers 24] [--hidden 1024] [--no-mtp]

Weights are N(0, 0.02), norms 1: the forward pass costs what the real
model's does; the tokens it predicts mean nothing, so drafts from its MTP head are seldom right.
Needs numpy only."""
import argparse
import json
import os
import struct

import numpy as np


def bf16_bytes(a: np.ndarray) -> bytes:
    """float32 -> bfloat16 by round-to-nearest-even on the upper 16 bits."""
    u = a.astype(np.float32).view(np.uint32)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16).tobytes()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--ffn", type=int, default=3584)
    ap.add_argument("--vocab", type=int, default=248320)
    ap.add_argument("--no-mtp", action="store_true")
    a = ap.parse_args()
    H, F, V = a.hidden, a.ffn, a.vocab
    kh, vh, kd, vd, conv_k = 16, 16, 128, 128, 4  # Gated DeltaNet heads and head dims
    qh, kvh, hd = 8, 2, 256                       # full attention
    layer_types = ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(a.layers)]
    text = {
        "model_type": "qwen3_5_text", "hidden_size": H, "intermediate_size": F, "num_hidden_layers": a.layers,
        "layer_types": layer_types, "full_attention_interval": 4, "num_attention_heads": qh,
        "num_key_value_heads": kvh, "head_dim": hd, "attn_output_gate": True, "linear_conv_kernel_dim": conv_k,
        "linear_key_head_dim": kd, "linear_value_head_dim": vd, "linear_num_key_heads": kh,
        "linear_num_value_heads": vh, "rms_norm_eps": 1e-6, "vocab_size": V, "max_position_embeddings": 32768,
        "partial_rotary_factor": 0.25, "hidden_act": "silu", "tie_word_embeddings": True,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25,
                            "mrope_section": [11, 11, 10], "mrope_interleaved": True},
        "mtp_num_hidden_layers": 0 if a.no_mtp else 1, "mtp_use_dedicated_embeddings": False,
        "eos_token_id": V - 1, "dtype": "bfloat16",
    }
    config = {"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
              "tie_word_embeddings": True, "text_config": text}
    rng = np.random.default_rng(0)
    shapes = {"model.language_model.embed_tokens.weight": (V, H), "model.language_model.norm.weight": (H,)}

    def attention(p):
        shapes.update({p + "self_attn.q_proj.weight": (2 * qh * hd, H), p + "self_attn.k_proj.weight": (kvh * hd, H),
                       p + "self_attn.v_proj.weight": (kvh * hd, H), p + "self_attn.o_proj.weight": (H, qh * hd),
                       p + "self_attn.q_norm.weight": (hd,), p + "self_attn.k_norm.weight": (hd,)})

    def mlp_and_norms(p):
        shapes.update({p + "mlp.gate_proj.weight": (F, H), p + "mlp.up_proj.weight": (F, H),
                       p + "mlp.down_proj.weight": (H, F), p + "input_layernorm.weight": (H,),
                       p + "post_attention_layernorm.weight": (H,)})

    for i, kind in enumerate(layer_types):
        p = f"model.language_model.layers.{i}."
        mlp_and_norms(p)
        if kind == "full_attention":
            attention(p)
        else:
            conv_dim = 2 * kh * kd + vh * vd
            shapes.update({p + "linear_attn.in_proj_qkv.weight": (conv_dim, H),
                           p + "linear_attn.in_proj_z.weight": (vh * vd, H), p + "linear_attn.in_proj_a.weight": (vh, H),
                           p + "linear_attn.in_proj_b.weight": (vh, H), p + "linear_attn.conv1d.weight": (conv_dim, 1, conv_k),
                           p + "linear_attn.out_proj.weight": (H, vh * vd), p + "linear_attn.norm.weight": (vd,),
                           p + "linear_attn.dt_bias": (vh,), p + "linear_attn.A_log": (vh,)})
    if not a.no_mtp:
        shapes.update({"mtp.fc.weight": (H, 2 * H), "mtp.norm.weight": (H,), "mtp.pre_fc_norm_embedding.weight": (H,),
                       "mtp.pre_fc_norm_hidden.weight": (H,)})
        attention("mtp.layers.0.")
        mlp_and_norms("mtp.layers.0.")

    os.makedirs(a.out, exist_ok=True)
    header, offset, names = {"__metadata__": {"format": "pt"}}, 0, sorted(shapes)
    for n in names:
        dtype, size = ("F32", 4) if n.endswith("A_log") else ("BF16", 2)
        nbytes = size * int(np.prod(shapes[n]))
        header[n] = {"dtype": dtype, "shape": list(shapes[n]), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    with open(os.path.join(a.out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(blob)) + blob)
        for n in names:
            shape = shapes[n]
            if n.endswith("A_log"):
                f.write(np.log(rng.uniform(1, 16, shape)).astype(np.float32).tobytes())
            elif len(shape) == 1:  # zero-centred norms (stored 0 is scale 1), dt_bias; the gated norm is plain
                f.write(bf16_bytes(np.full(shape, 1.0 if n.endswith("linear_attn.norm.weight") else 0.0, np.float32)))
            else:
                for rows in np.array_split(np.arange(shape[0]), max(1, shape[0] // 4096)):  # bounded memory
                    f.write(bf16_bytes(rng.standard_normal((len(rows),) + shape[1:], np.float32) * 0.02))
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    params = sum(int(np.prod(s)) for s in shapes.values())
    print(f"{a.out}: {params / 1e6:.0f}M parameters ({offset / 2**30:.2f} GiB), "
          f"{layer_types.count('linear_attention')} GDN + {layer_types.count('full_attention')} attention layers"
          f"{'' if a.no_mtp else ', MTP head'}")


if __name__ == "__main__":
    main()
