"""`tensorfold models` lists the checkpoints in the HF cache truthfully; `info REPO` reads headers only."""

from __future__ import annotations

from .conftest import GGUF_FILE, GGUF_REPO, LLAMA_REPO, repo_dir, safetensors_repo


def test_models_lists_cached_checkpoints(tensorfold, hub, hub_env, cache):
    r = tensorfold("models", env=hub_env())
    assert r.returncode == 0, r.stderr
    assert f"In the Hugging Face cache ({cache}):" in r.stdout and "none (tensorfold pull" in r.stdout, r.stdout

    assert tensorfold("pull", f"{GGUF_REPO}:Q4_1", env=hub_env()).returncode == 0
    hub.add_repo(safetensors_repo("TensorFoldTest/mamba-like", model_type="mamba9"))
    tensorfold("pull", "TensorFoldTest/mamba-like", env=hub_env())  # refused: only config.json is cached
    r = tensorfold("models", env=hub_env())
    assert r.returncode == 0, r.stderr
    rows = [l.split() for l in r.stdout.split("In the Hugging Face cache")[1].splitlines()[2:] if l.strip()]
    commit = hub.repos[GGUF_REPO].commit
    assert rows == [[f"{GGUF_REPO}:{GGUF_FILE}", commit[:12], "llama", "Q4_1", *rows[0][4:6], "yes"]], r.stdout
    assert rows[0][5] == "MiB", rows  # the weights' size


def test_models_table_says_llama_serves(tensorfold, hub_env):
    r = tensorfold("models", env=hub_env())
    first = r.stdout.splitlines()[1]
    assert first.split()[0] == "llama" and first.rstrip().endswith("serves on MLX and CUDA"), first


def test_info_of_an_uncached_gguf_repo_reads_the_header_only(tensorfold, hub, hub_env, cache):
    f = hub.repos[GGUF_REPO].files[GGUF_FILE]
    r = tensorfold("info", f"{GGUF_REPO}:Q4_1", env=hub_env())
    assert r.returncode == 0, r.stderr
    assert "architecture               llama (served)" in r.stdout and GGUF_FILE in r.stdout, r.stdout
    assert 0 < hub.blob_bytes_sent(f) <= 256 << 10


def test_info_of_an_uncached_safetensors_repo_reads_config_only(tensorfold, hub, hub_env, cache):
    repo = hub.repos[LLAMA_REPO]
    r = tensorfold("info", LLAMA_REPO, env=hub_env())
    assert r.returncode == 0, r.stderr
    assert "architecture               llama (served)" in r.stdout, r.stdout
    assert "num_hidden_layers" in r.stdout and "2" in r.stdout, r.stdout
    assert hub.blob_bytes_sent(repo.files["model.safetensors"]) == 0
    assert [p.name for p in (repo_dir(cache, LLAMA_REPO) / "blobs").iterdir()] == [repo.files["config.json"].etag]


def test_info_of_a_cached_gguf_is_the_full_summary(tensorfold, hub, hub_env):
    assert tensorfold("pull", f"{GGUF_REPO}:Q4_1", env=hub_env()).returncode == 0
    hub.clear_log()
    r = tensorfold("info", f"{GGUF_REPO}:Q4_1", env=hub_env())
    assert r.returncode == 0, r.stderr
    assert any(l.split()[:2] == ["layers", "30"] for l in r.stdout.splitlines()), r.stdout
    assert hub.log() == []
