"""`tensorfold serve` flags with a server of its own: --name, --context, --chat-template, sampling flags, the
startup report, template errors, and a clean stop on SIGTERM."""

from __future__ import annotations

import os
import re

import openai
import pytest

from ._serve import start_serve

TEMPLATE = (
    "{% for m in messages %}"
    "{% if m['content'] == 'RAISE' %}{{ raise_exception('this template refuses RAISE') }}{% endif %}"
    "<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture(scope="module")
def custom(tensorfold_bin, default_model_path, tmp_path_factory):
    work = tmp_path_factory.mktemp("custom")
    template = work / "template.jinja"
    template.write_text(TEMPLATE)
    srv = start_serve(tensorfold_bin, default_model_path,
                      ["--name", "custom-id", "--context", 256, "--chat-template", template, "--temperature", 0,
                       "--top-k", 5, "--top-p", 0.9, "--min-p", 0.05, "--max-tokens", 0, "--backend", "auto"],
                      work)
    yield srv
    srv.stop()


def test_startup_report(custom):
    report = custom.report
    assert len(re.findall(r"^\s*serving\s", report, re.M)) == 1, report  # one report
    assert re.search(r"^\s*model\s+custom-id\b", report, re.M), report
    assert re.search(r"^\s*family\s+llama\b", report, re.M), report
    assert re.search(r"^\s*backend\s+\S+", report, re.M), report
    assert re.search(r"^\s*weights\s+\d+ bytes", report, re.M), report
    assert re.search(r"^\s*context\s+256 tokens", report, re.M), report
    assert re.search(r"temperature 0\b", report), report
    assert f"http://127.0.0.1:{custom.port}/v1" in report


def test_report_and_health_say_the_prompt_precision(custom):
    backend = re.search(r"^\s*backend\s+(\S+)", custom.report, re.M).group(1)
    line = re.search(r"^\s*prompts\s+(.*)$", custom.report, re.M)
    assert line, custom.report
    health = custom.raw("GET", "/health", auth=False).json()
    if backend == "cuda":  # the default: x rounded once to bf16 on prefill chunks
        assert line.group(1).startswith("bf16: "), line.group(1)
        assert health["prompt_precision"] == "bf16"
    else:
        assert "--precision is a CUDA setting" in line.group(1), line.group(1)
        assert "prompt_precision" not in health


def test_precision_full(tensorfold, tensorfold_bin, default_model_path, tmp_path):
    """CUDA serves --precision full and says so; a backend without the choice refuses the flag in one line."""
    probe = tensorfold("serve", default_model_path, "--port", "0", "--precision", "fp8")
    assert probe.returncode != 0 and "--precision" in probe.stderr
    if os.environ.get("TF_E2E_BACKEND") == "cuda":
        srv = start_serve(tensorfold_bin, default_model_path, ["--precision", "full"], tmp_path)
        try:
            assert re.search(r"^\s*prompts\s+full: ", srv.report, re.M), srv.report
            assert srv.raw("GET", "/health", auth=False).json()["prompt_precision"] == "full"
        finally:
            srv.stop()
    else:
        r = tensorfold("serve", default_model_path, "--port", "0", "--precision", "full", "--backend", "mlx")
        assert r.returncode == 1
        assert "--precision chooses how CUDA computes prompt rows" in r.stderr, r.stderr


def test_name_and_context(custom):
    client = custom.client()
    models = client.models.list().data
    assert [m.id for m in models] == ["custom-id"]
    assert models[0].model_extra["context_length"] == 256
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="custom-id", messages=[{"role": "user", "content": "hello " * 300}])
    assert e.value.body["message"].startswith("This server's maximum context length is 256 tokens")


def test_the_chat_template_flag_is_used(custom, tokenize):
    client = custom.client()
    r = client.chat.completions.create(model="custom-id", messages=[{"role": "user", "content": "Hi"}], max_tokens=2)
    # This template adds no default system prompt, unlike the model's own.
    assert r.usage.prompt_tokens == len(tokenize("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"))


def test_without_max_tokens_and_flag_zero_the_reply_may_run_to_the_context_end(custom):
    r = custom.client().completions.create(model="custom-id", prompt="1, 2, 3,", max_tokens=3)
    assert r.usage.completion_tokens <= 3


def test_template_errors_are_400(custom):
    r = custom.raw("POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "RAISE"}]})
    assert r.status == 400
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error"
    assert err["code"] == "chat_template_error"
    assert "this template refuses RAISE" in err["message"]


def test_no_key_means_open(custom):
    assert custom.raw("GET", "/v1/models", auth=False).status == 200


def test_sigterm_stops_cleanly(custom):
    assert custom.stop() == 0, custom.stderr()
    assert "stopped" in custom.stderr()


def test_a_bad_checkpoint_fails_in_one_line(tensorfold, tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\x00" * 12)
    r = tensorfold("serve", bad, "--port", "0")
    assert r.returncode == 1
    assert len(r.stderr.strip().splitlines()) == 1 and "bad.gguf" in r.stderr


def test_a_busy_port_fails_in_one_line(tensorfold, server):
    r = tensorfold("serve", "--port", server.port)
    assert r.returncode == 1
    assert str(server.port) in r.stderr and len(r.stderr.strip().splitlines()) == 1
