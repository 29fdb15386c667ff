#!/usr/bin/env bash
# Fetches the text conformance corpus: llama.cpp's chat templates (models/templates/*.jinja) and its
# vocab-only GGUF files with their .inp/.out expected token ids, as vendored in the source distribution of
# the PyPI package llama-cpp-python (pinned below). Extracts only those files, into a cache that later runs
# reuse. Prints the corpus directory on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=0.3.36
CACHE=${TENSORFOLD_TEST_CACHE:-$HOME/.cache/tensorfold/test-corpus}
dest="$CACHE/llama.cpp-$VERSION"
if [ -f "$dest/.complete" ]; then
  echo "$dest"
  exit 0
fi
PY=python3
[ -x .venv/bin/python ] && PY=.venv/bin/python
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetch_text_corpus: pip download llama-cpp-python==$VERSION (source)" >&2
"$PY" -m pip download -q --no-binary :all: --no-deps -d "$tmp" "llama-cpp-python==$VERSION" >&2
mkdir -p "$dest/templates" "$dest/vocab"
"$PY" - "$tmp/llama_cpp_python-$VERSION.tar.gz" "$dest" <<'PYEOF'
import os, sys, tarfile
archive, dest = sys.argv[1:]
prefix = None
with tarfile.open(archive) as tar:
    for m in tar:
        if not m.isfile():
            continue
        parts = m.name.split("/")
        # <root>/vendor/llama.cpp/models/<file> and models/templates/<file>
        if len(parts) >= 5 and parts[1:4] == ["vendor", "llama.cpp", "models"]:
            rest = parts[4:]
            if len(rest) == 2 and rest[0] == "templates" and rest[1].endswith(".jinja"):
                out = os.path.join(dest, "templates", rest[1])
            elif len(rest) == 1 and rest[0].startswith("ggml-vocab-"):
                out = os.path.join(dest, "vocab", rest[0])
            else:
                continue
            with tar.extractfile(m) as src, open(out, "wb") as dst:
                dst.write(src.read())
PYEOF
touch "$dest/.complete"
echo "$dest"
