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
