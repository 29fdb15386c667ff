"""Fixtures of the hub suite: a local fixture hub (fixture_hub.py) with the repos the tests pull, and an
environment that points `tensorfold` at it with an empty cache of the test's own."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: cli._builders, e2e._serve

from cli._builders import GGML_F32, gguf_bytes, kv_str, kv_u32, tensor_info  # noqa: E402

from .fixture_hub import FixtureHub, HubFile, HubRepo  # noqa: E402

GGUF_REPO = "TensorFoldTest/SmolLM2-135M-Instruct-GGUF"
GGUF_FILE = "SmolLM2-135M-Instruct-Q4_1.gguf"
LLAMA_REPO = "TensorFoldTest/tiny-llama"
TOKEN = "hf_fixture_token"


def llama_config(model_type: str = "llama") -> bytes:
    return (b'{"model_type": "%s", "architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2, '
            b'"hidden_size": 64, "vocab_size": 256, "max_position_embeddings": 512}' % model_type.encode())


def weight_bytes(n: int, seed: int = 1) -> bytes:
    """n deterministic, incompressible-looking bytes."""
    import random

    return random.Random(seed).randbytes(n)


def safetensors_repo(repo_id: str, model_type: str = "llama", weights: int = 3 << 20, **weight_faults) -> HubRepo:
    repo = HubRepo(repo_id)
    repo.add(HubFile("config.json", llama_config(model_type)))
    repo.add(HubFile("tokenizer.json", b'{"version": "1.0", "model": {"type": "BPE"}}'))
    repo.add(HubFile("README.md", b"# a test repo\n"))
    repo.add(HubFile("model.safetensors", weight_bytes(weights), lfs=True, **weight_faults))
    repo.add(HubFile("pytorch_model.bin", weight_bytes(1 << 16, 2), lfs=True))  # another framework's weights
    return repo


def gguf_of_arch(arch: str, data_bytes: int) -> bytes:
    n = data_bytes // 4
    return gguf_bytes([kv_str("general.architecture", arch), kv_u32(f"{arch}.block_count", 1)],
                      [tensor_info("w", [n], GGML_F32, 0)], bytes(n * 4))


@pytest.fixture
def hub(default_model_path: Path):
    """The fixture hub with the repos the tests use; closed after the test."""
    h = FixtureHub(TOKEN)
    gguf = h.add_repo(HubRepo(GGUF_REPO))
    gguf.add(HubFile("README.md", b"# SmolLM2-135M-Instruct GGUF (test fixture)\n"))
    gguf.add(HubFile(GGUF_FILE, source=default_model_path, lfs=True))
    gguf.add(HubFile("SmolLM2-135M-Instruct-Q8_0.gguf", weight_bytes(1 << 16, 3), lfs=True))
    h.add_repo(safetensors_repo(LLAMA_REPO))
    yield h
    h.close()


@pytest.fixture
def hub_env(hub: FixtureHub, tmp_path: Path):
    """hub_env(**overrides) -> the environment for `tensorfold`: HF_ENDPOINT at the fixture hub, HF_HOME and
    HF_HUB_CACHE in this test's tmp_path, no token, not offline; overrides set (None: unset)."""

    def make(**overrides) -> dict:
        env = dict(os.environ)
        for k in ("HF_TOKEN", "HF_HUB_OFFLINE", "HUGGINGFACE_HUB_CACHE", "HF_TOKEN_PATH", "TENSORFOLD_UPDATE_FEED"):
            env.pop(k, None)
        env.update(HF_ENDPOINT=hub.endpoint, HF_HOME=str(tmp_path / "hf-home"), HF_HUB_CACHE=str(tmp_path / "hub"))
        for k, v in overrides.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = str(v)
        return env

    return make


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """The HF_HUB_CACHE of hub_env()."""
    return tmp_path / "hub"


def repo_dir(cache: Path, repo_id: str) -> Path:
    return cache / ("models--" + repo_id.replace("/", "--"))


def one_line_error(r, command: str = "pull") -> str:
    """The error of a failed command: exit 1 and one line on stderr besides the progress lines."""
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    lines = [l for l in r.stderr.splitlines() if not l.startswith(("fetching ", "fetched "))]
    assert len(lines) == 1 and lines[0].startswith(f"tensorfold {command}: "), r.stderr
    assert r.stderr.endswith(lines[0] + "\n"), r.stderr  # the last thing said
    return lines[0]
