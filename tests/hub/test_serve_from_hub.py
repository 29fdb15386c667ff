"""Done-when of issue 34: a pulled checkpoint is served and answers a chat request; a cache written by
huggingface_hub's own snapshot_download is served with no download, and tensorfold's cache is taken by
snapshot_download with no download."""

from __future__ import annotations

import os

import pytest

from e2e._serve import start_serve

from .conftest import GGUF_FILE, GGUF_REPO, LLAMA_REPO, repo_dir, safetensors_repo


def downloads(hub) -> list:
    """Requests that carried file bytes (GETs on /resolve or the blob host); metadata calls are not counted."""
    return [e for e in hub.log() if e.method == "GET" and (e.host == "blob" or "/resolve/" in e.path)]


def chat_once(srv, model: str) -> str:
    reply = srv.client().chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Say hello."}], max_tokens=8, temperature=0)
    text = reply.choices[0].message.content
    assert reply.usage.completion_tokens > 0 and text, reply
    return text


def serve_and_chat(tensorfold_bin, model: str, env: dict, workdir, monkeypatch) -> str:
    for k in ("HF_TOKEN", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    # --no-drafts skips the load-time check of verify windows (tens of seconds on a busy CPU): drafting is not
    # what these tests are about.
    srv = start_serve(tensorfold_bin, model, ["--parallel", "1", "--no-drafts", "--max-tokens", "8"], workdir)
    try:
        assert srv.model_id == model, srv.report
        return chat_once(srv, model)
    finally:
        code = srv.stop()
        assert code == 0, srv.stderr()


def test_pulled_gguf_is_served_and_answers_a_chat_request(tensorfold, tensorfold_bin, hub, hub_env, cache,
                                                          tmp_path, monkeypatch):
    spec = f"{GGUF_REPO}:Q4_1"
    r = tensorfold("pull", spec, env=hub_env())
    assert r.returncode == 0, r.stderr
    hub.clear_log()
    env = {k: hub_env()[k] for k in ("HF_ENDPOINT", "HF_HOME", "HF_HUB_CACHE")}
    assert serve_and_chat(tensorfold_bin, spec, env, tmp_path, monkeypatch)
    assert hub.log() == []  # served from the cache: the hub was not asked anything


def test_serve_pulls_a_missing_checkpoint_first(tensorfold_bin, hub, hub_env, cache, tmp_path, monkeypatch):
    spec = f"{GGUF_REPO}:Q4_1"
    env = {k: hub_env()[k] for k in ("HF_ENDPOINT", "HF_HOME", "HF_HUB_CACHE")}
    assert serve_and_chat(tensorfold_bin, spec, env, tmp_path, monkeypatch)
    f = hub.repos[GGUF_REPO].files[GGUF_FILE]
    assert hub.blob_bytes_sent(f) == f.size
    assert (repo_dir(cache, GGUF_REPO) / "blobs" / f.etag).is_file()


def test_snapshot_download_cache_is_served_without_a_download(tensorfold_bin, hub, hub_env, cache, tmp_path,
                                                              monkeypatch):
    from huggingface_hub import snapshot_download

    path = snapshot_download(GGUF_REPO, allow_patterns=["*Q4_1.gguf"], cache_dir=str(cache), endpoint=hub.endpoint,
                             token=False)
    assert os.path.islink(os.path.join(path, GGUF_FILE))
    hub.clear_log()
    env = {k: hub_env()[k] for k in ("HF_ENDPOINT", "HF_HOME", "HF_HUB_CACHE")}
    assert serve_and_chat(tensorfold_bin, f"{GGUF_REPO}:Q4_1", env, tmp_path, monkeypatch)
    assert hub.log() == []


@pytest.mark.parametrize("repo_id,spec,patterns", [
    (GGUF_REPO, f"{GGUF_REPO}:Q4_1", ["*Q4_1.gguf"]),
    (LLAMA_REPO, LLAMA_REPO, ["config.json", "tokenizer.json", "README.md", "model.safetensors"]),
], ids=["gguf", "safetensors"])
def test_tensorfold_cache_is_taken_by_snapshot_download_without_a_download(tensorfold, hub, hub_env, cache,
                                                                           repo_id, spec, patterns):
    from huggingface_hub import snapshot_download

    r = tensorfold("pull", spec, env=hub_env())
    assert r.returncode == 0, r.stderr
    hub.clear_log()
    path = snapshot_download(repo_id, allow_patterns=patterns, cache_dir=str(cache), endpoint=hub.endpoint,
                             token=False)
    assert downloads(hub) == [], downloads(hub)
    repo = hub.repos[repo_id]
    assert path == str(repo_dir(cache, repo_id) / "snapshots" / repo.commit)
    for name in os.listdir(path):
        f = repo.files[name]
        with open(os.path.join(path, name), "rb") as fh:
            assert fh.read() == f.read(0, f.size)


def test_pull_reuses_blobs_snapshot_download_fetched(tensorfold, hub, hub_env, cache):
    from huggingface_hub import snapshot_download

    snapshot_download(LLAMA_REPO, allow_patterns=["*.json", "*.safetensors"], cache_dir=str(cache),
                      endpoint=hub.endpoint, token=False)
    hub.clear_log()
    r = tensorfold("pull", LLAMA_REPO, env=hub_env())
    assert r.returncode == 0, r.stderr
    # Only README.md was missing; the weights were huggingface_hub's.
    assert [e.path.rsplit("/", 1)[-1] for e in downloads(hub)] == ["README.md"]


def test_serve_refuses_in_one_line_before_listening(tensorfold, hub, hub_env, cache):
    r = tensorfold("serve", f"{GGUF_REPO}:Q4_1", "--port", "0", env=hub_env(HF_HUB_OFFLINE="1"))
    assert r.returncode == 1 and r.stdout == "", r.stdout
    assert r.stderr.startswith("tensorfold serve: ") and "HF_HUB_OFFLINE is set" in r.stderr, r.stderr
    assert hub.log() == []
    hub.add_repo(safetensors_repo("TensorFoldTest/mamba-like", model_type="mamba9"))
    r = tensorfold("serve", "TensorFoldTest/mamba-like", "--port", "0", env=hub_env())
    assert r.returncode == 1 and "model_type 'mamba9' is not served by any family" in r.stderr.splitlines()[-1], r.stderr
    assert not [e for e in hub.log() if e.host == "blob"]
