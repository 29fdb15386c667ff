#!/usr/bin/env python3
"""Time to first token of turn N of a growing conversation, with and without the prompt cache (issue 35).

Starts `tensorfold serve MODEL` twice on free ports, once with `--prompt-cache-gib G --snapshot-dir none` and
once with `--prompt-cache-gib 0`, and plays the same conversation against each: every turn appends a user
message of about --turn-tokens tokens (filler prose) and the server's greedy reply (--reply-tokens); the
time to the first streamed content token of each turn is printed as a Markdown table, with the prompt tokens
and the tokens the cache restored. The replies of both servers are compared: they must be equal.

  .venv/bin/python bench/prompt_cache_ttft.py --bin build-cpu/tensorfold [--model M] [--turns 8]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
import time
from pathlib import Path

import openai

WORDS = ("the river carries light past quiet towns where people keep old clocks and write long letters about "
         "weather harvests trains and the small matters of each season").split()


def filler(turn: int, tokens: int) -> str:
    # About one token per word for this vocabulary of common words; the turn number keeps messages distinct.
    return f"Message {turn}. " + " ".join(WORDS[(turn * 7 + i) % len(WORDS)] for i in range(tokens))


def start(binary: str, model: str | None, args: list[str], workdir: Path):
    out = (workdir / "out").open("w")
    cmd = [binary, "serve", *([model] if model else []), "--port", "0", "--parallel", "1", *args]
    proc = subprocess.Popen(cmd, stdout=out, stderr=(workdir / "err").open("w"))
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        m = re.search(r"serving\s+http://127\.0\.0\.1:(\d+)/v1", (workdir / "out").read_text())
        if m:
            report = (workdir / "out").read_text()
            model_id = re.search(r"^\s*model\s+(\S+)", report, re.M).group(1)
            return proc, openai.OpenAI(base_url=f"http://127.0.0.1:{m.group(1)}/v1", api_key="x", timeout=3600,
                                       max_retries=0), model_id
        if proc.poll() is not None:
            raise SystemExit((workdir / "err").read_text())
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("no report")


def turn(client, model_id, messages, reply_tokens):
    t0 = time.perf_counter()
    ttft, text, usage = None, "", None
    stream = client.chat.completions.create(model=model_id, messages=messages, max_tokens=reply_tokens,
                                            temperature=0.0, stream=True, stream_options={"include_usage": True})
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            if ttft is None:
                ttft = time.perf_counter() - t0
            text += chunk.choices[0].delta.content
        if chunk.usage:
            usage = chunk.usage
    cached = usage.prompt_tokens_details.cached_tokens if usage.prompt_tokens_details else 0
    return ttft if ttft is not None else time.perf_counter() - t0, text, usage.prompt_tokens, cached


def conversation(client, model_id, args):
    messages = [{"role": "system", "content": "You are a patient reader. Answer briefly."}]
    rows = []
    for n in range(1, args.turns + 1):
        messages.append({"role": "user", "content": filler(n, args.turn_tokens)})
        ttft, text, prompt, cached = turn(client, model_id, messages, args.reply_tokens)
        messages.append({"role": "assistant", "content": text})
        rows.append((n, prompt, cached, ttft, text))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build-cpu/tensorfold")
    ap.add_argument("--model", default=None, help="default: the embedded model")
    ap.add_argument("--turns", type=int, default=8)
    ap.add_argument("--turn-tokens", type=int, default=500)
    ap.add_argument("--reply-tokens", type=int, default=16)
    ap.add_argument("--cache-gib", default="2")
    args = ap.parse_args()
    results = {}
    for name, flags in (("cache", ["--prompt-cache-gib", args.cache_gib, "--snapshot-dir", "none"]),
                        ("no cache", ["--prompt-cache-gib", "0", "--snapshot-dir", "none"])):
        with tempfile.TemporaryDirectory() as d:
            proc, client, model_id = start(args.bin, args.model, flags, Path(d))
            try:
                results[name] = conversation(client, model_id, args)
            finally:
                proc.terminate()
                proc.wait()
    print("| turn | prompt tokens | cached | TTFT cache (s) | TTFT no cache (s) | speed-up |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    same = True
    for a, b in zip(results["cache"], results["no cache"]):
        same &= a[4] == b[4]
        print(f"| {a[0]} | {a[1]} | {a[2]} | {a[3]:.2f} | {b[3]:.2f} | {b[3] / a[3]:.1f}x |")
    print(f"\nreplies equal with and without the cache: {same}")
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
