"""CORS as a browser judges it: headless Chromium (Debian's `chromium`) loads a page from one local origin
(a Python http.server on its own port) whose script POSTs to /v1/chat/completions of a server on another
port, with an Authorization header (so the browser sends a preflight first) and, where the server lists the
page's origin, with `credentials: "include"`. The page writes the browser's verdict into its DOM; the test
reads it from `--dump-dom`. No header is grepped here: a reply that repeats Access-Control-Allow-Origin, or
lacks Access-Control-Allow-Credentials for a credentialed call, fails in the browser and so here."""

from __future__ import annotations

import functools
import http.server
import re
import shutil
import subprocess
import tempfile
import threading

import pytest

from ._serve import API_KEYS, start_serve

PAGE = """<!doctype html><html><body><pre id="verdict">pending</pre><script>
const q = new URLSearchParams(location.search);
fetch("http://127.0.0.1:" + q.get("port") + "/v1/chat/completions", {
  method: "POST",
  credentials: q.get("credentials") || "same-origin",
  headers: {"Authorization": "Bearer " + q.get("key"), "Content-Type": "application/json"},
  body: JSON.stringify({model: q.get("model"), max_tokens: 2, temperature: 0,
                        messages: [{role: "user", content: "Hi"}]}),
}).then(r => r.json().then(b => { document.getElementById("verdict").textContent =
            "VERDICT ok " + r.status + " " + (b.object || ""); }))
  .catch(e => { document.getElementById("verdict").textContent = "VERDICT failed " + e.name; });
</script></body></html>"""


def chromium_binary() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.fail("headless Chromium is needed (Debian package 'chromium': scripts/bootstrap.sh installs it)",
                    pytrace=False)
    return found


@pytest.fixture(scope="module")
def page_origin(tmp_path_factory):
    """A page server on its own port: the page's origin, http://127.0.0.1:PORT (not the API's)."""
    root = tmp_path_factory.mktemp("page")
    (root / "call.html").write_text(PAGE)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def browser_verdict(page_origin: str, server, credentials: str = "same-origin") -> str:
    url = (f"{page_origin}/call.html?port={server.port}&key={API_KEYS[0]}&model={server.model_id}"
           f"&credentials={credentials}")
    with tempfile.TemporaryDirectory(prefix="tf-chromium-") as profile:
        r = subprocess.run(
            [chromium_binary(), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-dev-shm-usage", "--user-data-dir=" + profile, "--virtual-time-budget=30000", "--dump-dom",
             url],
            capture_output=True, text=True, timeout=120)
    m = re.search(r'<pre id="verdict">(VERDICT [^<]*)</pre>', r.stdout)
    assert m, f"the page gave no verdict (chromium exit {r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    return m.group(1).strip()


@pytest.fixture(scope="module")
def cors_server(tensorfold_bin, default_model_path, tmp_path_factory, page_origin):
    srv = start_serve(tensorfold_bin, default_model_path, ["--api-key", API_KEYS[0], "--cors-origin", page_origin],
                      tmp_path_factory.mktemp("cors"), API_KEYS[0])
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def plain_server(tensorfold_bin, default_model_path, tmp_path_factory):
    srv = start_serve(tensorfold_bin, default_model_path, ["--api-key", API_KEYS[0]],
                      tmp_path_factory.mktemp("nocors"), API_KEYS[0])
    yield srv
    srv.stop()


def test_a_page_on_a_listed_origin_can_post_with_credentials(page_origin, cors_server):
    assert browser_verdict(page_origin, cors_server) == "VERDICT ok 200 chat.completion"
    assert browser_verdict(page_origin, cors_server, "include") == "VERDICT ok 200 chat.completion"


def test_without_cors_origin_the_browser_refuses_the_call(page_origin, plain_server):
    assert browser_verdict(page_origin, plain_server) == "VERDICT failed TypeError"
    # The server itself answers the same call (the refusal is the browser's, for want of CORS headers).
    r = plain_server.raw("POST", "/v1/chat/completions", {"model": plain_server.model_id, "max_tokens": 2,
                                                          "messages": [{"role": "user", "content": "Hi"}]},
                         headers={"Origin": page_origin})
    assert r.status == 200 and "access-control-allow-origin" not in r.headers


@pytest.fixture(scope="module")
def any_origin_server(tensorfold_bin, default_model_path, tmp_path_factory):
    srv = start_serve(tensorfold_bin, default_model_path, ["--api-key", API_KEYS[0], "--cors-origin", "*"],
                      tmp_path_factory.mktemp("cors-any"), API_KEYS[0])
    yield srv
    srv.stop()


def test_with_any_origin_a_page_can_post_but_not_with_credentials(page_origin, any_origin_server):
    assert browser_verdict(page_origin, any_origin_server) == "VERDICT ok 200 chat.completion"
    # "*" lets any page call, not with the browser's credentials: no Access-Control-Allow-Credentials.
    assert browser_verdict(page_origin, any_origin_server, "include") == "VERDICT failed TypeError"
