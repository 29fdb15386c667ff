#!/usr/bin/env python3
"""Second goldens for the quantized tiny qwen3_5 checkpoints: the reference with every quantized matrix
dequantized to the exact affine value s*q + b (float64), where golden.json's reference rounds it the way MLX
does, rnd(rnd(s*q) + b) with rnd = round to the scale type. Writes golden_exact.json beside golden.json in
mlx-4bit, mlx-mixed and bonsai-2bit.

Why two: the MLX backend computes MLX's rounded value (mx.quantized_matmul dequantizes in the activation type),
the CUDA backend multiplies by the exact value (its integer kernel forms s*sum(q*x) + b*sum(x), which has no
per-weight rounding to emulate; docs/cuda.md, "Gated DeltaNet and gated attention"). Each backend is checked
against the reference of its own arithmetic (tests/conformance/qwen3_5_golden_check.py --exact-dequant for
CUDA), and the check prints the distance to the other as well.

Runs on the device machine (transformers + torch; no network):
    python3 scripts/golden/make_qwen3_5_exact_goldens.py [GOLDENS_DIR]    (default tests/goldens/qwen3_5)
The checkpoints are not rewritten: the script rebuilds them with make_qwen3_5_tiny.py's seeded code and stops
unless every rebuilt safetensors file equals the committed one byte for byte, so the exact reference is the
reference of exactly those codes, scales and biases."""
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_qwen3_5_tiny as mk  # noqa: E402

VARIANTS = (("mlx-4bit", "4bit", True), ("mlx-mixed", "mixed", False), ("bonsai-2bit", "bonsai", False))


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/goldens/qwen3_5")
    made_with = (f"transformers {mk.transformers.__version__}, torch {torch.__version__}, float64 on "
                 f"{torch.cuda.get_device_name() if mk.DEV == 'cuda' else 'cpu'}; script scripts/golden/"
                 f"make_qwen3_5_exact_goldens.py (weights from make_qwen3_5_tiny.py)")
    model, _ = mk.build_model()
    sd, _ = mk.disk_state_dict(model)
    base = mk.Qwen3_5ForConditionalGeneration.from_pretrained(root / "bf16-mtp", dtype=torch.float64).to(mk.DEV).eval()
    rsd = base.state_dict()
    for k, v in sd.items():
        assert torch.equal(rsd[k].cpu(), v.to(torch.float64)), f"bf16-mtp differs from the rebuilt weights at {k}"
    for vname, kind, tied in VARIANTS:
        folder = root / vname
        golden = json.loads((folder / "golden.json").read_text())
        files, _, ref = mk.make_mlx_variant(sd, kind, tied, exact=True)
        with tempfile.TemporaryDirectory() as tmp:
            rebuilt = Path(tmp) / "model.safetensors"
            mk.write_safetensors(str(rebuilt), files, {"format": "mlx"})
            assert rebuilt.read_bytes() == (folder / "model.safetensors").read_bytes(), \
                f"{vname}: the rebuilt checkpoint differs from the committed one"
        rm = mk.reference_model(base, ref)
        with mk.F64Patches():
            g = mk.run_golden(rm, golden["prompt_ids"])
        worst = max(abs(a - b) for i in range(len(g["logits"])) for ra, rb in zip(g["logits"][i], golden["logits"][i])
                    for a, b in zip(ra, rb))
        same = sum(a == b for a, b in zip(g["greedy"], golden["greedy"]))
        doc = {"made_with": made_with, "config": golden["config"],
               "dequantization": "exact affine: s*q + b in float64 (golden.json: MLX's rnd(rnd(s*q) + b))",
               "prompt_ids": golden["prompt_ids"], "logits_positions": golden["logits_positions"], **g}
        (folder / "golden_exact.json").write_text(json.dumps(doc, indent=1) + "\n")
        print(f"{vname}: exact vs MLX-rounded reference: logits max |diff| {worst:.3e}; greedy sequences equal "
              f"{same}/{len(g['greedy'])}; min gap per prompt {[min(x) for x in g['gaps']]}", flush=True)


if __name__ == "__main__":
    main()
