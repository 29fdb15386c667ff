"""A local stand-in for the Hugging Face hub, speaking the protocol huggingface_hub and `tensorfold pull` use.

Two HTTP servers on 127.0.0.1: the hub (API and /resolve) and a blob host on another port, where /resolve
redirects LFS files, as huggingface.co redirects to its CDN. What each serves:

  GET  /api/models/{repo}/revision/{rev}   {"id", "sha", "siblings": [{rfilename, size, blobId, lfs}]}
  GET  /api/models/{repo}/tree/{rev}       [{"type": "file", "path", "size", "oid", "lfs"}]
  HEAD|GET /{repo}/resolve/{rev}/{path}    small files: 200, ETag = git blob sha1, X-Repo-Commit;
                                           LFS files: 302 to the blob host, X-Linked-Etag = sha256,
                                           X-Linked-Size, X-Repo-Commit
  GET  (blob host) /blobs/{sha256}         the bytes, with Range (206 + Content-Range)

Faults, per file: `drops` answers drop the connection after `drop_after` body bytes (Content-Length
promises more); `wrong_sha256` advertises a sha256 the bytes do not have. Per repo: `gated` answers 401
(X-Error-Code: GatedRepo) unless the request carries `Authorization: Bearer <token>`. Unknown repos,
revisions and files are 404 with huggingface's X-Error-Code. Every request is logged (`requests`), with the
body bytes sent, so a test can tell what was downloaded and what was not.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

CHUNK = 1 << 16


@dataclass
class HubFile:
    path: str
    data: bytes | None = None  # small files in memory
    source: Path | None = None  # large files read from disk
    lfs: bool = False
    drops: int = 0  # how many more answers for this file drop mid-body
    drop_after: int = 0
    wrong_sha256: bool = False
    _size: int = 0
    _sha256: str = ""
    _git_sha1: str = ""

    def __post_init__(self):
        if self.source is not None:
            self._size = self.source.stat().st_size
            self._sha256 = file_sha256(self.source)
            self._git_sha1 = hashlib.sha1(b"blob %d\0" % self._size + self.source.read_bytes()).hexdigest() \
                if not self.lfs else hashlib.sha1(self._sha256.encode()).hexdigest()
        else:
            self._size = len(self.data)
            self._sha256 = hashlib.sha256(self.data).hexdigest()
            self._git_sha1 = hashlib.sha1(b"blob %d\0" % self._size + self.data).hexdigest()

    @property
    def size(self) -> int:
        return self._size

    @property
    def sha256(self) -> str:
        """The sha256 the hub advertises (a wrong one when `wrong_sha256`)."""
        return hashlib.sha256(b"not the file").hexdigest() if self.wrong_sha256 else self._sha256

    @property
    def true_sha256(self) -> str:
        return self._sha256

    @property
    def git_sha1(self) -> str:
        return self._git_sha1

    @property
    def etag(self) -> str:
        return self.sha256 if self.lfs else self.git_sha1

    def read(self, start: int, end: int) -> bytes:
        if self.data is not None:
            return self.data[start:end]
        with open(self.source, "rb") as f:
            f.seek(start)
            return f.read(end - start)


@dataclass
class HubRepo:
    repo_id: str
    files: dict = field(default_factory=dict)
    commit: str = ""
    gated: bool = False

    def __post_init__(self):
        if not self.commit:
            self.commit = hashlib.sha1(self.repo_id.encode()).hexdigest()

    def add(self, f: HubFile) -> HubFile:
        self.files[f.path] = f
        return f


_SHA_CACHE: dict = {}


def file_sha256(path: Path) -> str:
    key = (str(path), path.stat().st_size, path.stat().st_mtime_ns)
    if key not in _SHA_CACHE:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _SHA_CACHE[key] = h.hexdigest()
    return _SHA_CACHE[key]


@dataclass
class Logged:
    host: str  # "hub" or "blob"
    method: str
    path: str
    range: str | None
    sent: int = 0  # body bytes written
    status: int = 0


class FixtureHub:
    def __init__(self, token: str = "hf_fixture_token"):
        self.repos: dict = {}
        self.token = token
        self.requests: list = []
        self.lock = threading.Lock()
        self._hub = ThreadingHTTPServer(("127.0.0.1", 0), self._handler("hub"))
        self._blob = ThreadingHTTPServer(("127.0.0.1", 0), self._handler("blob"))
        self._hub.daemon_threads = self._blob.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._hub.server_address[1]}"
        self.blob_origin = f"http://127.0.0.1:{self._blob.server_address[1]}"
        self._threads = [threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
                         for s in (self._hub, self._blob)]
        for t in self._threads:
            t.start()

    def close(self):
        for s in (self._hub, self._blob):
            s.shutdown()
            s.server_close()

    def add_repo(self, repo: HubRepo) -> HubRepo:
        self.repos[repo.repo_id] = repo
        return repo

    # --- what the tests ask -------------------------------------------------------------------------------
    def log(self) -> list:
        with self.lock:
            return list(self.requests)

    def clear_log(self):
        with self.lock:
            self.requests.clear()

    def blob_bytes_sent(self, f: HubFile) -> int:
        """Body bytes of `f` sent so far, by the blob host (LFS) or /resolve GETs (small files)."""
        total = 0
        for r in self.log():
            if r.method != "GET":
                continue
            path = unquote(urlsplit(r.path).path)
            if (r.host == "blob" and path.endswith("/" + f.true_sha256)) or \
                    (r.host == "hub" and "/resolve/" in path and path.endswith("/" + f.path)):
                total += r.sent
        return total

    # --- the servers ------------------------------------------------------------------------------------------
    def _handler(self, host: str):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_HEAD(self):
                self._dispatch(head=True)

            def do_GET(self):
                self._dispatch(head=False)

            def _dispatch(self, head: bool):
                entry = Logged(host, self.command, self.path, self.headers.get("Range"))
                with hub.lock:
                    hub.requests.append(entry)
                try:
                    if host == "blob":
                        self._blob(entry, head)
                    else:
                        self._hub(entry, head)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            # -- helpers
            def _send(self, entry, status, headers=None, body=b"", head=False):
                entry.status = status
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not head and body:
                    self.wfile.write(body)
                    entry.sent += len(body)

            def _json(self, entry, obj, head=False):
                self._send(entry, 200, {"Content-Type": "application/json"}, json.dumps(obj).encode(), head)

            def _error(self, entry, status, code, message, extra=None, head=False):
                headers = {"X-Error-Code": code, "X-Error-Message": message, "Content-Type": "application/json"}
                headers.update(extra or {})
                self._send(entry, status, headers, json.dumps({"error": message}).encode(), head)

            def _authorized(self, repo) -> bool:
                return not repo.gated or self.headers.get("Authorization") == f"Bearer {hub.token}"

            def _repo(self, entry, repo_id, head):
                repo = hub.repos.get(repo_id)
                if repo is None:
                    self._error(entry, 404, "RepoNotFound", "Repository not found", head=head)
                    return None
                if not self._authorized(repo):
                    self._error(entry, 401, "GatedRepo", "Access to this repo is restricted", head=head)
                    return None
                return repo

            def _revision_ok(self, repo, rev) -> bool:
                return rev in ("main", repo.commit)

            # -- the hub
            def _hub(self, entry, head):
                path = urlsplit(self.path).path
                m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/(revision|tree)/([^/]+)", path)
                if m:
                    repo = self._repo(entry, m.group(1), head)
                    if repo is None:
                        return
                    rev = unquote(m.group(3))
                    if not self._revision_ok(repo, rev):
                        self._error(entry, 404, "RevisionNotFound", f"Invalid rev id: {rev}", head=head)
                        return
                    if m.group(2) == "revision":
                        siblings = []
                        for f in repo.files.values():
                            s = {"rfilename": f.path, "size": f.size, "blobId": f.git_sha1}
                            if f.lfs:
                                s["lfs"] = {"sha256": f.sha256, "size": f.size, "pointerSize": 134}
                            siblings.append(s)
                        self._json(entry, {"id": repo.repo_id, "modelId": repo.repo_id, "sha": repo.commit,
                                           "private": False, "gated": "auto" if repo.gated else False,
                                           "siblings": siblings}, head)
                    else:
                        tree = []
                        for f in repo.files.values():
                            t = {"type": "file", "path": f.path, "size": f.size, "oid": f.git_sha1}
                            if f.lfs:
                                t["lfs"] = {"oid": f.sha256, "size": f.size, "pointerSize": 134}
                            tree.append(t)
                        self._json(entry, tree, head)
                    return
                m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
                if m:
                    repo = self._repo(entry, m.group(1), head)
                    if repo is None:
                        return
                    rev, file_path = unquote(m.group(2)), unquote(m.group(3))
                    if not self._revision_ok(repo, rev):
                        self._error(entry, 404, "RevisionNotFound", f"Invalid rev id: {rev}", head=head)
                        return
                    f = repo.files.get(file_path)
                    if f is None:
                        self._error(entry, 404, "EntryNotFound", f"{file_path} does not exist",
                                    {"X-Repo-Commit": repo.commit}, head=head)
                        return
                    common = {"X-Repo-Commit": repo.commit, "Accept-Ranges": "bytes"}
                    if f.lfs:
                        location = f"{hub.blob_origin}/blobs/{f.true_sha256}?sig={quote(repo.repo_id, safe='')}"
                        self._send(entry, 302, {**common, "Location": location, "X-Linked-Etag": f'"{f.sha256}"',
                                                "X-Linked-Size": str(f.size), "ETag": f'"{f.git_sha1}"'}, b"", head)
                        return
                    self._body(entry, f, {**common, "ETag": f'"{f.git_sha1}"'}, head)
                    return
                self._error(entry, 404, "NotFound", "no such route", head=head)

            # -- the blob host
            def _blob(self, entry, head):
                m = re.fullmatch(r"/blobs/([0-9a-f]{64})", urlsplit(self.path).path)
                f = None
                if m:
                    for repo in hub.repos.values():
                        for candidate in repo.files.values():
                            if candidate.lfs and candidate.true_sha256 == m.group(1):
                                f = candidate
                if f is None:
                    self._send(entry, 404, {}, b"no such blob", head)
                    return
                if "Authorization" in self.headers:  # the token must stay with the hub
                    self._send(entry, 400, {}, b"authorization sent to the blob host", head)
                    return
                self._body(entry, f, {}, head)

            def _body(self, entry, f: HubFile, headers: dict, head: bool):
                start, end, status = 0, f.size, 200
                rng = self.headers.get("Range")
                if rng:
                    m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng.strip())
                    if not m or int(m.group(1)) >= f.size:
                        self._send(entry, 416, {"Content-Range": f"bytes */{f.size}"}, b"", head)
                        return
                    start = int(m.group(1))
                    end = min(f.size, int(m.group(2)) + 1) if m.group(2) else f.size
                    status = 206
                    headers = {**headers, "Content-Range": f"bytes {start}-{end - 1}/{f.size}"}
                entry.status = status
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(end - start))
                self.send_header("Content-Type", "application/octet-stream")
                self.end_headers()
                if head:
                    return
                limit = end
                drop = False
                with hub.lock:
                    if f.drops > 0:
                        f.drops -= 1
                        limit = min(end, start + f.drop_after)
                        drop = True
                pos = start
                while pos < limit:
                    chunk = f.read(pos, min(limit, pos + CHUNK))
                    self.wfile.write(chunk)
                    pos += len(chunk)
                    with hub.lock:
                        entry.sent += len(chunk)
                self.wfile.flush()
                if drop:
                    # The connection ends before the promised Content-Length: a dropped transfer.
                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        return Handler


def feed_server(feed: dict):
    """A one-route server for `tensorfold update`: GET /feed.json answers `feed`; anything else 404."""
    body = json.dumps(feed).encode()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            ok = self.path == "/feed.json"
            self.send_response(200 if ok else 404)
            payload = body if ok else b"not found"
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


__all__ = ["FixtureHub", "HubRepo", "HubFile", "feed_server"]
