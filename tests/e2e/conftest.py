"""Fixtures of the end-to-end suite: a real `tensorfold serve` process driven over HTTP.

One server per session (the model loads once): the default model, `--port 0` (the port is read from the
startup report), two API keys, an alias and a small `--max-tokens`. Clients: the official `openai` SDK
(no retries) and `raw()`, a plain http.client request for the cases the SDK would not send.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ._serve import ALIAS, API_KEYS, DEFAULT_MAX_TOKENS, ServeProcess, start_serve


@pytest.fixture(scope="session")
def server(tensorfold_bin: Path, default_model_path: Path, tmp_path_factory) -> ServeProcess:
    args = ["--alias", ALIAS, "--max-tokens", DEFAULT_MAX_TOKENS]
    for key in API_KEYS:
        args += ["--api-key", key]
    srv = start_serve(tensorfold_bin, default_model_path, args, tmp_path_factory.mktemp("serve"), API_KEYS[0])
    yield srv
    code = srv.stop()
    assert code == 0, f"tensorfold serve exited with {code} on SIGTERM:\n{srv.stderr()}"


@pytest.fixture(scope="session")
def client(server: ServeProcess):
    return server.client()


@pytest.fixture(scope="session")
def chat_template_source(default_model_reader) -> str:
    field_ = default_model_reader.fields["tokenizer.chat_template"]
    return bytes(field_.parts[field_.data[0]]).decode()


@pytest.fixture(scope="session")
def render_chat(chat_template_source: str):
    """render_chat(messages) -> the prompt text as transformers renders the model's template (jinja2)."""
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    template = env.from_string(chat_template_source)

    def render(messages, add_generation_prompt=True):
        return template.render(messages=messages, add_generation_prompt=add_generation_prompt)

    return render


@pytest.fixture(scope="session")
def tokenize(tensorfold):
    """tokenize(text, add_special=False) -> ids from `tensorfold tokenize` on the default model."""

    def run(text: str, add_special: bool = False) -> list:
        args = ["tokenize", "--text", text] + (["--add-special"] if add_special else [])
        r = tensorfold(*args)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    return run
