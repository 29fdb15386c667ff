"""Fixtures of the chat-template conformance suite: the template corpus, the conversations, and the
batch renderer tf_template_tool (built with the unit tests)."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent.parent


def _corpus_dir() -> Path:
    script = REPO_ROOT / "scripts" / "fetch_text_corpus.sh"
    r = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        pytest.fail(f"scripts/fetch_text_corpus.sh failed ({r.returncode}): {r.stderr.strip()[-2000:]}", pytrace=False)
    return Path(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def template_corpus() -> dict[str, str]:
    """name -> template source: every models/templates/*.jinja of llama.cpp (as vendored in
    llama-cpp-python's sdist) plus SmolLM2's template from the embedded model's GGUF."""
    templates_dir = _corpus_dir() / "templates"
    files = sorted(templates_dir.glob("*.jinja"))
    if len(files) < 50:
        pytest.fail(f"{templates_dir}: expected the llama.cpp template corpus, found {len(files)} files", pytrace=False)
    corpus = {f.stem: f.read_text(encoding="utf-8") for f in files}
    corpus["SmolLM2-135M-Instruct (GGUF)"] = smollm2_template()
    return corpus


@functools.lru_cache(maxsize=1)
def smollm2_template() -> str:
    home = os.environ.get("TENSORFOLD_HOME")  # as tests/conftest.py's model_cache_dir()
    cache = Path(home) if home else Path.home() / ".cache" / "tensorfold" / "models"
    path = cache / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.is_file():
        pytest.fail(f"the default model {path} is missing: run scripts/fetch_default_model.sh", pytrace=False)
    import gguf

    reader = gguf.GGUFReader(str(path))
    field = reader.fields["tokenizer.chat_template"]
    return bytes(field.parts[field.data[0]]).decode("utf-8")


@pytest.fixture(scope="session")
def template_tool_bin() -> Path:
    build = Path(os.environ.get("TF_BUILD_DIR") or REPO_ROOT / "build").resolve()
    path = build / "tf_template_tool"
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(
            f"{path} is missing. Build it with `cmake --build {build} --target tf_template_tool` "
            "(or point TF_BUILD_DIR at a build dir that has it).",
            pytrace=False,
        )
    return path
