#!/usr/bin/env python3
"""Concurrent == solo through a running `tensorfold serve` (issue 7, the device half): every request of a burst
of concurrent ones (different prompts, seeds, temperatures, lengths; some with "draft": false) returns the
token ids it returns when run alone. Standard library only (the device has no openai package).
    python3 concurrency_equality.py http://127.0.0.1:PORT [CONCURRENT]
Prints a summary line; exits 1 on any difference."""
import concurrent.futures
import json
import sys
import time
import urllib.request

from drafting_equality import PROMPTS

SAMPLING = [{"temperature": 0.0}, {"temperature": 0.7}, {"temperature": 1.0, "top_k": 40},
            {"temperature": 0.7, "top_p": 0.9}]


def request(base, i):
    body = {"messages": [{"role": "user", "content": PROMPTS[i % len(PROMPTS)]}], "seed": 100 + i,
            "max_tokens": 16 + 8 * (i % 5), "draft": i % 3 != 2, "return_token_ids": True,
            **SAMPLING[i % len(SAMPLING)]}
    req = urllib.request.Request(base + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.load(r)["choices"][0]["token_ids"]


def main():
    base = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    solo = [request(base, i) for i in range(n)]
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(n) as pool:
        together = list(pool.map(lambda i: request(base, i), range(n)))
    wall = time.time() - t0
    same = sum(a == b for a, b in zip(solo, together))
    for i, (a, b) in enumerate(zip(solo, together)):
        if a != b:
            print("DIFFER", i, a, b)
    tokens = sum(len(t) for t in together)
    print(f"concurrency on this backend: {same}/{n} concurrent replies == solo; {tokens} tokens in {wall:.2f} s")
    sys.exit(0 if same == n else 1)


if __name__ == "__main__":
    main()
