"""A `tensorfold serve` process for the end-to-end tests, and plain-HTTP helpers."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

API_KEYS = ("sk-e2e-first", "sk-e2e-second")
ALIAS = "tf-e2e"
DEFAULT_MAX_TOKENS = 24
START_TIMEOUT_S = 180
REQUEST_TIMEOUT_S = 120


@dataclass
class RawReply:
    status: int
    headers: dict
    body: bytes

    def json(self):
        return json.loads(self.body)


@dataclass
class ServeProcess:
    """A running `tensorfold serve`; stdout/stderr go to files so the pipes never fill."""

    process: subprocess.Popen
    port: int
    report: str
    stdout_path: Path
    stderr_path: Path
    api_key: str | None = None
    model_id: str = ""
    exit_code: int | None = field(default=None)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def client(self, api_key: str | None = None, **kwargs):
        import openai

        return openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key or self.api_key or "unused",
            max_retries=0,
            timeout=REQUEST_TIMEOUT_S,
            **kwargs,
        )

    def raw(self, method: str, path: str, body=None, headers: dict | None = None, auth: bool = True,
            timeout: float = REQUEST_TIMEOUT_S) -> RawReply:
        """One HTTP request. `body`: bytes/str sent as is, anything else as JSON."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            h = dict(headers or {})
            if auth and self.api_key:
                h.setdefault("Authorization", f"Bearer {self.api_key}")
            data = None
            if body is not None:
                data = body if isinstance(body, (bytes, str)) else json.dumps(body)
                if isinstance(data, str):
                    data = data.encode()
                h.setdefault("Content-Type", "application/json")
            conn.request(method, path, body=data, headers=h)
            r = conn.getresponse()
            return RawReply(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
        finally:
            conn.close()

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM, then wait; SIGKILL (and a failure) if it does not end."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                pytest.fail(f"tensorfold serve did not stop within {timeout} s of SIGTERM", pytrace=False)
        self.exit_code = self.process.returncode
        return self.exit_code


def start_serve(binary: Path, model: Path, args: list, workdir: Path, api_key: str | None = None) -> ServeProcess:
    """Starts `tensorfold serve MODEL --port 0 ARGS`, waits for the report and for /health to answer 200."""
    out, err = workdir / "serve.stdout", workdir / "serve.stderr"
    proc = subprocess.Popen(
        [str(binary), "serve", str(model), "--port", "0", *map(str, args)],
        stdout=out.open("w"),
        stderr=err.open("w"),
        env={**os.environ},
    )
    deadline = time.monotonic() + START_TIMEOUT_S
    port = None
    while time.monotonic() < deadline:
        report = out.read_text(errors="replace")
        m = re.search(r"serving\s+http://127\.0\.0\.1:(\d+)/v1", report)
        if m:
            port = int(m.group(1))
            break
        if proc.poll() is not None:
            pytest.fail(f"tensorfold serve exited with {proc.returncode} before serving:\n{err.read_text()}",
                        pytrace=False)
        time.sleep(0.1)
    if port is None:
        proc.kill()
        pytest.fail(f"tensorfold serve printed no report within {START_TIMEOUT_S} s:\n{err.read_text()}",
                    pytrace=False)
    server = ServeProcess(proc, port, out.read_text(), out, err, api_key)
    # TF_E2E_BACKEND=cuda (the device suite) makes every server prove it runs on that backend: `auto` picks
    # CUDA where a device is visible, and a silent fallback would test the other backend.
    want = os.environ.get("TF_E2E_BACKEND")
    if want:
        m = re.search(r"^\s*backend\s+(\S+)", server.report, re.M)
        if m is None or m.group(1) != want:
            proc.kill()
            pytest.fail(f"TF_E2E_BACKEND={want}, but the server reports backend {m.group(1) if m else '?'}",
                        pytrace=False)
    while time.monotonic() < deadline:
        try:
            if server.raw("GET", "/health", auth=False, timeout=5).status == 200:
                m = re.search(r"^\s*model\s+(\S+)", server.report, re.M)
                server.model_id = m.group(1) if m else ""
                return server
        except OSError:
            pass
        time.sleep(0.1)
    proc.kill()
    pytest.fail("/health did not answer 200 after the report", pytrace=False)


def sse_events(body: bytes) -> list:
    """(event name or None, data string) for each event of an SSE body."""
    events = []
    for block in body.decode().split("\n\n"):
        if not block.strip():
            continue
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        events.append((name, "\n".join(data)))
    return events
