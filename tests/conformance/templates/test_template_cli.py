"""`tensorfold template` end to end: the embedded model's template (read from its GGUF), a corpus
template given with --chat-template, --tools, --kwargs, --add-generation-prompt and --now, compared
byte for byte with the reference; errors exit 1 with one line on stderr."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
from pathlib import Path

import pytest

from .conftest import smollm2_template
from .reference import Reference

HERE = Path(__file__).resolve().parent
CONVERSATIONS = json.loads((HERE / "conversations.json").read_text(encoding="utf-8"))
NOW = "2026-03-14T15:09:26"
SMOLLM2_TOKENS = {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>", "unk_token": "<|endoftext|>",
                  "pad_token": "<|im_end|>"}
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")


@pytest.fixture(scope="module")
def tensorfold_cli() -> Path:
    build = Path(os.environ.get("TF_BUILD_DIR") or HERE.parent.parent.parent / "build").resolve()
    path = build / "tensorfold"
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"{path} is missing: build it with `cmake --build {build} --target tensorfold`", pytrace=False)
    return path


def run(cli: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([str(cli), "template", *map(str, args)], capture_output=True, timeout=60)


def conversation(name: str) -> dict:
    return next(c for c in CONVERSATIONS["conversations"] if c["name"] == name)


@pytest.mark.parametrize("name", ["system_user", "multi_turn", "unicode_and_jinja_lookalikes", "content_parts"])
@pytest.mark.parametrize("agp", [False, True])
def test_embedded_model_template_matches_reference(tensorfold_cli, tmp_path, name, agp):
    conv = conversation(name)
    msgs = tmp_path / "messages.json"
    msgs.write_text(json.dumps(conv["messages"], ensure_ascii=False), encoding="utf-8")
    args = ["--messages", msgs] + (["--add-generation-prompt"] if agp else [])
    r = run(tensorfold_cli, *args)
    expected = Reference(datetime.datetime.fromisoformat(NOW)).render(
        smollm2_template(), conv["messages"], add_generation_prompt=agp, kwargs=SMOLLM2_TOKENS)
    if expected[0] == "error":
        assert r.returncode == 1, r.stdout
        return
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode("utf-8") == expected[1]


def test_chat_template_file_tools_kwargs_and_now(tensorfold_cli, tmp_path, template_corpus):
    conv = conversation("tools_and_calls")
    msgs, tools = tmp_path / "m.json", tmp_path / "t.json"
    msgs.write_text(json.dumps(conv["messages"], ensure_ascii=False), encoding="utf-8")
    tools.write_text(json.dumps(conv["tools"], ensure_ascii=False), encoding="utf-8")
    ref = Reference(datetime.datetime.fromisoformat(NOW))
    for name in ["Qwen3-Coder", "meta-llama-Llama-3.1-8B-Instruct", "openai-gpt-oss-120b", "Mistral-Small-3.2-24B-Instruct-2506"]:
        tmpl = tmp_path / f"{name}.jinja"
        tmpl.write_text(template_corpus[name], encoding="utf-8")
        kwargs = {"enable_thinking": False, "reasoning_effort": "low"}
        r = run(tensorfold_cli, "--chat-template", tmpl, "--messages", msgs, "--tools", tools, "--kwargs",
                json.dumps(kwargs), "--add-generation-prompt", "--now", NOW)
        expected = ref.render(template_corpus[name], conv["messages"], tools=conv["tools"], add_generation_prompt=True,
                              kwargs={**SMOLLM2_TOKENS, **kwargs})
        if expected[0] == "error":
            assert r.returncode == 1, (name, r.stdout[:200])
            continue
        assert r.returncode == 0, (name, r.stderr.decode())
        assert r.stdout.decode("utf-8") == expected[1], name


def test_request_body_form_and_tokens(tensorfold_cli, tmp_path):
    body = tmp_path / "body.json"
    body.write_text(json.dumps({"messages": [{"role": "user", "content": "Hello!"}]}), encoding="utf-8")
    text = run(tensorfold_cli, "--messages", body, "--add-generation-prompt")
    assert text.returncode == 0 and text.stdout.endswith(b"<|im_start|>assistant\n")
    toks = run(tensorfold_cli, "--messages", body, "--add-generation-prompt", "--tokens")
    assert toks.returncode == 0, toks.stderr.decode()
    ids = json.loads(toks.stdout)
    assert isinstance(ids, list) and ids and all(isinstance(i, int) for i in ids)
    assert ids[0] == 1  # <|im_start|>: the template's text starts with the special token


@pytest.mark.parametrize(
    "template, extra, needle",
    [
        ("{{ raise_exception('no system messages here') }}", [], b"no system messages here"),
        ("{% if %}", [], b"line 1"),
        ("{{ messages[0].content.nope() }}", [], b"UndefinedError"),
        ("{{ 'x' * 70000000 }}", [], b"limit"),
        ("ok", ["--kwargs", "[1]"], b"--kwargs"),
        ("ok", ["--now", "tomorrow"], b"--now"),
    ],
)
def test_errors_exit_1_with_one_line(tensorfold_cli, tmp_path, template, extra, needle):
    tmpl, msgs = tmp_path / "t.jinja", tmp_path / "m.json"
    tmpl.write_text(template, encoding="utf-8")
    msgs.write_text('[{"role": "user", "content": "x"}]', encoding="utf-8")
    r = run(tensorfold_cli, "--chat-template", tmpl, "--messages", msgs, *extra)
    assert r.returncode == 1, r.stdout[:200]
    assert r.stdout == b""
    err = r.stderr.decode()
    assert err.startswith("tensorfold template: ") and err.count("\n") == 1, err
    assert needle.decode() in err


def test_missing_messages_file_and_bad_json(tensorfold_cli, tmp_path):
    r = run(tensorfold_cli, "--messages", tmp_path / "absent.json")
    assert r.returncode == 1 and b"cannot read" in r.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    r = run(tensorfold_cli, "--messages", bad)
    assert r.returncode == 1 and b"not valid JSON" in r.stderr
