#!/usr/bin/env bash
# Installs what building and testing TensorFold needs, and only what is missing: Debian -dev packages
# (apt-get), a Python venv in .venv with scripts/requirements-dev.txt, and the embedded default model.
# Idempotent and quick when everything is present. Usage: scripts/bootstrap.sh [--no-model]
set -euo pipefail
cd "$(dirname "$0")/.."

# libcurl4-openssl-dev: the hub client, and image URLs under `serve --vision-urls` (src/server/image_fetch.cpp).
DEB_PACKAGES=(cmake ninja-build g++ clang ccache pkg-config python3-venv
  libcpp-httplib-dev nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev libcurl4-openssl-dev libssl-dev
  libpcre2-dev libutf8proc-dev libzstd-dev libxxhash-dev libgtest-dev libopenblas-dev unzip
  libpng-dev libjpeg62-turbo-dev libwebp-dev  # image decoding for --vision (src/vision/)
  chromium)  # headless Chromium: the browser tests (tests/e2e/test_browser_cors.py)

missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for p in "${DEB_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
fi
if ((${#missing[@]})); then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Python venv: reinstall the requirements only when the file changed since the last install.
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv"
  "$PY" -m venv .venv
fi
stamp=.venv/.requirements.sha256
want=$(sha256sum scripts/requirements-dev.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "bootstrap: pip install -r scripts/requirements-dev.txt"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r scripts/requirements-dev.txt
  echo "$want" >"$stamp"
fi

if [ "${1:-}" != "--no-model" ]; then
  scripts/fetch_default_model.sh
fi
