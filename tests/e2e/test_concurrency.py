"""The scheduler through the HTTP API (ARCHITECTURE §4-5): concurrent requests each equal their solo run bit
for bit, memory admission answers 400 (never fits) or queues (fits later), a full queue answers 503 with
Retry-After, and /metrics is Prometheus text whose counters move."""

from __future__ import annotations

import math
import re
import threading

import openai
import pytest

from ._serve import start_serve

MODEL = "SmolLM2-135M-Instruct.Q4_1"
# Different prompts, seeds, temperatures and lengths; some serial (draft: false), some streamed.
CASES = [
    {"prompt": "Repeat this list exactly: apples, bananas, cherries, dates.", "seed": 1, "temperature": 0.0,
     "max_tokens": 20, "draft": True, "stream": False},
    {"prompt": "Tell me about the sea.", "seed": 2, "temperature": 0.7, "max_tokens": 12, "draft": False,
     "stream": True},
    {"prompt": "Write the word hello five times separated by spaces.", "seed": 3, "temperature": 1.0,
     "max_tokens": 16, "draft": True, "stream": True},
    {"prompt": "What is two plus two?", "seed": 4, "temperature": 0.0, "max_tokens": 8, "draft": False,
     "stream": False},
    {"prompt": "Copy this code exactly:\ndef add(a, b):\n    return a + b\n", "seed": 5, "temperature": 0.7,
     "max_tokens": 24, "draft": True, "stream": False},
    {"prompt": "Name three colours.", "seed": 6, "temperature": 1.0, "max_tokens": 10, "draft": True,
     "stream": True},
    {"prompt": "Quote: 'To be, or not to be.' Now repeat the quote twice.", "seed": 7, "temperature": 0.0,
     "max_tokens": 18, "draft": False, "stream": True},
    {"prompt": "Say something kind.", "seed": 8, "temperature": 0.7, "max_tokens": 14, "draft": True,
     "stream": False},
]


def run_case(client, case):
    """(text, token ids, prompt tokens, completion tokens, finish reason) of one chat request."""
    kwargs = dict(model=MODEL, messages=[{"role": "user", "content": case["prompt"]}], max_tokens=case["max_tokens"],
                  seed=case["seed"], temperature=case["temperature"],
                  extra_body={"draft": case["draft"], "return_token_ids": not case["stream"]})
    if not case["stream"]:
        r = client.chat.completions.create(**kwargs)
        return (r.choices[0].message.content, r.choices[0].model_extra["token_ids"], r.usage.prompt_tokens,
                r.usage.completion_tokens, r.choices[0].finish_reason)
    text, finish, usage = "", None, None
    for chunk in client.chat.completions.create(stream=True, stream_options={"include_usage": True}, **kwargs):
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    return text, None, usage.prompt_tokens, usage.completion_tokens, finish


def run_all_at_once(fn, args_list):
    """Runs fn(*args) for each args on its own thread, all released together; returns results (or exceptions)."""
    results = [None] * len(args_list)
    barrier = threading.Barrier(len(args_list))

    def worker(i, args):
        barrier.wait()
        try:
            results[i] = fn(*args)
        except Exception as e:  # noqa: BLE001 - the caller inspects it
            results[i] = e

    threads = [threading.Thread(target=worker, args=(i, a)) for i, a in enumerate(args_list)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a concurrent request hung"
    return results


def parse_prometheus(text: str) -> dict:
    """{(name, labels without le): value} for every sample; asserts the text format's line grammar."""
    samples = {}
    typed = {}
    sample = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? (\S+)$')
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            assert kind in ("counter", "gauge", "histogram"), line
            typed[name] = kind
            continue
        if line.startswith("# HELP ") or not line:
            continue
        m = sample.match(line)
        assert m, f"not a Prometheus sample line: {line!r}"
        name, labels, value = m.group(1), m.group(3) or "", m.group(4)
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        assert name in typed or base in typed, f"sample {name} without a TYPE line"
        v = float(value)
        assert not math.isnan(v)
        samples[(name, labels)] = v
    return samples


def metric(samples: dict, name: str, le: str | None = None) -> float:
    for (n, labels), v in samples.items():
        if n == name and (le is None or f'le="{le}"' in labels):
            return v
    raise KeyError(name)


def test_concurrent_requests_equal_their_solo_runs(server, client):
    # The rounds of concurrent streams really share forward passes (the load-time row check passed).
    assert "rounds shared: one forward pass of up to 16 rows" in server.report, server.report
    solo = [run_case(client, c) for c in CASES]
    concurrent = run_all_at_once(run_case, [(client, c) for c in CASES])
    for case, alone, together in zip(CASES, solo, concurrent):
        assert not isinstance(together, Exception), together
        assert together == alone, case["prompt"]
        assert together[3] > 0


def test_metrics_are_prometheus_text_and_move(server, client):
    r = server.raw("GET", "/metrics")
    assert r.status == 200
    assert r.headers["content-type"].startswith("text/plain")
    before = parse_prometheus(r.body.decode())
    for name in ("tensorfold:requests_running", "tensorfold:requests_waiting", "vllm:num_requests_running",
                 "vllm:num_requests_waiting"):
        assert metric(before, name) == 0
    run_case(client, CASES[3])
    after = parse_prometheus(server.raw("GET", "/metrics").body.decode())
    for name in ("tensorfold:requests_total", "tensorfold:prompt_tokens_total", "tensorfold:generation_tokens_total",
                 "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
                 "vllm:time_to_first_token_seconds_count", "vllm:e2e_request_latency_seconds_count",
                 "tensorfold:time_to_first_token_seconds_count"):
        assert metric(after, name) > metric(before, name), name
    assert metric(after, "vllm:e2e_request_latency_seconds_bucket", "+Inf") == \
        metric(after, "vllm:e2e_request_latency_seconds_count")
    # Keys guard the counters as they guard /v1 (the server has --api-key).
    assert server.raw("GET", "/metrics", auth=False).status == 401
    health = server.raw("GET", "/health", auth=False).json()
    assert health["status"] == "ok"


def request_figures(report: str):
    """(weights, bytes per token, workspace) from the startup report's memory line."""
    m = re.search(r"weights (\d+) bytes; a request reserves (\d+) bytes per token .*?\+ (\d+) bytes of prefill "
                  r"workspace", report)
    assert m, report
    return tuple(int(g) for g in m.groups())


SHORT = {"prompt": "Name a fruit.", "seed": 9, "temperature": 0.0, "max_tokens": 12, "draft": True, "stream": False}


@pytest.fixture(scope="module")
def tiny_budget_env(server, client):
    """TENSORFOLD_MEMORY_LIMIT_GB that holds the weights and one SHORT request, not two."""
    weights, per_token, workspace = request_figures(server.report)
    prompt_tokens = run_case(client, SHORT)[2]
    need = per_token * (prompt_tokens + SHORT["max_tokens"]) + workspace
    limit = weights + 1.5 * need
    return {"TENSORFOLD_MEMORY_LIMIT_GB": f"{limit / 2**30:.9f}"}, need


def start_with_env(tensorfold_bin, default_model_path, tmp_path_factory, env, args):
    import os
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        return start_serve(tensorfold_bin, default_model_path, args, tmp_path_factory.mktemp("serve-tiny"))
    finally:
        os.environ.clear()
        os.environ.update(saved)


def test_tiny_budget_queues_a_burst_and_refuses_what_never_fits(tensorfold_bin, default_model_path, tmp_path_factory,
                                                                 tiny_budget_env, client):
    env, _ = tiny_budget_env
    srv = start_with_env(tensorfold_bin, default_model_path, tmp_path_factory, env, ["--parallel", "4"])
    try:
        assert "TENSORFOLD_MEMORY_LIMIT_GB" in srv.report
        tiny = srv.client()
        alone = run_case(client, SHORT)
        burst = run_all_at_once(run_case, [(tiny, SHORT)] * 3)
        for r in burst:
            assert not isinstance(r, Exception), r
            assert r == alone
        # Only one fits at a time: the others waited in the queue.
        health = srv.raw("GET", "/health").json()
        assert health["requests_running"] == 0 and health["requests_waiting"] == 0
        with pytest.raises(openai.BadRequestError) as e:
            tiny.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=4000)
        assert e.value.code == "context_length_exceeded"
        fits = int(re.search(r"at most (\d+) tokens", e.value.body["message"]).group(1))
        assert 0 < fits < 4000
        assert srv.raw("GET", "/health").json()["status"] == "ok"
    finally:
        assert srv.stop() == 0, srv.stderr()


def test_full_queue_answers_503_with_retry_after(tensorfold_bin, default_model_path, tmp_path_factory,
                                                 tiny_budget_env):
    env, _ = tiny_budget_env
    srv = start_with_env(tensorfold_bin, default_model_path, tmp_path_factory, env, ["--max-queue", "1"])
    try:
        body = {"model": MODEL, "messages": [{"role": "user", "content": SHORT["prompt"]}],
                "max_tokens": SHORT["max_tokens"], "seed": SHORT["seed"], "temperature": 0.0}
        replies = run_all_at_once(lambda: srv.raw("POST", "/v1/chat/completions", body), [()] * 5)
        statuses = sorted(r.status for r in replies)
        assert statuses.count(200) >= 2, statuses  # one ran, one waited
        busy = [r for r in replies if r.status == 503]
        assert busy, statuses
        for r in busy:
            assert int(r.headers["retry-after"]) >= 1
            err = r.json()["error"]
            assert err["type"] == "server_error" and err["code"] == "server_busy"
        assert set(statuses) <= {200, 503}
        metrics = parse_prometheus(srv.raw("GET", "/metrics").body.decode())
        assert metric(metrics, "tensorfold:requests_refused_total") == len(busy)
    finally:
        assert srv.stop() == 0, srv.stderr()


def test_weights_over_the_budget_are_refused_at_startup(tensorfold_bin, default_model_path):
    import os
    import subprocess
    # The default model holds 0.09 GiB of weights (its Q4_1/Q8_0 blocks as the file stores them).
    env = {**os.environ, "TENSORFOLD_MEMORY_LIMIT_GB": "0.05"}
    r = subprocess.run([str(tensorfold_bin), "serve", str(default_model_path), "--port", "0"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert re.search(r"the weights \(0\.\d\d GiB\) exceed the memory budget \(0\.05 GiB, TENSORFOLD_MEMORY_LIMIT_GB\)",
                     r.stderr), r.stderr
