#!/usr/bin/env python3
"""Tokens/s with drafts against "draft": false through a running `tensorfold serve` (issue 6 benchmark):
copy-heavy tasks (rewrite code with one change, repeat a list with one field renamed, answer by quoting a
source) and open chat. Greedy, 256 tokens at most, each request twice (the faster counts); prints a table.
    python3 drafting_speed.py http://127.0.0.1:PORT"""
import json
import sys
import time
import urllib.request

CODE = "\n".join(f"def step_{i}(value, total):\n    total = total + value * {i}\n    return total\n" for i in range(8))
RECORDS = json.dumps([{"name": f"item{i}", "price": i * 3, "colour": ["red", "green", "blue"][i % 3]}
                      for i in range(10)])
SOURCE = ("The lighthouse was built in 1874 on the northern cape. Its lamp burned whale oil until 1901, when "
          "kerosene replaced it. In 1956 the light was electrified, and in 1990 the last keeper left. The tower "
          "is 31 metres tall and its light can be seen 22 nautical miles away.")
TASKS = [
    ("rewrite code, one change", f"Rewrite this code exactly, but rename the parameter total to acc:\n{CODE}"),
    ("repeat list, field renamed", f"Repeat this JSON list exactly, but rename the field colour to color:\n{RECORDS}"),
    ("answer by quoting", f"Source: {SOURCE}\nQuote the source word for word, then say when the keeper left."),
    ("open chat", "Tell me about the history of Rome."),
]


def run(base, prompt, draft):
    body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": 256, "temperature": 0, "draft": draft}
    req = urllib.request.Request(base + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=300) as r:
        j = json.load(r)
    dt = time.perf_counter() - t0
    return j["usage"]["completion_tokens"] / dt, j["usage"]["tensorfold"], j["usage"]["completion_tokens"]


def main():
    base = sys.argv[1]
    print(f"{'task':28} {'tokens':>6} {'serial tok/s':>12} {'drafted tok/s':>13} {'speed-up':>8} {'accepted':>9}")
    for name, prompt in TASKS:
        serial = max(run(base, prompt, False)[0] for _ in range(2))
        best = max((run(base, prompt, True) for _ in range(2)), key=lambda x: x[0])
        tps, c, n = best
        print(f"{name:28} {n:6d} {serial:12.1f} {tps:13.1f} {tps / serial:7.2f}x "
              f"{c['accepted']:4d}/{c['drafted']:<4d}")


if __name__ == "__main__":
    main()
