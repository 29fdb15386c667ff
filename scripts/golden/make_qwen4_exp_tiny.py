#!/usr/bin/env python3
"""A tiny random `qwen4_exp` (Qwen3.8 Flash Next) checkpoint in two Hugging Face layouts, with float64 golden
logits and greedy tokens from transformers' qwen4_exp (the reference: mlx-lm has no model for it).

Runs on a CPU (transformers >= 5.25 with qwen4_exp, torch, safetensors, numpy; no network, no mlx):
    python3 scripts/golden/make_qwen4_exp_tiny.py [OUT_DIR]   # OUT_DIR default tests/goldens/qwen4_exp
and writes OUT_DIR/{bf16,text}/. Issue 56 asks for the checkpoints "on the GPU machine"; everything here is
seeded CPU init and float64 CPU arithmetic, so this CPU makes the same checkpoint and goldens (the device adds
nothing but speed, and the device budget is the lead's).

The model (Flash Next's shape shrunk; every piece the issue names is exercised):
  vocab 320, hidden 64, 4 layers [linear_attention, indexed_attention, linear_attention, indexed_attention];
  - Gated DeltaNet: 2 key heads / 4 value heads of 16, conv kernel 4, silu output gate;
  - sparse (indexed) attention: 4 q heads / 2 kv heads of 16, output-gated (q_proj gives [q | gate] per head),
    zero-centred q/k norms, partial RoPE 0.5 (8 rotary dims, rotate-half pairs), theta 1e6; its indexer: 8 query
    heads and 1 key head of 16 (index_qk_proj), compress ratio 4, budget 8 tokens (2 blocks). A query at position
    p sees floor((p + 1) / 4) complete blocks and keeps the best 2 plus its incomplete tail, so past position 11
    the indexer drops blocks: the prompts of 17 and 40 tokens and their 16 greedy steps make it;
  - MoE after every mixer: 8 experts of 32, top 2 (softmax router, norm_topk_prob), a shared expert of 48 under a
    sigmoid gate (shared_expert_gate);
  - hyper-connections: hc_count 2 residual streams, low rank 8 (input mix down/up, block inject), one around every
    mixer and every MoE, and the final mixer (no final norm: lm_head reads the mixed row);
  - PLE on layers 1 and 3 (one-indexed; both linear): 3-gram (2- and 3-grams), 2 heads per n-gram, ple_embed_dim
    32 (4 heads of 8), ngram_vocab_size_base 53 (each head's table a distinct prime size above it, rows padded to a
    multiple of 128), seed 1234, dilated conv kernel 4 (dilation 3), tables stored in split_ngram_parts = 4 shards
    (`ngram_embedding.shard_N.weight`, what save_pretrained writes). The 40-token prompt holds EOS (258) twice, so
    the n-gram windows restart inside a prompt.
  - untied lm_head; rms_norm_eps 1e-6. No MTP: transformers ignores `mtp.*` (no reference to golden it against).

Weights: torch.manual_seed(0) init by transformers, then what init leaves trivial or tiny is perturbed with seeded
noise: every zero-centred norm 0 + N(0, 0.1), the GDN gated norm 1 + N(0, 0.1), A_log, dt_bias and conv1d + N(0, 0.1),
the router N(0, 0.5), the hyper-connection maps N(0, 0.3), the PLE conv N(0, 0.2), key/value projections N(0, 0.2)
and tables N(0, 1); every value then rounded to bf16 (A_log kept float32 as Qwen checkpoints keep it).

Variants (OUT_DIR/<name>/: config.json, model.safetensors, tokenizer files, golden.json):
  (a) bf16: Qwen4ExpForConditionalGeneration's layout: config model_type qwen4_exp with text_config (and a
      vision_config), weights model.language_model.*, lm_head.weight, plus one model.visual.* tensor to skip;
  (b) text: Qwen4ExpForCausalLM as save_pretrained writes it (model_type qwen4_exp_text, model.*).

golden.json: prompt_ids (seeded prompts of 5, 17 and 40 tokens, ids in 0..255 and EOS), logits (float32 logits of
the last 3 positions of each prompt), greedy (16 tokens by repeated argmax over a full re-forward), gaps, top1_logit,
indexer_margin and routing_margin (the smallest top-k gaps met, so a float32 engine makes the same choices: exact
ties are left to torch.topk's partial sort, whose order on equal scores is not the earlier index; 8 index heads make
the relu sums of two blocks rarely both 0, and the script refuses a seed whose margins fall under 1e-4).
transformers' cached path (generate: prefill, then a token a step through its Cache) gives the same greedy tokens as
the full re-forward (asserted; the attention mask is passed as all ones, as a prompt may hold the pad id 0).
Reference precision: float64, with transformers' float32 islands (norms, softmaxes, the indexer's pooled keys and
scores, rotary tables) patched to stay float64; the float32 model's max |diff| is logged as a check.
"""
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F
import transformers
from safetensors import safe_open
from safetensors.torch import save_file
from transformers import Qwen4ExpForCausalLM, Qwen4ExpTextConfig
from transformers.models.qwen4_exp import modeling_qwen4_exp as mq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_nemotron_h_tiny import round_bf16_, run_golden  # noqa: E402  (the same golden recipe)
from make_qwen3_5_tiny import tokenizer_files, write_common  # noqa: E402

EOS = 258
LAYER_TYPES = ["linear_attention", "indexed_attention", "linear_attention", "indexed_attention"]
CONFIG = dict(
    vocab_size=320, hidden_size=64, num_hidden_layers=len(LAYER_TYPES), layer_types=LAYER_TYPES,
    num_attention_heads=4, num_key_value_heads=2, head_dim=16, hidden_act="silu", max_position_embeddings=4096,
    rms_norm_eps=1e-6, tie_word_embeddings=False,
    rope_parameters={"rope_type": "default", "rope_theta": 1e6, "partial_rotary_factor": 0.5,
                     "mrope_section": [2, 1, 1], "mrope_interleaved": True},
    linear_conv_kernel_dim=4, linear_key_head_dim=16, linear_value_head_dim=16, linear_num_key_heads=2,
    linear_num_value_heads=4, moe_intermediate_size=32, shared_expert_intermediate_size=48, num_experts=8,
    num_experts_per_tok=2, norm_topk_prob=True, hc_count=2, hc_lowrank=8, ple_layer_ids=[1, 3], ple_embed_dim=32,
    ple_conv_kernel_size=4, ngram_size=3, heads_per_ngram=2, ngram_vocab_size_base=53,
    make_ngram_vocab_size_divisible_by=128, seed=1234, split_ngram_parts=4, indexer_n_heads=8, indexer_kv_heads=1,
    indexer_head_dim=16, indexer_budget=8, indexer_compress_ratio=4, pad_token_id=256, bos_token_id=256,
    eos_token_id=EOS)
PROMPT_LENS = [5, 17, 40]
KEEP_F32 = ("A_log",)
LOG = []
MARGINS = {"indexer": [], "routing": []}


def log(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    LOG.append(s)


# ----------------------------------------------------------------------------------------------------------------
# float64 reference: keep transformers' qwen4_exp code from dropping to float32 inside. The code casts with
# .float(), .to(torch.float32) and softmax(dtype=torch.float); inside the patches a float64 tensor stays float64.

_ORIG = {}


def _keep64(dtype):
    return torch.float64 if dtype in (torch.float32,) else dtype


def _float(self, *a, **k):
    return self if self.dtype == torch.float64 else _ORIG["float"](self, *a, **k)


def _to(self, *a, **k):
    if self.dtype == torch.float64:
        a = tuple(_keep64(x) if isinstance(x, torch.dtype) else x for x in a)
        if "dtype" in k:
            k["dtype"] = _keep64(k["dtype"])
    return _ORIG["to"](self, *a, **k)


def _softmax(x, *a, dtype=None, **k):
    if x.dtype == torch.float64 and dtype is not None:
        dtype = torch.float64
    return _ORIG["softmax"](x, *a, dtype=dtype, **k)


def _rotary_f64(self, x, position_ids):
    rp = self.config.rope_parameters
    dim = int(self.config.head_dim * rp.get("partial_rotary_factor", 1.0))
    inv = 1.0 / rp["rope_theta"] ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    pos = position_ids[0] if position_ids.dim() == 3 else position_ids  # text: the three grids are equal
    if position_ids.dim() == 3:
        assert all(torch.equal(position_ids[0], position_ids[i]) for i in range(position_ids.shape[0]))
    f = pos[..., None].to(torch.float64) * inv
    emb = torch.cat((f, f), dim=-1)
    return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def _topk_recording(self, k, *a, **kw):
    # The indexer's block choice (1-D scores.topk(k, dim=0)): the gap between the k-th and the next block.
    if self.dim() == 1 and self.numel() > k:
        s = torch.sort(self, descending=True).values
        MARGINS["indexer"].append(float(s[k - 1] - s[k]))
    return _ORIG["topk"](self, k, *a, **kw)


class F64Patches:
    def __enter__(self):
        _ORIG.update(float=torch.Tensor.float, to=torch.Tensor.to, softmax=F.softmax, topk=torch.Tensor.topk,
                     rotary=mq.Qwen4ExpTextRotaryEmbedding.forward)
        torch.Tensor.float = _float
        torch.Tensor.to = _to
        F.softmax = _softmax
        torch.Tensor.topk = _topk_recording
        mq.Qwen4ExpTextRotaryEmbedding.forward = _rotary_f64
        return self

    def __exit__(self, *a):
        torch.Tensor.float, torch.Tensor.to, F.softmax = _ORIG["float"], _ORIG["to"], _ORIG["softmax"]
        torch.Tensor.topk = _ORIG["topk"]
        mq.Qwen4ExpTextRotaryEmbedding.forward = _ORIG["rotary"]


# ----------------------------------------------------------------------------------------------------------------

def build_model():
    cfg = Qwen4ExpTextConfig(**CONFIG)
    cfg._attn_implementation = "eager"
    cfg._experts_implementation = "eager"
    torch.manual_seed(0)
    model = Qwen4ExpForCausalLM(cfg).to(torch.float32).eval()
    model.config._experts_implementation = "eager"
    rng = np.random.default_rng(56)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = lambda scale: torch.from_numpy(rng.normal(0, scale, tuple(p.shape)).astype(np.float32))  # noqa
            if name.endswith("linear_attn.norm.weight"):
                p.copy_(1.0 + noise(0.1))  # the GDN gated norm multiplies by w itself
            elif name.endswith("norm.weight") or name.endswith("layernorm.weight"):
                p.copy_(noise(0.1))  # zero-centred (1 + w)
            elif name.endswith(("A_log", "dt_bias")) or "linear_attn.conv1d" in name:
                p.add_(noise(0.1))
            elif name.endswith("mlp.gate.weight"):
                p.copy_(noise(0.5))
            elif "hyper_connection" in name:
                p.copy_(noise(0.3))
            elif "ple.conv1d" in name or name.endswith(("ple.key_proj.weight", "ple.value_proj.weight")):
                p.copy_(noise(0.2))
            elif name.endswith("ngram_embedding.weight"):
                p.copy_(noise(1.0))
        for name, p in model.named_parameters():
            assert torch.isfinite(p).all(), name
            if not name.endswith(KEEP_F32):
                p.copy_(round_bf16_(p))
    return model


def saved_state_dict(model):
    """What save_pretrained writes (the n-gram tables split into shards by transformers' reverse conversion)."""
    m = Qwen4ExpForCausalLM(model.config)
    m.load_state_dict(model.state_dict())
    m = m.to(torch.bfloat16)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith(KEEP_F32):
                p.data = dict(model.named_parameters())[name].data.clone()
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
def reference(model, prompts):
    m = Qwen4ExpForCausalLM(model.config).to(torch.float64).eval()
    m.config._experts_implementation = "eager"
    # Only floating tensors widen: the n-gram hash multipliers (int64 buffers near 2^55) must stay exact.
    m.load_state_dict({k: v.to(torch.float64) if v.is_floating_point() else v
                       for k, v in model.state_dict().items()})
    hooks = [layer.mlp.gate.register_forward_hook(
        lambda mod, inp, out: MARGINS["routing"].append(float((lambda s: (s[:, 1] - s[:, 2]).min())(
            torch.sort(torch.softmax(out[0], -1), dim=-1, descending=True).values))))
        for layer in m.model.layers]
    with F64Patches():
        golden = run_golden(m, prompts)
    for h in hooks:
        h.remove()
    # The float32 model (transformers' own islands and all) agrees closely: the patches change rounding only.
    worst = 0.0
    for i, ids in enumerate(prompts):
        lg = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -3:].double().numpy()
        worst = max(worst, float(np.abs(lg - np.array(golden["logits"][i], np.float64)).max()))
    log(f"  transformers float32 vs the float64 golden: max |diff| {worst:.2e}")
    assert worst < 1e-3, worst
    # The cached path (what a server runs: prefill, then one token a step) gives the same greedy tokens. The mask is
    # given: generate would otherwise mask every prompt token equal to the pad id.
    for i, ids in enumerate(prompts):
        x = torch.tensor([ids])
        out = m.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=len(golden["greedy"][i]),
                         do_sample=False, eos_token_id=None, pad_token_id=0)
        cached = out[0, len(ids):].tolist()
        log(f"  prompt {i}: cached greedy == full re-forward greedy: {cached == golden['greedy'][i]}")
        assert cached == golden["greedy"][i]
    im, rm = min(MARGINS["indexer"]), min(MARGINS["routing"])
    log(f"  indexer choices made: {len(MARGINS['indexer'])}; smallest block-score margin {im:.1e}")
    log(f"  smallest routing margin (top-2 vs third probability): {rm:.1e}")
    assert im >= 1e-4 and rm >= 1e-4, "a near-tie: pick another noise seed in build_model"
    golden.update(indexer_choices=len(MARGINS["indexer"]), indexer_margin=im, routing_margin=rm)
    return golden


def main():
    out_root = sys.argv[1] if len(sys.argv) > 1 else "tests/goldens/qwen4_exp"
    log(f"transformers {transformers.__version__}, torch {torch.__version__}, float64 on cpu; script "
        f"scripts/golden/make_qwen4_exp_tiny.py")
    rng = np.random.default_rng(1234)
    prompts = [[int(v) for v in rng.integers(0, 256, n)] for n in PROMPT_LENS]
    prompts[2][13] = EOS  # n-gram windows restart after an EOS (and one follows right after another's window)
    prompts[2][27] = EOS
    tok, tcfg, gcfg = tokenizer_files()
    model = build_model()
    sd, text_cfg = saved_state_dict(model)
    log("tensors:", len(sd), "bytes:", sum(v.numel() * v.element_size() for v in sd.values()))
    golden = reference(model, prompts)
    golden.update(prompt_ids=prompts, made_with=LOG[0])

    # (b) text: what Qwen4ExpForCausalLM.save_pretrained writes
    d = os.path.join(out_root, "text")
    os.makedirs(d, exist_ok=True)
    save_file(sd, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    text_cfg["architectures"] = ["Qwen4ExpForCausalLM"]
    json.dump(text_cfg, open(os.path.join(d, "config.json"), "w"), indent=2)
    write_common(d, tok, tcfg, gcfg)
    json.dump(dict(golden, variant="text"), open(os.path.join(d, "golden.json"), "w"))

    # (a) bf16: the multimodal wrapper's layout
    d = os.path.join(out_root, "bf16")
    os.makedirs(d, exist_ok=True)
    wrapped = {(k.replace("model.", "model.language_model.", 1) if k.startswith("model.") else k): v
               for k, v in sd.items()}
    wrapped["model.visual.patch_embed.proj.weight"] = torch.zeros(8, 3, 2, 4, 4, dtype=torch.bfloat16)
    save_file(wrapped, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    inner = {k: v for k, v in text_cfg.items() if k not in ("architectures", "transformers_version", "dtype")}
    json.dump({"architectures": ["Qwen4ExpForConditionalGeneration"], "model_type": "qwen4_exp",
               "dtype": "bfloat16", "text_config": inner, "vision_config": {"model_type": "qwen4_exp_vision"},
               "tie_word_embeddings": False, "transformers_version": transformers.__version__},
              open(os.path.join(d, "config.json"), "w"), indent=2)
    write_common(d, tok, tcfg, gcfg)
    json.dump(dict(golden, variant="bf16"), open(os.path.join(d, "golden.json"), "w"))
    log("greedy:", golden["greedy"])
    log("done")


if __name__ == "__main__":
    main()
