#!/usr/bin/env python3
"""Tiny random `gemma4` checkpoints in two real on-disk layouts, with float64 golden logits from HF transformers.

Runs on a CPU (transformers >= 5.25 with gemma4, torch, safetensors, numpy; no network, no mlx):
    python3 scripts/golden/make_gemma4_tiny.py [OUT_DIR]   # OUT_DIR default tests/goldens/gemma4
and writes OUT_DIR/{bf16,text,mlx-4bit}/. Seeded and deterministic (numpy + torch seeds, CPU init).

The model (a Gemma 4 26B-A4B-style text model, shrunk; no per-layer input embeddings, no KV sharing): vocab 320,
hidden 64, 6 layers [S, S, F, S, S, F] (S sliding attention over a window of 8 positions, so the test prompts of
17 and 40 tokens slide it; F full attention), 4 query heads; sliding layers 2 KV heads x 16 with default RoPE
(theta 1e4), full layers their own shape (global_head_dim 32, 1 KV head) with proportional RoPE (theta 1e6, a
quarter of the pairs turning) and attention_k_eq_v (values from the key projection); q/k norms, the unscaled
v norm, attention scale 1; the four sandwich norms; a gelu-tanh MLP of 64 beside a mixture of 8 experts of 32
(top 2, softmax router over a normed and scaled input, per-expert scales); a per-layer scalar; embeddings times
sqrt(hidden); tied output with final logit soft-capping 30; RMSNorm eps 1e-6.

Weights: torch.manual_seed(0) init by transformers, then the parameters init leaves trivial are perturbed with
seeded noise (every norm weight, router.scale, router.per_expert_scale, layer_scalar: 1 + N(0, 0.1); the router
projection N(0, 0.5) for varied routing); every value is then rounded to bf16.

Variants (OUT_DIR/<name>/: config.json, model.safetensors, tokenizer.json, tokenizer_config.json,
generation_config.json, golden.json):
  (a) bf16: the Gemma4ForConditionalGeneration layout of the released checkpoints: config model_type gemma4 with
      the text model's keys under text_config (and a vision_config), weights model.language_model.*, plus one
      vision tensor (model.vision_tower.*) that a text-only loader must skip.
  (b) text: Gemma4ForCausalLM as save_pretrained writes it (model_type gemma4_text, model.*).
  (c) mlx-4bit: the mlx-community layout of the 26B-A4B conversions: weights language_model.model.*, experts
      split and stacked as mlx-lm's SwitchGLU (experts.switch_glu.{gate,up,down}_proj), affine 4-bit with
      groups of 32 (the tiny expert width is 32) and the MLPs and routers at 8-bit (per-module overrides in
      config.json's quantization block), the embedding quantized too (and so the tied output); one vision
      tensor (vision_tower.*) to skip. Its golden is the float64 forward of the DEQUANTIZED weights, exactly as
      MLX dequantizes them (make_qwen3_5_tiny.py's quantizer).

golden.json: prompt_ids (3 seeded prompts of lengths 5, 17, 40, ids in 0..255), logits (float32 logits of the
last 3 positions of each prompt), greedy (16 tokens by repeated argmax over a full re-forward; EOS is not a
stop), gaps (top1 - top2 logit at each greedy step), top1_logit.
Reference precision: the model is cast to float64 and transformers' float32 islands are patched to stay in
float64: the RMSNorms, the router's softmax, the attention softmax and the rotary tables. The unpatched float32
forward is also run and its max |diff| logged, as a check of the patches.
Tokenizer: make_qwen3_5_tiny.py's (byte-level BPE over 275 ids, ChatML template).
"""
import json
import os
import sys

import numpy as np
import torch
import transformers
from safetensors.torch import save_file
from transformers import Gemma4ForCausalLM, Gemma4TextConfig
from transformers.models.gemma4 import modeling_gemma4 as mg

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_nemotron_h_tiny import round_bf16_, run_golden  # noqa: E402  (the same golden recipe)
from make_qwen3_5_tiny import (mlx_dequantize, mlx_quantize, to_bytes, tokenizer_files,  # noqa: E402
                               write_common, write_safetensors)

LAYER_TYPES = ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "sliding_attention",
               "full_attention"]
CONFIG = dict(
    vocab_size=320, hidden_size=64, intermediate_size=64, num_hidden_layers=len(LAYER_TYPES), num_attention_heads=4,
    num_key_value_heads=2, head_dim=16, global_head_dim=32, num_global_key_value_heads=1, attention_k_eq_v=True,
    sliding_window=8, layer_types=LAYER_TYPES, final_logit_softcapping=30.0, enable_moe_block=True, num_experts=8,
    top_k_experts=2, moe_intermediate_size=32, hidden_size_per_layer_input=0, num_kv_shared_layers=0,
    max_position_embeddings=4096, tie_word_embeddings=True, rms_norm_eps=1e-6, pad_token_id=256, bos_token_id=256,
    eos_token_id=258)
PROMPT_LENS = [5, 17, 40]
LOG = []


def log(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    LOG.append(s)


# ----------------------------------------------------------------------------------------------------------------
# float64 reference: keep transformers' gemma4 code from dropping to float32 inside

def _rms_f64(self, x):
    x = x.to(torch.float64)
    y = x * torch.pow(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon, -0.5)
    return y * self.weight.to(torch.float64) if self.with_scale else y


def _router_f64(self, hidden_states):
    h = self.norm(hidden_states) * self.scale * self.scalar_root_size
    p = torch.softmax(self.proj(h).to(torch.float64), dim=-1)
    w, idx = torch.topk(p, k=self.config.top_k_experts, dim=-1)
    w = w / w.sum(dim=-1, keepdim=True)
    return p, w * self.per_expert_scale[idx], idx


def _eager_f64(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kw):
    k = mg.repeat_kv(key, module.num_key_value_groups)
    v = mg.repeat_kv(value, module.num_key_value_groups)
    s = torch.matmul(query, k.transpose(2, 3)) * scaling
    if attention_mask is not None:
        s = s + attention_mask[:, :, :, : k.shape[-2]]
    return torch.matmul(torch.softmax(s, dim=-1), v).transpose(1, 2).contiguous(), None


def _rotary_f64(self, x, position_ids, layer_type):
    params = self.config.rope_parameters[layer_type]
    dim = self.config.per_layer_config[layer_type].head_dim
    theta = params["rope_theta"]
    pairs = int(params.get("partial_rotary_factor", 1.0) * dim // 2) if params["rope_type"] == "proportional" \
        else dim // 2
    inv = torch.zeros(dim // 2, dtype=torch.float64)
    inv[:pairs] = 1.0 / theta ** (torch.arange(0, 2 * pairs, 2, dtype=torch.float64) / dim)
    f = position_ids[..., None].to(torch.float64) * inv
    emb = torch.cat((f, f), dim=-1)
    return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


class F64Patches:
    def __enter__(self):
        self.saved = (mg.Gemma4RMSNorm.forward, mg.Gemma4TextRouter.forward, mg.eager_attention_forward,
                      mg.Gemma4TextRotaryEmbedding.forward)
        mg.Gemma4RMSNorm.forward = _rms_f64
        mg.Gemma4TextRouter.forward = _router_f64
        mg.eager_attention_forward = _eager_f64
        mg.Gemma4TextRotaryEmbedding.forward = _rotary_f64
        return self

    def __exit__(self, *a):
        (mg.Gemma4RMSNorm.forward, mg.Gemma4TextRouter.forward, mg.eager_attention_forward,
         mg.Gemma4TextRotaryEmbedding.forward) = self.saved


# ----------------------------------------------------------------------------------------------------------------

def build_model():
    cfg = Gemma4TextConfig(**CONFIG)
    cfg._attn_implementation = "eager"
    cfg._experts_implementation = "eager"
    torch.manual_seed(0)
    model = Gemma4ForCausalLM(cfg).to(torch.float32).eval()
    model.config._experts_implementation = "eager"  # grouped_mm loses precision in float32 and takes no float64
    rng = np.random.default_rng(56)  # its routing margins over the golden prompts are >= 1e-4 (main checks)
    with torch.no_grad():
        for name, p in list(model.named_parameters()) + list(model.named_buffers()):
            noise = lambda scale: torch.from_numpy(rng.normal(0, scale, tuple(p.shape)).astype(np.float32))  # noqa
            if name.endswith(("norm.weight", "router.scale", "per_expert_scale", "layer_scalar")) or \
                    "layernorm" in name:
                p.copy_(1.0 + noise(0.1))
            elif name.endswith("router.proj.weight"):
                p.copy_(noise(0.5))
        for name, p in list(model.named_parameters()) + list(model.named_buffers()):
            if p.is_floating_point() and not name.endswith("embed_scale"):
                assert torch.isfinite(p).all(), name
                p.copy_(round_bf16_(p))
    return model


@torch.no_grad()
def reference(model, prompts, weights=None, min_margin=1e-4):
    """The float64 golden of `model`, or of the same model with `weights` (name -> float array) replacing its own."""
    m = Gemma4ForCausalLM(model.config).to(torch.float64).eval()
    m.config._experts_implementation = "eager"
    state = {k: v.to(torch.float64) for k, v in model.state_dict().items()}
    for k, v in (weights or {}).items():
        assert k in state and tuple(state[k].shape) == tuple(v.shape), k
        state[k] = torch.from_numpy(np.asarray(v, np.float64))
    if "model.embed_tokens.weight" in (weights or {}):
        state["lm_head.weight"] = state["model.embed_tokens.weight"]  # tied
    m.load_state_dict(state)
    with F64Patches():
        golden = run_golden(m, prompts)
    # The patches change rounding only: the float64 model with and without them agrees closely (without them its
    # norms, softmaxes and rotary tables round to float32).
    worst = 0.0
    for i, ids in enumerate(prompts):
        lg = m(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -3:].numpy()
        worst = max(worst, float(np.abs(lg - np.array(golden["logits"][i], np.float64)).max()))
    log(f"  float64 with float32 islands vs the float64 golden: max |diff| {worst:.2e}")
    assert worst < 1e-4, worst
    # Routing margins: the smallest gap between a row's k-th and (k+1)-th router probability, per prompt (a tie
    # closer than float32 arithmetic resolves would make a float32 engine pick other experts).
    gaps = []
    hooks = [layer.router.register_forward_hook(
        lambda mod, inp, out: gaps.append(float((lambda s: (s[:, 1] - s[:, 2]).min())(
            torch.sort(out[0], dim=-1, descending=True).values))))
        for layer in m.model.layers]
    with F64Patches():
        for ids in prompts:
            m(input_ids=torch.tensor([ids]), use_cache=False)
    for h in hooks:
        h.remove()
    log(f"  smallest routing margin (top-2 vs third probability) over the prompts' rows: {min(gaps):.1e}")
    assert min(gaps) >= min_margin, "a near-tie in routing: pick another noise seed in build_model"
    return golden


def main():
    out_root = sys.argv[1] if len(sys.argv) > 1 else "tests/goldens/gemma4"
    log(f"transformers {transformers.__version__}, torch {torch.__version__}, float64 on cpu; script "
        f"scripts/golden/make_gemma4_tiny.py")
    rng = np.random.default_rng(1234)
    prompts = [[int(v) for v in rng.integers(0, 256, n)] for n in PROMPT_LENS]
    tok, tcfg, gcfg = tokenizer_files()
    model = build_model()
    sd = {k: v.to(torch.bfloat16).contiguous() for k, v in model.state_dict().items()
          if k != "lm_head.weight" and not k.endswith("embed_scale")}
    text_cfg = model.config.to_dict()
    text_cfg.update(dtype="bfloat16", architectures=["Gemma4ForCausalLM"])
    log("tensors:", len(sd))
    golden = reference(model, prompts)
    golden.update(prompt_ids=prompts, made_with=LOG[0])

    # (b) text: what Gemma4ForCausalLM.save_pretrained writes
    d = os.path.join(out_root, "text")
    os.makedirs(d, exist_ok=True)
    save_file(sd, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    json.dump(text_cfg, open(os.path.join(d, "config.json"), "w"), indent=2)
    write_common(d, tok, tcfg, gcfg)
    json.dump(dict(golden, variant="text"), open(os.path.join(d, "golden.json"), "w"))

    # (a) bf16: the released checkpoints' multimodal layout
    d = os.path.join(out_root, "bf16")
    os.makedirs(d, exist_ok=True)
    wrapped = {k.replace("model.", "model.language_model.", 1): v for k, v in sd.items()}
    wrapped["model.vision_tower.patch_embedder.input_proj.weight"] = torch.zeros(8, 12, dtype=torch.bfloat16)
    save_file(wrapped, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    inner = {k: v for k, v in text_cfg.items() if k not in ("architectures", "transformers_version", "dtype")}
    json.dump({"architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4", "dtype": "bfloat16",
               "text_config": inner, "vision_config": {"model_type": "gemma4_vision"},
               "tie_word_embeddings": True, "transformers_version": transformers.__version__},
              open(os.path.join(d, "config.json"), "w"), indent=2)
    write_common(d, tok, tcfg, gcfg)
    json.dump(dict(golden, variant="bf16"), open(os.path.join(d, "golden.json"), "w"))
    log("greedy:", golden["greedy"])
    write_mlx_4bit(os.path.join(out_root, "mlx-4bit"), model, sd, text_cfg, prompts, (tok, tcfg, gcfg))
    log("done")


MLX_GROUP = 32


def write_mlx_4bit(d, model, sd, text_cfg, prompts, tokenizer):
    os.makedirs(d, exist_ok=True)
    files, deq = {}, {}
    qblock = {"group_size": MLX_GROUP, "bits": 4, "mode": "affine"}

    def quantized(module, arr, bits):
        """Writes `module` quantized; returns its dequantized values (what MLX computes with)."""
        packed, sc, bi = mlx_quantize(arr.reshape(-1, arr.shape[-1]), MLX_GROUP, bits, "bf16")
        lead = arr.shape[:-1]
        files[module + ".weight"] = ("u32", lead + (packed.shape[1],), to_bytes(packed, "u32"))
        files[module + ".scales"] = ("bf16", lead + (sc.shape[1],), to_bytes(sc, "bf16"))
        files[module + ".biases"] = ("bf16", lead + (bi.shape[1],), to_bytes(bi, "bf16"))
        if bits != 4:
            qblock[module] = {"group_size": MLX_GROUP, "bits": bits}
        return mlx_dequantize(packed, sc, bi, MLX_GROUP, bits, "bf16").reshape(arr.shape)

    inter = CONFIG["moe_intermediate_size"]
    for k, v in sorted(sd.items()):
        arr = v.to(torch.float32).numpy()
        name = k.replace("model.", "language_model.model.", 1)
        if k.endswith("experts.gate_up_proj"):  # [E, 2I, H]: gate rows first, then up
            base = name[: -len("gate_up_proj")] + "switch_glu."
            gate = quantized(base + "gate_proj", np.ascontiguousarray(arr[:, :inter]), 4)
            up = quantized(base + "up_proj", np.ascontiguousarray(arr[:, inter:]), 4)
            deq[k] = np.concatenate([gate, up], axis=1)
        elif k.endswith("experts.down_proj"):
            deq[k] = quantized(name[: -len("down_proj")] + "switch_glu.down_proj", arr, 4)
        elif arr.ndim == 2 and k.endswith(".weight") and not k.endswith("norm.weight"):
            bits = 8 if (".mlp." in k or k.endswith("router.proj.weight")) else 4
            deq[k] = quantized(name[: -len(".weight")], arr, bits)
        else:
            files[name] = ("bf16", arr.shape, to_bytes(arr, "bf16"))
    files["vision_tower.encoder.layers.0.mlp.fc1.weight"] = ("bf16", (8, 12), to_bytes(np.zeros((8, 12)), "bf16"))
    write_safetensors(os.path.join(d, "model.safetensors"), files, {"format": "mlx"})
    size = os.path.getsize(os.path.join(d, "model.safetensors"))
    json.dump({"metadata": {"total_size": size}, "weight_map": {k: "model.safetensors" for k in sorted(files)}},
              open(os.path.join(d, "model.safetensors.index.json"), "w"), indent=2)
    inner = {k: v for k, v in text_cfg.items() if k not in ("architectures", "transformers_version", "dtype")}
    json.dump({"architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4",
               "text_config": inner, "vision_config": {"model_type": "gemma4_vision"}, "tie_word_embeddings": True,
               "quantization": qblock, "quantization_config": dict(qblock)},
              open(os.path.join(d, "config.json"), "w"), indent=2)
    write_common(d, *tokenizer)
    log("mlx-4bit:")
    # Quantization moves the router's probabilities: a margin of 1e-5 is still ~100x what float32 arithmetic
    # can move them by (the engine's routing matches the reference's over every row; the golden test says so).
    golden = reference(model, prompts, deq, min_margin=1e-5)
    golden.update(prompt_ids=prompts, made_with=LOG[0], variant="mlx-4bit")
    json.dump(golden, open(os.path.join(d, "golden.json"), "w"))
    log("greedy:", golden["greedy"])


if __name__ == "__main__":
    main()
