#!/usr/bin/env python3
"""Sampled against greedy decoding over HTTP: aggregate completion tokens a second at 1 / 8 / 16 concurrent
streams, for the settings chat clients send, against any OpenAI-compatible server (ours, llama-server).

  python3 bench/sampling/sampled_speed.py --url http://127.0.0.1:8080 --label ours [--draft true|false]
      [--streams 1,8,16] [--tokens 256] [--reps 2] [--settings greedy,p95,k40,off] [--json OUT]

Settings (every filter sent explicitly, so llama-server's defaults, top_k 40 and min_p 0.05, play no part):
  greedy  temperature 0
  p95     temperature 0.8, top_p 0.95, top_k 0, min_p 0   (what an OpenAI client sends)
  k40     temperature 0.7, top_k 40, top_p 1, min_p 0
  off     temperature 1.0, top_k 0, top_p 1, min_p 0       (the filters off: every token a candidate)
Each request has its own prompt (a long-answer task) and seed. tok/s = the completion tokens of all the
requests of a burst / the burst's wall time (the best of --reps bursts, the settings taking turns); a warm-up
request comes first.
Prints one table row a (setting, streams) and a RESULT line each for scripts.
"""
from __future__ import annotations

import argparse
import json
import threading
import time
import urllib.request

SETTINGS = {
    "greedy": {"temperature": 0.0},
    "p95": {"temperature": 0.8, "top_p": 0.95, "top_k": 0, "min_p": 0.0},
    "k40": {"temperature": 0.7, "top_k": 40, "top_p": 1.0, "min_p": 0.0},
    "off": {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0},
}
TOPICS = ["the history of the printing press", "how a steam engine works", "the life cycle of a star",
          "the rules of chess", "how bread is baked", "the water cycle", "the causes of the first world war",
          "how vaccines work", "the architecture of a CPU", "the migration of birds", "how a bill becomes law",
          "the invention of the telephone", "the geology of volcanoes", "how bees make honey",
          "the story of the Silk Road", "how electricity reaches a home", "the biology of sleep",
          "the design of suspension bridges"]


def post(url: str, body: dict, timeout: float) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def burst(url: str, model: str, setting: dict, streams: int, tokens: int, extra: dict, seed0: int) -> tuple[float, int]:
    out = [0] * streams
    errors = []

    def one(i: int) -> None:
        body = {"model": model, "max_tokens": tokens, "seed": seed0 + i, "stream": False,
                "messages": [{"role": "user", "content": f"Write a long, detailed essay about {TOPICS[i % len(TOPICS)]}."}]}
        body.update(setting)
        body.update(extra)
        try:
            out[i] = post(url, body, 600)["usage"]["completion_tokens"]
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(streams)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    if errors:
        raise RuntimeError(f"{len(errors)} requests failed: {errors[0]}")
    return wall, sum(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--label", default="server")
    ap.add_argument("--draft", choices=["true", "false"], help="our 'draft' field (drafts on or off)")
    ap.add_argument("--streams", default="1,8,16")
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--settings", default="greedy,p95,k40,off")
    ap.add_argument("--json")
    a = ap.parse_args()
    base = a.url.rstrip("/")
    with urllib.request.urlopen(base + "/v1/models", timeout=30) as r:
        model = json.loads(r.read())["data"][0]["id"]
    url = base + "/v1/chat/completions"
    extra = {"draft": a.draft == "true"} if a.draft else {}
    post(url, {"model": model, "max_tokens": 8, "messages": [{"role": "user", "content": "Hi"}]}, 120)  # warm-up
    rows = []
    print(f"{'server':<22} {'setting':<7} {'streams':>7} {'tokens':>7} {'wall s':>8} {'tok/s':>9}")
    names = a.settings.split(",")
    for n in (int(x) for x in a.streams.split(",")):
        # Settings interleaved rep by rep, so a drift in the machine's speed touches each alike.
        best: dict[str, tuple[float, int]] = {}
        for rep in range(a.reps):
            for name in names:
                wall, toks = burst(url, model, SETTINGS[name], n, a.tokens, extra, 1000 * rep + 17)
                if name not in best or toks / wall > best[name][1] / best[name][0]:
                    best[name] = (wall, toks)
        for name in names:
            wall, toks = best[name]
            label = a.label + (f" draft={a.draft}" if a.draft else "")
            print(f"{label:<22} {name:<7} {n:>7} {toks:>7} {wall:>8.2f} {toks / wall:>9.1f}", flush=True)
            print(f"RESULT {json.dumps({'server': label, 'setting': name, 'streams': n, 'tokens': toks, 'wall_s': round(wall, 3), 'tok_s': round(toks / wall, 1)})}", flush=True)
            rows.append({"server": label, "setting": name, "streams": n, "tokens": toks, "wall_s": wall,
                         "tok_s": toks / wall})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
