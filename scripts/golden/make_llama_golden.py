#!/usr/bin/env python3
"""Greedy reference continuations of the default model, made with Hugging Face transformers.

Runs on the device machine (transformers + torch there; the `gguf` package carried as a wheel):
    python3 make_llama_golden.py DIR GGUF_NAME OUT.json
transformers dequantizes the GGUF (the same weights TensorFold serves) and the forward pass runs in float64
on the GPU, so the reference itself has no rounding worth the name. For each prompt it stores the chat-
templated prompt ids, 64 greedy tokens (EOS is not a stop here) and, per step, the gap between the top two
logits, so a divergence can be judged a near-tie or not. tests/conformance/test_llama_golden.py reads it.
"""
import hashlib
import json
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

CONVERSATIONS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "user", "content": "Write a haiku about the sea."}],
    [{"role": "system", "content": "You are a terse assistant."}, {"role": "user", "content": "Explain gravity."}],
    [{"role": "user", "content": "List three prime numbers and explain why they are prime."}],
    [{"role": "user", "content": "Translate 'good morning' into Spanish and German."}],
    [{"role": "user", "content": "Write a Python function that reverses a string."}],
    [{"role": "user", "content": "Hi!"}, {"role": "assistant", "content": "Hello! How can I help?"},
     {"role": "user", "content": "Tell me a fun fact about octopuses."}],
    [{"role": "user", "content": "Summarize the plot of Romeo and Juliet in two sentences."}],
    [{"role": "user", "content": "What is 12 times 13?"}],
    [{"role": "user", "content": "Give me a recipe for pancakes."}],
    [{"role": "user", "content": "Why is the sky blue?"}],
    [{"role": "user", "content": "Écris une phrase en français sur le printemps."}],
]
STEPS = 64


def prompt_ids(tok, messages):
    out = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    if hasattr(out, "keys"):
        out = out["input_ids"]
    return [int(t) for t in out]


def main():
    directory, name, out_path = sys.argv[1:4]
    with open(f"{directory}/{name}", "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    tok = AutoTokenizer.from_pretrained(directory, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(directory, gguf_file=name, dtype=torch.float64)
    model = model.to("cuda").eval()
    cases = []
    with torch.no_grad():
        for messages in CONVERSATIONS:
            ids = prompt_ids(tok, messages)
            x = torch.tensor([ids], device="cuda")
            past = None
            tokens, gaps = [], []
            for _ in range(STEPS):
                o = model(input_ids=x, past_key_values=past, use_cache=True)
                past = o.past_key_values
                logits = o.logits[0, -1]
                top = torch.topk(logits, 2)
                t = int(top.indices[0])
                tokens.append(t)
                gaps.append(float(top.values[0] - top.values[1]))
                x = torch.tensor([[t]], device="cuda")
            cases.append({"messages": messages, "prompt_ids": ids, "greedy": tokens, "top2_gap": gaps,
                          "text": tok.decode(tokens)})
            print(f"{len(ids):4d} prompt ids -> {tok.decode(tokens)[:60]!r}")
    golden = {"model_sha256": sha, "made_with": f"transformers {__import__('transformers').__version__}, "
              f"torch {torch.__version__}, float64 on {torch.cuda.get_device_name()}",
              "steps": STEPS, "cases": cases}
    with open(out_path, "w") as f:
        json.dump(golden, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
