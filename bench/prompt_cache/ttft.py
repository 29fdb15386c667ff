#!/usr/bin/env python3
"""Time to first token of turn N of a growing conversation, with and without the prompt cache (issue 35).

One conversation grows turn by turn: each turn appends a user message of about --turn-tokens tokens (filler
prose) and the server's greedy reply of --reply-tokens tokens, up to --max-context tokens of prompt or the
model's context length, whichever is smaller (the output says which). It is played on
`tensorfold serve MODEL --prompt-cache-gib G --snapshot-dir none` turn by turn, then the same requests go to
a server with `--prompt-cache-gib 0` (no cache): at every turn with `--uncached-at all`, else only at the turns
nearest the listed prompt sizes and at the last turn (a prefill of 8k tokens from scratch costs minutes on a
2-core CPU). The servers run one after the other, never side by side. TTFT is the time from sending the
request to the first streamed content delta; `cached` is usage.prompt_tokens_details.cached_tokens. Every
reply of the uncached server must equal the cached server's reply (greedy): the script fails otherwise.

  python3 bench/prompt_cache/ttft.py --bin build-cpu/tensorfold [--model M] [--max-context 16384]
      [--turn-tokens 500] [--reply-tokens 8] [--uncached-at 1000,2000,4000,8000|all] [--serve-arg=--backend=cuda]

Prints a Markdown table (turn, prompt tokens, cached, new, TTFT cached, TTFT uncached, ratio) and the ratio of
the largest turn measured both ways; --json FILE also writes the rows.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from tf_server import Server, cached_tokens

WORDS = ("the river carries light past quiet towns where people keep old clocks and write long letters about "
         "weather harvests trains and the small matters of each season").split()
SYSTEM = "You are a patient reader. Answer briefly."
TEMPLATE_OVERHEAD = 40  # tokens a turn adds beyond its words: message headers, the number, the reply's frame


def filler(turn: int, words: int) -> str:
    # About one token per word for this vocabulary of common words; the turn number keeps messages distinct.
    return f"Message {turn}. " + " ".join(WORDS[(turn * 7 + i) % len(WORDS)] for i in range(words))


def warm_up(server: Server, args) -> None:
    # One-time costs (first allocations, kernels' first launches) out of turn 1; another system prompt, so
    # nothing it leaves in the cache is a prefix of the conversation.
    server.chat_streamed([{"role": "system", "content": "Warm-up."}, {"role": "user", "content": filler(0, 64)}],
                         max_tokens=args.reply_tokens, temperature=0.0)


def play_cached(server: Server, limit: int, args) -> list[dict]:
    """The conversation on the cached server; each row keeps its request's messages for the uncached server."""
    messages = [{"role": "system", "content": SYSTEM}]
    rows, prompt = [], 0
    while True:
        n = len(rows) + 1
        if prompt + args.turn_tokens + 2 * args.reply_tokens + TEMPLATE_OVERHEAD > limit:
            return rows
        messages.append({"role": "user", "content": filler(n, args.turn_tokens)})
        ttft, text, usage = server.chat_streamed(messages, max_tokens=args.reply_tokens, temperature=0.0)
        prompt = usage["prompt_tokens"]
        rows.append({"turn": n, "prompt": prompt, "cached": cached_tokens(usage), "ttft_cached": ttft,
                     "reply": text, "messages": list(messages)})
        print(f"  turn {n}: {prompt} prompt tokens, {rows[-1]['cached']} cached, TTFT {ttft:.3f} s", flush=True)
        messages.append({"role": "assistant", "content": text})


def uncached_turns(rows: list[dict], spec: str) -> set[int]:
    """The turns the uncached server replays: all, or the last and the one nearest each listed prompt size
    that the conversation reached (a size past its last turn by more than a turn's growth is left out)."""
    if spec == "all":
        return {r["turn"] for r in rows}
    growth = rows[1]["prompt"] - rows[0]["prompt"] if len(rows) > 1 else 0
    picked = {rows[-1]["turn"]}
    for target in (int(x) for x in spec.split(",") if x):
        if target <= rows[-1]["prompt"] + growth // 2:
            picked.add(min(rows, key=lambda r: abs(r["prompt"] - target))["turn"])
    return picked


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default="build-cpu/tensorfold")
    ap.add_argument("--model", default=None, help="default: the embedded model")
    ap.add_argument("--max-context", type=int, default=16384, help="largest prompt to reach (tokens)")
    ap.add_argument("--turn-tokens", type=int, default=500, help="new user tokens per turn (about)")
    ap.add_argument("--reply-tokens", type=int, default=8)
    ap.add_argument("--cache-gib", default="2", help="--prompt-cache-gib of the cached server")
    ap.add_argument("--uncached-at", default="1000,2000,4000,8000,16000",
                    help="prompt sizes whose nearest turns the uncached server replays (plus the last), or 'all'")
    ap.add_argument("--serve-arg", action="append", default=[], help="an extra `serve` argument (repeatable)")
    ap.add_argument("--workdir", default=None, help="servers' output (default: a temporary directory)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    extra = [a for s in args.serve_arg for a in s.split("=", 1)] if args.serve_arg else []
    work = Path(args.workdir or tempfile.mkdtemp(prefix="tf-ttft-"))
    common = ["--parallel", "1", "--snapshot-dir", "none", *extra]

    t0 = time.monotonic()
    with Server(args.bin, args.model, ["--prompt-cache-gib", args.cache_gib, *common], work / "cached") as s:
        limit = min(args.max_context, s.context)
        print(f"model {s.model_id}; backend {s.report_line('backend')}; context {s.context} tokens; "
              f"caching {s.report_line('caching')}")
        if limit < args.max_context:
            print(f"the model's context ({s.context} tokens) is below --max-context {args.max_context}: the "
                  f"conversation stops at {s.context} tokens")
        warm_up(s, args)
        rows = play_cached(s, limit, args)
    replay = uncached_turns(rows, args.uncached_at)
    print(f"uncached server: turns {sorted(replay)} ({'all' if len(replay) == len(rows) else 'a subset'})")
    same = True
    with Server(args.bin, args.model, ["--prompt-cache-gib", "0", *common], work / "uncached") as s:
        warm_up(s, args)
        for r in rows:
            if r["turn"] not in replay:
                continue
            ttft, text, usage = s.chat_streamed(r["messages"], max_tokens=args.reply_tokens, temperature=0.0)
            r["ttft_uncached"] = ttft
            same &= text == r["reply"] and cached_tokens(usage) == 0
            print(f"  turn {r['turn']}: TTFT {ttft:.3f} s (uncached)", flush=True)

    print(f"\nwall time {time.monotonic() - t0:.0f} s; turns of ~{args.turn_tokens} new user tokens, "
          f"{args.reply_tokens}-token greedy replies, up to {limit} tokens of context\n")
    print("| turn | prompt tokens | cached | new | TTFT cached (s) | TTFT uncached (s) | uncached / cached |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        un = r.get("ttft_uncached")
        print(f"| {r['turn']} | {r['prompt']} | {r['cached']} | {r['prompt'] - r['cached']} | {r['ttft_cached']:.3f} | "
              + (f"{un:.3f} | {un / r['ttft_cached']:.1f}x |" if un is not None else "- | - |"))
    both = [r for r in rows if "ttft_uncached" in r]
    last = both[-1]
    print(f"\nlargest turn measured both ways: turn {last['turn']}, {last['prompt']} prompt tokens: "
          f"{last['ttft_uncached'] / last['ttft_cached']:.1f}x faster with the cache")
    print(f"replies equal with and without the cache: {same}")
    if args.json:
        Path(args.json).write_text(json.dumps([{k: v for k, v in r.items() if k != "messages"} for r in rows],
                                              indent=1))
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
