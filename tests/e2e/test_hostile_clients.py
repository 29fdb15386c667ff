"""The HTTP surface under careless and hostile clients, over real sockets on a `tensorfold serve` of its own
(with --cors-origin): 1,000 idle connections and 200 that send a request's start and stall leave /health and
a chat request answering within 1 s; CORS preflights are answered without the key."""

from __future__ import annotations

import resource
import socket
import time

import pytest

from ._serve import API_KEYS, start_serve

IDLE, SLOW = 1000, 200
ORIGIN = "http://localhost:3000"


@pytest.fixture(scope="module")
def hostile_server(tensorfold_bin, default_model_path, tmp_path_factory):
    srv = start_serve(tensorfold_bin, default_model_path,
                      ["--api-key", API_KEYS[0], "--cors-origin", ORIGIN, "--max-tokens", 4],
                      tmp_path_factory.mktemp("hostile"), API_KEYS[0])
    yield srv
    assert srv.stop() == 0, srv.stderr()


def raise_fd_limit(need: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            pytest.skip(f"the descriptor limit ({hard}) is below the {need} this test opens")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need if hard == resource.RLIM_INFINITY else hard, hard))


def test_health_and_chat_answer_beside_idle_and_stalled_connections(hostile_server):
    raise_fd_limit(IDLE + SLOW + 256)
    port = hostile_server.port
    held = []
    try:
        for _ in range(IDLE):
            held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        stalled_head = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        b"Authorization: Bearer " + API_KEYS[0].encode() + b"\r\nContent-Length: 100\r\n\r\n{")
        for _ in range(SLOW):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(stalled_head)
            held.append(s)
        time.sleep(0.3)  # the front has accepted them all

        t0 = time.monotonic()
        health = hostile_server.raw("GET", "/health", timeout=5)
        health_s = time.monotonic() - t0
        t0 = time.monotonic()
        chat = hostile_server.raw("POST", "/v1/chat/completions", timeout=5, body={
            "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1})
        chat_s = time.monotonic() - t0
        print(f"\n/health {health_s * 1000:.0f} ms, chat (1 token) {chat_s * 1000:.0f} ms beside {IDLE} idle "
              f"and {SLOW} stalled connections")
        assert health.status == 200 and chat.status == 200, (health.body, chat.body)
        assert health_s < 1.0 and chat_s < 1.0

        # A stalled client that finishes its request is answered (its body is not JSON: 400, not a hang).
        s = held[-1]
        s.sendall(b"x" * 99)
        s.settimeout(10)
        assert s.recv(64).startswith(b"HTTP/1.1 400")
    finally:
        for s in held:
            s.close()


def test_cors_preflight_needs_no_key_and_replies_carry_the_origin(hostile_server):
    pre = hostile_server.raw("OPTIONS", "/v1/chat/completions", auth=False, headers={
        "Origin": ORIGIN, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type"})
    assert pre.status == 204
    assert pre.headers["access-control-allow-origin"] == ORIGIN
    assert "POST" in pre.headers["access-control-allow-methods"]
    assert pre.headers["access-control-allow-headers"] == "authorization, content-type"
    r = hostile_server.raw("GET", "/v1/models", headers={"Origin": ORIGIN})
    assert r.status == 200 and r.headers["access-control-allow-origin"] == ORIGIN
    other = hostile_server.raw("GET", "/v1/models", headers={"Origin": "http://elsewhere"})
    assert other.status == 200 and "access-control-allow-origin" not in other.headers
