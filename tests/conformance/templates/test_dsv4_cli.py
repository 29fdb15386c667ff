"""`tensorfold template` on a DeepSeek-V4 checkpoint (config.json model_type deepseek_v4, no chat template): the
builtin encoding is chosen by itself and renders every chat case of dsv4_corpus.json byte for byte as the
reference encoding_dsv4.py does (scripts/golden/make_dsv4_corpus.py); bad input exits 1 with one line naming the
field."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CORPUS = json.loads((HERE / "dsv4_corpus.json").read_text(encoding="utf-8"))
CHAT = [c for c in CORPUS["cases"] if c["kind"] == "chat"]


@pytest.fixture(scope="module")
def tensorfold_cli() -> Path:
    build = Path(os.environ.get("TF_BUILD_DIR") or HERE.parent.parent.parent / "build").resolve()
    path = build / "tensorfold"
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"{path} is missing: build it with `cmake --build {build} --target tensorfold`", pytrace=False)
    return path


@pytest.fixture(scope="module")
def dsv4_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("dsv4")
    (d / "config.json").write_text(json.dumps({"model_type": "deepseek_v4", "architectures": ["DeepseekV4ForCausalLM"]}))
    return d


def template(cli, model, request, tmp_path, extra=()):
    body = tmp_path / "request.json"
    body.write_text(json.dumps({"messages": request["messages"], "tools": request.get("tools")}, ensure_ascii=False),
                    encoding="utf-8")
    args = [str(cli), "template", str(model), "--messages", str(body), *extra]
    if request.get("add_generation_prompt", True):
        args.append("--add-generation-prompt")
    if request.get("continue_final_message"):
        args.append("--continue-final-message")
    if request.get("chat_template_kwargs"):
        args += ["--kwargs", json.dumps(request["chat_template_kwargs"])]
    return subprocess.run(args, capture_output=True, timeout=60)


@pytest.mark.parametrize("case", CHAT, ids=[c["name"] for c in CHAT])
def test_corpus_case_renders_as_the_reference(tensorfold_cli, dsv4_dir, tmp_path, case):
    r = template(tensorfold_cli, dsv4_dir, case["request"], tmp_path)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode("utf-8") == case["expected"]


def test_builtin_named_on_any_model(tensorfold_cli, tmp_path):
    case = next(c for c in CHAT if c["name"] == "tools_with_system_prompt")
    r = template(tensorfold_cli, "", case["request"], tmp_path, ["--chat-template", "builtin:deepseek_v4"])
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode("utf-8") == case["expected"]


@pytest.mark.parametrize("messages,needle", [
    ([{"role": "user", "content": "u"}, {"role": "assistant", "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": "[1, 2]"}}]}],
     "messages[1].tool_calls[0].function.arguments: must be a JSON object"),
    ([{"role": "developer", "content": ""}], "messages[0].content: a developer message needs content"),
    ([{"role": "robot", "content": "x"}], "messages[0].role: unknown role 'robot'"),
])
def test_bad_input_exits_1_with_one_line_naming_the_field(tensorfold_cli, dsv4_dir, tmp_path, messages, needle):
    r = template(tensorfold_cli, dsv4_dir, {"messages": messages}, tmp_path)
    assert r.returncode == 1
    err = r.stderr.decode()
    assert needle in err and err.count("\n") == 1, err
