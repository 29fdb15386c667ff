#!/usr/bin/env python3
"""Cached == fresh on any backend (issue 35; the CUDA check of the GPU suite): multi-turn conversations on a
server with the prompt cache and on one without it; from turn 2 on the cached server must restore tokens
(cached_tokens > 0) and every reply must equal the fresh server's token for token (ids), greedy and seeded
T > 0. Conversations have short messages and long ones (the chunk plan then cuts inside messages, and the
prefill takes its many-row kernels). Standard library only.

  python3 bench/prompt_cache/equality.py --bin BIN [--model M] [--serve-arg=--backend=cuda] [--turns 3]
                                         [--cases 1.0,0.2] [--cache-gib 0]

--cases runs only the named conversation.sampling cases; --cache-gib 0 gives the first server no cache either,
which checks that two fresh servers agree (a determinism check: no restores are then asked for).

Exit status 1 on any mismatch or missing restore; prints one line per turn (a differing one also where the
replies part, with both servers' top log-probabilities there) and a summary line last.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from tf_server import Server, cached_tokens
from ttft import filler

SAMPLING = [{"temperature": 0.0}, {"temperature": 0.8, "seed": 7}, {"temperature": 1.0, "top_p": 0.9, "seed": 3}]
CONVERSATIONS = [  # (system, words per user message)
    ("You are a terse assistant.", 12),
    ("You answer in one sentence.", 700),
]


def first_difference(a: dict, b: dict) -> str:
    """Where two replies part, with each server's top two log-probabilities there and at the token before: a gap
    of rounding size says the states differ in their last bits; a large one, that one of them is wrong."""
    ids_a, ids_b = a["choices"][0]["token_ids"], b["choices"][0]["token_ids"]
    k = next((i for i, (x, y) in enumerate(zip(ids_a, ids_b)) if x != y), min(len(ids_a), len(ids_b)))

    def tops(r: dict, i: int) -> str:
        content = (r["choices"][0].get("logprobs") or {}).get("content") or []
        if i < 0 or i >= len(content):
            return "-"
        return ", ".join(f"{t['token']!r} {t['logprob']:.7f}" for t in content[i].get("top_logprobs", []))

    return (f"first difference at reply token {k}: cached [{tops(a, k)}] fresh [{tops(b, k)}]; "
            f"token {k - 1}: cached [{tops(a, k - 1)}] fresh [{tops(b, k - 1)}]")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default="build-cpu/tensorfold")
    ap.add_argument("--model", default=None)
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--serve-arg", action="append", default=[], help="an extra `serve` argument (repeatable)")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--cases", default=None, help="comma-separated CONVERSATION.SAMPLING cases (default: all)")
    ap.add_argument("--cache-gib", default="2", help="the first server's --prompt-cache-gib (0: fresh vs fresh)")
    args = ap.parse_args()
    extra = [a for s in args.serve_arg for a in s.split("=", 1)]
    work = Path(args.workdir or tempfile.mkdtemp(prefix="tf-cache-eq-"))
    failures, checked = [], 0
    only = set(args.cases.split(",")) if args.cases else None
    want_restores = float(args.cache_gib) > 0
    with Server(args.bin, args.model, ["--prompt-cache-gib", args.cache_gib, "--snapshot-dir", "none", *extra],
                work / "cached") as cached, \
         Server(args.bin, args.model, ["--prompt-cache-gib", "0", "--snapshot-dir", "none", *extra],
                work / "fresh") as fresh:
        print(f"cached server: caching {cached.report_line('caching')}")
        print(f"fresh server:  caching {fresh.report_line('caching')}")
        for ci, (system, words) in enumerate(CONVERSATIONS):
            for si, sampling in enumerate(SAMPLING):
                if only is not None and f"{ci}.{si}" not in only:
                    continue
                messages = [{"role": "system", "content": f"{system} (case {ci}.{si})"}]
                for turn in range(1, args.turns + 1):
                    messages.append({"role": "user", "content": filler(turn + 10 * si, words)})
                    a = cached.chat(messages, max_tokens=args.max_tokens, logprobs=True, top_logprobs=2, **sampling)
                    b = fresh.chat(messages, max_tokens=args.max_tokens, logprobs=True, top_logprobs=2, **sampling)
                    ids_a, ids_b = a["choices"][0]["token_ids"], b["choices"][0]["token_ids"]
                    restored = cached_tokens(a["usage"])
                    ok = ids_a == ids_b and (turn == 1 or restored > 0 or not want_restores) and cached_tokens(b["usage"]) == 0
                    checked += 1
                    print(f"case {ci}.{si} turn {turn}: prompt {a['usage']['prompt_tokens']}, cached {restored}, "
                          f"{len(ids_a)} tokens, {'equal' if ids_a == ids_b else 'DIFFERENT'}"
                          + ("" if ok else "  <-- FAIL"), flush=True)
                    if not ok:
                        failures.append(f"case {ci}.{si} turn {turn}")
                        if ids_a != ids_b:
                            print("    " + first_difference(a, b), flush=True)
                            # The request, to replay elsewhere (another backend says which server is right).
                            (work / f"case_{ci}.{si}_turn_{turn}.json").write_text(
                                json.dumps({"messages": messages, "max_tokens": args.max_tokens, **sampling,
                                            "cached": a["choices"][0], "fresh": b["choices"][0]}))
                    messages.append({"role": "assistant", "content": a["choices"][0]["message"]["content"] or ""})
    print(f"prompt cache equality: {checked - len(failures)}/{checked} turns equal to fresh with restores"
          + (f"; failed: {', '.join(failures)}" if failures else ""))
    if failures:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
