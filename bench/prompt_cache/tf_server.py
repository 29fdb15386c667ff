"""A `tensorfold serve` process and the two requests the prompt-cache scripts make, on the standard library only
(the device machine's python3 has no openai SDK): a streamed chat turn timed to its first content token, and a
plain one returning the reply's token ids."""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import time
from pathlib import Path

START_TIMEOUT_S = 600  # an 8B checkpoint loads (and checks its rows) in well under this on the H200
REQUEST_TIMEOUT_S = 3600


class Server:
    """`tensorfold serve [MODEL] --port 0 ARGS`, its report and output under `workdir`; a context manager."""

    def __init__(self, binary: str, model: str | None, args: list[str], workdir: Path):
        workdir.mkdir(parents=True, exist_ok=True)
        self.out, self.err = workdir / "serve.stdout", workdir / "serve.stderr"
        cmd = [binary, "serve", *([model] if model else []), "--port", "0", *map(str, args)]
        self.proc = subprocess.Popen(cmd, stdout=self.out.open("w"), stderr=self.err.open("w"),
                                     env={**os.environ, "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"})
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            m = re.search(r"serving\s+http://127\.0\.0\.1:(\d+)/v1", self.out.read_text(errors="replace"))
            if m:
                self.port = int(m.group(1))
                self.report = self.out.read_text(errors="replace")
                self.model_id = re.search(r"^\s*model\s+(\S+)", self.report, re.M).group(1)
                self.context = self.get("/v1/models")["data"][0]["context_length"]
                return
            if self.proc.poll() is not None:
                raise SystemExit(f"tensorfold serve exited with {self.proc.returncode}:\n{self.err.read_text()}")
            time.sleep(0.2)
        self.proc.kill()
        raise SystemExit(f"tensorfold serve printed no report within {START_TIMEOUT_S} s")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def report_line(self, name: str) -> str:
        m = re.search(rf"^\s*{name}\s+(.*)$", self.report, re.M)
        return m.group(1).strip() if m else "(not in the report)"

    def _request(self, method: str, path: str, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=REQUEST_TIMEOUT_S)
        conn.request(method, path, body=None if body is None else json.dumps(body).encode(),
                     headers={"Content-Type": "application/json"})
        return conn, conn.getresponse()

    def get(self, path: str):
        conn, r = self._request("GET", path)
        try:
            return json.loads(r.read())
        finally:
            conn.close()

    def chat(self, messages: list, **fields) -> dict:
        """One non-streamed chat completion with the reply's token ids; the whole response."""
        body = {"model": self.model_id, "messages": messages, "return_token_ids": True, **fields}
        conn, r = self._request("POST", "/v1/chat/completions", body)
        try:
            data = r.read()
            if r.status != 200:
                raise RuntimeError(f"HTTP {r.status}: {data[:500]!r}")
            return json.loads(data)
        finally:
            conn.close()

    def chat_streamed(self, messages: list, **fields) -> tuple[float, str, dict]:
        """One streamed chat turn: (seconds to the first content delta, the reply, the usage object)."""
        body = {"model": self.model_id, "messages": messages, "stream": True,
                "stream_options": {"include_usage": True}, **fields}
        t0 = time.perf_counter()
        conn, r = self._request("POST", "/v1/chat/completions", body)
        ttft, text, usage = None, "", None
        try:
            if r.status != 200:
                raise RuntimeError(f"HTTP {r.status}: {r.read()[:500]!r}")
            for line in r:  # server-sent events: one `data: {...}` line each, `data: [DONE]` last
                line = line.strip()
                if not line.startswith(b"data:") or line == b"data: [DONE]":
                    continue
                chunk = json.loads(line[5:])
                for choice in chunk.get("choices") or []:
                    content = (choice.get("delta") or {}).get("content")
                    if content:
                        if ttft is None:
                            ttft = time.perf_counter() - t0
                        text += content
                if chunk.get("usage"):
                    usage = chunk["usage"]
        finally:
            conn.close()
        return (ttft if ttft is not None else time.perf_counter() - t0), text, usage or {}


def cached_tokens(usage: dict) -> int:
    return ((usage or {}).get("prompt_tokens_details") or {}).get("cached_tokens") or 0
