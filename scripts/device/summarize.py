#!/usr/bin/env python3
"""The short table run-gpu-suite.sh prints last: summary.tsv plus the key benchmark figures vs the targets."""
import json
import os
import sys

out = sys.argv[1]
rows = [l.rstrip("\n").split("\t", 1) for l in open(os.path.join(out, "summary.tsv")) if "\t" in l]
bench = {}
for name in sorted(os.listdir(out)):
    if name.startswith("bench") and name.endswith(".json"):
        try:
            for k, v in json.load(open(os.path.join(out, name))).items():
                bench.setdefault(k, v["value"])
        except Exception:  # a run cut short
            pass


def b(key, fmt="{:.1f}"):
    return fmt.format(bench[key]) if key in bench else "-"


print("\n================ TensorFold CUDA suite ================")
for k, v in rows:
    print(f"{k:18s} {v}")
if bench:
    print("-------------------------------------------------------")
    print(f"copy bandwidth           {b('copy_bandwidth', '{:.2f}')} TB/s")
    for tag, name, target in [("smollm2_q4_1", "(a) SmolLM2 Q4_1", "target >= 1000 tok/s"),
                              ("smollm2_shape_random", "(a') SmolLM2 shape", ""),
                              ("llama8b_q4g64", "(b) 8B q4 g64", "target >= 75% of bound"),
                              ("class27b_q4g64", "(c) 27B q4 g64", "target >= 75% of bound")]:
        if f"{tag}.decode_tokens_per_s" not in bench:
            continue
        share = bench.get(f"{tag}.share_of_bound")
        gshare = bench.get(f"{tag}.share_of_bound_gpu_time")
        print(f"{name:24s} {b(tag + '.decode_tokens_per_s')} tok/s, "
              f"{'' if share is None else f'{100 * share:.1f}% of bound'}"
              f"{'' if gshare is None else f' ({100 * gshare:.1f}% on GPU time)'}  {target}")
        if f"{tag}.prefill_2k_tokens_per_s" in bench:
            print(f"{'':24s} prefill 2k: {b(tag + '.prefill_2k_tokens_per_s', '{:.0f}')} tok/s")
    if "matmul8b.ours_q4g64_rows1_ms" in bench:
        print(f"8B linear stack, 1 row   ours q4g64 {b('matmul8b.ours_q4g64_rows1_ms', '{:.3f}')} ms "
              f"({100 * bench.get('matmul8b.ours_q4g64_share_of_bandwidth', 0):.0f}% bw), ours bf16 "
              f"{b('matmul8b.ours_bf16_rows1_ms', '{:.3f}')} ms, cuBLAS bf16 {b('matmul8b.cublas_bf16_rows1_ms', '{:.3f}')} ms")
        print(f"                         cuBLAS bf16 / ours q4 = {b('matmul8b.ratio_cublas_bf16_over_ours_q4', '{:.2f}')}x, "
              f"cuBLAS bf16 / ours bf16 = {b('matmul8b.ratio_cublas_bf16_over_ours_bf16', '{:.2f}')}x")
        print("                         ours q4 rows 1/2/4/8/16: " +
              " / ".join(b(f"matmul8b.ours_q4g64_rows{r}_ms", "{:.3f}") for r in (1, 2, 4, 8, 16)) + " ms")
print("=======================================================")
