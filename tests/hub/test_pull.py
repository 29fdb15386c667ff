"""`tensorfold pull` against the fixture hub: the cache it writes, resuming, checksums, refusals, errors."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from .conftest import GGUF_FILE, GGUF_REPO, LLAMA_REPO, TOKEN, gguf_of_arch, one_line_error, repo_dir, safetensors_repo
from .fixture_hub import HubFile, HubRepo


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def assert_snapshot_entry(cache: Path, repo, path: str):
    """snapshots/<commit>/<path> is a relative symlink to blobs/<etag>, which holds the file."""
    root = repo_dir(cache, repo.repo_id)
    f = repo.files[path]
    link = root / "snapshots" / repo.commit / path
    assert link.is_symlink(), link
    target = os.readlink(link)
    assert not os.path.isabs(target), target
    assert (link.parent / target).resolve() == (root / "blobs" / f.etag).resolve(), target
    assert (root / "blobs" / f.etag).read_bytes() == f.read(0, f.size)


def test_pull_safetensors_repo_writes_the_hf_cache_layout(tensorfold, hub, hub_env, cache):
    repo = hub.repos[LLAMA_REPO]
    r = tensorfold("pull", LLAMA_REPO, env=hub_env())
    assert r.returncode == 0, r.stderr
    assert f"{LLAMA_REPO} @ {repo.commit}" in r.stdout and "architecture llama (served)" in r.stdout, r.stdout
    root = repo_dir(cache, LLAMA_REPO)
    assert (root / "refs" / "main").read_text() == repo.commit
    for path in ("config.json", "tokenizer.json", "README.md", "model.safetensors"):
        assert_snapshot_entry(cache, repo, path)
    # Another framework's weights are left out; no partial file is left behind.
    assert not (root / "snapshots" / repo.commit / "pytorch_model.bin").exists()
    assert sorted(p.name for p in (root / "blobs").iterdir()) == sorted(
        repo.files[p].etag for p in ("config.json", "tokenizer.json", "README.md", "model.safetensors"))
    # config.json came first, and the LFS file through the blob host (no token there).
    gets = [e for e in hub.log() if e.method == "GET" and (e.host == "blob" or "/resolve/" in e.path)]
    assert gets[0].path.endswith("/config.json"), [e.path for e in gets]
    assert hub.blob_bytes_sent(repo.files["model.safetensors"]) == repo.files["model.safetensors"].size

    # A second pull finds everything in the cache: no file is fetched again.
    hub.clear_log()
    r = tensorfold("pull", LLAMA_REPO, env=hub_env())
    assert r.returncode == 0, r.stderr
    assert "(0 B downloaded)" in r.stdout, r.stdout
    assert not [e for e in hub.log() if e.method == "GET" and e.host == "blob"]


def test_pull_gguf_by_quant_over_several_connections(tensorfold, hub, hub_env, cache):
    repo = hub.repos[GGUF_REPO]
    f = repo.files[GGUF_FILE]
    r = tensorfold("pull", f"{GGUF_REPO}:q4_1", "--connections", "4", "--piece-size", str(8 << 20), env=hub_env())
    assert r.returncode == 0, r.stderr
    assert "architecture llama (served)" in r.stdout, r.stdout
    assert_snapshot_entry(cache, repo, GGUF_FILE)
    snap = repo_dir(cache, GGUF_REPO) / "snapshots" / repo.commit
    assert sorted(p.name for p in snap.iterdir()) == [GGUF_FILE]  # only the picked quantization
    # The file came in ranged pieces over parallel connections, each byte once.
    blob_gets = [e for e in hub.log() if e.host == "blob" and e.method == "GET"]
    assert len(blob_gets) >= 4 and all(e.range and e.status == 206 for e in blob_gets), blob_gets
    assert hub.blob_bytes_sent(f) == f.size
    assert not list((repo_dir(cache, GGUF_REPO) / "blobs").glob("*.incomplete*"))


def test_resume_after_a_dropped_connection_fetches_each_byte_once(tensorfold, hub, hub_env, cache):
    repo = hub.add_repo(safetensors_repo("TensorFoldTest/drops", weights=4 << 20, drops=100, drop_after=700_000))
    f = repo.files["model.safetensors"]
    blob = repo_dir(cache, repo.repo_id) / "blobs" / f.etag
    r = tensorfold("pull", repo.repo_id, env=hub_env())
    line = one_line_error(r)
    assert "model.safetensors: connection dropped" in line and "run the same command again to resume" in line, line
    # Each retry resumed where the last stopped; what arrived is kept as the blob's .incomplete prefix.
    kept = Path(str(blob) + ".incomplete").stat().st_size
    assert kept == 3 * 700_000, kept
    assert not blob.exists()
    assert not (repo_dir(cache, repo.repo_id) / "snapshots" / repo.commit / "model.safetensors").exists()
    assert not (repo_dir(cache, repo.repo_id) / "refs" / "main").exists()

    f.drops = 0
    r = tensorfold("pull", repo.repo_id, env=hub_env())
    assert r.returncode == 0, r.stderr
    resumed = [e for e in hub.log() if e.host == "blob" and e.method == "GET"][-1]
    assert resumed.range == f"bytes={kept}-", resumed
    assert hub.blob_bytes_sent(f) == f.size  # nothing fetched twice
    assert sha256(blob) == f.true_sha256
    assert_snapshot_entry(cache, repo, "model.safetensors")


def test_one_drop_is_resumed_within_the_same_pull(tensorfold, hub, hub_env, cache):
    repo = hub.add_repo(safetensors_repo("TensorFoldTest/one-drop", weights=2 << 20, drops=1, drop_after=500_000))
    f = repo.files["model.safetensors"]
    r = tensorfold("pull", repo.repo_id, env=hub_env())
    assert r.returncode == 0, r.stderr
    ranges = [e.range for e in hub.log() if e.host == "blob" and e.method == "GET"]
    assert ranges == [None, "bytes=500000-"], ranges
    assert hub.blob_bytes_sent(f) == f.size
    assert_snapshot_entry(cache, repo, "model.safetensors")


def test_a_drop_in_one_piece_resumes_that_piece_only(tensorfold, hub, hub_env, cache):
    repo = hub.add_repo(safetensors_repo("TensorFoldTest/piece-drop", weights=5 << 20, drops=100, drop_after=300_000))
    f = repo.files["model.safetensors"]
    args = ("pull", repo.repo_id, "--connections", "3", "--piece-size", str(1 << 20))
    r = tensorfold(*args, env=hub_env())
    one_line_error(r)
    f.drops = 0
    r = tensorfold(*args, env=hub_env())
    assert r.returncode == 0, r.stderr
    assert hub.blob_bytes_sent(f) == f.size
    blob = repo_dir(cache, repo.repo_id) / "blobs" / f.etag
    assert sha256(blob) == f.true_sha256
    assert not list(blob.parent.glob("*.incomplete*"))


def test_a_wrong_sha256_is_refused_and_not_kept(tensorfold, hub, hub_env, cache):
    repo = hub.add_repo(safetensors_repo("TensorFoldTest/bad-sha", wrong_sha256=True))
    f = repo.files["model.safetensors"]
    r = tensorfold("pull", repo.repo_id, env=hub_env())
    line = one_line_error(r)
    assert "model.safetensors: sha256 mismatch" in line and "discarded" in line, line
    blobs = repo_dir(cache, repo.repo_id) / "blobs"
    assert not (blobs / f.etag).exists()
    assert not list(blobs.glob("*.incomplete*"))
    assert not (repo_dir(cache, repo.repo_id) / "snapshots" / repo.commit / "model.safetensors").exists()


def test_an_unsupported_model_type_is_refused_before_any_weight(tensorfold, hub, hub_env, cache):
    repo = hub.add_repo(safetensors_repo("TensorFoldTest/mamba-like", model_type="mamba9"))
    r = tensorfold("pull", repo.repo_id, env=hub_env())
    line = one_line_error(r)
    assert ("model_type 'mamba9' is not served by any family (served: llama, qwen3_5, qwen3_5_text, qwen35, "
            "nemotron_h, gemma4, gemma4_text, qwen4_exp, qwen4_exp_text, glm5_next, glm5_next_text, "
            "deepseek_v4)") in line, line
    assert hub.blob_bytes_sent(repo.files["model.safetensors"]) == 0
    assert not [e for e in hub.log() if "model.safetensors" in e.path or e.host == "blob"]
    blobs = repo_dir(cache, repo.repo_id) / "blobs"
    assert [p.name for p in blobs.iterdir()] == [repo.files["config.json"].etag]


def test_an_unsupported_gguf_architecture_is_refused_after_its_header(tensorfold, hub, hub_env, cache):
    repo = hub.add_repo(HubRepo("TensorFoldTest/rwkv-GGUF"))
    f = repo.add(HubFile("rwkv-Q4_K_M.gguf", gguf_of_arch("rwkv7", 4 << 20), lfs=True))
    r = tensorfold("pull", repo.repo_id, env=hub_env())
    line = one_line_error(r)
    assert "GGUF architecture 'rwkv7' is not served by any family" in line, line
    assert 0 < hub.blob_bytes_sent(f) <= 256 << 10, hub.blob_bytes_sent(f)
    assert not list((repo_dir(cache, repo.repo_id) / "blobs").iterdir())


def test_offline_pull_uses_the_cache_only(tensorfold, hub, hub_env, cache):
    assert tensorfold("pull", LLAMA_REPO, env=hub_env()).returncode == 0
    hub.clear_log()
    r = tensorfold("pull", LLAMA_REPO, env=hub_env(HF_HUB_OFFLINE="1"))
    assert r.returncode == 0, r.stderr
    assert "in the cache (offline)" in r.stdout, r.stdout
    r = tensorfold("pull", GGUF_REPO, env=hub_env(HF_HUB_OFFLINE="1"))
    assert "HF_HUB_OFFLINE is set" in one_line_error(r)
    assert hub.log() == []


def test_gated_repo_needs_hf_token(tensorfold, hub, hub_env, cache):
    repo = hub.add_repo(safetensors_repo("TensorFoldTest/gated"))
    repo.gated = True
    r = tensorfold("pull", repo.repo_id, env=hub_env())
    line = one_line_error(r)
    assert "401" in line and "set HF_TOKEN" in line, line
    r = tensorfold("pull", repo.repo_id, env=hub_env(HF_TOKEN="hf_wrong"))
    assert "HF_TOKEN has no access" in one_line_error(r)
    r = tensorfold("pull", repo.repo_id, env=hub_env(HF_TOKEN=TOKEN))
    assert r.returncode == 0, r.stderr
    assert_snapshot_entry(cache, repo, "model.safetensors")  # the blob host got no token (it answers 400 to one)


def test_missing_repo_revision_and_quant(tensorfold, hub, hub_env):
    line = one_line_error(tensorfold("pull", "TensorFoldTest/nope", env=hub_env()))
    assert "repo not found" in line and "404" in line, line
    line = one_line_error(tensorfold("pull", f"{LLAMA_REPO}@v9", env=hub_env()))
    assert "revision not found" in line, line
    line = one_line_error(tensorfold("pull", f"{GGUF_REPO}:IQ1_S", env=hub_env()))
    assert "no GGUF file matches :IQ1_S" in line and GGUF_FILE in line, line
    line = one_line_error(tensorfold("pull", "not-a-repo-id", env=hub_env()))
    assert "is not a repo id" in line, line


def test_a_repo_with_no_supported_files(tensorfold, hub, hub_env, cache):
    repo = hub.add_repo(HubRepo("TensorFoldTest/pytorch-only"))
    repo.add(HubFile("config.json", b'{"model_type": "llama"}'))
    repo.add(HubFile("pytorch_model.bin", b"\0" * 1024, lfs=True))
    line = one_line_error(tensorfold("pull", repo.repo_id, env=hub_env()))
    assert "no files tensorfold reads" in line, line
    assert not repo_dir(cache, repo.repo_id).exists()


def test_include_and_exclude_globs(tensorfold, hub, hub_env, cache):
    repo = hub.repos[LLAMA_REPO]
    r = tensorfold("pull", LLAMA_REPO, "--include", "*.json", "--exclude", "tokenizer*", env=hub_env())
    assert r.returncode == 0, r.stderr
    snap = repo_dir(cache, LLAMA_REPO) / "snapshots" / repo.commit
    assert sorted(p.name for p in snap.iterdir()) == ["config.json"]


def test_unreachable_hub_is_one_line(tensorfold, hub_env):
    line = one_line_error(tensorfold("pull", LLAMA_REPO, env=hub_env(HF_ENDPOINT="http://127.0.0.1:9")))
    assert "cannot reach http://127.0.0.1:9" in line, line


def test_include_on_a_gguf_repo_can_leave_the_weights_out(tensorfold, hub, hub_env, cache):
    repo = hub.repos[GGUF_REPO]
    r = tensorfold("pull", GGUF_REPO, "--include", "README.md", env=hub_env())
    assert r.returncode == 0, r.stderr
    snap = repo_dir(cache, GGUF_REPO) / "snapshots" / repo.commit
    assert [p.name for p in snap.iterdir()] == ["README.md"]
    assert not [e for e in hub.log() if e.host == "blob"]
