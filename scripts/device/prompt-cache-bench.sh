#!/usr/bin/env bash
# Prompt caching on CUDA (issue 35), in one command on the device machine: builds `tensorfold` (CUDA on, MLX
# off), writes random-weight llama GGUFs over the default model's tokenizer (bench/prompt_cache/
# random_llama_gguf.py: the SmolLM2-135M shape and llama-3-8B's, in /tmp/tf-prompt-cache, kept while the
# machine is warm), then
#   1. cached == fresh (bench/prompt_cache/equality.py): multi-turn conversations, greedy and seeded, turns
#      2+ must restore tokens and equal a server without the cache token for token; small shape, then 8B;
#   2. time to first token of turn N of a conversation growing by ~500 tokens a turn up to 16k tokens on the
#      8B shape (bench/prompt_cache/ttft.py): every turn with the cache, and without it the turns nearest 1k,
#      2k, 4k, 8k, 12k and 16k tokens (--uncached-at LIST|all).
# Logs go to $OUT (default ./prompt-cache-out); a short summary is printed last. Exit status 1 when a check fails.
#
# Here, once:   scripts/device/prompt-cache-bench.sh --prepare
#               (makes .cuda-carry/sysroot with make-sysroot.sh when missing, and .cuda-carry/vocab.gguf)
# There:        run(carry=[".cuda-carry/sysroot", ".cuda-carry/vocab.gguf"],
#                   command="bash scripts/device/prompt-cache-bench.sh --sysroot .cuda-carry/sysroot")
# --prebuilt DIR|bin.tar.xz uses a `tensorfold` built elsewhere instead (DIR/tensorfold with DIR/lib, or the
# archive prepare-carry.sh packs); --vocab FILE another tokenizer GGUF; --max-context N (16384); --uncached-at LIST;
# --skip-equality; --skip-ttft.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/prompt-cache-out}
PREBUILT="" SYSROOT="" VOCAB=.cuda-carry/vocab.gguf MAX_CONTEXT=16384 EQUALITY=1 TTFT=1 PREPARE=0
UNCACHED_AT=1000,2000,4000,8000,12000,16000
while [ $# -gt 0 ]; do
  case "$1" in
    --prepare) PREPARE=1; shift ;;
    --prebuilt) PREBUILT=$2; shift 2 ;;
    --sysroot) SYSROOT=$2; shift 2 ;;
    --vocab) VOCAB=$2; shift 2 ;;
    --max-context) MAX_CONTEXT=$2; shift 2 ;;
    --uncached-at) UNCACHED_AT=$2; shift 2 ;;
    --skip-equality) EQUALITY=0; shift ;;
    --skip-ttft) TTFT=0; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done

if [ "$PREPARE" = 1 ]; then
  [ -d .cuda-carry/sysroot ] || bash scripts/device/make-sysroot.sh
  MODEL=${TENSORFOLD_HOME:-$HOME/.cache/tensorfold/models}/SmolLM2-135M-Instruct.Q4_1.gguf
  PY=python3
  [ -x .venv/bin/python ] && PY=.venv/bin/python
  $PY bench/prompt_cache/random_llama_gguf.py vocab "$MODEL" .cuda-carry/vocab.gguf
  du -sh .cuda-carry/sysroot .cuda-carry/vocab.gguf
  exit 0
fi

mkdir -p "$OUT"
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"
note() { echo "$1: $2" | tee -a "$SUMMARY"; }
T0=$(date +%s)
FAILED=0
{
  date -u
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1
  nproc
  free -g
} >"$OUT/machine.log" 2>&1
note machine "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"

# ---- tensorfold ----
if [ -n "$PREBUILT" ]; then
  if [ -f "$PREBUILT" ]; then  # prepare-carry.sh's archive: bin/tensorfold and bin/lib
    mkdir -p /tmp/tf-prompt-cache/prebuilt && tar -xJf "$PREBUILT" -C /tmp/tf-prompt-cache/prebuilt
    BIN=/tmp/tf-prompt-cache/prebuilt/bin
  else
    BIN=$(cd "$PREBUILT" && pwd)
  fi
  [ -d "$BIN/lib" ] && export LD_LIBRARY_PATH="$BIN/lib:${LD_LIBRARY_PATH:-}"
  note build "prebuilt ($BIN)"
else
  . scripts/device/cuda-build-env.sh
  use_sysroot "$SYSROOT"
  B0=$(date +%s)
  BIN=$ROOT/build-gpu
  if ! { configure_cuda build-gpu && cmake --build build-gpu -j16 --target tensorfold; } >"$OUT/build.log" 2>&1; then
    note build "FAILED (build.log)"
    tail -30 "$OUT/build.log"
    exit 1
  fi
  note build "ok ($(( $(date +%s) - B0 )) s)"
fi
[ -x "$BIN/tensorfold" ] || { note build "no tensorfold in $BIN"; exit 1; }

# ---- models ----
M=/tmp/tf-prompt-cache
mkdir -p $M
for shape in small 8b; do
  if [ ! -f "$M/$shape.gguf" ]; then
    G0=$(date +%s)
    if ! python3 bench/prompt_cache/random_llama_gguf.py model --vocab "$VOCAB" --shape $shape "$M/$shape.gguf" \
        >>"$OUT/models.log" 2>&1; then
      note "model $shape" "FAILED (models.log)"
      tail -5 "$OUT/models.log"
      exit 1
    fi
    note "model $shape" "written in $(( $(date +%s) - G0 )) s"
  fi
done

# ---- 1. cached == fresh ----
if [ "$EQUALITY" = 1 ]; then
  for shape in small 8b; do
    TURNS=3
    [ $shape = 8b ] && TURNS=2
    timeout 300 python3 bench/prompt_cache/equality.py --bin "$BIN/tensorfold" --model "$M/$shape.gguf" \
      --serve-arg=--backend=cuda --turns $TURNS --workdir "$OUT/equality_$shape" >"$OUT/equality_$shape.log" 2>&1
    rc=$?
    [ $rc = 0 ] || FAILED=1
    note "equality $shape" "rc $rc: $(tail -1 "$OUT/equality_$shape.log")"
  done
fi

# ---- 2. TTFT of turn N, 8B shape ----
if [ "$TTFT" = 1 ]; then
  timeout 420 python3 bench/prompt_cache/ttft.py --bin "$BIN/tensorfold" --model "$M/8b.gguf" \
    --serve-arg=--backend=cuda --max-context "$MAX_CONTEXT" --uncached-at "$UNCACHED_AT" --cache-gib 16 \
    --json "$OUT/ttft_8b.json" --workdir "$OUT/ttft_8b" >"$OUT/ttft_8b.log" 2>&1
  rc=$?
  [ $rc = 0 ] || FAILED=1
  note "ttft 8b" "rc $rc"
  sed -n '/^| turn/,$p' "$OUT/ttft_8b.log"
fi

note wall_seconds "$(( $(date +%s) - T0 ))"
exit $FAILED
