"""Fixtures of the tokenizer conformance suite: the corpora it compares against (fetched and cached by the
scripts in scripts/), and a runner for `tensorfold tokenize/detokenize --jsonl`.

A corpus that cannot be fetched FAILS the tests that need it; nothing is skipped."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from . import make_corpus

REPO_ROOT = Path(__file__).resolve().parents[3]

FETCH_TIMEOUT_S = 600
RUN_TIMEOUT_S = 300


def _fetch(script: str) -> Path:
    try:
        r = subprocess.run(["bash", str(REPO_ROOT / "scripts" / script)], capture_output=True, text=True,
                           timeout=FETCH_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"scripts/{script} timed out", pytrace=False)
    if r.returncode != 0:
        pytest.fail(f"scripts/{script} failed:\n{r.stderr}", pytrace=False)
    return Path(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def llama_cpp_vocab_dir() -> Path:
    return _fetch("fetch_text_corpus.sh") / "vocab"


@pytest.fixture(scope="session")
def tokenizer_corpus_dir() -> Path:
    return _fetch("fetch_tokenizer_corpus.sh")


@pytest.fixture(scope="session")
def corpus_texts() -> list[str]:
    return make_corpus.make()


class Runner:
    """Runs the tensorfold binary over many inputs at once through its --jsonl modes."""

    def __init__(self, binary: Path, workdir: Path):
        self.binary = binary
        self.workdir = workdir

    def _run(self, args: list[str], lines: list[str], name: str) -> list[str]:
        path = self.workdir / name
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        r = subprocess.run([str(self.binary), *args, "--jsonl", str(path)], capture_output=True, timeout=RUN_TIMEOUT_S)
        if r.returncode != 0:
            pytest.fail(f"tensorfold {' '.join(args)} failed: {r.stderr.decode(errors='replace')}", pytrace=False)
        out = r.stdout.decode("utf-8").split("\n")
        assert out[-1] == "", "output does not end with a newline"
        out = out[:-1]
        assert len(out) == len(lines), f"{len(out)} output lines for {len(lines)} inputs"
        return out

    def encode(self, model: Path, texts: list[str], *extra: str) -> list[list[int]]:
        lines = [json.dumps(t, ensure_ascii=True) for t in texts]
        return [json.loads(x) for x in self._run(["tokenize", str(model), *extra], lines, "encode.jsonl")]

    def decode(self, model: Path, ids: list[list[int]], *extra: str) -> list[str]:
        lines = [json.dumps(v) for v in ids]
        return [json.loads(x) for x in self._run(["detokenize", str(model), *extra], lines, "decode.jsonl")]


@pytest.fixture(scope="session")
def runner(tensorfold_bin: Path, tmp_path_factory) -> Runner:
    return Runner(tensorfold_bin, tmp_path_factory.mktemp("tokenizer"))
