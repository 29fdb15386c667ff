#!/usr/bin/env python3
"""Tiny random `qwen3_5` checkpoints in four real on-disk formats, with golden logits from HF transformers.

Runs on the device machine (transformers 5.17 + torch there; no network, no mlx needed):
    python3 scripts/golden/make_qwen3_5_tiny.py OUT_DIR        # OUT_DIR default tests/goldens/qwen3_5
and writes OUT_DIR/{bf16-mtp,mlx-4bit,mlx-mixed,bonsai-2bit}/. Seeded and deterministic (numpy + torch seeds,
CPU init); the reference forwards run in float64 on the GPU when there is one.

The model (a Qwen3.5 / Qwen3.8 dense hybrid, shrunk):
  text_config: vocab 320, hidden 128, intermediate 256, 8 layers = (3 x linear_attention, full_attention) x 2,
  4 q heads / 2 kv heads of head_dim 32, output-gated attention (q_proj gives [q | gate] per head), q_norm/k_norm,
  partial rope 0.25 (8 rotary dims of 32, rotate-half pairs (i, i+4)), rope_theta 1e7 in the real config's
  rope_parameters form (rope_type default, mrope_section scaled to the 4 tiny frequencies: [2,1,1],
  mrope_interleaved true: for text all three position streams are equal, so it is plain partial rope),
  Gated DeltaNet 2 key heads / 4 value heads of dim 32, conv kernel 4, rms_norm_eps 1e-6, mtp_num_hidden_layers 1,
  full_attention_interval 4 (mlx-lm reads the schedule from it, transformers from layer_types; both agree).
  Built through the VLM wrapper Qwen3_5ForConditionalGeneration(Qwen3_5Config(text_config=..., vision_config=tiny)),
  which is what a real Qwen3.8 checkpoint is: config.json `model_type: qwen3_5` with `text_config`/`vision_config`,
  weights `model.language_model.*`, `lm_head.weight`, `model.visual.*`.
  Vision: the tiny vision tower (depth 1, hidden 32, patch 8, 64 position embeddings; ~56k params) is KEPT in
  bf16-mtp, because a real HF checkpoint carries `model.visual.*` and a text-only loader must skip it. The mlx
  variants drop the vision weights AND vision_config, as mlx-lm does (Model.sanitize drops `model.visual*`;
  utils.save_config pops "vision_config").

Weights: torch.manual_seed(0) init by transformers, then every parameter that init leaves trivial is perturbed with
seeded N(0, 0.1) noise: all zero-centred norms (input/post_attention_layernorm, final norm, q_norm, k_norm), the GDN
gated norm (init 1), A_log, dt_bias (init 1) and conv1d. So a loader that forgets the +1 of the (1+w) norms, adds it
to the GDN gated norm, or mis-shapes conv1d gives wrong logits. A_log is stored float32 (the checkpoint keeps it in
fp32; mlx-lm's cast_predicate leaves A_log out of dtype casts); everything else bf16 (bonsai: fp16).

MTP (transformers does not build it; weights added by hand with the real key names, bf16-mtp only):
  mtp.pre_fc_norm_embedding.weight [H], mtp.pre_fc_norm_hidden.weight [H], mtp.fc.weight [H, 2H],
  mtp.layers.0.{input_layernorm, post_attention_layernorm}.weight, mtp.layers.0.self_attn.{q_proj [2*nh*hd, H],
  k_proj, v_proj, o_proj, q_norm, k_norm}.weight, mtp.layers.0.mlp.{gate,up,down}_proj.weight, mtp.norm.weight.
  Semantics, checked in vLLM (vllm/model_executor/models/qwen3_5_mtp.py, Qwen3_5MultiTokenPredictor.forward;
  vllm/v1/spec_decode/llm_base_proposer.py set_inputs_first_pass; qwen3_next.py Qwen3NextModel.forward):
  - h_t is the main model's output hidden state AFTER the final norm `model.language_model.norm`
    (vLLM's Qwen3NextModel/Qwen3_5Model.forward returns norm(hidden, residual); the runner passes that same tensor,
    the one lm_head reads, as target_hidden_states).
  - e = embed_tokens(x_{t+1}) with the MAIN model's embedding (vLLM remaps model.language_model.embed_tokens into
    the MTP module; mtp_use_dedicated_embeddings false); lm_head is the main lm_head.
  - u = fc(concat[pre_fc_norm_embedding(e), pre_fc_norm_hidden(h_t)]): EMBEDDING FIRST, hidden second; all MTP norms
    are zero-centred (1+w) RMSNorms (vLLM: GemmaRMSNorm), eps = rms_norm_eps.
  - u goes through mtp.layers.0, a full-attention gated decoder layer (same math and names as a main full-attention
    layer, dense MLP), causal over the MTP positions with its own KV cache, then mtp.norm, then lm_head.
  - positions: the MTP token for pair (h_t, x_{t+1}) is at position t, the SAME position as the main-model token t
    (vLLM "rotate the input ids and leave the positions unchanged"), not t+1.
  mtp_golden.json holds, for the 40-token prompt, t = 0..38 (x_{t+1} from the prompt) plus t = 39 with x_40 = the
  main model's greedy next token (what a server's first draft after prefill sees): argmax at every t, float32
  logits at t = 36, 37, 38 ("logits") and at t = 39 ("logits_t39"). Computed by hand in torch float64 and checked
  against a transformers Qwen3_5DecoderLayer loaded with the mtp.layers.0 weights. Chained drafts (feeding the MTP
  output back as h) are not covered.

Variants (OUT_DIR/<name>/: config.json, safetensors (+ index), tokenizer.json, tokenizer_config.json,
generation_config.json, golden.json):
  (a) bf16-mtp: HF layout as save_pretrained writes it (same names, metadata format=pt) plus the mtp.* weights,
      untied lm_head, sharded into model-00001-of-00002 / model-00002-of-00002 with model.safetensors.index.json.
  (b) mlx-4bit: mlx-community layout as mlx-lm's qwen3_5 sanitize + convert writes it: names
      `language_model.model.*` (and `language_model.lm_head` when untied), conv1d as [C, K, 1], the five
      zero-centred norm kinds stored as bf16(w + 1) (the GDN gated norm is not touched), mtp.* and vision dropped,
      every Linear and the embedding MLX-affine 4-bit g64 (in_proj_a/in_proj_b too), scales/biases bf16, norms,
      conv1d, dt_bias bf16, A_log f32, tie_word_embeddings true (no lm_head), config `quantization` and
      `quantization_config` {"group_size": 64, "bits": 4, "mode": "affine"}, metadata format=mlx,
      model.safetensors + model.safetensors.index.json (mlx-lm always writes the index).
  (c) mlx-mixed: as (b) but untied lm_head and per-module overrides in the quantization block (keys are mlx module
      paths, values {"group_size", "bits"} as mlx-lm's mixed recipes write them): see MIXED below.
  (d) bonsai-2bit: Ternary Bonsai style: every Linear AND the embedding AND the untied lm_head is t*s with
      t in {-1,0,1} and one fp16 scale per 128 inputs (s = mean|w| of the group), stored as MLX affine bits 2,
      group 128, codes q = t+1 in {0,1,2}, biases = -s; fp16 scales/biases/float tensors (prism-ml's MLX packs say
      "group size 128 and FP16 scaling"), A_log f32; quantization block without "mode" (as older mlx-lm wrote it).
The MLX affine quantizer, packing and dequantizer are re-implemented here in numpy (mlx/backend/cpu/quantized.cpp
semantics; checked bit for bit against mx.quantize / mx.dequantize for bits 2/4/8, g 32/64/128, bf16 and fp16).
Packing: one bitstream per row, LSB first; for 2/4/8 bits element j is in uint32 word j/(32/b) at bit offset
(j mod (32/b))*b. The golden of a quantized variant uses the DEQUANTIZED weights exactly as MLX dequantizes:
w = rnd(rnd(scale*q) + bias), rnd = round to the scale dtype (bf16 or fp16, nearest-even), loaded as float64.

golden.json: prompt_ids (4 seeded prompts of lengths 5, 17, 40, 70, ids in 0..255, the same for every variant),
logits (float32 logits of the last 3 positions of each prompt), greedy (24 tokens by repeated argmax; EOS is not a
stop; decoded with transformers' cache, which the script checks against a full re-forward to < 1e-9), gaps
(top1 - top2 logit at each greedy step), top1_logit (the top logit at each greedy step).
Reference precision: the model is cast to float64 after loading, and the float32 islands inside transformers'
qwen3_5 code (RMSNorm/gated RMSNorm `.float()`, the GDN chunk kernel's `.to(float32)`, the rope cos/sin) are patched
to stay in float64 (the GDN kernel is replaced by the exact sequential gated delta rule in float64; l2norm eps 1e-6
inside the sum of squares, as HF/FLA). The unpatched transformers forward is also run and its max |diff| logged.

Tokenizer (same in every variant): byte-level BPE, the 256 GPT-2 byte-to-unicode byte tokens as ids 0..255 in byte
order, specials <|endoftext|>=256, <|im_start|>=257, <|im_end|>=258, <think>=259, </think>=260, <tool_call>=261,
</tool_call>=262, then 12 merges (ids 263..274); Qwen2's pre-tokenizer regex, NFC. tokenizer_config.json has
eos <|im_end|>, pad <|endoftext|> and a chat template simplified from Qwen3/Qwen3.5's ChatML template (system / user
/ assistant / tool turns, reasoning_content as <think>..</think>, XML tool calls, enable_thinking: the generation
prompt is "<|im_start|>assistant\n<think>\n", or with enable_thinking=false "<|im_start|>assistant\n<think>\n\n
</think>\n\n"). generation_config.json: eos_token_id [258, 256].
"""
import copy
import json
import os
import shutil
import sys
import tarfile
import tempfile

import numpy as np
import torch
import transformers
from safetensors import safe_open
from safetensors.torch import save_file
from transformers import Qwen3_5Config, Qwen3_5ForConditionalGeneration
from transformers.models.qwen3_5 import modeling_qwen3_5 as mq

SEED = 0
H, I, V, L = 128, 256, 320, 8
NH, NKV, HD = 4, 2, 32
LAYER_TYPES = (["linear_attention"] * 3 + ["full_attention"]) * 2
TEXT = dict(
    vocab_size=V, hidden_size=H, intermediate_size=I, num_hidden_layers=L, layer_types=LAYER_TYPES,
    num_attention_heads=NH, num_key_value_heads=NKV, head_dim=HD,
    linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=32, linear_value_head_dim=32,
    linear_conv_kernel_dim=4, rms_norm_eps=1e-6, max_position_embeddings=4096,
    rope_parameters={"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25,
                     "mrope_section": [2, 1, 1], "mrope_interleaved": True},
    mtp_num_hidden_layers=1, mtp_use_dedicated_embeddings=False, full_attention_interval=4,
    attn_output_gate=True, mamba_ssm_dtype="float32", eos_token_id=258, pad_token_id=256,
    tie_word_embeddings=False)
VISION = dict(depth=1, hidden_size=32, num_heads=2, intermediate_size=64, out_hidden_size=H,
              num_position_embeddings=64, patch_size=8)
PROMPT_LENS = [5, 17, 40, 70]
GREEDY_STEPS = 24
MTP_PROMPT = 2  # the 40-token prompt
DEV = "cuda" if torch.cuda.is_available() else "cpu"

# mlx module path -> (bits, group_size) overrides for mlx-mixed; everything else 4-bit g64.
MIXED = {
    "language_model.model.layers.0.mlp.down_proj": (8, 64),
    "language_model.model.layers.7.self_attn.v_proj": (8, 64),
    "language_model.model.layers.7.mlp.down_proj": (8, 64),
    "language_model.model.layers.1.linear_attn.in_proj_qkv": (2, 64),
    "language_model.model.layers.2.linear_attn.in_proj_z": (2, 32),
    "language_model.model.layers.3.self_attn.q_proj": (8, 128),
    "language_model.lm_head": (8, 64),
}

LOG = []


def log(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    LOG.append(s)


# ----------------------------------------------------------------------------------------------------------------
# float rounding helpers and the MLX affine quantizer (numpy)

def round_bf16(x):
    """float32 -> nearest-even bfloat16 value, as float32."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return (u.astype(np.uint32) << 16).view(np.float32).reshape(x.shape)


def round_to(x, dt):
    if dt == "bf16":
        return round_bf16(x)
    if dt == "f16":
        return np.asarray(x, np.float32).astype(np.float16).astype(np.float32)
    if dt == "f32":
        return np.asarray(x, np.float32)
    raise ValueError(dt)


def to_bytes(x, dt):
    x = np.ascontiguousarray(x)
    if dt == "bf16":
        return (round_bf16(x).view(np.uint32) >> 16).astype("<u2").tobytes()
    if dt == "f16":
        return x.astype("<f2").tobytes()
    if dt == "f32":
        return x.astype("<f4").tobytes()
    if dt == "u32":
        return x.astype("<u4").tobytes()
    raise ValueError(dt)


ST_DTYPE = {"bf16": "BF16", "f16": "F16", "f32": "F32", "u32": "U32", "i64": "I64"}


def pack(codes, bits):
    o, i = codes.shape
    per = 32 // bits
    c = codes.astype(np.uint32).reshape(o, i // per, per)
    return np.bitwise_or.reduce(c << (np.arange(per, dtype=np.uint32) * bits), axis=-1).astype(np.uint32)


def unpack(packed, bits):
    per = 32 // bits
    c = (packed[:, :, None] >> (np.arange(per, dtype=np.uint32) * bits)) & np.uint32((1 << bits) - 1)
    return c.reshape(packed.shape[0], -1)


def mlx_quantize(w, group_size, bits, dt):
    """mx.quantize(mode='affine') on CPU: fp32 math on the (dt-representable) weights, scale/bias rounded to dt."""
    w = np.asarray(w, np.float32)
    o, i = w.shape
    n_bins = np.float32((1 << bits) - 1)
    g = w.reshape(o, i // group_size, group_size)
    w_max, w_min = g.max(-1), g.min(-1)
    mask = np.abs(w_min) > np.abs(w_max)
    scale = np.maximum((w_max - w_min) / n_bins, np.float32(1e-7)).astype(np.float32)
    scale = np.where(mask, scale, -scale).astype(np.float32)
    edge = np.where(mask, w_min, w_max).astype(np.float32)
    q0 = np.rint(edge / scale).astype(np.float32)
    nz = q0 != 0
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(nz, edge / q0, scale).astype(np.float32)
    bias = np.where(nz, edge, np.float32(0)).astype(np.float32)
    codes = np.clip(np.rint((g - bias[..., None]) / scale[..., None]), 0, n_bins).astype(np.uint32).reshape(o, i)
    return pack(codes, bits), round_to(scale, dt), round_to(bias, dt)


def ternary_quantize(w, dt, group_size=128):
    """Bonsai: t = clip(round(w/s), -1, 1), s = dt(mean|w| of the group); MLX affine 2-bit codes t+1, bias -s."""
    w = np.asarray(w, np.float32)
    o, i = w.shape
    g = w.reshape(o, i // group_size, group_size)
    s = round_to(np.maximum(np.abs(g).mean(-1), np.float32(1e-4)), dt)
    t = np.clip(np.rint(g / s[..., None]), -1, 1)
    codes = (t + 1).astype(np.uint32).reshape(o, i)
    return pack(codes, 2), s, round_to(-s, dt)


def mlx_dequantize(packed, scales, biases, group_size, bits, dt):
    codes = unpack(packed, bits).astype(np.float32)
    s = np.repeat(scales.astype(np.float32), group_size, axis=1)
    b = np.repeat(biases.astype(np.float32), group_size, axis=1)
    return round_to(round_to(s * codes, dt) + b, dt)


def exact_dequantize(packed, scales, biases, group_size, bits):
    """The affine value itself, s*q + b in float64 (no rounding to the scale type): what GGUF's Q4_0/Q4_1 mean
    and what the CUDA kernels multiply by (docs/cuda.md); make_qwen3_5_exact_goldens.py builds its goldens."""
    codes = unpack(packed, bits).astype(np.float64)
    s = np.repeat(scales.astype(np.float64), group_size, axis=1)
    b = np.repeat(biases.astype(np.float64), group_size, axis=1)
    return s * codes + b


def write_safetensors(path, tensors, metadata):
    """tensors: name -> (dt, shape, bytes). Plain safetensors writer (header padded to 8 with spaces)."""
    header, off, blobs = {}, 0, []
    for name in sorted(tensors):
        dt, shape, data = tensors[name]
        header[name] = {"dtype": ST_DTYPE[dt], "shape": list(shape), "data_offsets": [off, off + len(data)]}
        off += len(data)
        blobs.append(data)
    header = {"__metadata__": metadata, **header}
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * ((8 - len(hb) % 8) % 8)
    with open(path, "wb") as f:
        f.write(len(hb).to_bytes(8, "little"))
        f.write(hb)
        for b in blobs:
            f.write(b)
    return off


# ----------------------------------------------------------------------------------------------------------------
# float64 reference: keep transformers' qwen3_5 code from dropping to float32 inside

def _rms_f64(self, x):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * (1.0 + self.weight.to(x.dtype))


def _gated_rms_f64(self, hidden_states, gate):
    x = hidden_states
    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
    return self.weight.to(x.dtype) * x * torch.nn.functional.silu(gate.to(x.dtype))


def _l2n(x, eps=1e-6):
    return x * torch.rsqrt((x * x).sum(-1, keepdim=True) + eps)


def _gdr_f64(query, key, value, g, beta, initial_state=None, output_final_state=False,
             use_qk_l2norm_in_kernel=False, **kw):
    """Exact sequential gated delta rule in the input dtype. q,k,v [B,T,Hv,D], g,beta [B,T,Hv]."""
    dt = query.dtype
    q, k, v = (x.transpose(1, 2) for x in (query, key, value))
    b, dec = beta.transpose(1, 2).to(dt), g.transpose(1, 2).to(dt)
    if use_qk_l2norm_in_kernel:
        q, k = _l2n(q), _l2n(k)
    q = q * q.shape[-1] ** -0.5
    B, Hv, T, Dk = k.shape
    S = (torch.zeros(B, Hv, Dk, v.shape[-1], dtype=dt, device=q.device) if initial_state is None
         else initial_state.to(dt))
    out = torch.zeros_like(v)
    for t in range(T):
        S = S * dec[:, :, t].exp()[..., None, None]
        kv = (S * k[:, :, t, :, None]).sum(-2)
        delta = (v[:, :, t] - kv) * b[:, :, t, None]
        S = S + k[:, :, t, :, None] * delta[:, :, None, :]
        out[:, :, t] = (S * q[:, :, t, :, None]).sum(-2)
    return out.transpose(1, 2).contiguous(), (S if output_final_state else None)


def _rope_f64(self, x, position_ids):
    base = self.config.rope_parameters["rope_theta"]
    dim = int(self.config.head_dim * self.config.rope_parameters.get("partial_rotary_factor", 1.0))
    inv = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float64, device=x.device) / dim))
    pos = position_ids.to(torch.float64)                       # [3, B, T]
    freqs = pos[..., None] * inv                                # [3, B, T, dim/2]
    cos, sin = self.recomposition_frequencies(freqs.cos()), self.recomposition_frequencies(freqs.sin())
    return cos.to(x.dtype), sin.to(x.dtype)


class F64Patches:
    def __enter__(self):
        self.saved = (mq.Qwen3_5RMSNorm.forward, mq.Qwen3_5RMSNormGated.forward, mq.torch_chunk_gated_delta_rule,
                      mq.torch_recurrent_gated_delta_rule, mq.Qwen3_5TextRotaryEmbedding.forward)
        mq.Qwen3_5RMSNorm.forward = _rms_f64
        mq.Qwen3_5RMSNormGated.forward = _gated_rms_f64
        mq.torch_chunk_gated_delta_rule = _gdr_f64
        mq.torch_recurrent_gated_delta_rule = _gdr_f64
        mq.Qwen3_5TextRotaryEmbedding.forward = _rope_f64
        return self

    def __exit__(self, *a):
        (mq.Qwen3_5RMSNorm.forward, mq.Qwen3_5RMSNormGated.forward, mq.torch_chunk_gated_delta_rule,
         mq.torch_recurrent_gated_delta_rule, mq.Qwen3_5TextRotaryEmbedding.forward) = self.saved


def f32list(x):
    return [float(f"{v:.9g}") for v in np.asarray(x, np.float32).tolist()]


@torch.no_grad()
def run_golden(model, prompts, check_prompt=1):
    """Logits of the last 3 prompt positions; 24 greedy tokens by repeated argmax, decoded with the model's cache
    (checked against a full re-forward of the whole sequence for one prompt)."""
    logits, greedy, gaps, top1 = [], [], [], []
    for pi, ids in enumerate(prompts):
        out = model(input_ids=torch.tensor([ids], device=DEV), use_cache=True)
        lg_all = out.logits[0]
        logits.append([f32list(lg_all[j].cpu().numpy()) for j in range(len(ids) - 3, len(ids))])
        past, lg = out.past_key_values, lg_all[-1]
        toks, gp, tv = [], [], []
        for step in range(GREEDY_STEPS):
            top = torch.topk(lg, 2)
            toks.append(int(top.indices[0]))
            gp.append(float(f"{float(top.values[0] - top.values[1]):.6g}"))
            tv.append(float(f"{float(top.values[0]):.9g}"))
            if step + 1 < GREEDY_STEPS:
                o = model(input_ids=torch.tensor([[toks[-1]]], device=DEV), past_key_values=past, use_cache=True)
                past, lg = o.past_key_values, o.logits[0, -1]
        if pi == check_prompt:
            fullf = model(input_ids=torch.tensor([ids + toks[:-1]], device=DEV)).logits[0, -1]
            d = float((fullf - lg).abs().max())
            log(f"  cached decode vs full forward at the last greedy step: max|d| = {d:.3e}")
            assert d < 1e-9, d
        greedy.append(toks)
        gaps.append(gp)
        top1.append(tv)
    return {"logits": logits, "greedy": greedy, "gaps": gaps, "top1_logit": top1}


# ----------------------------------------------------------------------------------------------------------------
# model construction

def is_zero_centred_norm(name):
    return (name.endswith("input_layernorm.weight") or name.endswith("post_attention_layernorm.weight")
            or name.endswith("q_norm.weight") or name.endswith("k_norm.weight")
            or name in ("model.language_model.norm.weight",)
            or name.startswith("mtp.") and "norm" in name)


def build_model():
    torch.manual_seed(SEED)
    cfg = Qwen3_5Config(text_config=copy.deepcopy(TEXT), vision_config=dict(VISION), tie_word_embeddings=False)
    model = Qwen3_5ForConditionalGeneration(cfg).eval()
    gen = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "visual" in name:
                continue
            if (name.endswith("norm.weight") or name.endswith("A_log") or name.endswith("dt_bias")
                    or "conv1d" in name):
                p.add_(torch.randn(p.shape, generator=gen) * 0.1)
    # MTP weights by hand (real key names and shapes), same init scale as transformers' linears
    std = TEXT.get("initializer_range", 0.02)
    mtp = {}
    for n, shape in [("mtp.pre_fc_norm_embedding.weight", [H]), ("mtp.pre_fc_norm_hidden.weight", [H]),
                     ("mtp.fc.weight", [H, 2 * H]),
                     ("mtp.layers.0.input_layernorm.weight", [H]),
                     ("mtp.layers.0.post_attention_layernorm.weight", [H]),
                     ("mtp.layers.0.self_attn.q_proj.weight", [2 * NH * HD, H]),
                     ("mtp.layers.0.self_attn.k_proj.weight", [NKV * HD, H]),
                     ("mtp.layers.0.self_attn.v_proj.weight", [NKV * HD, H]),
                     ("mtp.layers.0.self_attn.o_proj.weight", [H, NH * HD]),
                     ("mtp.layers.0.self_attn.q_norm.weight", [HD]),
                     ("mtp.layers.0.self_attn.k_norm.weight", [HD]),
                     ("mtp.layers.0.mlp.gate_proj.weight", [I, H]),
                     ("mtp.layers.0.mlp.up_proj.weight", [I, H]),
                     ("mtp.layers.0.mlp.down_proj.weight", [H, I]),
                     ("mtp.norm.weight", [H])]:
        mtp[n] = torch.randn(shape, generator=gen) * (0.1 if n.endswith("norm.weight") else std)
    return model, mtp


def disk_state_dict(model):
    """The names and bf16 values save_pretrained writes (A_log kept float32)."""
    d = tempfile.mkdtemp()
    m16 = copy.deepcopy(model).to(torch.bfloat16)
    m16.save_pretrained(d)
    sd = {}
    for f in sorted(os.listdir(d)):
        if f.endswith(".safetensors"):
            with safe_open(os.path.join(d, f), "pt") as sf:
                for k in sf.keys():
                    sd[k] = sf.get_tensor(k)
    cfg = json.load(open(os.path.join(d, "config.json")))
    shutil.rmtree(d)
    fp32 = dict(model.named_parameters())
    for k in sd:
        if k.endswith("A_log"):
            sd[k] = fp32[k].detach().clone().float()
    return sd, cfg


# ----------------------------------------------------------------------------------------------------------------
# tokenizer files

def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>"]
MERGES = [("Ġ", "t"), ("h", "e"), ("i", "n"), ("Ġ", "a"), ("Ġt", "he"), ("e", "r"), ("o", "n"), ("Ġ", "s"),
          ("r", "e"), ("Ġ", "w"), ("a", "t"), ("Ċ", "Ċ")]
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
               r"|\s+(?!\S)|\s+")

CHAT_TEMPLATE = (
    "{%- if tools %}"
    "{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}"
    "{{- '# Tools\\n\\nYou have access to the following functions:\\n\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\nTo call a function, reply with:\\n<tool_call>\\n<function=name>\\n"
    "<parameter=arg>\\nvalue\\n</parameter>\\n</function>\\n</tool_call><|im_end|>\\n' }}"
    "{%- elif messages[0].role == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'user' %}"
    "{{- '<|im_start|>user\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- elif message.role == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- if message.reasoning_content is defined and message.reasoning_content %}"
    "{{- '<think>\\n' + message.reasoning_content.strip('\\n') + '\\n</think>\\n\\n' }}"
    "{%- endif %}"
    "{%- if message.content %}{{- message.content }}{%- endif %}"
    "{%- if message.tool_calls %}"
    "{%- for tc in message.tool_calls %}"
    "{%- set f = tc.function if tc.function is defined else tc %}"
    "{{- '\\n<tool_call>\\n<function=' + f.name + '>\\n' }}"
    "{%- for k, v in f.arguments.items() %}"
    "{{- '<parameter=' + k + '>\\n' + (v if v is string else v | tojson) + '\\n</parameter>\\n' }}"
    "{%- endfor %}"
    "{{- '</function>\\n</tool_call>' }}"
    "{%- endfor %}"
    "{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}"
    "{{- '<think>\\n\\n</think>\\n\\n' }}"
    "{%- else %}{{- '<think>\\n' }}{%- endif %}"
    "{%- endif %}")


def tokenizer_files():
    b2u = bytes_to_unicode()
    vocab = {b2u[b]: b for b in range(256)}
    for i, sp in enumerate(SPECIALS):   # in the model vocab too, so the added tokens keep their ids
        vocab[sp] = 256 + i
    nid = 256 + len(SPECIALS)
    for a, b in MERGES:
        vocab[a + b] = nid
        nid += 1
    added = [{"id": 256 + i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, s in enumerate(SPECIALS)]
    tok = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN2_REGEX}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [[a, b] for a, b in MERGES]},
    }
    tcfg = {
        "add_bos_token": False, "add_prefix_space": False, "bos_token": None, "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>", "unk_token": None, "errors": "replace", "clean_up_tokenization_spaces": False,
        "split_special_tokens": False, "model_max_length": 4096, "tokenizer_class": "Qwen2Tokenizer",
        "added_tokens_decoder": {str(a["id"]): {k: a[k] for k in ("content", "lstrip", "normalized", "rstrip",
                                                                   "single_word", "special")} for a in added},
        "chat_template": CHAT_TEMPLATE,
    }
    gcfg = {"bos_token_id": 256, "pad_token_id": 256, "eos_token_id": [258, 256], "do_sample": True,
            "temperature": 0.6, "top_k": 20, "top_p": 0.95, "transformers_version": transformers.__version__}
    return tok, tcfg, gcfg


def write_common(d, tok, tcfg, gcfg):
    json.dump(tok, open(os.path.join(d, "tokenizer.json"), "w"), ensure_ascii=False, indent=1)
    json.dump(tcfg, open(os.path.join(d, "tokenizer_config.json"), "w"), ensure_ascii=False, indent=2)
    json.dump(gcfg, open(os.path.join(d, "generation_config.json"), "w"), indent=2)


# ----------------------------------------------------------------------------------------------------------------
# mlx layout

def mlx_module_path(hf_name):
    """model.language_model.X.weight -> language_model.model.X ; lm_head.weight -> language_model.lm_head"""
    base = hf_name[: -len(".weight")]
    if base.startswith("model.language_model."):
        return "language_model.model." + base[len("model.language_model."):]
    if base == "lm_head":
        return "language_model.lm_head"
    raise ValueError(hf_name)


def is_quantizable(hf_name, shape):
    # mlx-lm quantizes modules with to_quantized (Linear, Embedding), i.e. 2-D weights except conv1d
    return hf_name.endswith(".weight") and len(shape) == 2 and "conv1d" not in hf_name


def make_mlx_variant(sd, kind, tied, exact=False):
    """sd: HF disk names -> torch tensor (bf16, A_log f32). Returns (tensors for the file, quant block,
    reference state dict in HF names as float32 numpy; with `exact`, the quantized matrices as exact_dequantize
    gives them, float64)."""
    fdt = "f16" if kind == "bonsai" else "bf16"
    files, ref, qblock = {}, {}, {}
    if kind == "bonsai":
        qblock = {"group_size": 128, "bits": 2}
    else:
        qblock = {"group_size": 64, "bits": 4, "mode": "affine"}
    for name, t in sd.items():
        if name.startswith("model.visual") or name.startswith("mtp."):
            continue
        if tied and name == "lm_head.weight":
            continue
        w = t.float().numpy()
        if name.endswith("A_log"):
            mkey = mlx_module_path(name[: -len(".A_log")] + ".weight") + ".A_log"
            files[mkey] = ("f32", w.shape, to_bytes(w, "f32"))
            ref[name] = w
            continue
        mpath = mlx_module_path(name) if name.endswith(".weight") else None
        if name.endswith("dt_bias"):
            mkey = mlx_module_path(name[: -len(".dt_bias")] + ".weight") + ".dt_bias"
            v = round_to(w, fdt)
            files[mkey] = (fdt, w.shape, to_bytes(v, fdt))
            ref[name] = v
            continue
        if "conv1d" in name:
            v = round_to(w, fdt)                                 # [C, 1, K] -> [C, K, 1]
            files[mpath + ".weight"] = (fdt, (w.shape[0], w.shape[2], 1), to_bytes(np.moveaxis(v, 2, 1), fdt))
            ref[name] = v
            continue
        if w.ndim == 1:
            if is_zero_centred_norm(name):
                stored = round_bf16(w + np.float32(1.0))          # mlx-lm sanitize: bf16 v + 1.0
                stored = round_to(stored, fdt)
                ref[name] = stored - np.float32(1.0)              # HF computes 1 + w
            else:                                                # GDN gated norm: plain weight
                stored = round_to(w, fdt)
                ref[name] = stored
            files[mpath + ".weight"] = (fdt, w.shape, to_bytes(stored, fdt))
            continue
        assert is_quantizable(name, w.shape), name
        if kind == "bonsai":
            bits, gs = 2, 128
            packed, s, b = ternary_quantize(w, fdt, gs)
        else:
            bits, gs = (MIXED.get(mpath, (4, 64)) if kind == "mixed" else (4, 64))
            if kind == "mixed" and mpath in MIXED:
                qblock[mpath] = {"group_size": gs, "bits": bits}
            packed, s, b = mlx_quantize(w, gs, bits, fdt)
        files[mpath + ".weight"] = ("u32", packed.shape, to_bytes(packed, "u32"))
        files[mpath + ".scales"] = (fdt, s.shape, to_bytes(s, fdt))
        files[mpath + ".biases"] = (fdt, b.shape, to_bytes(b, fdt))
        ref[name] = (exact_dequantize(packed, s, b, gs, bits) if exact
                     else mlx_dequantize(packed, s, b, gs, bits, fdt))
    if tied:
        ref["lm_head.weight"] = ref["model.language_model.embed_tokens.weight"]
    return files, qblock, ref


def mlx_config(hf_cfg, qblock, tied, dtype):
    cfg = copy.deepcopy(hf_cfg)
    cfg.pop("vision_config", None)
    cfg["tie_word_embeddings"] = tied
    cfg["text_config"]["tie_word_embeddings"] = tied
    cfg["dtype"] = dtype
    cfg["text_config"]["dtype"] = dtype
    cfg["quantization"] = qblock
    cfg["quantization_config"] = copy.deepcopy(qblock)
    return dict(sorted(cfg.items()))


def reference_model(base_model, ref):
    """A float64 transformers model holding `ref` (HF names, float32 or float64 numpy) for the text weights."""
    m = copy.deepcopy(base_model).to(torch.float64)
    sd = m.state_dict()
    missing = [k for k in sd if not k.startswith("model.visual") and k not in ref]
    assert not missing, missing
    with torch.no_grad():
        for k, v in ref.items():
            assert tuple(sd[k].shape) == tuple(v.shape), (k, sd[k].shape, v.shape)
            v = np.asarray(v)
            sd[k].copy_(torch.from_numpy(v if v.dtype == np.float64 else v.astype(np.float32)).to(torch.float64))
    return m.to(DEV).eval()


# ----------------------------------------------------------------------------------------------------------------
# MTP by hand

def rms1p(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (1.0 + w)


def rope_cos_sin(T, device):
    dim = int(HD * TEXT["rope_parameters"]["partial_rotary_factor"])
    inv = 1.0 / (TEXT["rope_parameters"]["rope_theta"] ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    f = torch.arange(T, dtype=torch.float64)[:, None] * inv[None]
    emb = torch.cat([f, f], -1).to(device)
    return emb.cos(), emb.sin()


def apply_rope(x, cos, sin):  # x [B, h, T, HD]; rotate-half on the first `dim` dims
    d = cos.shape[-1]
    xr, xp = x[..., :d], x[..., d:]
    x1, x2 = xr[..., : d // 2], xr[..., d // 2:]
    rot = torch.cat([-x2, x1], -1)
    return torch.cat([xr * cos + rot * sin, xp], -1)


def mtp_by_hand(W, E, lm_head, h, next_ids, eps):
    """W: mtp.* float64 tensors; E: embedding [V,H]; h: [T,H] main post-norm hidden; next_ids: [T] (x_{t+1})."""
    T = h.shape[0]
    p = "mtp.layers.0."
    e = E[next_ids]
    u = torch.cat([rms1p(e, W["mtp.pre_fc_norm_embedding.weight"], eps),
                   rms1p(h, W["mtp.pre_fc_norm_hidden.weight"], eps)], -1) @ W["mtp.fc.weight"].T
    x = u
    a = rms1p(x, W[p + "input_layernorm.weight"], eps)
    qg = (a @ W[p + "self_attn.q_proj.weight"].T).view(T, NH, 2 * HD)
    q, gate = qg[..., :HD], qg[..., HD:].reshape(T, NH * HD)
    k = (a @ W[p + "self_attn.k_proj.weight"].T).view(T, NKV, HD)
    v = (a @ W[p + "self_attn.v_proj.weight"].T).view(T, NKV, HD)
    q = rms1p(q, W[p + "self_attn.q_norm.weight"], eps).transpose(0, 1)
    k = rms1p(k, W[p + "self_attn.k_norm.weight"], eps).transpose(0, 1)
    v = v.transpose(0, 1)
    cos, sin = rope_cos_sin(T, h.device)                      # positions 0..T-1 (= t)
    q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
    k = k.repeat_interleave(NH // NKV, 0)
    v = v.repeat_interleave(NH // NKV, 0)
    s = (q @ k.transpose(-1, -2)) * HD ** -0.5
    s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool, device=h.device), 1), float("-inf"))
    o = (s.softmax(-1) @ v).transpose(0, 1).reshape(T, NH * HD)
    o = (o * torch.sigmoid(gate)) @ W[p + "self_attn.o_proj.weight"].T
    x = x + o
    m = rms1p(x, W[p + "post_attention_layernorm.weight"], eps)
    m = (torch.nn.functional.silu(m @ W[p + "mlp.gate_proj.weight"].T) * (m @ W[p + "mlp.up_proj.weight"].T)) \
        @ W[p + "mlp.down_proj.weight"].T
    x = x + m
    return rms1p(x, W["mtp.norm.weight"], eps) @ lm_head.T


@torch.no_grad()
def mtp_via_transformers_layer(model, W, E, lm_head, h, next_ids, eps):
    """Cross-check: the same MTP step through a transformers Qwen3_5DecoderLayer (full attention)."""
    tcfg = model.config.text_config
    layer = mq.Qwen3_5DecoderLayer(tcfg, layer_idx=3).to(torch.float64).to(h.device).eval()
    sd = {k[len("mtp.layers.0."):]: v for k, v in W.items() if k.startswith("mtp.layers.0.")}
    layer.load_state_dict(sd)
    T = h.shape[0]
    u = torch.cat([rms1p(E[next_ids], W["mtp.pre_fc_norm_embedding.weight"], eps),
                   rms1p(h, W["mtp.pre_fc_norm_hidden.weight"], eps)], -1) @ W["mtp.fc.weight"].T
    rot = model.model.language_model.rotary_emb
    pos = torch.arange(T, device=h.device)[None].expand(3, 1, T)
    cos, sin = rot(u[None], pos)
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64, device=h.device).triu(1)[None, None]
    x = layer(u[None], position_embeddings=(cos, sin), attention_mask=mask)
    x = x[0] if isinstance(x, tuple) else x
    return rms1p(x[0], W["mtp.norm.weight"], eps) @ lm_head.T


# ----------------------------------------------------------------------------------------------------------------

def main():
    out_root = sys.argv[1] if len(sys.argv) > 1 else "tests/goldens/qwen3_5"
    os.makedirs(out_root, exist_ok=True)
    made_with = (f"transformers {transformers.__version__}, torch {torch.__version__}, float64 on "
                 f"{torch.cuda.get_device_name() if DEV == 'cuda' else 'cpu'}; script scripts/golden/"
                 f"make_qwen3_5_tiny.py")
    log(made_with)
    rng = np.random.default_rng(1234)
    prompts = [[int(v) for v in rng.integers(0, 256, n)] for n in PROMPT_LENS]
    tok, tcfg, gcfg = tokenizer_files()

    model, mtp = build_model()
    sd, hf_cfg = disk_state_dict(model)
    for k in ("architectures", "model_type", "text_config"):
        assert k in hf_cfg, k
    hf_cfg["text_config"]["mtp_num_hidden_layers"] = 1
    hf_cfg["text_config"]["mtp_use_dedicated_embeddings"] = False
    hf_cfg["text_config"]["full_attention_interval"] = 4
    desc = ("qwen3_5 tiny: vocab 320, hidden 128, ffn 256, 8 layers (3 GDN + 1 gated full attention) x 2, "
            "4 q / 2 kv heads x 32, partial rope 0.25 theta 1e7, GDN 2 k-heads / 4 v-heads x 32, conv 4")

    # ---------------- (a) bf16-mtp
    da = os.path.join(out_root, "bf16-mtp")
    os.makedirs(da, exist_ok=True)
    full = dict(sd)
    for k, v in mtp.items():
        full[k] = v.to(torch.bfloat16)
    shard1 = {k: v for k, v in full.items()
              if k.startswith("model.language_model.") and (".layers." not in k or int(k.split(".")[3]) < 4)}
    shard2 = {k: v for k, v in full.items() if k not in shard1}
    names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    wmap = {}
    for fn, part in zip(names, (shard1, shard2)):
        save_file({k: v.contiguous() for k, v in part.items()}, os.path.join(da, fn), metadata={"format": "pt"})
        wmap.update({k: fn for k in part})
    total = sum(v.numel() * v.element_size() for v in full.values())
    json.dump({"metadata": {"total_size": total, "total_parameters": sum(v.numel() for v in full.values())},
               "weight_map": dict(sorted(wmap.items()))},
              open(os.path.join(da, "model.safetensors.index.json"), "w"), indent=2)
    json.dump(hf_cfg, open(os.path.join(da, "config.json"), "w"), indent=2)
    write_common(da, tok, tcfg, gcfg)

    ref_a = Qwen3_5ForConditionalGeneration.from_pretrained(da, dtype=torch.float64).to(DEV).eval()
    # the disk round trip must give exactly the bf16 weights (and A_log f32)
    rsd = ref_a.state_dict()
    for k, v in sd.items():
        assert torch.equal(rsd[k].cpu(), v.to(torch.float64)), k
    with torch.no_grad():
        x = torch.tensor([prompts[3]], device=DEV)
        plain = ref_a(input_ids=x).logits
        with F64Patches():
            patched = ref_a(input_ids=x).logits
    log("bf16-mtp: unpatched transformers vs float64-patched max|dlogit| =",
        f"{float((plain - patched).abs().max()):.3e}", "(logit scale", f"{float(patched.abs().max()):.3f})")

    goldens = {}
    with F64Patches():
        goldens["bf16-mtp"] = run_golden(ref_a, prompts)

        # ---------------- MTP golden (by hand)
        ids = prompts[MTP_PROMPT]
        with torch.no_grad():
            xo = ref_a.model(input_ids=torch.tensor([ids], device=DEV))
            hidden = xo.last_hidden_state[0]
            lm_w = ref_a.lm_head.weight
            chk = float((hidden @ lm_w.T - ref_a(input_ids=torch.tensor([ids], device=DEV)).logits[0]).abs().max())
            log("post-norm hidden @ lm_head vs logits max|d| =", f"{chk:.3e}")
            assert chk < 1e-9
            nxt = ids[1:] + [goldens["bf16-mtp"]["greedy"][MTP_PROMPT][0]]
            W = {k: v.to(torch.bfloat16).to(torch.float64).to(DEV) for k, v in mtp.items()}
            E = ref_a.model.language_model.embed_tokens.weight
            eps = TEXT["rms_norm_eps"]
            nt = torch.tensor(nxt, device=DEV)
            lg = mtp_by_hand(W, E, lm_w, hidden, nt, eps)
            lg2 = mtp_via_transformers_layer(ref_a, W, E, lm_w, hidden, nt, eps)
            dchk = float((lg - lg2).abs().max())
            log("MTP by hand vs transformers decoder layer max|d| =", f"{dchk:.3e}")
            assert dchk < 1e-8
            # causality: t = 0..38 must not depend on t = 39
            lg_short = mtp_by_hand(W, E, lm_w, hidden[:39], nt[:39], eps)
            assert float((lg_short - lg[:39]).abs().max()) < 1e-10
        mtp_golden = {
            "made_with": made_with, "config": desc,
            "prompt_index": MTP_PROMPT, "prompt_ids": ids,
            "hidden": "h_t = main model output after the final norm model.language_model.norm (the tensor lm_head "
                      "reads), as vLLM's Qwen3_5MultiTokenPredictor receives it",
            "formula": "u_t = mtp.fc(concat[rms1p(E[x_{t+1}], pre_fc_norm_embedding), rms1p(h_t, pre_fc_norm_hidden)]);"
                       " y = mtp.layers.0(u) (gated full attention, causal over t, own KV, rope position t, dense MLP);"
                       " logits_t = lm_head(rms1p(y_t, mtp.norm)); rms1p(x, w) = x/sqrt(mean(x^2)+1e-6)*(1+w)",
            "positions": list(range(len(ids))),
            "input_tokens": nxt,
            "note": "t = 0..38 use x_{t+1} from the prompt; t = 39 uses x_40 = the main model's greedy next token "
                    "(golden.json greedy[2][0]); logits are for t = 36, 37, 38; logits_t39 for t = 39",
            "argmax": [int(v) for v in lg.argmax(-1).tolist()],
            "logits": [f32list(lg[t].cpu().numpy()) for t in (36, 37, 38)],
            "logits_t39": f32list(lg[39].cpu().numpy()),
        }
        json.dump(mtp_golden, open(os.path.join(da, "mtp_golden.json"), "w"), indent=1)
        log("MTP argmax:", mtp_golden["argmax"])

        # ---------------- mlx variants
        for vname, kind, tied, dtype in (("mlx-4bit", "4bit", True, "bfloat16"),
                                         ("mlx-mixed", "mixed", False, "bfloat16"),
                                         ("bonsai-2bit", "bonsai", False, "float16")):
            dv = os.path.join(out_root, vname)
            os.makedirs(dv, exist_ok=True)
            files, qblock, ref = make_mlx_variant(sd, kind, tied)
            total = write_safetensors(os.path.join(dv, "model.safetensors"), files, {"format": "mlx"})
            nparams = sum(int(np.prod(s)) for (_, s, _) in files.values())
            json.dump({"metadata": {"total_size": total, "total_parameters": nparams},
                       "weight_map": {k: "model.safetensors" for k in sorted(files)}},
                      open(os.path.join(dv, "model.safetensors.index.json"), "w"), indent=4)
            json.dump(mlx_config(hf_cfg, qblock, tied, dtype), open(os.path.join(dv, "config.json"), "w"), indent=4)
            write_common(dv, tok, tcfg, gcfg)
            rm = reference_model(ref_a, ref)
            goldens[vname] = run_golden(rm, prompts)
            dq = max(float(np.abs(ref[k] - sd[k].float().numpy()).max()) for k in ref
                     if ref[k].ndim == 2 and not (tied and k == "lm_head.weight"))
            if os.environ.get("QWEN35_DUMP_REF"):   # scratch copy of the reference weights, for checking only
                np.savez(os.path.join(os.environ["QWEN35_DUMP_REF"], vname + ".npz"), **ref)
            log(f"{vname}: {len(files)} tensors, {total} bytes; max |dequant - bf16| over matrices {dq:.4f}")
            del rm

    descs = {"bf16-mtp": desc + "; bf16 HF layout, untied, with mtp.*, 2 shards",
             "mlx-4bit": desc + "; mlx-community layout, affine 4-bit g64 (embedding too), tied embeddings",
             "mlx-mixed": desc + "; mlx-community layout, affine 4-bit g64 default + per-module overrides "
                                 + json.dumps({k: {"bits": b, "group_size": g} for k, (b, g) in MIXED.items()})
                                 + ", untied",
             "bonsai-2bit": desc + "; Ternary Bonsai style: ternary x fp16 scale per 128, MLX affine 2-bit g128 "
                                   "codes {0,1,2} bias -scale, embedding and untied lm_head included, fp16"}
    for vname, g in goldens.items():
        doc = {"made_with": made_with, "config": descs[vname], "prompt_ids": prompts,
               "logits_positions": "last 3 positions of each prompt", **g}
        json.dump(doc, open(os.path.join(out_root, vname, "golden.json"), "w"), indent=1)
        log(vname, "greedy:", g["greedy"])
        log(vname, "min gap per prompt:", [min(x) for x in g["gaps"]])

    # ---------------- tokenizer check
    from transformers import AutoTokenizer
    tk = AutoTokenizer.from_pretrained(da)
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there, the weather?"}]
    txt = tk.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    enc = tk(txt)["input_ids"]
    assert tk.decode(enc) == txt, (tk.decode(enc), txt)
    assert max(enc) < V and 257 in enc and 258 in enc
    txt2 = tk.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True, enable_thinking=False)
    log("tokenizer:", type(tk).__name__, "eos", tk.eos_token, tk.eos_token_id, "len", len(tk))
    log("chat:", repr(txt), enc)
    log("chat (no thinking):", repr(txt2))

    # ---------------- tarball for the device run
    outdir = os.environ.get("OUT")
    if outdir:
        with tarfile.open(os.path.join(outdir, "qwen3_5_goldens.tar.gz"), "w:gz") as tf:
            tf.add(out_root, arcname="qwen3_5")
        open(os.path.join(outdir, "log.txt"), "w").write("\n".join(LOG) + "\n")
    sizes = {}
    for dp, _, fs in os.walk(out_root):
        for f in fs:
            sizes[os.path.relpath(os.path.join(dp, f), out_root)] = os.path.getsize(os.path.join(dp, f))
    log("total bytes", sum(sizes.values()))


if __name__ == "__main__":
    main()
