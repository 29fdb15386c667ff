"""A write that fails mid-file (the disk full, or here a file-size limit) and the progress bar on a terminal."""

from __future__ import annotations

import os
import pty
import resource
import select
import signal
import subprocess
import time
from pathlib import Path

from .conftest import GGUF_REPO, one_line_error, repo_dir, safetensors_repo

LIMIT = 1 << 20


def limit_file_size():
    # Writes past LIMIT fail with EFBIG, as they would with ENOSPC on a full disk (SIGXFSZ ignored so the
    # write returns the error instead of killing the process).
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


def test_a_failed_write_keeps_a_resumable_prefix(tensorfold_bin, hub, hub_env, cache):
    repo = hub.add_repo(safetensors_repo("TensorFoldTest/big", weights=3 << 20))
    f = repo.files["model.safetensors"]
    r = subprocess.run([str(tensorfold_bin), "pull", repo.repo_id], env=hub_env(), capture_output=True, text=True,
                       timeout=60, preexec_fn=limit_file_size)
    line = one_line_error(r)
    assert "File too large writing" in line and "run the same command again to resume" in line, line
    blob = repo_dir(cache, repo.repo_id) / "blobs" / f.etag
    part = Path(str(blob) + ".incomplete")
    assert part.stat().st_size == LIMIT and part.read_bytes() == f.read(0, LIMIT)  # an exact prefix
    assert not blob.exists()

    r = subprocess.run([str(tensorfold_bin), "pull", repo.repo_id], env=hub_env(), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert [e.range for e in hub.log() if e.host == "blob"][-1] == f"bytes={LIMIT}-"
    assert blob.read_bytes() == f.read(0, f.size)


def test_progress_bar_on_a_terminal(tensorfold_bin, hub, hub_env, cache):
    pid, fd = pty.fork()
    if pid == 0:  # the child: tensorfold with the terminal as stdout and stderr
        os.execve(str(tensorfold_bin), [str(tensorfold_bin), "pull", f"{GGUF_REPO}:Q4_1"], hub_env())
    out = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1)
        if not ready:
            continue
        try:
            data = os.read(fd, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        out += data
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    text = out.decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0, text
    # The bar is redrawn in place (\r) with percent, bytes, speed and ETA, and ends with 100%.
    assert "\r" in text and "ETA" in text and "/s" in text, text
    assert "100%" in text and "fetching " not in text, text
