"""Shared fixtures of the pytest suites (tests/conformance, tests/cli).

The binaries come from $TF_BUILD_DIR (default: <repo>/build). A missing binary or a missing default model
FAILS the tests that need it, with a message that says how to get it: nothing is skipped silently.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# A hung reader must fail its test, not the whole run.
COMMAND_TIMEOUT_S = 60


def build_dir_path() -> Path:
    return Path(os.environ.get("TF_BUILD_DIR") or REPO_ROOT / "build").resolve()


def model_cache_dir() -> Path:
    """Where tensorfold looks for models: $TENSORFOLD_HOME, else ~/.cache/tensorfold/models."""
    home = os.environ.get("TENSORFOLD_HOME")
    if home:
        return Path(home)
    return Path.home() / ".cache" / "tensorfold" / "models"


def _require_binary(name: str, target: str) -> Path:
    path = build_dir_path() / name
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(
            f"{path} is missing or not executable. Build it with "
            f"`cmake --build {build_dir_path()} --target {target}`, or point TF_BUILD_DIR at a build dir that has it.",
            pytrace=False,
        )
    return path


@pytest.fixture(scope="session")
def build_dir() -> Path:
    path = build_dir_path()
    if not path.is_dir():
        pytest.fail(f"build dir {path} does not exist (set TF_BUILD_DIR or build into <repo>/build)", pytrace=False)
    return path


@pytest.fixture(scope="session")
def tensorfold_bin(build_dir: Path) -> Path:
    return _require_binary("tensorfold", "tensorfold")


@pytest.fixture(scope="session")
def dequant_tool_bin(build_dir: Path) -> Path:
    return _require_binary("tf_dequant_tool", "tf_dequant_tool")


@pytest.fixture(scope="session")
def default_model_path() -> Path:
    path = model_cache_dir() / DEFAULT_MODEL_FILE
    if not path.is_file():
        pytest.fail(
            f"the default model {path} is missing: run scripts/fetch_default_model.sh "
            "(or set TENSORFOLD_HOME to a directory that holds it)",
            pytrace=False,
        )
    return path


@pytest.fixture(scope="session")
def default_model_reader(default_model_path: Path):
    """gguf.GGUFReader of the default model (parsing it takes seconds: one per session)."""
    import gguf

    return gguf.GGUFReader(str(default_model_path))


def run_command(args: list, env: dict | None = None, timeout: float = COMMAND_TIMEOUT_S) -> subprocess.CompletedProcess:
    """Runs a command with text output; a hang past `timeout` fails the test."""
    try:
        return subprocess.run(
            [str(a) for a in args], capture_output=True, text=True, errors="replace", env=env, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{' '.join(map(str, args))} hung (no exit after {timeout} s)", pytrace=False)


@pytest.fixture(scope="session")
def run_cmd():
    """run_cmd(args, env=None) -> CompletedProcess (text); fails the test on a hang."""
    return run_command


@pytest.fixture(scope="session")
def tensorfold(tensorfold_bin: Path):
    """tensorfold(*args, env=None) -> CompletedProcess of build/tensorfold."""

    def run(*args, env: dict | None = None) -> subprocess.CompletedProcess:
        return run_command([tensorfold_bin, *args], env=env)

    return run


@pytest.fixture(scope="session")
def dequant_tool(dequant_tool_bin: Path):
    """dequant_tool(mode, path, name, out) runs tf_dequant_tool, asserts success, returns out's float32 data."""
    import numpy as np

    def run(mode: str, path: Path, name: str, out: Path):
        r = run_command([dequant_tool_bin, mode, path, name, out])
        assert r.returncode == 0, f"tf_dequant_tool {mode} {path} {name} failed ({r.returncode}): {r.stderr.strip()}"
        return np.fromfile(out, dtype=np.float32)

    return run


@pytest.fixture
def make_dir(tmp_path: Path):
    """make_dir(name) -> a fresh, empty directory under this test's tmp_path."""
    counter = iter(range(1_000_000))

    def make(name: str = "d") -> Path:
        d = tmp_path / f"{name}-{next(counter)}"
        d.mkdir()
        return d

    return make
