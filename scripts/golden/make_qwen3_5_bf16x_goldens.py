#!/usr/bin/env python3
"""Third goldens for the quantized tiny qwen3_5 checkpoints: the float64 reference of CUDA's default prompt
precision (--precision bf16). Writes golden_bf16x.json beside golden_exact.json in mlx-4bit, mlx-mixed and
bonsai-2bit.

What CUDA's bf16 mode computes differently from golden_exact.json: in a prefill chunk (a call of more than 16
rows) every linear that runs on the bf16 prefill GEMM multiplies the exact weights by x rounded once to bf16
(kernels/prefill_linear_mma.cu). Which linears those are is the kernel's own rule (prefill_linear_mma_takes):
affine codes of 2, 4 or 8 bits in groups of 32, 64 or 128, K a multiple of 64 and of the group, 2-bit codes not
in groups of 32. Decode rows (the greedy continuation, one row a call) and the last rows' lm_head (the prompt's
last 3 logits rows: 3 rows, the decode kernel) are not rounded. So this reference is golden_exact.json's model
with exactly those inputs rounded: x -> float32 -> bf16, round to nearest even, in float64 otherwise. Its
distance E to golden_exact.json is the rounding's effect on these logits, propagated through the whole model
in float64 instead of bounded by hand; tests/conformance/qwen3_5_golden_check.py allows the bf16 mode 2 E (+ the
float32 tolerance) from golden_exact.json. Not a reference to match to float32 tolerance: rounding is
discontinuous, and our float32 x and float64's x round apart now and then (checked on the H200: ours is
0.84-4.1e-3 from this reference, 0.88-1.06 E from golden_exact.json).
The full forward of one prompt is not compared with its cached decode here (run_golden's check_prompt): the
full forward's many rows are rounded and the decode's single rows are not.

Runs where make_qwen3_5_exact_goldens.py runs (transformers + torch; the CPU will do); the variants are rebuilt
from the committed bf16-mtp weights and must equal the committed files byte for byte:
    python3 scripts/golden/make_qwen3_5_bf16x_goldens.py [GOLDENS_DIR]    (default tests/goldens/qwen3_5)"""
import json
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_qwen3_5_tiny as mk  # noqa: E402

VARIANTS = (("mlx-4bit", "4bit", True), ("mlx-mixed", "mixed", False), ("bonsai-2bit", "bonsai", False))
INVARIANT_ROWS = 16  # kernels.h kMaxDecodeRows: calls of more rows are prefill chunks


def mma_takes(bits, group, k):
    """prefill_linear_mma_takes (kernels/prefill_linear_mma.cu) for an affine weight with K = k."""
    if bits not in (2, 4, 8) or group not in (32, 64, 128):
        return False
    if bits == 2 and group == 32:
        return False
    return k % 64 == 0 and k % group == 0


def weight_format(kind, hf_name):
    if kind == "bonsai":
        return 2, 128
    if kind == "mixed":
        return mk.MIXED.get(mk.mlx_module_path(hf_name), (4, 64))
    return 4, 64


class RoundPrefillInputs:
    """Forward pre-hooks on the decoder layers' linears that the bf16 GEMM takes: x rounded to bf16 in calls of
    more than INVARIANT_ROWS rows."""

    def __init__(self, model, kind):
        self.handles, self.names = [], []
        for name, mod in model.named_modules():
            if not isinstance(mod, torch.nn.Linear) or ".layers." not in name or "visual" in name or "mtp" in name:
                continue
            bits, group = weight_format(kind, name + ".weight")
            if mma_takes(bits, group, mod.in_features):
                self.names.append(name)
                self.handles.append(mod.register_forward_pre_hook(self.hook))

    @staticmethod
    def hook(_mod, args):
        x = args[0]
        rows = x.numel() // x.shape[-1]
        if rows <= INVARIANT_ROWS:
            return None
        return (x.to(torch.float32).to(torch.bfloat16).to(x.dtype),) + tuple(args[1:])

    def remove(self):
        for h in self.handles:
            h.remove()


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/goldens/qwen3_5")
    made_with = (f"transformers {mk.transformers.__version__}, torch {torch.__version__}, float64 on "
                 f"{torch.cuda.get_device_name() if mk.DEV == 'cuda' else 'cpu'}; script scripts/golden/"
                 f"make_qwen3_5_bf16x_goldens.py (weights from make_qwen3_5_tiny.py)")
    # The committed bf16-mtp weights as the source (what make_qwen3_5_tiny.py's seeded build wrote; another torch
    # may draw other numbers, so they are read, not rebuilt); each variant rebuilt from them must equal its
    # committed file byte for byte.
    sd = {}
    for shard in sorted((root / "bf16-mtp").glob("model*.safetensors")):
        with mk.safe_open(str(shard), "pt") as f:
            for k in f.keys():
                sd[k] = f.get_tensor(k)
    base = mk.Qwen3_5ForConditionalGeneration.from_pretrained(root / "bf16-mtp", dtype=torch.float64).to(mk.DEV).eval()
    for vname, kind, tied in VARIANTS:
        folder = root / vname
        exact = json.loads((folder / "golden_exact.json").read_text())
        files, _, ref = mk.make_mlx_variant(sd, kind, tied, exact=True)
        with tempfile.TemporaryDirectory() as tmp:
            rebuilt = Path(tmp) / "model.safetensors"
            mk.write_safetensors(str(rebuilt), files, {"format": "mlx"})
            assert rebuilt.read_bytes() == (folder / "model.safetensors").read_bytes(), \
                f"{vname}: the rebuilt checkpoint differs from the committed one"
        rm = mk.reference_model(base, ref)
        rounding = RoundPrefillInputs(rm, kind)
        with mk.F64Patches():
            g = mk.run_golden(rm, exact["prompt_ids"], check_prompt=-1)
        rounding.remove()
        worst = max(abs(a - b) for i in range(len(g["logits"])) for ra, rb in zip(g["logits"][i], exact["logits"][i])
                    for a, b in zip(ra, rb))
        same = sum(a == b for a, b in zip(g["greedy"], exact["greedy"]))
        doc = {"made_with": made_with, "config": exact["config"],
               "dequantization": "exact affine: s*q + b in float64",
               "prompt_precision": "bf16: the inputs of the linears the bf16 prefill GEMM takes rounded to bf16 in "
                                   f"calls of more than {INVARIANT_ROWS} rows",
               "rounded_linears": rounding.names, "logits_max_abs_diff_to_exact": worst,
               "prompt_ids": exact["prompt_ids"], "logits_positions": exact["logits_positions"], **g}
        (folder / "golden_bf16x.json").write_text(json.dumps(doc, indent=1) + "\n")
        print(f"{vname}: {len(rounding.names)} linears rounded; bf16 x vs exact reference: logits max |diff| "
              f"{worst:.3e}; greedy sequences equal {same}/{len(g['greedy'])}", flush=True)


if __name__ == "__main__":
    main()
