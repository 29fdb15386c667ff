#!/usr/bin/env python3
"""Tiny random `nemotron_h` checkpoints in two real on-disk formats, with golden logits from HF transformers.

Runs on a CPU (transformers >= 5 with nemotron_h, torch, safetensors, numpy; no network, no mlx):
    python3 scripts/golden/make_nemotron_h_tiny.py [OUT_DIR]   # OUT_DIR default tests/goldens/nemotron_h
and writes OUT_DIR/{bf16,mlx-4bit}/. Seeded and deterministic (numpy + torch seeds, CPU init); the reference
forwards run in float64.

The model (a Nemotron-H hybrid, shrunk): vocab 320, hidden 64, 6 layers "MEM*E-" (hybrid_override_pattern, saved
as layers_block_type): Mamba-2 (4 heads x 16, ssm_state 32, n_groups 2, conv kernel 4 with bias, chunk 8),
MoE (8 routed experts of 64, top-2, sigmoid router with e_score_correction_bias, n_group 2 / topk_group 1,
norm_topk_prob, routed_scaling_factor 2.5, one shared expert of 64; relu2 experts), attention without RoPE
(4 q / 2 kv heads x 16), relu2 MLP of 128, RMSNorm eps 1e-5, untied lm_head.

Weights: torch.manual_seed(0) init by transformers, then every parameter that init leaves trivial or equal is
perturbed with seeded noise: all RMSNorm weights and the gated norm (init 1), D (1), dt_bias, conv1d weight and
bias, the router weight (N(0, 0.5): varied routing) and e_score_correction_bias (init 0, N(0, 0.05): big enough to
change some choices against the unbiased scores). Every value is then rounded to bf16 (A_log and
e_score_correction_bias stay float32, as real checkpoints keep them).

Variants (OUT_DIR/<name>/: config.json, safetensors (+ index), tokenizer.json, tokenizer_config.json,
generation_config.json, golden.json):
  (a) bf16: what transformers' save_pretrained writes (its conversion mapping turns the runtime names back into
      the checkpoint's: backbone.*, experts.N.{up,down}_proj.weight), rewritten into 2 shards with
      model.safetensors.index.json.
  (b) mlx-4bit: mlx-community layout as mlx-lm's nemotron_h sanitize + convert writes it: experts stacked as
      mixer.switch_mlp.fc1 [E, I, H] / fc2 [E, H, I], conv1d as [C, K, 1]; every Linear, the stacks and the
      embedding MLX-affine 4-bit g64 except per-module overrides at 8-bit g64 (lm_head and layer 5's MLP
      down_proj: mixed bits) and the routers `mixer.gate` at 8-bit g64, as mlx-community keeps MoE routers
      (a router mlx-lm leaves in bf16 is read too: the bf16 variant's).
      The golden uses the DEQUANTIZED weights exactly as MLX dequantizes them (make_qwen3_5_tiny.py's quantizer).

golden.json: prompt_ids (3 seeded prompts of lengths 5, 17, 40, ids in 0..255), logits (float32 logits of the
last 3 positions of each prompt), greedy (16 tokens by repeated argmax over a full re-forward; EOS is not a stop),
gaps (top1 - top2 logit at each greedy step), top1_logit.
Reference precision: the model is cast to float64 and transformers' float32 islands are patched to stay in float64:
the RMSNorms, the gated group RMSNorm, the router (it casts to float32), the attention softmax, and the Mamba-2
scan (replaced by the exact sequential recurrence in float64: dt = softplus(dt + dt_bias) clamped to
time_step_limit, S = exp(dt A) S + dt B x, y = C S + D x). The unpatched transformers forward (float32, chunked
SSD scan) is also run and its max |diff| logged, as a check of the patches.
Tokenizer: make_qwen3_5_tiny.py's (byte-level BPE over 275 ids, ChatML template).

MTP head (bf16 only: mlx-lm strips it; transformers ignores `mtp.*` on load, so it is built here by name, seeded,
with the real key names of NVIDIA's checkpoints as vLLM's nemotron_h_mtp.py reads them; config
num_nextn_predict_layers 1, mtp_layers_block_type ["full_attention", "moe"]):
  mtp.layers.0.{enorm, hnorm}.weight [H], mtp.layers.0.eh_proj.weight [H, 2H], mtp.layers.0.norm.weight,
  mtp.layers.0.mixer.{q,k,v,o}_proj.weight (attention without RoPE, as the main layers),
  mtp.layers.1.norm.weight, mtp.layers.1.mixer.{gate.weight, gate.e_score_correction_bias,
  experts.N.{up,down}_proj.weight, shared_experts.{up,down}_proj.weight} (experts as the main MoE layers),
  mtp.layers.1.final_layernorm.weight.
  Semantics (families-and-formats §1.7; vLLM NemotronHMultiTokenPredictor): u = eh_proj(concat[enorm(E x_{t+1}),
  hnorm(h_t)]) (embedding first), h_t the main model's output after norm_f; then each sublayer as a main-model
  block (x + mixer(norm(x))), attention causal over the head's own positions; then final_layernorm; then the
  main lm_head. mtp_golden.json (the same fields as qwen3_5's): for the 40-token prompt, t = 0..38 with x_{t+1}
  from the prompt and t = 39 with the main model's greedy next token; argmax at every t, float32 logits at t = 36,
  37, 38 and 39. The sublayers run as transformers' own NemotronHBlock modules (float64, the patches above)
  loaded with the MTP weights; the fusion and final norm by hand.
"""
import copy
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import torch
import transformers
from safetensors import safe_open
from safetensors.torch import save_file
from transformers import NemotronHConfig, NemotronHForCausalLM
from transformers.models.nemotron_h import modeling_nemotron_h as mh

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_qwen3_5_tiny import (f32list, mlx_dequantize, mlx_quantize, to_bytes, tokenizer_files,  # noqa: E402
                               write_common, write_safetensors)

PATTERN = "MEM*E-"
CONFIG = dict(
    vocab_size=320, hidden_size=64, hybrid_override_pattern=PATTERN, num_hidden_layers=len(PATTERN),
    num_attention_heads=4, num_key_value_heads=2, head_dim=16, intermediate_size=128, mlp_hidden_act="relu2",
    mamba_num_heads=4, mamba_head_dim=16, ssm_state_size=32, n_groups=2, conv_kernel=4, chunk_size=8,
    use_conv_bias=True, n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=64,
    moe_shared_expert_intermediate_size=64, n_shared_experts=1, n_group=2, topk_group=1, norm_topk_prob=True,
    routed_scaling_factor=2.5, layer_norm_epsilon=1e-5, max_position_embeddings=4096, tie_word_embeddings=False,
    eos_token_id=258, pad_token_id=256, bos_token_id=256, num_nextn_predict_layers=0)
PROMPT_LENS = [5, 17, 40]
GREEDY_STEPS = 16
MLX_OVERRIDES = {"lm_head": 8, "backbone.layers.5.mixer.down_proj": 8,  # module path -> bits (g64)
                 "backbone.layers.1.mixer.gate": 8, "backbone.layers.4.mixer.gate": 8}
KEEP_F32 = ("A_log", "e_score_correction_bias")
MTP_TYPES = ["full_attention", "moe"]  # transformers' default mtp_layers_block_type ("*E")
MTP_PROMPT = 2  # the 40-token prompt
LOG = []
SCAN_CALLS = [0]  # the float64 scan really runs (the patch took): counted, checked in reference_logits


def log(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    LOG.append(s)


# ----------------------------------------------------------------------------------------------------------------
# float64 reference: keep transformers' nemotron_h code from dropping to float32 inside

def _rms_f64(self, x):
    x = x.to(torch.float64)
    return self.weight.to(x.dtype) * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))


def _gated_rms_f64(self, x, gate=None):
    x = x.to(torch.float64)
    if gate is not None:
        x = x * torch.nn.functional.silu(gate.to(x.dtype))
    g = x.view(*x.shape[:-1], -1, self.group_size)
    g = g * torch.rsqrt(g.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
    return self.weight.to(x.dtype) * g.view(x.shape)


def _router_f64(self, hidden_states):
    h = hidden_states.view(-1, self.hidden_dim).to(torch.float64)
    logits = h @ self.weight.to(torch.float64).T
    scores = logits.sigmoid()
    choice = scores + self.e_score_correction_bias.to(torch.float64)
    per = self.num_experts // self.num_group
    group_scores = choice.view(-1, self.num_group, per).topk(2, dim=-1)[0].sum(-1)
    keep = torch.zeros_like(group_scores).scatter_(1, group_scores.topk(self.topk_group, dim=-1)[1], 1.0)
    mask = keep.unsqueeze(-1).expand(-1, self.num_group, per).reshape(-1, self.num_experts).bool()
    idx = choice.masked_fill(~mask, float("-inf")).topk(self.top_k, dim=-1)[1]
    w = scores.gather(1, idx)
    if self.norm_topk_prob:
        w = w / (w.sum(-1, keepdim=True) + 1e-20)
    return logits, w * self.routed_scaling_factor, idx


def _scan_f64(module, hidden_states, B, C, dt, cache, **kw):
    """The exact sequential Mamba-2 recurrence in float64 (no cache: full forwards only)."""
    assert cache is None
    SCAN_CALLS[0] += 1
    b, T, _ = hidden_states.shape
    H, P, N, G = module.num_heads, module.head_dim, module.ssm_state_size, module.n_groups
    x = hidden_states.to(torch.float64).view(b, T, H, P)
    Bm = B.to(torch.float64).view(b, T, G, N).repeat_interleave(H // G, dim=2)
    Cm = C.to(torch.float64).view(b, T, G, N).repeat_interleave(H // G, dim=2)
    d = torch.nn.functional.softplus(dt.to(torch.float64) + module.dt_bias.to(torch.float64))
    d = d.clamp(min=module.time_step_limit[0], max=module.time_step_limit[1])
    A = -torch.exp(module.A_log.to(torch.float64))
    S = torch.zeros(b, H, P, N, dtype=torch.float64, device=x.device)
    out = torch.zeros(b, T, H, P, dtype=torch.float64, device=x.device)
    for t in range(T):
        S = S * torch.exp(d[:, t] * A)[:, :, None, None] + (d[:, t, :, None] * Bm[:, t])[:, :, None, :] * x[:, t, :, :, None]
        out[:, t] = (S * Cm[:, t, :, None, :]).sum(-1) + x[:, t] * module.D.to(torch.float64)[None, :, None]
    return out.view(b, T, H * P)


def _eager_f64(module, query, key, value, attention_mask, scaling, dropout=0.0, **kw):
    k = mh.repeat_kv(key, module.num_key_value_groups)
    v = mh.repeat_kv(value, module.num_key_value_groups)
    s = torch.matmul(query, k.transpose(2, 3)) * scaling
    T, S = s.shape[-2], s.shape[-1]
    s = s.masked_fill(torch.ones(T, S, dtype=torch.bool, device=s.device).triu(S - T + 1), float("-inf"))
    return torch.matmul(s.softmax(-1), v).transpose(1, 2).contiguous(), None


class F64Patches:
    NAMES = ("NemotronHRMSNorm.forward", "NemotronHRMSNormGated.forward", "NemotronHTopkRouter.forward",
             "mamba2_scan_forward", "eager_attention_forward")

    def __enter__(self):
        self.saved = (mh.NemotronHRMSNorm.forward, mh.NemotronHRMSNormGated.forward, mh.NemotronHTopkRouter.forward,
                      mh.mamba2_scan_forward, mh.eager_attention_forward)
        mh.NemotronHRMSNorm.forward = _rms_f64
        mh.NemotronHRMSNormGated.forward = _gated_rms_f64
        mh.NemotronHTopkRouter.forward = _router_f64
        mh.mamba2_scan_forward = _scan_f64
        mh.eager_attention_forward = _eager_f64
        return self

    def __exit__(self, *a):
        (mh.NemotronHRMSNorm.forward, mh.NemotronHRMSNormGated.forward, mh.NemotronHTopkRouter.forward,
         mh.mamba2_scan_forward, mh.eager_attention_forward) = self.saved


# ----------------------------------------------------------------------------------------------------------------

def round_bf16_(t):
    return t.to(torch.bfloat16).to(t.dtype)


def build_model():
    cfg = NemotronHConfig(**CONFIG)
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    model = NemotronHForCausalLM(cfg).to(torch.float32).eval()
    rng = np.random.default_rng(52)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = lambda scale: torch.from_numpy(rng.normal(0, scale, tuple(p.shape)).astype(np.float32))  # noqa
            if name.endswith("norm.weight") or name.endswith("norm_f.weight") or name.endswith(".D"):
                p.copy_(1.0 + noise(0.1))
            elif name.endswith("dt_bias") or "conv1d" in name:
                p.add_(noise(0.1))
            elif name.endswith("gate.weight"):
                p.copy_(noise(0.5))
        for name, buf in model.named_buffers():
            if name.endswith("e_score_correction_bias"):
                buf.copy_(torch.from_numpy(rng.normal(0, 0.05, tuple(buf.shape)).astype(np.float32)))
        for name, p in list(model.named_parameters()) + list(model.named_buffers()):
            if not name.endswith(KEEP_F32):
                p.copy_(round_bf16_(p))
    return model


def saved_state_dict(model):
    """What save_pretrained writes (names after transformers' reverse conversion), bf16 but KEEP_F32 tensors."""
    m = NemotronHForCausalLM(model.config)
    m.load_state_dict(model.state_dict())
    m = m.to(torch.bfloat16)
    with torch.no_grad():
        for name, p in list(m.named_parameters()) + list(m.named_buffers()):
            if name.endswith(KEEP_F32):
                p.data = dict(list(model.named_parameters()) + list(model.named_buffers()))[name].data.clone()
    tmp = tempfile.mkdtemp()
    try:
        m.save_pretrained(tmp)
        sd = {}
        for fn in sorted(os.listdir(tmp)):
            if fn.endswith(".safetensors"):
                with safe_open(os.path.join(tmp, fn), "pt") as f:
                    for k in f.keys():
                        sd[k] = f.get_tensor(k)
        cfg = json.load(open(os.path.join(tmp, "config.json")))
    finally:
        shutil.rmtree(tmp)
    return sd, cfg


@torch.no_grad()
def run_golden(model, prompts):
    logits, greedy, gaps, top1 = [], [], [], []
    for ids in prompts:
        seq = list(ids)
        g, gp, t1 = [], [], []
        for step in range(GREEDY_STEPS):
            lg = model(input_ids=torch.tensor([seq]), use_cache=False).logits[0]
            if step == 0:
                logits.append([f32list(lg[j].numpy()) for j in range(len(ids) - 3, len(ids))])
            last = lg[-1]
            top = torch.topk(last, 2)
            g.append(int(top.indices[0]))
            gp.append(float(top.values[0] - top.values[1]))
            t1.append(float(top.values[0]))
            seq.append(g[-1])
        greedy.append(g)
        gaps.append(gp)
        top1.append(t1)
    return {"logits": logits, "greedy": greedy, "gaps": gaps, "top1_logit": top1}


@torch.no_grad()
def reference_logits(model, ref, prompts, check_unpatched=True, keep_model=None):
    """The float64 golden of a model holding `ref` (checkpoint names -> numpy) as its weights (the float64
    model appended to keep_model when given)."""
    m = NemotronHForCausalLM(model.config).to(torch.float64).eval()
    m.config._attn_implementation = "eager"
    m.config._experts_implementation = "eager"  # the grouped_mm kernel takes no float64
    runtime = {k: v for k, v in list(model.named_parameters()) + list(model.named_buffers())}
    sd = m.state_dict()
    for k in sd:
        assert k in ref, k
        sd[k].copy_(torch.from_numpy(np.asarray(ref[k], np.float64)).view(sd[k].shape))
    assert set(ref) == set(sd), set(ref) ^ set(sd)
    del runtime
    calls = SCAN_CALLS[0]
    with F64Patches():
        golden = run_golden(m, prompts)
    assert SCAN_CALLS[0] - calls == 2 * GREEDY_STEPS * len(prompts), "the float64 scan patch did not take"
    if check_unpatched:
        m32 = NemotronHForCausalLM(model.config).eval()
        m32.load_state_dict({k: v.to(torch.float32) for k, v in m.state_dict().items()})
        worst = 0.0
        for i, ids in enumerate(prompts):
            lg = m32(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -3:].numpy()
            worst = max(worst, float(np.abs(lg - np.array(golden["logits"][i], np.float64)).max()))
        log(f"  unpatched transformers float32 (chunked SSD scan) vs the float64 golden: max |diff| {worst:.2e}")
        assert worst < 1e-3, worst
    if keep_model is not None:
        keep_model.append(m)
    return golden


def mtp_config(model):
    c = copy.deepcopy(model.config)
    c.layers_block_type = list(MTP_TYPES)
    c.num_hidden_layers = len(MTP_TYPES)
    c._attn_implementation = "eager"
    c._experts_implementation = "eager"
    return c


def make_mtp(model):
    """The MTP head's tensors, runtime names ("mtp.layers.i." + a NemotronHBlock's state-dict name, experts as
    stacks) -> float32 torch, seeded, bf16-rounded but the KEEP_F32 ones."""
    c = mtp_config(model)
    rng = np.random.default_rng(5207)
    out = {}
    H = c.hidden_size
    shapes = {"mtp.layers.0.enorm.weight": (H,), "mtp.layers.0.hnorm.weight": (H,),
              "mtp.layers.0.eh_proj.weight": (H, 2 * H),
              f"mtp.layers.{len(MTP_TYPES) - 1}.final_layernorm.weight": (H,)}
    for i in range(len(MTP_TYPES)):
        for k, v in mh.NemotronHBlock(c, i).state_dict().items():
            shapes[f"mtp.layers.{i}.{k}"] = tuple(v.shape)
    for k, shape in sorted(shapes.items()):
        if k.endswith("norm.weight"):
            t = 1.0 + rng.normal(0, 0.1, shape)
        elif k.endswith("gate.weight"):
            t = rng.normal(0, 0.5, shape)
        elif k.endswith("e_score_correction_bias"):
            t = rng.normal(0, 0.05, shape)
        else:
            t = rng.normal(0, 0.06, shape)
        t = torch.from_numpy(t.astype(np.float32))
        out[k] = t if k.endswith(KEEP_F32) else round_bf16_(t)
    return out


def mtp_disk_names(mtp):
    """Runtime names -> the checkpoint's (experts.N.{up,down}_proj.weight per expert), bf16 but KEEP_F32."""
    disk = {}
    for k, v in mtp.items():
        if k.endswith(("mixer.experts.up_proj", "mixer.experts.down_proj")):
            base, proj = k.rsplit(".", 1)
            for e in range(v.shape[0]):
                disk[f"{base}.{e}.{proj}.weight"] = v[e].to(torch.bfloat16).contiguous()
        else:
            disk[k] = v if k.endswith(KEEP_F32) else v.to(torch.bfloat16)
    return disk


@torch.no_grad()
def mtp_logits(m64, mtp, hidden, next_ids):
    """The head's logits [T, V] for h_t = hidden[t] (float64, after norm_f) and x_{t+1} = next_ids[t]."""
    c = mtp_config(m64)
    W = {k: v.to(torch.float64) for k, v in mtp.items()}
    eps = c.layer_norm_epsilon

    def rms(x, w):
        return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))

    E = m64.get_input_embeddings().weight
    u = torch.cat([rms(E[next_ids], W["mtp.layers.0.enorm.weight"]), rms(hidden, W["mtp.layers.0.hnorm.weight"])],
                  -1) @ W["mtp.layers.0.eh_proj.weight"].T
    x = u[None]
    with F64Patches():
        for i in range(len(MTP_TYPES)):
            block = mh.NemotronHBlock(c, i).to(torch.float64).eval()
            p = f"mtp.layers.{i}."
            block.load_state_dict({k[len(p):]: v for k, v in W.items() if k.startswith(p) and not k[len(p):].startswith(
                ("enorm", "hnorm", "eh_proj", "final_layernorm"))})
            x = block(x)
    y = rms(x[0], W[f"mtp.layers.{len(MTP_TYPES) - 1}.final_layernorm.weight"])
    return y @ m64.lm_head.weight.T


def mtp_golden(m64, mtp, prompt, greedy_next):
    with torch.no_grad(), F64Patches():
        out = m64.model(input_ids=torch.tensor([prompt]), use_cache=False)
        hidden = out.last_hidden_state[0]
        chk = float((hidden @ m64.lm_head.weight.T - m64(input_ids=torch.tensor([prompt]), use_cache=False).logits[0]).abs().max())
    log(f"  MTP: post-norm hidden @ lm_head vs logits max |diff| {chk:.1e}")
    assert chk < 1e-6  # the forward returns its logits as float32
    nxt = prompt[1:] + [greedy_next]
    nt = torch.tensor(nxt)
    lg = mtp_logits(m64, mtp, hidden, nt)
    short = mtp_logits(m64, mtp, hidden[:39], nt[:39])  # causal: rows t < 39 do not see row 39
    assert float((short - lg[:39]).abs().max()) < 1e-10
    return {
        "made_with": LOG[0], "config": f"tiny nemotron_h {PATTERN}, MTP {MTP_TYPES}",
        "prompt_index": MTP_PROMPT, "prompt_ids": prompt,
        "hidden": "h_t = the main model's output after norm_f (what lm_head reads)",
        "formula": "u_t = eh_proj(concat[rms(E[x_{t+1}], enorm), rms(h_t, hnorm)]); x = u; for each MTP sublayer: "
                   "x = x + mixer(rms(x, norm)) (attention causal over t, no RoPE; experts); "
                   "logits_t = lm_head(rms(x_t, final_layernorm)); rms(x, w) = w * x / sqrt(mean(x^2) + 1e-5)",
        "positions": list(range(len(prompt))),
        "input_tokens": nxt,
        "note": "t = 0..38 use x_{t+1} from the prompt; t = 39 uses the main model's greedy next token "
                "(golden.json greedy[2][0]); logits are for t = 36, 37, 38; logits_t39 for t = 39",
        "argmax": [int(v) for v in lg.argmax(-1).tolist()],
        "logits": [f32list(lg[t].numpy()) for t in (36, 37, 38)],
        "logits_t39": f32list(lg[39].numpy()),
    }


def runtime_names(model):
    """Runtime state-dict name -> numpy float64, experts as stacks [E, out, in] (transformers 5's layout)."""
    return {k: v.detach().to(torch.float64).numpy() for k, v in model.state_dict().items()}


def main():
    out_root = sys.argv[1] if len(sys.argv) > 1 else "tests/goldens/nemotron_h"
    os.makedirs(out_root, exist_ok=True)
    log(f"transformers {transformers.__version__}, torch {torch.__version__}, float64 on cpu; script "
        f"scripts/golden/make_nemotron_h_tiny.py")
    rng = np.random.default_rng(1234)
    prompts = [[int(v) for v in rng.integers(0, 256, n)] for n in PROMPT_LENS]
    tok, tcfg, gcfg = tokenizer_files()
    model = build_model()
    rt = runtime_names(model)
    sd, hf_cfg = saved_state_dict(model)
    log("saved:", len(sd), "tensors:", ", ".join(k for k in sorted(sd) if ".layers.1." in k or ".layers." not in k))

    # ---------------- (a) bf16, sharded
    da = os.path.join(out_root, "bf16")
    os.makedirs(da, exist_ok=True)
    names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    shard1 = {k: v for k, v in sd.items() if ".layers." in k and int(k.split(".")[2]) < 3}
    mtp = make_mtp(model)
    shard2 = {k: v for k, v in sd.items() if k not in shard1}
    shard2.update(mtp_disk_names(mtp))
    wmap = {}
    for fn, part in zip(names, (shard1, shard2)):
        save_file({k: v.contiguous() for k, v in part.items()}, os.path.join(da, fn), metadata={"format": "pt"})
        wmap.update({k: fn for k in part})
    every = list(shard1.values()) + list(shard2.values())
    total = sum(v.numel() * v.element_size() for v in every)
    json.dump({"metadata": {"total_size": total, "total_parameters": sum(v.numel() for v in every)},
               "weight_map": dict(sorted(wmap.items()))},
              open(os.path.join(da, "model.safetensors.index.json"), "w"), indent=2)
    json.dump(dict(hf_cfg, num_nextn_predict_layers=1, mtp_layers_block_type=MTP_TYPES),
              open(os.path.join(da, "config.json"), "w"), indent=2)
    write_common(da, tok, tcfg, gcfg)
    log("bf16:")
    kept = []
    golden = reference_logits(model, rt, prompts, keep_model=kept)
    golden.update(prompt_ids=prompts, made_with=LOG[0], variant="bf16")
    json.dump(golden, open(os.path.join(da, "golden.json"), "w"))
    mg = mtp_golden(kept[0], mtp, prompts[MTP_PROMPT], golden["greedy"][MTP_PROMPT][0])
    json.dump(mg, open(os.path.join(da, "mtp_golden.json"), "w"), indent=1)
    log("  MTP argmax:", mg["argmax"])

    # ---------------- (b) mlx-4bit: mlx-lm's layout and quantization, the golden from the dequantized values
    db = os.path.join(out_root, "mlx-4bit")
    os.makedirs(db, exist_ok=True)
    files, ref = {}, dict(rt)
    qblock = {"group_size": 64, "bits": 4, "mode": "affine"}
    E = CONFIG["n_routed_experts"]
    for k, v in sorted(sd.items()):
        arr = v.to(torch.float32).numpy()
        fdt = "f32" if k.endswith(KEEP_F32) else "bf16"
        if ".experts." in k:
            continue  # stacked below
        if "conv1d.weight" in k:
            files[k] = (fdt, (arr.shape[0], arr.shape[2], 1), to_bytes(np.ascontiguousarray(arr.transpose(0, 2, 1)), fdt))
            continue
        module = k[: -len(".weight")] if k.endswith(".weight") else None
        linear = module is not None and arr.ndim == 2 and not k.endswith("norm.weight") and not k.endswith(
            "norm_f.weight") and arr.shape[1] % 64 == 0
        if not linear:
            files[k] = (fdt, arr.shape, to_bytes(arr, fdt))
            continue
        bits = MLX_OVERRIDES.get(module, 4)
        if bits != 4:
            qblock[module] = {"group_size": 64, "bits": bits}
        packed, s, b = mlx_quantize(arr, 64, bits, "bf16")
        files[module + ".weight"] = ("u32", packed.shape, to_bytes(packed, "u32"))
        files[module + ".scales"] = ("bf16", s.shape, to_bytes(s, "bf16"))
        files[module + ".biases"] = ("bf16", b.shape, to_bytes(b, "bf16"))
        rname = k.replace("backbone.", "model.").replace("model.embeddings.", "model.embeddings.")
        rname = rname if rname in ref else k
        assert rname in ref, (k, rname)
        ref[rname] = mlx_dequantize(packed, s, b, 64, 4 if bits == 4 else bits, "bf16")
    for layer, kind in enumerate(PATTERN):
        if kind != "E":
            continue
        for proj, fc in (("up_proj", "fc1"), ("down_proj", "fc2")):
            stack = np.stack([sd[f"backbone.layers.{layer}.mixer.experts.{e}.{proj}.weight"].to(torch.float32).numpy()
                              for e in range(E)])
            Eo, out, inn = stack.shape
            packed, s, b = mlx_quantize(stack.reshape(Eo * out, inn), 64, 4, "bf16")
            module = f"backbone.layers.{layer}.mixer.switch_mlp.{fc}"
            files[module + ".weight"] = ("u32", (Eo, out, packed.shape[1]), to_bytes(packed, "u32"))
            files[module + ".scales"] = ("bf16", (Eo, out, s.shape[1]), to_bytes(s, "bf16"))
            files[module + ".biases"] = ("bf16", (Eo, out, b.shape[1]), to_bytes(b, "bf16"))
            ref[f"model.layers.{layer}.mixer.experts.{proj}"] = mlx_dequantize(packed, s, b, 64, 4, "bf16").reshape(
                Eo, out, inn)
    write_safetensors(os.path.join(db, "model.safetensors"), files, {"format": "mlx"})
    size = os.path.getsize(os.path.join(db, "model.safetensors"))
    json.dump({"metadata": {"total_size": size}, "weight_map": {k: "model.safetensors" for k in sorted(files)}},
              open(os.path.join(db, "model.safetensors.index.json"), "w"), indent=2)
    mcfg = dict(hf_cfg)
    mcfg["quantization"] = qblock
    mcfg["quantization_config"] = dict(qblock)
    json.dump(dict(sorted(mcfg.items())), open(os.path.join(db, "config.json"), "w"), indent=2)
    write_common(db, tok, tcfg, gcfg)
    log("mlx-4bit:")
    golden = reference_logits(model, ref, prompts)
    golden.update(prompt_ids=prompts, made_with=LOG[0], variant="mlx-4bit")
    json.dump(golden, open(os.path.join(db, "golden.json"), "w"))
    log("done")


if __name__ == "__main__":
    main()
