#!/usr/bin/env python3
"""Helper of bench/llama_cpp/side_by_side.sh: the steps that are easier in Python than in bash.

  sbs.py extract SDIST DEST              unpack vendor/llama.cpp of the llama-cpp-python sdist, stripped
  sbs.py vocab GGUF_PY SRC OUT           a vocab-only GGUF: SRC's tokenizer.* keys, no tensors (for the pack)
  sbs.py make8b GGUF_PY VOCAB OUT        the random-weight 8B llama as F16, with VOCAB's tokenizer
  sbs.py llama-bench JSON OUT            pp / tg tokens/s from `llama-bench -o json` into OUT (JSON)
  sbs.py ours-bench LOG OUT              the same from our bench's output
  sbs.py guard LIMIT_MB TIMEOUT_S -- CMD run CMD, killed when its RSS passes LIMIT_MB or it runs past TIMEOUT_S
  sbs.py http OPTIONS -- SERVER_CMD      start a server, time one request (and N concurrent ones), stop it
  sbs.py table RESULTS_DIR               the side-by-side table and the ratios

Only the standard library, plus numpy for make8b (and gguf-py's own imports), so it runs with the repo's
venv, a plain python3 or the device's python.
"""
import json
import os
import signal
import subprocess
import sys
import tarfile
import threading
import time
import types
import urllib.error
import urllib.request

# ---------------------------------------------------------------------------------------------------
# extract: the build needs far less than the 75 MB sdist (models/ and docs/ alone are 113 MB unpacked).
# A stripped tree packs into a few MB, which matters for the device machine's 64 MiB carry limit.
SKIP_TOP = {"models", "docs", "media", "benches", "tests", "examples", "pocs", "ci", "skills", ".github",
            "app", "requirements", "conversion"}
# Backends of ggml that are never enabled here (CPU here, CUDA on the device).
SKIP_GGML = {"ggml-cann", "ggml-et", "ggml-hexagon", "ggml-hip", "ggml-metal", "ggml-musa", "ggml-opencl",
             "ggml-openvino", "ggml-sycl", "ggml-virtgpu", "ggml-vulkan", "ggml-webgpu", "ggml-zdnn",
             "ggml-zendnn"}
# The web UI's sources: the server is built without it (LLAMA_BUILD_UI=OFF, no prebuilt download).
SKIP_UI = {"src", "static", "tests", "package-lock.json"}


def keep(rel):
    parts = rel.split("/")
    if parts[0] in SKIP_TOP or parts[-1] == ".git":  # .git: a pointer into the sdist's own repository
        return False
    if len(parts) > 2 and parts[:2] == ["ggml", "src"] and parts[2] in SKIP_GGML:
        return False
    if len(parts) > 2 and parts[:2] == ["tools", "ui"] and parts[2] in SKIP_UI:
        return False
    return True


def cmd_extract(sdist, dest):
    tmp = dest + ".part"
    os.makedirs(tmp, exist_ok=True)
    n = size = 0
    with tarfile.open(sdist) as tar:
        for m in tar:
            parts = m.name.split("/")
            # <root>/vendor/llama.cpp/<rel>
            if len(parts) < 4 or parts[1:3] != ["vendor", "llama.cpp"]:
                continue
            rel = "/".join(parts[3:])
            if not (m.isfile() or m.isdir()) or not keep(rel):
                continue
            m.name = rel
            tar.extract(m, tmp, set_attrs=False)
            if m.isfile():
                n += 1
                size += m.size
    os.rename(tmp, dest)
    print(f"extracted {n} files, {size / 1e6:.1f} MB, into {dest}", file=sys.stderr)


# ---------------------------------------------------------------------------------------------------
# gguf-py: always the copy inside the sdist (the issue asks for the same version as the llama.cpp built).
def import_gguf(gguf_py):
    sys.path.insert(0, gguf_py)
    try:
        import yaml  # noqa: F401  (gguf.metadata imports it at load; only model-card parsing uses it)
    except ImportError:  # the device's python may lack PyYAML; nothing here reads model cards
        sys.modules["yaml"] = types.ModuleType("yaml")
    import gguf
    if not os.path.abspath(gguf.__file__).startswith(os.path.abspath(gguf_py)):
        sys.exit(f"sbs.py: imported gguf from {gguf.__file__}, not from {gguf_py}")
    return gguf


def tokenizer_fields(gguf, path):
    """(key, value, type, sub_type) of every tokenizer.* key of a GGUF file."""
    r = gguf.GGUFReader(path)
    out = []
    for key, f in r.fields.items():
        if not key.startswith("tokenizer."):
            continue
        vtype = f.types[0]
        sub = f.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        out.append((key, f.contents(), vtype, sub))
    return out


def copy_tokenizer(gguf, w, path):
    for key, val, vtype, sub in tokenizer_fields(gguf, path):
        w.add_key_value(key, val, vtype, sub_type=sub)


def cmd_vocab(gguf_py, src, out):
    gguf = import_gguf(gguf_py)
    w = gguf.GGUFWriter(out + ".part", "llama")
    w.add_name("vocab of " + os.path.basename(src))
    copy_tokenizer(gguf, w, src)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    os.rename(out + ".part", out)


# llama-3-8B's shape (32 layers, hidden 4096, ffn 14336, 32 heads / 8 kv heads, head_dim 128), with the
# vocabulary of the default model (49152 tokens, gpt2 BPE) so both servers can tokenize and template.
SHAPE = dict(layers=32, hidden=4096, ffn=14336, heads=32, kv_heads=8, context=8192, rope_base=500000.0)


def cmd_make8b(gguf_py, vocab, out, seed="1234"):
    import numpy as np
    gguf = import_gguf(gguf_py)
    s = dict(SHAPE, **json.loads(os.environ.get("SBS_SHAPE", "{}")))  # SBS_SHAPE: a small shape, for testing
    n_vocab = len([f for f in tokenizer_fields(gguf, vocab) if f[0] == "tokenizer.ggml.tokens"][0][1])
    head_dim = s["hidden"] // s["heads"]
    kv = s["kv_heads"] * head_dim
    w = gguf.GGUFWriter(out + ".part", "llama")
    w.add_name("random-weight llama-3-8B shape")
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_context_length(s["context"])
    w.add_embedding_length(s["hidden"])
    w.add_block_count(s["layers"])
    w.add_feed_forward_length(s["ffn"])
    w.add_head_count(s["heads"])
    w.add_head_count_kv(s["kv_heads"])
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(s["rope_base"])
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(n_vocab)
    copy_tokenizer(gguf, w, vocab)
    # (name, numpy shape rows x cols, is_norm); F16 matrices, F32 norms as llama.cpp's converter writes them
    tensors = [("token_embd.weight", (n_vocab, s["hidden"]), False)]
    for i in range(s["layers"]):
        b = f"blk.{i}."
        tensors += [(b + "attn_norm.weight", (s["hidden"],), True),
                    (b + "attn_q.weight", (s["hidden"], s["hidden"]), False),
                    (b + "attn_k.weight", (kv, s["hidden"]), False),
                    (b + "attn_v.weight", (kv, s["hidden"]), False),
                    (b + "attn_output.weight", (s["hidden"], s["hidden"]), False),
                    (b + "ffn_norm.weight", (s["hidden"],), True),
                    (b + "ffn_gate.weight", (s["ffn"], s["hidden"]), False),
                    (b + "ffn_up.weight", (s["ffn"], s["hidden"]), False),
                    (b + "ffn_down.weight", (s["hidden"], s["ffn"]), False)]
    tensors += [("output_norm.weight", (s["hidden"],), True),
                ("output.weight", (n_vocab, s["hidden"]), False)]  # untied, as llama-3-8B
    for name, shape, norm in tensors:
        n = int(np.prod(shape))
        dt = np.float32 if norm else np.float16
        w.add_tensor_info(name, shape, np.dtype(dt), n * np.dtype(dt).itemsize)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    # Tensor data streamed in chunks (GGUFWriter.add_tensor would hold all 15 GB in memory until the end).
    # Normal(0, 0.02) weights and norms of 1.0: activations stay small over 32 layers, so no NaN/inf.
    fout = w.fout[0]
    rng = np.random.default_rng(int(seed))
    chunk = 1 << 24
    t0 = time.time()
    for k, (name, shape, norm) in enumerate(tensors):
        n = int(np.prod(shape))
        w.write_padding(fout, fout.tell())
        if norm:
            np.ones(n, dtype=np.float32).tofile(fout)
        else:
            for at in range(0, n, chunk):
                m = min(chunk, n - at)
                (rng.standard_normal(m, dtype=np.float32) * 0.02).astype(np.float16).tofile(fout)
        w.write_padding(fout, n * (4 if norm else 2))
        if k % 45 == 0:
            print(f"make8b: {k + 1}/{len(tensors)} tensors, {fout.tell() / 1e9:.1f} GB, {time.time() - t0:.0f} s",
                  file=sys.stderr, flush=True)
    fout.close()
    os.rename(out + ".part", out)
    print(f"make8b: wrote {out} ({os.path.getsize(out) / 1e9:.1f} GB) in {time.time() - t0:.0f} s", file=sys.stderr)


# ---------------------------------------------------------------------------------------------------
# Results: one JSON file per (model, side, what) in RESULTS_DIR, written by these commands, read by table.
def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)


def cmd_llama_bench(js, out):
    """llama-bench -o json: one object per test, n_prompt/n_gen and avg_ts (tokens/s, mean of -r runs)."""
    res = {}
    try:
        rows = json.load(open(js))
    except (OSError, ValueError) as e:
        rows = []
        res["error"] = f"no llama-bench JSON ({e})"
    for r in rows:
        if r.get("n_prompt", 0) > 0 and r.get("n_gen", 0) == 0:
            res["pp"] = r["avg_ts"]
            res["pp_n"] = r["n_prompt"]
        elif r.get("n_gen", 0) > 0 and r.get("n_prompt", 0) == 0:
            res["tg"] = r["avg_ts"]
            res["tg_n"] = r["n_gen"]
        res["backend"] = r.get("backends", r.get("backend", ""))
        res["threads"] = r.get("n_threads")
    write_json(out, res)


def cmd_ours_bench(log, out):
    """tf_model_speed_bench: "prefill N tokens: X tokens/s (median of R)", "decode N tokens: Y tokens/s ..."
    tf_cuda_bench --section model (the device's build, no MLX): "RESULT smollm2_q4_1.decode_tokens_per_s Y"."""
    import re
    res = {}
    text = open(log, errors="replace").read() if os.path.exists(log) else ""
    m = re.search(r"^prefill (\d+) tokens: ([\d.]+) tokens/s", text, re.M)
    if m:
        res["pp_n"], res["pp"] = int(m.group(1)), float(m.group(2))
    m = re.search(r"^decode (\d+) tokens: ([\d.]+) tokens/s", text, re.M)
    if m:
        res["tg_n"], res["tg"] = int(m.group(1)), float(m.group(2))
    m = re.search(r"^RESULT\s+\S+\.decode_tokens_per_s\s+([\d.]+)", text, re.M)
    if m and "tg" not in res:
        res["tg"], res["tg_n"] = float(m.group(1)), 256
        res["note"] = "tf_cuda_bench --section model: 64-token prompt, 256 greedy steps"
    if "tg" not in res:
        tail = [l for l in text.strip().splitlines() if l.strip()][-3:]
        res["error"] = " | ".join(tail)[-300:] or "no output"
    write_json(out, res)


# ---------------------------------------------------------------------------------------------------
# guard: our current CPU build expands quantized weights to float32 (an 8B model needs ~32 GB), and a
# process that runs the machine out of memory could take the other jobs with it. So ours runs under a
# watchdog that polls the resident memory of the process group and kills it past a limit or a time.
def group_rss_mb(pgid):
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.getpgid(int(pid)) != pgid:
                continue
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, ProcessLookupError):
            pass
    return total / 2**20


def run_guarded(cmd, limit_mb, timeout_s, stdout=None, stderr=None):
    """Runs cmd in its own process group; returns (exit code or None, why it was stopped or "")."""
    p = subprocess.Popen(cmd, stdout=stdout, stderr=stderr, start_new_session=True)
    t0, peak, why = time.time(), 0.0, ""
    while p.poll() is None:
        rss = group_rss_mb(p.pid)
        peak = max(peak, rss)
        if limit_mb and rss > limit_mb:
            why = f"killed: resident memory {rss:.0f} MiB passed the limit of {limit_mb:.0f} MiB"
        elif time.time() - t0 > timeout_s:
            why = f"killed: still running after {timeout_s:.0f} s"
        if why:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            break
        time.sleep(0.1)
    return (None if why else p.returncode), why, peak


def cmd_guard(limit_mb, timeout_s, *cmd):
    cmd = list(cmd[1:] if cmd and cmd[0] == "--" else cmd)
    rc, why, peak = run_guarded(cmd, float(limit_mb), float(timeout_s))
    print(f"guard: peak resident memory {peak:.0f} MiB", file=sys.stderr)
    if why:
        print(f"guard: {why}", file=sys.stderr)
        sys.exit(124)
    sys.exit(rc)


# ---------------------------------------------------------------------------------------------------
# http: the server is started here (not from bash) so that it is always stopped, whatever fails.
PROMPTS = [
    "Write a long story about a lighthouse keeper who finds a map in a bottle.",
    "Explain in detail how a steam engine works, step by step.",
    "Write a long letter from a sailor to his family describing a storm at sea.",
    "Describe a walk through a busy market in a large city, with many details.",
    "Write a detailed guide to planting and caring for a vegetable garden.",
]


def post(url, body, timeout):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    t0 = time.time()
    with urllib.request.urlopen(req, timeout=timeout) as r:
        reply = json.loads(r.read())
    return time.time() - t0, reply


def wait_ready(base, proc, timeout):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with code {proc.returncode} before it was ready")
        try:
            with urllib.request.urlopen(base + "/health", timeout=5) as r:
                if r.status == 200:
                    return time.time() - t0
        except (urllib.error.URLError, OSError, ValueError):
            pass  # not listening yet, or 503 while loading (llama-server)
        time.sleep(0.5)
    raise RuntimeError(f"the server was not ready after {timeout:.0f} s")


def cmd_http(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="sbs.py http")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--out", required=True, help="result JSON")
    ap.add_argument("--log", required=True, help="the server's stdout/stderr")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--streams", type=int, default=0, help="also N concurrent requests (0: only one)")
    ap.add_argument("--extra", default="{}", help="JSON fields added to every request")
    ap.add_argument("--ready-timeout", type=float, default=600)
    ap.add_argument("--request-timeout", type=float, default=900)
    ap.add_argument("--max-rss-mb", type=float, default=0, help="kill the server past this resident memory")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    base = f"http://127.0.0.1:{a.port}"
    res = {"max_tokens": a.max_tokens}
    log = open(a.log, "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    stop = threading.Event()
    killed = []

    def watch():  # the same memory guard as `guard`, for the server's whole life
        while not stop.is_set() and proc.poll() is None:
            rss = group_rss_mb(proc.pid)
            res["peak_rss_mb"] = max(res.get("peak_rss_mb", 0), rss)
            if a.max_rss_mb and rss > a.max_rss_mb:
                killed.append(f"server killed: resident memory {rss:.0f} MiB passed {a.max_rss_mb:.0f} MiB")
                os.killpg(proc.pid, signal.SIGKILL)
                return
            time.sleep(0.2)

    threading.Thread(target=watch, daemon=True).start()

    model = ""

    def body(prompt, max_tokens):
        b = {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
             "temperature": 0, "stream": False}
        b.update(json.loads(a.extra))
        return b

    url = base + "/v1/chat/completions"
    try:
        res["load_s"] = wait_ready(base, proc, a.ready_timeout)
        with urllib.request.urlopen(base + "/v1/models", timeout=30) as r:
            model = json.loads(r.read())["data"][0]["id"]
        post(url, body("Hello.", 4), a.request_timeout)  # warm-up: first-call costs stay out of the timing
        wall, reply = post(url, body(PROMPTS[0], a.max_tokens), a.request_timeout)
        u = reply.get("usage", {})
        res["one"] = {"wall_s": wall, "prompt_tokens": u.get("prompt_tokens"),
                      "completion_tokens": u.get("completion_tokens"),
                      "tok_s": (u.get("completion_tokens") or 0) / wall,
                      "text": reply["choices"][0]["message"].get("content", "")[:200]}
        if a.streams > 1:
            results = [None] * a.streams

            def one(i):
                try:
                    results[i] = post(url, body(PROMPTS[i % len(PROMPTS)], a.max_tokens), a.request_timeout)
                except Exception as e:  # noqa: BLE001  (reported below)
                    results[i] = e

            t0 = time.time()
            ts = [threading.Thread(target=one, args=(i,)) for i in range(a.streams)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            wall = time.time() - t0
            errs = [str(r) for r in results if isinstance(r, Exception)]
            if errs:
                raise RuntimeError("concurrent request failed: " + errs[0])
            toks = sum(r[1].get("usage", {}).get("completion_tokens", 0) for r in results)
            res["many"] = {"streams": a.streams, "wall_s": wall, "completion_tokens": toks, "tok_s": toks / wall}
    except Exception as e:  # noqa: BLE001  (any failure becomes the result's error, the run goes on)
        res["error"] = killed[0] if killed else f"{type(e).__name__}: {e}"
    finally:
        stop.set()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()
    write_json(a.out, res)
    if "error" in res:
        print(f"http: {res['error']} (server log: {a.log})", file=sys.stderr)


# ---------------------------------------------------------------------------------------------------
def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return None


def fmt(x, unit=""):
    return "-" if x is None else f"{x:,.2f}{unit}" if unit == "x" else f"{x:,.1f}{unit}"


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def cmd_table(rdir):
    models = [l.strip() for l in open(os.path.join(rdir, "models")) if l.strip()]
    lines = []
    P = lines.append
    P("")
    P("Side by side (tokens/s; ratio = ours / llama.cpp)")
    P("")
    P(f"| {'model':<12} | {'llama.cpp pp':>12} | {'ours pp':>9} | {'pp ratio':>8} | {'llama.cpp tg':>12} | "
      f"{'ours tg':>9} | {'tg ratio':>8} |")
    P(f"| {'-' * 12} | {'-' * 12}:| {'-' * 9}:| {'-' * 8}:| {'-' * 12}:| {'-' * 9}:| {'-' * 8}:|")
    notes = []
    checks = []  # the done-when: decode >= 1.0x (target 1.2x), prefill >= 0.8x, 4 streams >= 2.5x one
    for m in models:
        lb = load(os.path.join(rdir, f"{m}.llama-bench.json")) or {}
        ob = load(os.path.join(rdir, f"{m}.ours-bench.json")) or {}
        pp_n, tg_n = lb.get("pp_n", ob.get("pp_n", "?")), lb.get("tg_n", ob.get("tg_n", "?"))
        P(f"| {m:<12} | {fmt(lb.get('pp')):>12} | {fmt(ob.get('pp')):>9} | {fmt(ratio(ob.get('pp'), lb.get('pp')), 'x'):>8} | "
          f"{fmt(lb.get('tg')):>12} | {fmt(ob.get('tg')):>9} | {fmt(ratio(ob.get('tg'), lb.get('tg')), 'x'):>8} |")
        for what, r, need in (("decode", ratio(ob.get("tg"), lb.get("tg")), 1.0),
                              ("prefill", ratio(ob.get("pp"), lb.get("pp")), 0.8)):
            if r is not None:
                checks.append(f"{m}: {what} {r:.2f}x llama.cpp (needs >= {need}x"
                              f"{', target 1.2x' if what == 'decode' else ''}): {'met' if r >= need else 'NOT met'}")
        if lb.get("error"):
            notes.append(f"{m}: llama-bench: {lb['error']}")
        if ob.get("error"):
            notes.append(f"{m}: ours: {ob['error']}")
        if ob.get("note"):
            notes.append(f"{m}: ours: {ob['note']}")
        if ob.get("pp_n") not in (None, pp_n) or ob.get("tg_n") not in (None, tg_n):
            notes.append(f"{m}: ours ran pp{ob.get('pp_n')}/tg{ob.get('tg_n')}, llama.cpp pp{pp_n}/tg{tg_n}")
    if not any(os.path.exists(os.path.join(rdir, f"{m}.http-{side}.json")) for m in models
               for side in ("llama", "ours")):  # --no-http
        return finish(lines, notes, checks)
    P("")
    P("One HTTP chat request each (same prompt, temperature 0; tok/s = completion tokens / wall time, "
      "which includes the prompt); ours also with 4 concurrent requests (different prompts)")
    P("")
    P(f"| {'model':<12} | {'llama-server':>22} | {'tensorfold serve':>22} | {'ratio':>6} | "
      f"{'ours 4 streams':>16} | {'4 / 1':>6} |")
    P(f"| {'-' * 12} | {'-' * 22}:| {'-' * 22}:| {'-' * 6}:| {'-' * 16}:| {'-' * 6}:|")

    def cell(h):
        o = (h or {}).get("one")
        if not o:
            return "-"
        return f"{o['completion_tokens']} tok {o['wall_s']:.2f} s {o['tok_s']:.1f}/s"

    for m in models:
        hl = load(os.path.join(rdir, f"{m}.http-llama.json"))
        ho = load(os.path.join(rdir, f"{m}.http-ours.json"))
        lt = ((hl or {}).get("one") or {}).get("tok_s")
        ot = ((ho or {}).get("one") or {}).get("tok_s")
        many = (ho or {}).get("many")
        many_cell = f"{many['completion_tokens']} tok {many['tok_s']:.1f}/s" if many else "-"
        r4 = ratio((many or {}).get("tok_s"), ot)
        if r4 is not None:
            checks.append(f"{m}: 4 streams {r4:.2f}x our single stream (needs >= 2.5x): {'met' if r4 >= 2.5 else 'NOT met'}")
        P(f"| {m:<12} | {cell(hl):>22} | {cell(ho):>22} | {fmt(ratio(ot, lt), 'x'):>6} | "
          f"{many_cell:>16} | "
          f"{fmt(ratio((many or {}).get('tok_s'), ot), 'x'):>6} |")
        for side, h in (("llama-server", hl), ("tensorfold serve", ho)):
            if h and h.get("error"):
                notes.append(f"{m}: {side}: {h['error']}")
            elif h is None:
                notes.append(f"{m}: {side}: not run")
    finish(lines, notes, checks)


def finish(lines, notes, checks):
    P = lines.append
    if checks:
        P("")
        P("Against the issue's bar (set for the CPU at 2 threads on a quiet machine; a loaded one distorts it):")
        for c in checks:
            P("  - " + c)
    if notes:
        P("")
        P("Notes:")
        for n in notes:
            P("  - " + n)
    P("")
    print("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd, args = sys.argv[1], sys.argv[2:]
    fn = {"extract": cmd_extract, "vocab": cmd_vocab, "make8b": cmd_make8b,
          "llama-bench": cmd_llama_bench, "ours-bench": cmd_ours_bench, "guard": cmd_guard,
          "table": cmd_table}.get(cmd)
    if cmd == "http":
        cmd_http(args)
    elif fn:
        fn(*args)
    else:
        sys.exit(f"sbs.py: unknown command {cmd}\n{__doc__}")
