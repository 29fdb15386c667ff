"""`tensorfold update` against a fixture release feed."""

from __future__ import annotations

import os

import pytest

from .fixture_hub import feed_server

FEED = {"releases": [
    {"version": "0.0.9", "date": "2026-10-01", "notes": ["an old change"]},
    {"version": "0.1.0", "date": "2026-11-01", "notes": ["the running version's change"]},
    {"version": "0.3.0", "date": "2026-12-20", "notes": ["third change", "another third change"]},
    {"version": "0.2.0", "date": "2026-12-10", "notes": ["second change"], "pip": "tensorfold==0.2.0"},
]}


@pytest.fixture
def feed():
    servers = []

    def make(doc) -> str:
        s = feed_server(doc)
        servers.append(s)
        return f"http://127.0.0.1:{s.server_address[1]}/feed.json"

    yield make
    for s in servers:
        s.shutdown()
        s.server_close()


def env_without_feed():
    env = dict(os.environ)
    env.pop("TENSORFOLD_UPDATE_FEED", None)
    return env


def test_check_prints_the_changes_since_the_running_version(tensorfold, feed):
    r = tensorfold("update", "--check", "--feed", feed(FEED), env=env_without_feed())
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith("tensorfold 0.3.0 is available (running 0.1.0)\n"), out
    assert out.index("## 0.3.0 (2026-12-20)") < out.index("- third change") < out.index("## 0.2.0") < \
        out.index("- second change"), out
    assert "the running version's change" not in out and "an old change" not in out


def test_feed_from_the_environment_and_up_to_date(tensorfold, feed):
    url = feed({"releases": [{"version": "0.1.0", "notes": []}]})
    r = tensorfold("update", "--check", env={**env_without_feed(), "TENSORFOLD_UPDATE_FEED": url})
    assert r.returncode == 0, r.stderr
    assert r.stdout == "tensorfold 0.1.0 is the newest release\n"


def test_update_of_a_build_tree_binary_says_how_to_update(tensorfold, feed):
    r = tensorfold("update", "--feed", feed(FEED), env=env_without_feed())
    assert r.returncode == 1
    assert "## 0.3.0" in r.stdout
    assert r.stderr == ("tensorfold update: this tensorfold was not installed by pip; update it the way it was "
                        "installed (a source build: git pull && make build)\n")


@pytest.mark.parametrize("doc,problem", [
    ({"nothing": []}, "not a JSON object with a \"releases\" list"),
    ({"releases": [{"version": "one"}]}, "'one' is not a version"),
], ids=["no-releases", "bad-version"])
def test_a_bad_feed_is_one_line(tensorfold, feed, doc, problem):
    r = tensorfold("update", "--check", "--feed", feed(doc), env=env_without_feed())
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and problem in r.stderr, r.stderr


def test_unreachable_or_missing_feed(tensorfold, feed):
    url = feed(FEED).replace("/feed.json", "/missing.json")
    r = tensorfold("update", "--check", "--feed", url, env=env_without_feed())
    assert r.returncode == 1 and "answered 404" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    r = tensorfold("update", "--check", env=env_without_feed())
    assert r.returncode == 1 and "no release feed" in r.stderr, r.stderr


def wheel(path, name: str, version: str):
    """A minimal pure wheel (just its dist-info): what `pip install` takes offline."""
    import base64
    import hashlib
    import zipfile

    info = f"{name}-{version}.dist-info"
    files = {
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests/hub\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = ""
    for n, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record += f"{n},sha256={digest},{len(text.encode())}\n"
    files[f"{info}/RECORD"] = record + f"{info}/RECORD,,\n"
    whl = path / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as z:
        for n, text in files.items():
            z.writestr(n, text)
    return whl


def test_update_upgrades_through_the_pip_that_installed_it(tensorfold_bin, feed, tmp_path):
    """A venv laid out as `pip install .` leaves it (the executable in bin/, a tensorfold dist-info whose
    INSTALLER is pip): update runs that venv's pip with the release's requirement (here a local wheel)."""
    import shutil
    import subprocess
    import sys
    import sysconfig

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    shutil.copy2(tensorfold_bin, venv / "bin" / "tensorfold")
    site = venv / "lib" / f"python{sysconfig.get_python_version()}" / "site-packages"
    info = site / "tensorfold-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tensorfold\nVersion: 0.1.0\n")
    (info / "INSTALLER").write_text("pip\n")
    (info / "RECORD").write_text("".join(f"tensorfold-0.1.0.dist-info/{n},,\n" for n in ("METADATA", "INSTALLER",
                                                                                         "RECORD")))
    whl = wheel(tmp_path, "tensorfold", "0.3.0")
    doc = {"releases": [{"version": "0.3.0", "notes": ["third"], "pip": str(whl)}]}
    env = {**env_without_feed(), "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    r = subprocess.run([str(venv / "bin" / "tensorfold"), "update", "--feed", feed(doc)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert f"running: {venv / 'bin' / 'python'} -m pip install --upgrade {whl}" in r.stdout, r.stdout
    assert r.stdout.rstrip().endswith("tensorfold updated to 0.3.0"), r.stdout
    assert (site / "tensorfold-0.3.0.dist-info").is_dir() and not info.exists()
