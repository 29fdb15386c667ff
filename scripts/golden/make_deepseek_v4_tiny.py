#!/usr/bin/env python3
"""A tiny random `deepseek_v4` (DeepSeek-V4-Flash) checkpoint in two forms, with float64 golden logits and greedy
tokens from transformers' deepseek_v4 (the reference: mlx-lm has no model for it).

Runs on a CPU (transformers >= 5.25 with deepseek_v4, torch, safetensors, numpy; no network, no mlx):
    python3 scripts/golden/make_deepseek_v4_tiny.py [OUT_DIR]   # OUT_DIR default tests/goldens/deepseek_v4
and writes OUT_DIR/{bf16,fp8-mxfp4,mlx-4bit,release}/ (`--release-only` writes release/ from fp8-mxfp4/ alone). Everything is seeded CPU init and float64 CPU arithmetic.

The model (V4-Flash's shape shrunk; every piece of issue 60's model part is exercised):
  vocab 320, hidden 64, 4 layers: [sliding, compressed_sparse (CSA), heavily_compressed (HCA), CSA] attention,
  mlp [hash_moe, hash_moe, moe, moe];
  - attention: 4 heads of 32 sharing one K=V head (kv norm), q_lora 32 with an unweighted per-head norm, RoPE on
    the last 16 dims (partial_rotary_factor 0.5, interleaved pairs) and the output rotated back, sliding window 8,
    learned sinks, grouped low-rank output (o_groups 2, o_lora_rank 16);
  - CSA: compress rate 4 (overlapping windows of 8, stride 4), softmax-gated pooling with position bias, RoPE at
    the window's first position with the "compress" rope (theta 160000, YaRN factor 4 over 64 positions), an
    indexer of 16 heads of 16 keeping index_topk 4 entries: past position 19 it drops entries;
  - HCA: compress rate 8, non-overlapping, no indexer;
  - MoE: 8 experts of 32, top 2, sqrtsoftplus scores, routed_scaling_factor 1.5, a shared expert, swiglu_limit
    0.2 (small, so that the clamp bites on these random weights); the first two layers route by tid2eid[token]
    (a seeded table of distinct experts per token), weighted by the learned scores;
  - mHC: hc_mult 2 streams, 20 Sinkhorn iterations; the learned hc_head before the final norm; untied head.
  Prompts of 5, 17 and 40 tokens and 16 greedy steps: the window slides and both compressors fill.

Weights: torch.manual_seed(0) init by transformers, then what init leaves trivial is perturbed with seeded noise
(norms 1 + N(0, 0.1), sinks N(0, 0.5), position biases N(0, 0.5), the router N(0, 0.5) and its correction bias
N(0, 0.05), mHC fn/base N(0, 0.3) and scale 1 + N(0, 0.2), the indexer's q/weights projections N(0, 0.3) so that
entry scores stand apart); every value is then rounded to bf16.

Variants (OUT_DIR/<name>/: config.json, model.safetensors, tokenizer files, golden.json), both under the names
transformers' save_pretrained writes (the DeepSeek reference naming: model.layers.N.attn.{wq_a,q_norm,wq_b,wkv,
norm,wo_a,wo_b,attn_sink,compressor.*,indexer.*}, ffn.{gate,experts.N.w1/w2/w3,shared_experts}, hc_attn_*,
hc_ffn_*, model.hc_head.*, head.weight):
  (a) bf16: bf16 tensors (the float32-kept ones float32; tid2eid int64);
  (b) fp8-mxfp4: (a) with the decoder's attention and shared-expert linear weights as float8 E4M3 with UE8M0
      (power of two, float8_e8m0fnu) scales per 128x128 tile under `<name>.scale`, and the routed experts as
      MXFP4: int8 bytes of two E2M1 codes (low nibble the even input) with a UE8M0 scale per 32 inputs
      (`<name>.scale`), config quantization_config {quant_method fp8, scale_fmt ue8m0, weight_block_size
      [128, 128]}, expert_dtype fp4; its golden is the same float64 reference over the dequantized weights;
  (c) mlx-4bit: (a) with its Linear and Embedding weights (in-features a multiple of 32) as MLX affine 4-bit codes
      in groups of 32 (routers 8-bit), config.json `quantization`, the same names (mlx-lm has no deepseek_v4 model
      to rename them); its golden over the weights as MLX dequantizes them (scale * q and + bias rounded to bf16);
  (d) release: (b) under the release's own names (embed.weight, layers.N.*, norm.weight, hc_head_{fn,base,scale},
      attn.kv_norm; head.weight as saved) and its legacy config keys (compress_ratios with one more entry, for the
      MTP layer, compress_rate_csa / _hca, num_hash_layers, qk_rope_head_dim, a flat rope_scaling of "type" yarn);
      transformers' from_pretrained maps those names onto the same parameters (checked when written); the same
      weights, so (b)'s golden.

golden.json: prompt_ids, logits (float32 logits of the last 3 prompt positions), greedy (16 tokens by repeated
argmax over a full re-forward), gaps, top1_logit, indexer_margin and routing_margin (the smallest gap between the
last kept and the first dropped entry / expert met; the script refuses a seed with a margin under 1e-4).
"""
import json
import os
import shutil
import sys

import numpy as np
import torch
import transformers
from safetensors.torch import save_file
from transformers import DeepseekV4Config, DeepseekV4ForCausalLM
from transformers.models.deepseek_v4 import modeling_deepseek_v4 as md

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_qwen4_exp_tiny as q4  # noqa: E402  (the float64 patches)
from make_nemotron_h_tiny import round_bf16_, run_golden  # noqa: E402
from make_qwen3_5_tiny import mlx_dequantize, mlx_quantize, tokenizer_files, write_common  # noqa: E402

EOS = 258
LAYER_TYPES = ["sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention",
               "compressed_sparse_attention"]
CONFIG = dict(
    vocab_size=320, hidden_size=64, moe_intermediate_size=32, num_hidden_layers=len(LAYER_TYPES),
    num_attention_heads=4, head_dim=32, q_lora_rank=32, n_routed_experts=8, n_shared_experts=1,
    num_experts_per_tok=2, index_n_heads=16, index_head_dim=16, index_topk=4, sliding_window=8, o_groups=2,
    o_lora_rank=16, hc_mult=2, hc_sinkhorn_iters=20, hc_eps=1e-6, swiglu_limit=0.2, routed_scaling_factor=1.5,
    compress_rates={"compressed_sparse_attention": 4, "heavily_compressed_attention": 8},
    layer_types=LAYER_TYPES, mlp_layer_types=["hash_moe", "hash_moe", "moe", "moe"], partial_rotary_factor=0.5,
    rope_theta=10000.0, compress_rope_theta=160000.0, max_position_embeddings=256,
    rope_parameters={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64,
                     "beta_fast": 32, "beta_slow": 1},
    rms_norm_eps=1e-6, tie_word_embeddings=False, bos_token_id=0, eos_token_id=EOS, pad_token_id=0)
PROMPT_LENS = [5, 17, 40]
KEEP_F32 = ("attn_sink", "ape", "gate.bias", "hc_attn_fn", "hc_attn_base", "hc_attn_scale", "hc_ffn_fn",
            "hc_ffn_base", "hc_ffn_scale", "hc_fn", "hc_base", "hc_scale", "norm.weight")
LOG = []
MARGINS = {"indexer": [], "routing": []}


def log(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    LOG.append(s)


IN_INDEXER = [False]
_ORIG_INDEXER_FORWARD = md.DeepseekV4Indexer.forward


def _indexer_forward(self, *a, **kw):
    IN_INDEXER[0] = True
    try:
        return _ORIG_INDEXER_FORWARD(self, *a, **kw)
    finally:
        IN_INDEXER[0] = False


def _topk_recording(self, k, *a, **kw):
    # The indexer's entry choice (scores [B, S, T].topk(k)): per query, the gap between the k-th and the next
    # selectable entry (future entries hold -inf).
    if IN_INDEXER[0] and self.dim() == 3 and self.shape[-1] > k:
        s = torch.sort(self, dim=-1, descending=True).values
        for row in s.reshape(-1, s.shape[-1]):
            if torch.isfinite(row[k]):
                MARGINS["indexer"].append(float(row[k - 1] - row[k]))
    return q4._ORIG["topk"](self, k, *a, **kw)


class F64Patches:
    def __enter__(self):
        q4._ORIG.update(float=torch.Tensor.float, to=torch.Tensor.to, softmax=torch.nn.functional.softmax,
                        tsoftmax=torch.Tensor.softmax, topk=torch.Tensor.topk)
        torch.Tensor.float = q4._float
        torch.Tensor.to = q4._to
        torch.nn.functional.softmax = q4._softmax
        torch.Tensor.softmax = lambda x, *a, dtype=None, **k: q4._ORIG["tsoftmax"](
            x, *a, dtype=(torch.float64 if x.dtype == torch.float64 and dtype is not None else dtype), **k)
        torch.Tensor.topk = _topk_recording
        md.DeepseekV4Indexer.forward = _indexer_forward
        return self

    def __exit__(self, *a):
        torch.Tensor.float, torch.Tensor.to = q4._ORIG["float"], q4._ORIG["to"]
        torch.nn.functional.softmax, torch.Tensor.topk = q4._ORIG["softmax"], q4._ORIG["topk"]
        torch.Tensor.softmax = q4._ORIG["tsoftmax"]
        md.DeepseekV4Indexer.forward = _ORIG_INDEXER_FORWARD


def make_config():
    cfg = DeepseekV4Config(**CONFIG)
    cfg._attn_implementation = "eager"
    cfg._experts_implementation = "eager"
    return cfg


def build_model():
    torch.manual_seed(0)
    model = DeepseekV4ForCausalLM(make_config()).to(torch.float32).eval()
    rng = np.random.default_rng(61)
    with torch.no_grad():
        for name, p in list(model.named_parameters()) + list(model.named_buffers()):
            noise = lambda scale: torch.from_numpy(rng.normal(0, scale, tuple(p.shape)).astype(np.float32))  # noqa
            if name.endswith("tid2eid"):
                E, k = CONFIG["n_routed_experts"], CONFIG["num_experts_per_tok"]
                p.copy_(torch.from_numpy(np.stack([rng.permutation(E)[:k] for _ in range(p.shape[0])])))
            elif "inv_freq" in name:
                continue
            elif name.endswith(("indexer.q_b_proj.weight", "scorer.weights_proj.weight")):
                p.copy_(noise(0.3))
            elif name.endswith("norm.weight"):
                p.copy_(1.0 + noise(0.1))
            elif name.endswith(("sinks", "position_bias")):
                p.copy_(noise(0.5))
            elif name.endswith("mlp.gate.weight"):
                p.copy_(noise(0.5))
            elif name.endswith("e_score_correction_bias"):
                p.copy_(noise(0.05))
            elif name.endswith(("_hc.fn", "_hc.base", "hc_head.hc_fn", "hc_head.hc_base")):
                p.copy_(noise(0.3))
            elif name.endswith(("_hc.scale", "hc_head.hc_scale")):
                p.copy_(1.0 + noise(0.2))
        for name, p in list(model.named_parameters()) + list(model.named_buffers()):
            if p.is_floating_point() and "inv_freq" not in name:
                assert torch.isfinite(p).all(), name
                p.copy_(round_bf16_(p))
    return model


def disk_state_dict(model, d):
    """save_pretrained's names for the model's weights (its conversion mapping reversed), read back from a save."""
    model.save_pretrained(d)
    from safetensors import safe_open
    with safe_open(os.path.join(d, "model.safetensors"), "pt") as f:
        sd = {k: f.get_tensor(k) for k in f.keys()}
    os.remove(os.path.join(d, "model.safetensors"))
    out = {}
    for k, v in sd.items():
        if v.is_floating_point():
            v = v.to(torch.float32 if k.endswith(KEEP_F32) else torch.bfloat16)
        out[k] = v.contiguous()
    return out


@torch.no_grad()
def reference(model, prompts, min_margin=1e-4):
    m = DeepseekV4ForCausalLM(make_config()).to(torch.float64).eval()
    m.load_state_dict({k: v.to(torch.float64) if v.is_floating_point() else v
                       for k, v in model.state_dict().items()})
    hooks = []
    for layer in m.model.layers:
        if not layer.mlp.is_hash:
            hooks.append(layer.mlp.gate.register_forward_hook(
                lambda mod, inp, out: MARGINS["routing"].append(float((lambda s: (s[:, 1] - s[:, 2]).min())(
                    torch.sort(mod.score_fn(out[0]) + mod.e_score_correction_bias, dim=-1,
                               descending=True).values)))))
    with F64Patches():
        golden = run_golden(m, prompts)
    for h in hooks:
        h.remove()
    worst = 0.0
    for i, ids in enumerate(prompts):
        lg = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -3:].double().numpy()
        worst = max(worst, float(np.abs(lg - np.array(golden["logits"][i], np.float64)).max()))
    log(f"  transformers float32 vs the float64 golden: max |diff| {worst:.2e}")
    assert worst < 1e-3, worst
    for i, ids in enumerate(prompts):
        x = torch.tensor([ids])
        out = m.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=len(golden["greedy"][i]),
                         do_sample=False, eos_token_id=None, pad_token_id=0)
        cached = out[0, len(ids):].tolist()
        log(f"  prompt {i}: cached greedy == full re-forward greedy: {cached == golden['greedy'][i]}")
    im, rm = min(MARGINS["indexer"]), min(MARGINS["routing"])
    log(f"  indexer choices with entries dropped: {len(MARGINS['indexer'])}; smallest score margin {im:.1e}")
    log(f"  smallest routing margin (2nd vs 3rd biased score): {rm:.1e}")
    assert len(MARGINS["indexer"]) > 0
    assert im >= min_margin and rm >= min_margin, "a near-tie: pick another noise seed in build_model"
    golden.update(indexer_choices=len(MARGINS["indexer"]), indexer_margin=im, routing_margin=rm)
    return golden


# ---- FP8 (UE8M0 128x128 tiles) and MXFP4 experts -------------------------------------------------------------
TILE = 128
E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], np.float32)


def ue8m0_ceil(x):
    """The power of two >= x (DeepSeek's UE8M0 scales round up), as a float32 tensor."""
    return torch.exp2(torch.ceil(torch.log2(x.clamp(min=2.0 ** -126))))


def fp8_tiles(w):
    w = w.float()
    R, C = w.shape
    sr, sc = -(-R // TILE), -(-C // TILE)
    scale = torch.zeros(sr, sc, dtype=torch.float32)
    q = torch.empty(R, C, dtype=torch.float8_e4m3fn)
    for i in range(sr):
        for j in range(sc):
            blk = w[i * TILE:(i + 1) * TILE, j * TILE:(j + 1) * TILE]
            s = ue8m0_ceil(blk.abs().max() / 448.0)
            scale[i, j] = s
            q[i * TILE:(i + 1) * TILE, j * TILE:(j + 1) * TILE] = (blk / s).to(torch.float8_e4m3fn)
    full = scale.repeat_interleave(TILE, 0)[:R].repeat_interleave(TILE, 1)[:, :C]
    return q, scale.to(torch.float8_e8m0fnu), q.float() * full


def mxfp4(w):
    """w [R, C]: int8 [R, C/2] (low nibble the even input) and a UE8M0 scale per 32 inputs; value = e2m1 * scale."""
    w = w.float().numpy()
    R, C = w.shape
    g = w.reshape(R, C // 32, 32)
    amax = np.abs(g).max(axis=-1)
    scale = ue8m0_ceil(torch.from_numpy(amax / 6.0)).numpy()
    x = g / scale[..., None]
    codes = np.abs(x[..., None] - E2M1[None, None, None, :8]).argmin(-1)  # nearest magnitude
    codes = np.where((x < 0) & (codes > 0), codes + 8, codes).astype(np.uint8).reshape(R, C)
    packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8).view(np.int8)
    deq = (E2M1[codes.reshape(R, C // 32, 32)] * scale[..., None]).reshape(R, C)
    return (torch.from_numpy(packed.copy()), torch.from_numpy(scale.astype(np.float32)).to(torch.float8_e8m0fnu),
            torch.from_numpy(deq.astype(np.float32)))


def fp8_mxfp4_tensors(k, v):
    if ".layers." in k and ".ffn.experts." in k and k.endswith(".weight"):
        q, s, deq = mxfp4(v)
    elif ".layers." in k and k.endswith(".weight") and v.dim() == 2 and (".attn.w" in k or ".shared_experts." in k):
        q, s, deq = fp8_tiles(v)
    else:
        return None
    return {k: q, k[:-len("weight")] + "scale": s}, deq


MLX_GROUP, MLX_BITS, MLX_ROUTER_BITS = 32, 4, 8


def mlx_quantizable(k, v):
    # What mlx_lm.convert quantizes: Linear and Embedding weights (2-D, in-features a multiple of the group).
    return k.endswith(".weight") and v.dim() == 2 and v.shape[1] % MLX_GROUP == 0


def mlx_bits(k):
    return MLX_ROUTER_BITS if k.endswith("ffn.gate.weight") else MLX_BITS  # routers at 8 bits, as mlx-lm keeps them


def mlx_tensors(k, v):
    if not mlx_quantizable(k, v):
        return None
    bits = mlx_bits(k)
    packed, sc, bi = mlx_quantize(v.float().numpy(), MLX_GROUP, bits, "bf16")
    deq = torch.from_numpy(mlx_dequantize(packed, sc, bi, MLX_GROUP, bits, "bf16").astype(np.float32))
    m = k[:-len(".weight")]
    return {m + ".weight": torch.from_numpy(packed.astype(np.uint32)),
            m + ".scales": torch.from_numpy(sc.astype(np.float32)).to(torch.bfloat16),
            m + ".biases": torch.from_numpy(bi.astype(np.float32)).to(torch.bfloat16)}, deq


def quantized_variant(model, disk, quantize):
    """The disk tensors with each weight `quantize` takes replaced by what it returns, and a float32 model holding
    the dequantized values (the reference's weights)."""
    out, deq_disk = {}, {}
    for k, v in disk.items():
        got = quantize(k, v)
        if got is None:
            out[k] = v
            continue
        files, deq_disk[k] = got
        out.update(files)
    # Into the runtime model: save the dequantized disk tensors, load them back through transformers.
    tmp = "/tmp/dsv4_quant_tmp"
    os.makedirs(tmp, exist_ok=True)
    full = {k: (deq_disk[k] if k in deq_disk else v) for k, v in disk.items()}
    save_file({k: v.contiguous() for k, v in full.items()}, os.path.join(tmp, "model.safetensors"),
              metadata={"format": "pt"})
    make_config().save_pretrained(tmp)
    m = DeepseekV4ForCausalLM.from_pretrained(tmp, dtype=torch.float32).eval()
    m.config._attn_implementation = "eager"
    m.config._experts_implementation = "eager"
    return out, m


def release_name(k):
    """A saved name as the release names it."""
    if k == "model.embed_tokens.weight":
        return "embed.weight"
    if k.startswith("model.hc_head.hc_"):
        return "hc_head_" + k[len("model.hc_head.hc_"):]
    k = k[len("model."):] if k.startswith("model.") else k
    return k.replace(".attn.norm.weight", ".attn.kv_norm.weight")


def write_release(out_root):
    """(d): (b)'s tensors renamed, its config in the release's legacy keys, (b)'s golden."""
    from safetensors import safe_open
    src, d = os.path.join(out_root, "fp8-mxfp4"), os.path.join(out_root, "release")
    os.makedirs(d, exist_ok=True)
    with safe_open(os.path.join(src, "model.safetensors"), "pt") as f:
        tensors = {release_name(k): f.get_tensor(k) for k in f.keys()}
    save_file(tensors, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    cfg = json.load(open(os.path.join(src, "config.json")))
    rates = {"sliding_attention": 0, **cfg["compress_rates"]}
    compress = dict(cfg["rope_parameters"]["compress"])
    for k in ("layer_types", "mlp_layer_types", "compress_rates", "rope_parameters", "partial_rotary_factor"):
        cfg.pop(k, None)
    # transformers maps compress_ratios of 0 / 4 / 128 only; the tiny rate 8 needs compress_rate_hca beside it.
    cfg.update(compress_ratios=[rates[t] for t in LAYER_TYPES] + [0], compress_rate_csa=rates[LAYER_TYPES[1]],
               compress_rate_hca=rates[LAYER_TYPES[2]], num_hash_layers=2, qk_rope_head_dim=16,
               compress_rope_theta=compress["rope_theta"],
               rope_scaling={"type": "yarn", "factor": compress["factor"],
                             "original_max_position_embeddings": compress["original_max_position_embeddings"],
                             "beta_fast": compress["beta_fast"], "beta_slow": compress["beta_slow"]})
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=2)
    for f in ("generation_config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(src, f), d)
    golden = json.load(open(os.path.join(src, "golden.json")))
    json.dump(dict(golden, variant="release"), open(os.path.join(d, "golden.json"), "w"))


def main():
    out_root = sys.argv[2] if len(sys.argv) > 2 else "tests/goldens/deepseek_v4"
    if len(sys.argv) > 1 and sys.argv[1] == "--release-only":
        write_release(out_root)
        return
    out_root = sys.argv[1] if len(sys.argv) > 1 else "tests/goldens/deepseek_v4"
    log(f"transformers {transformers.__version__}, torch {torch.__version__}, float64 on cpu; script "
        f"scripts/golden/make_deepseek_v4_tiny.py")
    rng = np.random.default_rng(6060)
    prompts = [[int(v) for v in rng.integers(1, 256, n)] for n in PROMPT_LENS]
    tok, tcfg, gcfg = tokenizer_files()
    model = build_model()
    golden = reference(model, prompts)
    golden.update(prompt_ids=prompts, made_with=LOG[0])
    log("greedy:", golden["greedy"])

    d = os.path.join(out_root, "bf16")
    os.makedirs(d, exist_ok=True)
    disk = disk_state_dict(model, d)
    save_file(disk, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    cfg = json.load(open(os.path.join(d, "config.json")))
    cfg.update(dtype="bfloat16")
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=2)
    write_common(d, tok, tcfg, gcfg)
    json.dump(dict(golden, variant="bf16"), open(os.path.join(d, "golden.json"), "w"))
    log("bf16 bytes:", sum(v.numel() * v.element_size() for v in disk.values()))

    log("fp8-mxfp4 variant:")
    qsd, model_q = quantized_variant(model, disk, fp8_mxfp4_tensors)
    for key in MARGINS:
        MARGINS[key] = []
    golden_q = reference(model_q, prompts, min_margin=2e-5)
    golden_q.update(prompt_ids=prompts, made_with=LOG[0])
    d = os.path.join(out_root, "fp8-mxfp4")
    os.makedirs(d, exist_ok=True)
    save_file(qsd, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    cfg_q = dict(cfg, quantization_config={"quant_method": "fp8", "fmt": "e4m3", "scale_fmt": "ue8m0",
                                           "activation_scheme": "dynamic", "weight_block_size": [TILE, TILE]},
                 expert_dtype="fp4")
    json.dump(cfg_q, open(os.path.join(d, "config.json"), "w"), indent=2)
    write_common(d, tok, tcfg, gcfg)
    json.dump(dict(golden_q, variant="fp8-mxfp4"), open(os.path.join(d, "golden.json"), "w"))
    log("fp8-mxfp4 greedy:", golden_q["greedy"])

    log("mlx-4bit variant:")
    msd, model_m = quantized_variant(model, disk, mlx_tensors)
    for key in MARGINS:
        MARGINS[key] = []
    golden_m = reference(model_m, prompts, min_margin=2e-5)
    golden_m.update(prompt_ids=prompts, made_with=LOG[0])
    d = os.path.join(out_root, "mlx-4bit")
    os.makedirs(d, exist_ok=True)
    save_file(msd, os.path.join(d, "model.safetensors"), metadata={"format": "mlx"})
    qblock = {"group_size": MLX_GROUP, "bits": MLX_BITS, "mode": "affine"}
    for k, v in disk.items():
        if mlx_quantizable(k, v) and mlx_bits(k) != MLX_BITS:
            qblock[k[:-len(".weight")]] = {"group_size": MLX_GROUP, "bits": mlx_bits(k)}
    cfg_m = dict(cfg, quantization=qblock, quantization_config=dict(qblock))
    json.dump(cfg_m, open(os.path.join(d, "config.json"), "w"), indent=2)
    write_common(d, tok, tcfg, gcfg)
    json.dump(dict(golden_m, variant="mlx-4bit"), open(os.path.join(d, "golden.json"), "w"))
    log("mlx-4bit greedy:", golden_m["greedy"])
    write_release(out_root)
    log("done")


if __name__ == "__main__":
    main()
