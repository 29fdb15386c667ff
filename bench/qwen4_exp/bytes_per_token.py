#!/usr/bin/env python3
"""The bytes one decode token reads from a qwen4_exp checkpoint (MLX layout, e.g. make_random_checkpoint.py's), from
its config and safetensors header alone:
  - every tensor once, but: the expert stacks (switch_mlp.*) top_k / num_experts of them; the embedding one row;
  - the n-gram tables (ngram_embedding.shard_*) one row a head a layer: (ngram_size - 1) x heads_per_ngram rows,
    each its codes, scales and biases (what NgramTable::row reads from the mapped file), and the 4 KiB pages
    those rows touch (the page cache's cost, a disk read each when cold).

    bench/qwen4_exp/bytes_per_token.py CHECKPOINT_DIR [--layers N]

--layers N scales the per-layer terms from the slice's layers to N layers (the real model's 40), keeping the slice's
mix of layer kinds; the output projection, embedding row and final mixer are counted once."""
import argparse
import json
import os
import re
import struct


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--layers", type=int, default=0)
    a = ap.parse_args()
    cfg = json.load(open(os.path.join(a.checkpoint, "config.json")))
    text = cfg.get("text_config", cfg)
    with open(os.path.join(a.checkpoint, "model.safetensors"), "rb") as f:
        header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    header.pop("__metadata__", None)
    size = {k: v["data_offsets"][1] - v["data_offsets"][0] for k, v in header.items()}
    experts, top = text["num_experts"], text["num_experts_per_tok"]
    table_heads = (text.get("ngram_size", 3) - 1) * text.get("heads_per_ngram", 8)
    layer_bytes = other = table = 0
    table_layers = set()
    for k, n in size.items():
        layer = re.search(r"\.layers\.(\d+)\.", k)
        if ".ngram_embedding.shard_" in k:  # a row: its share of shard 0's codes, scales and biases
            if ".shard_0." in k:
                table += table_heads * n / header[k]["shape"][0]
                table_layers.add(layer.group(1))
            continue
        if ".switch_mlp." in k:
            n = n * top / experts
        elif "embed_tokens" in k:
            n = n / header[k]["shape"][0]
        if layer:
            layer_bytes += n
        else:
            other += n
    slice_layers = text["num_hidden_layers"]
    scale = a.layers / slice_layers if a.layers else 1.0
    row = table / max(len(table_layers), 1) / table_heads
    pages = table_heads * len(table_layers)
    total = layer_bytes * scale + other + table * scale
    print(f"{a.checkpoint}: {slice_layers} layers" + (f", scaled to {a.layers}" if a.layers else ""))
    print(f"  layers {layer_bytes * scale / 2**20:.1f} MiB, once a token (output projection, embedding row, final "
          f"mixer) {other / 2**20:.1f} MiB")
    print(f"  n-gram tables: {len(table_layers)} layer(s) x {table_heads} rows of {row:.0f} B = {table:.0f} B "
          f"({pages} pages of 4 KiB touched, {pages * 4} KiB)" + (f"; x {scale:.0f}" if a.layers else ""))
    print(f"  total {total / 2**20:.1f} MiB a token; the tables {table * scale / total:.2e} of it")


if __name__ == "__main__":
    main()
