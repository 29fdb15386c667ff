#!/usr/bin/env python3
"""A bounded load test of a running `tensorfold serve` (issues 7 and 33; not part of `make test`).

N clients send chat requests for T seconds (defaults 64 and 60); a third of them disconnect at random
moments, a share of the others (--non-streaming, default 0) ask for non-streamed replies, and a client
answered 503 (queue full) waits 0.5-2 s before it tries again. Every --sample seconds (default 60) it
prints the server's resident memory, open file descriptors and threads with the counts so far, and with
--report writes those samples and the summary as JSON (scripts/soak.sh runs it for 30 minutes). Before the
load, each prompt of a small fixed set is run alone to get its solo output. The test checks that every
completed reply equals its solo output (text and token counts), that the server keeps answering (/health,
polled every 0.5 s during the load, answers every time within 10 s), that requests_running returns to 0 and
that the server's resident memory (VmRSS of --pid) returns to within 5% of its idle level. The idle level is
a warm server's: it is read after the solo runs (two passes), since the first requests' one-time costs
(thread pools, allocator arenas, caches) are not something the load leaves behind. Prints a summary; exit
code 0 when every check held.

  tensorfold serve &  # note its pid
  python3 scripts/load_test.py --pid PID [--url http://127.0.0.1:8080] [--clients 64] [--duration 60]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import sys
import threading
import time
from urllib.parse import urlparse

PROMPTS = [
    "Name a fruit.",
    "Tell me about the sea.",
    "Repeat this list exactly: apples, bananas, cherries, dates.",
    "Write the word hello five times separated by spaces.",
    "What is two plus two?",
    "Say something kind.",
]
MAX_TOKENS = 16


def body_for(i: int, stream: bool = True) -> dict:
    body = {"messages": [{"role": "user", "content": PROMPTS[i]}], "max_tokens": MAX_TOKENS, "seed": 1000 + i,
            "temperature": [0.0, 0.7, 1.0][i % 3], "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body


class Server:
    def __init__(self, url: str, api_key: str | None, pid: int, timeout: float = 300):
        u = urlparse(url)
        self.timeout = timeout
        self.host, self.port = u.hostname, u.port or 80
        self.api_key = api_key
        self.pid = pid

    def conn(self, timeout: float = 300) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def headers(self) -> dict:
        h = {"Content-Type": "application/json"}
        if self.api_key:
            h["Authorization"] = f"Bearer {self.api_key}"
        return h

    def health(self) -> dict:
        c = self.conn(10)
        try:
            c.request("GET", "/health", headers=self.headers())
            return json.loads(c.getresponse().read())
        finally:
            c.close()

    def proc_status(self, key: str) -> int:
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
        raise RuntimeError(f"no {key}")

    def rss_kib(self) -> int:
        return self.proc_status("VmRSS")

    def threads(self) -> int:
        return self.proc_status("Threads")

    def open_fds(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def complete(self, i: int):
        """(status, text, usage) of one non-streamed request."""
        c = self.conn(self.timeout)
        try:
            c.request("POST", "/v1/chat/completions", body=json.dumps(body_for(i, stream=False)),
                      headers=self.headers())
            r = c.getresponse()
            raw = r.read().decode(errors="replace")
            if r.status != 200:
                return r.status, raw, None
            reply = json.loads(raw)
            u = reply["usage"]
            return 200, reply["choices"][0]["message"].get("content") or "", (u["prompt_tokens"],
                                                                                u["completion_tokens"])
        finally:
            c.close()

    def stream(self, i: int, stop_after_chunks: int | None = None):
        """(status, text, usage) of one streamed request; with stop_after_chunks, closes the connection after
        that many chunks and returns (status, None, None)."""
        c = self.conn(self.timeout)
        try:
            c.request("POST", "/v1/chat/completions", body=json.dumps(body_for(i)), headers=self.headers())
            r = c.getresponse()
            if r.status != 200:
                return r.status, r.read().decode(errors="replace"), None
            text, usage, chunks = "", None, 0
            for raw in r:
                line = raw.decode().strip()
                if not line.startswith("data: "):
                    continue
                data = line[6:]
                if data == "[DONE]":
                    break
                event = json.loads(data)
                if "error" in event:
                    return 500, json.dumps(event), None
                chunks += 1
                if stop_after_chunks is not None and chunks >= stop_after_chunks:
                    return 200, None, None  # leave: the finally closes the socket mid-stream
                if event.get("usage"):
                    usage = (event["usage"]["prompt_tokens"], event["usage"]["completion_tokens"])
                for choice in event.get("choices", []):
                    text += choice["delta"].get("content") or ""
            return 200, text, usage
        finally:
            c.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--pid", type=int, required=True, help="the server's process id (for VmRSS)")
    ap.add_argument("--api-key")
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--duration", type=float, default=60.0, help="seconds during which clients start requests")
    ap.add_argument("--non-streaming", type=float, default=0.0,
                    help="share of the requests of clients that do not disconnect sent with stream false")
    ap.add_argument("--sample", type=float, default=60.0, help="seconds between resource samples")
    ap.add_argument("--request-timeout", type=float, default=300.0,
                    help="seconds without a byte from the server after which a request counts as hung")
    ap.add_argument("--report", help="write the samples and the summary to this JSON file")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--settle", type=float, default=60.0, help="seconds to wait for the server to drain")
    a = ap.parse_args()
    srv = Server(a.url, a.api_key, a.pid, a.request_timeout)
    # Wait for the model to load (/health says 503 "loading" until then).
    ready_by = time.monotonic() + 300
    while True:
        try:
            if srv.health().get("status") == "ok":
                break
        except (OSError, ValueError):
            pass
        if time.monotonic() > ready_by:
            print("the server did not become ready within 300 s")
            return 1
        time.sleep(0.5)

    # Solo outputs, one request at a time; run twice so that the idle memory level is a warm one. A
    # non-streamed reply must equal the streamed one (same text, same token counts).
    solo = {}
    for _ in range(2):
        for i in range(len(PROMPTS)):
            replies = [srv.stream(i)] + ([srv.complete(i)] if a.non_streaming > 0 else [])
            for status, text, usage in replies:
                if status != 200:
                    print(f"solo request {i} failed: {status} {text}")
                    return 1
                if i in solo and solo[i] != (text, usage):
                    print(f"solo request {i} differs between two solo runs (or streamed and not): "
                          f"{solo[i]!r} vs {(text, usage)!r}")
                    return 1
                solo[i] = (text, usage)
    time.sleep(1.0)
    idle_rss = srv.rss_kib()

    lock = threading.Lock()
    stats = {"completed": 0, "completed_non_streamed": 0, "mismatched": 0, "disconnected": 0, "busy_503": 0,
             "http_5xx": 0, "errors": 0, "hung": 0, "peak_running": 0, "peak_waiting": 0, "health_checks": 0,
             "health_failed": 0, "health_max_s": 0.0}
    failures = []
    samples = []
    started = time.monotonic()
    deadline = started + a.duration

    def count_status(k: int, status: int, text: str | None):
        """Counts a non-200 answer (the lock held); True when the client should back off."""
        if status == 503:
            stats["busy_503"] += 1
            return True
        stats["errors"] += 1
        if status >= 500:
            stats["http_5xx"] += 1
        failures.append(f"client {k}: HTTP {status}: {(text or '')[:200]}")
        return False

    def client(k: int):
        crng = random.Random(a.seed * 1000 + k)
        leaver = k % 3 == 0  # a third of the clients disconnect at random moments
        while time.monotonic() < deadline:
            i = crng.randrange(len(PROMPTS))
            back_off = False
            try:
                if leaver:
                    status, text, _ = srv.stream(i, stop_after_chunks=crng.randint(1, MAX_TOKENS // 2))
                    with lock:
                        if status == 200:
                            stats["disconnected"] += 1
                        else:
                            back_off = count_status(k, status, text)
                else:
                    non_streamed = crng.random() < a.non_streaming
                    status, text, usage = srv.complete(i) if non_streamed else srv.stream(i)
                    with lock:
                        if status != 200:
                            back_off = count_status(k, status, text)
                        elif (text, usage) != solo[i]:
                            stats["mismatched"] += 1
                            failures.append(f"client {k}: prompt {i} gave {text!r} {usage}, solo {solo[i]!r}")
                        else:
                            stats["completed"] += 1
                            stats["completed_non_streamed"] += non_streamed
            except socket.timeout as e:  # no byte for --request-timeout seconds: a hang
                with lock:
                    stats["hung"] += 1
                    failures.append(f"client {k}: hung: {e}")
            except Exception as e:  # noqa: BLE001 - a crash of the server shows here
                with lock:
                    stats["errors"] += 1
                    failures.append(f"client {k}: {type(e).__name__}: {e}")
            if back_off:  # a busy server asks clients to come back later (Retry-After)
                time.sleep(crng.uniform(0.5, 2.0))

    def watcher():
        while time.monotonic() < deadline:
            try:
                t0 = time.monotonic()
                h = srv.health()
                with lock:
                    stats["health_checks"] += 1
                    stats["health_max_s"] = max(stats["health_max_s"], time.monotonic() - t0)
                    stats["peak_running"] = max(stats["peak_running"], h.get("requests_running", 0))
                    stats["peak_waiting"] = max(stats["peak_waiting"], h.get("requests_waiting", 0))
            except Exception as e:  # noqa: BLE001 - a server that stops answering /health fails the test
                with lock:
                    stats["health_failed"] += 1
                    failures.append(f"/health failed during the load: {type(e).__name__}: {e}")
            time.sleep(0.5)

    def take_sample():
        with lock:
            counts = {k: stats[k] for k in ("completed", "disconnected", "busy_503", "http_5xx", "errors", "hung")}
        sample = {"t_s": round(time.monotonic() - started, 1), "rss_mib": round(srv.rss_kib() / 1024, 1),
                  "fds": srv.open_fds(), "threads": srv.threads(), **counts}
        samples.append(sample)
        print("  sample " + " ".join(f"{k}={v}" for k, v in sample.items()), flush=True)

    def sampler():
        next_at = started + a.sample
        while time.monotonic() < deadline:
            time.sleep(max(0.0, min(next_at, deadline) - time.monotonic()))
            if time.monotonic() >= next_at:
                take_sample()
                next_at += a.sample

    print(f"idle: rss {idle_rss / 1024:.1f} MiB, fds {srv.open_fds()}, threads {srv.threads()}", flush=True)
    threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(a.clients)]
    threads += [threading.Thread(target=watcher, daemon=True), threading.Thread(target=sampler, daemon=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=max(0.0, deadline - time.monotonic()) + a.request_timeout + 60)
    hung_threads = sum(t.is_alive() for t in threads)
    load_s = time.monotonic() - started

    # Drain: requests_running back to 0, then resident memory back near idle.
    drained, running = False, None
    settle_end = time.monotonic() + a.settle
    while time.monotonic() < settle_end:
        h = srv.health()
        running = h.get("requests_running")
        if running == 0 and h.get("requests_waiting") == 0:
            drained = True
            break
        time.sleep(0.5)
    rss = srv.rss_kib()
    while time.monotonic() < settle_end and abs(rss - idle_rss) > 0.05 * idle_rss:
        time.sleep(1.0)
        rss = srv.rss_kib()
    rss_ok = abs(rss - idle_rss) <= 0.05 * idle_rss
    take_sample()
    health = srv.health()

    print(f"load test: {a.clients} clients for {a.duration:.0f} s ({load_s:.1f} s with the last replies), "
          f"a third disconnecting at random moments, {100 * a.non_streaming:.0f}% of the rest non-streamed")
    print(f"  completed replies      {stats['completed']} (each equal to its solo output; "
          f"{stats['completed_non_streamed']} non-streamed)")
    print(f"  mismatched replies     {stats['mismatched']}")
    print(f"  disconnected on purpose {stats['disconnected']}")
    print(f"  503 busy               {stats['busy_503']}")
    print(f"  5xx / other errors     {stats['http_5xx']} / {stats['errors'] - stats['http_5xx']}; "
          f"hung requests: {stats['hung']}; clients hung: {hung_threads}")
    print(f"  /health during load    {stats['health_checks']} answered (slowest {stats['health_max_s']:.2f} s), "
          f"{stats['health_failed']} failed")
    print(f"  peak running/waiting   {stats['peak_running']}/{stats['peak_waiting']}")
    print(f"  after: requests_running {running} (drained: {drained}); requests_total {health.get('requests_total')}")
    print(f"  resident memory        idle {idle_rss / 1024:.1f} MiB, after {rss / 1024:.1f} MiB "
          f"({100.0 * (rss - idle_rss) / idle_rss:+.1f}%, limit 5%)")
    for f in failures[:10]:
        print("  FAIL", f)
    ok = (stats["mismatched"] == 0 and stats["errors"] == 0 and stats["hung"] == 0 and hung_threads == 0
          and drained and rss_ok and stats["completed"] > 0 and stats["health_failed"] == 0)
    print("  result                 " + ("PASS" if ok else "FAIL"))
    if a.report:
        with open(a.report, "w") as f:
            json.dump({"args": vars(a), "idle_rss_mib": round(idle_rss / 1024, 1), "final_rss_mib": round(rss / 1024, 1),
                       "drained": drained, "stats": stats, "samples": samples, "failures": failures[:50],
                       "result": "PASS" if ok else "FAIL"}, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
