#!/usr/bin/env bash
# Side by side with llama.cpp on the same GGUF files, one process at a time, and the ratios ours / llama.cpp.
#
#   bench/llama_cpp/side_by_side.sh [--models default,8b-q4_0,8b-q4_k_m] [--threads 2] [--quick]
#                                   [--build-dir DIR] [--cuda] [--no-ours] [--no-http]
#                                   [--sdist FILE] [--pack DIR] [--from-pack DIR] [--default-model FILE]
#                                   [--reps N] [--ours-max-mem MIB] [--ours-timeout S] [--port P] [--jobs N]
#
# 1. llama.cpp comes from the llama-cpp-python sdist on PyPI (vendor/llama.cpp, pinned below; the repo's
#    text corpus comes from the same sdist), stripped to what the build needs and built with CMake: the CPU
#    with GGML_NATIVE here, CUDA sm_90 with --cuda (the H200 device). Only llama-bench, llama-server and
#    llama-quantize are built.
# 2. The models: "default" is the embedded SmolLM2-135M-Instruct Q4_1; "8b-q4_0" and "8b-q4_k_m" are a
#    random-weight llama with llama-3-8B's shape and the default model's tokenizer, written as F16 by gguf-py
#    from the same sdist (bench/llama_cpp/sbs.py make8b) and quantized by the llama-quantize just built.
#    The F16 source (15 GB) is deleted once both quantized files exist.
# 3. Per model: `llama-bench -t THREADS -p 512 -n 128 -o json`, then ours (`tf_model_speed_bench MODEL 512
#    128 3 0 empty`: decode from an empty context, as llama-bench's tg), then one HTTP chat request to llama-server and to `tensorfold serve` (ours also with 4 at once).
#    Each runs alone (never two processes being timed at once). Ours runs under a memory guard (an 8B
#    Q4_K_M peaks at ~9 GB while it loads), so on a smaller machine it is skipped or stopped with a
#    message where it does not fit, and llama.cpp's figures are still printed. Nothing waits without a limit.
#
# Everything downloaded or built is cached in $TENSORFOLD_BENCH_CACHE (default ~/.cache/tensorfold/bench) and
# reused; each run's raw outputs and the table go to $CACHE/runs/<date>/.
#
# The device machine (no network, 64 MiB of carry a call): here, `--pack DIR` writes DIR/llama.cpp-src.tar.xz
# (the stripped tree, a few MB) and DIR/vocab.gguf (the default model's tokenizer, for the 8B files); there,
# `--cuda --from-pack DIR --build-dir build-cuda` builds llama.cpp and makes the 8B files locally
# (docs/benchmarks.md, "Side by side with llama.cpp").
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
VERSION=0.3.36  # llama-cpp-python; its vendor/llama.cpp is what gets built

usage() { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

MODELS=default,8b-q4_0,8b-q4_k_m
THREADS=2
BUILD_DIR=$ROOT/build
CUDA=0
QUICK=0
OURS=1
HTTP=1
SDIST=
PACK=
FROM_PACK=
DEFAULT_MODEL=${TENSORFOLD_HOME:-$HOME/.cache/tensorfold/models}/SmolLM2-135M-Instruct.Q4_1.gguf
PORT=18480
JOBS=2
OURS_MAX_MEM=
REPS_ARG=
OURS_TIMEOUT=3600
while [ $# -gt 0 ]; do
  case $1 in
    --models) MODELS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --build-dir) BUILD_DIR=$(cd "$2" && pwd); shift 2 ;;
    --cuda) CUDA=1; shift ;;
    --quick) QUICK=1; shift ;;
    --no-ours) OURS=0; shift ;;
    --no-http) HTTP=0; shift ;;
    --sdist) SDIST=$(readlink -f "$2"); shift 2 ;;
    --pack) PACK=$2; shift 2 ;;
    --from-pack) FROM_PACK=$(cd "$2" && pwd); shift 2 ;;
    --default-model) DEFAULT_MODEL=$(readlink -f "$2"); shift 2 ;;
    --port) PORT=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --ours-max-mem) OURS_MAX_MEM=$2; shift 2 ;;
    --reps) REPS_ARG=$2; shift 2 ;;
    --ours-timeout) OURS_TIMEOUT=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "side_by_side: unknown argument $1" >&2; usage 2 ;;
  esac
done

CACHE=${TENSORFOLD_BENCH_CACHE:-$HOME/.cache/tensorfold/bench}
LDIR=$CACHE/llama.cpp-$VERSION
SRC=$LDIR/src
if [ $CUDA = 1 ]; then BLD=$LDIR/build-cuda; else BLD=$LDIR/build-cpu; fi
# Python with numpy (gguf-py needs it): $PYTHON, else the repo's venv (in a git worktree, the main checkout's),
# else python3.
PY=${PYTHON:-}
if [ -z "$PY" ]; then
  MAIN=$(cd "$(git -C "$ROOT" rev-parse --git-common-dir 2>/dev/null || echo "$ROOT/.git")/.." 2>/dev/null && pwd || echo "$ROOT")
  for p in "$ROOT/.venv/bin/python" "$MAIN/.venv/bin/python" python3; do
    if command -v "$p" >/dev/null; then PY=$p; break; fi
  done
fi
SBS="$PY $HERE/sbs.py"
mkdir -p "$CACHE"
log() { echo "side_by_side: $*" >&2; }

# The work sizes: the issue's pp512 / tg128 with 3 repeats; --quick for a smoke run.
if [ $QUICK = 1 ]; then PP=128 TG=32 REPS=1 HTTP_TOKENS=32; else PP=512 TG=128 REPS=3 HTTP_TOKENS=128; fi
REPS=${REPS_ARG:-$REPS}

# ---- 1. llama.cpp's sources -------------------------------------------------------------------------
if [ ! -f "$SRC/CMakeLists.txt" ]; then
  if [ -n "$FROM_PACK" ]; then
    log "unpacking $FROM_PACK/llama.cpp-src.tar.xz"
    mkdir -p "$LDIR" && tar -C "$LDIR" -xJf "$FROM_PACK/llama.cpp-src.tar.xz"
  else
    if [ -z "$SDIST" ]; then
      SDIST=$CACHE/llama_cpp_python-$VERSION.tar.gz
      if [ ! -f "$SDIST" ]; then
        log "pip download llama-cpp-python==$VERSION (source)"
        "$PY" -m pip download -q --no-binary :all: --no-deps -d "$CACHE" "llama-cpp-python==$VERSION" >&2
      fi
    fi
    mkdir -p "$LDIR" && rm -rf "$SRC.part"
    $SBS extract "$SDIST" "$SRC"
  fi
fi
GGUF_PY=$SRC/gguf-py

if [ -n "$PACK" ]; then
  mkdir -p "$PACK"
  PACK=$(cd "$PACK" && pwd)
  case $PACK/ in
    "$ROOT"/*)  # inside the repo: keep it out of git (as scripts/device/prepare-carry.sh does for .cuda-carry)
      EXCLUDE=$(git -C "$ROOT" rev-parse --git-path info/exclude)
      case $EXCLUDE in /*) ;; *) EXCLUDE=$ROOT/$EXCLUDE ;; esac
      rel=/${PACK#"$ROOT"/}/
      grep -qxF "$rel" "$EXCLUDE" 2>/dev/null || echo "$rel" >>"$EXCLUDE" ;;
  esac
  tar -C "$LDIR" -cf - src | xz -6 -T"$JOBS" >"$PACK/llama.cpp-src.tar.xz"
  [ -f "$DEFAULT_MODEL" ] && $SBS vocab "$GGUF_PY" "$DEFAULT_MODEL" "$PACK/vocab.gguf"
  du -sh "$PACK"/* >&2
  log "carry ${PACK#"$ROOT"/} to the device; there: bench/llama_cpp/side_by_side.sh --cuda --from-pack ${PACK#"$ROOT"/} ..."
  exit 0
fi

# ---- 2. build llama-bench, llama-server, llama-quantize -----------------------------------------------
TARGETS="llama-bench llama-server llama-quantize"
if [ ! -x "$BLD/bin/llama-bench" ] || [ ! -x "$BLD/bin/llama-server" ] || [ ! -x "$BLD/bin/llama-quantize" ]; then
  GEN=()
  command -v ninja >/dev/null && GEN=(-G Ninja)
  # Static libraries (binaries that run from anywhere), no tests/examples, and no web UI: the server's UI
  # would be built with npm or downloaded from a Hugging Face bucket, and the device has no network.
  FLAGS=(-DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF
         -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF
         -DLLAMA_OPENSSL=OFF)
  [ $CUDA = 1 ] && FLAGS+=(-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90)
  log "building llama.cpp ($([ $CUDA = 1 ] && echo CUDA sm_90 || echo CPU)) in $BLD"
  t0=$(date +%s)
  cmake -S "$SRC" -B "$BLD" "${GEN[@]}" "${FLAGS[@]}" >"$LDIR/configure.log" 2>&1 ||
    { tail -20 "$LDIR/configure.log" >&2; exit 1; }
  # shellcheck disable=SC2086
  cmake --build "$BLD" -j"$JOBS" --target $TARGETS >"$LDIR/build.log" 2>&1 || { tail -30 "$LDIR/build.log" >&2; exit 1; }
  echo "$(( $(date +%s) - t0 ))" >"$BLD/build-seconds"
  log "built in $(cat "$BLD/build-seconds") s"
fi
LB=$BLD/bin

# ---- 3. the models ----------------------------------------------------------------------------------
M8=$CACHE/models/llama8b-random
make_8b() {
  [ -f "$M8.Q4_0.gguf" ] && [ -f "$M8.Q4_K_M.gguf" ] && return 0
  mkdir -p "$CACHE/models"
  local vocab=$DEFAULT_MODEL
  [ -f "$vocab" ] || vocab=$FROM_PACK/vocab.gguf
  [ -f "$vocab" ] || { log "no tokenizer for the 8B files: neither $DEFAULT_MODEL nor a pack's vocab.gguf"; return 1; }
  local t0
  if [ ! -f "$M8.F16.gguf" ]; then
    local free_gb
    free_gb=$(df -Pk "$CACHE/models" | awk 'NR==2 {print int($4 / 1048576)}')
    [ "$free_gb" -ge 26 ] || { log "the 8B files need ~26 GB free in $CACHE/models (F16 15 GB + two 4-bit files), $free_gb GB there"; return 1; }
    log "writing the random-weight 8B (F16, 15 GB) with gguf-py from the sdist"
    t0=$(date +%s)
    $SBS make8b "$GGUF_PY" "$vocab" "$M8.F16.gguf"
    echo "$(( $(date +%s) - t0 ))" >"$CACHE/models/seconds-F16"
  fi
  for q in Q4_0 Q4_K_M; do
    if [ ! -f "$M8.$q.gguf" ]; then
      log "llama-quantize F16 -> $q"
      t0=$(date +%s)
      "$LB/llama-quantize" "$M8.F16.gguf" "$M8.$q.gguf.part" "$q" "$(nproc)" >"$CACHE/models/quantize-$q.log" 2>&1 ||
        { tail -5 "$CACHE/models/quantize-$q.log" >&2; return 1; }
      mv "$M8.$q.gguf.part" "$M8.$q.gguf"
      echo "$(( $(date +%s) - t0 ))" >"$CACHE/models/seconds-$q"
    fi
  done
  rm -f "$M8.F16.gguf"  # the 4-bit files are what gets benchmarked; the source is 15 GB
  log "8B files ready (seconds: F16 $(cat "$CACHE/models/seconds-F16" 2>/dev/null), Q4_0 $(cat \
    "$CACHE/models/seconds-Q4_0" 2>/dev/null), Q4_K_M $(cat "$CACHE/models/seconds-Q4_K_M" 2>/dev/null))"
}

model_path() {
  case $1 in
    default) echo "$DEFAULT_MODEL" ;;
    8b-q4_0) echo "$M8.Q4_0.gguf" ;;
    8b-q4_k_m) echo "$M8.Q4_K_M.gguf" ;;
    *) if [ -f "$1" ]; then readlink -f "$1"; else log "unknown model $1 (default, 8b-q4_0, 8b-q4_k_m or a GGUF path)"; exit 2; fi ;;
  esac
}

case ",$MODELS," in *,8b-*) make_8b || log "the 8B files could not be made; their rows stay empty" ;; esac

# ---- 4. the runs ------------------------------------------------------------------------------------
RUN=$CACHE/runs/$(date +%Y%m%d-%H%M%S)
mkdir -p "$RUN"
: >"$RUN/models"
NGL=()
[ $CUDA = 1 ] && NGL=(-ngl 99)
# Ours on the same cores as llama.cpp's threads where the machine has more (our CPU backend sizes its own
# pool); on a machine with THREADS cores or fewer this changes nothing.
PIN=()
if command -v taskset >/dev/null && [ "$(nproc)" -gt "$THREADS" ]; then PIN=(taskset -c "0-$((THREADS - 1))"); fi
OUR_BACKEND=()
[ $CUDA = 1 ] && OUR_BACKEND=(--backend cuda)
OUR_BENCH=()
if [ -x "$BUILD_DIR/bench/tf_model_speed_bench" ]; then
  OUR_BENCH=("$BUILD_DIR/bench/tf_model_speed_bench")  # MODEL PROMPT_TOKENS DECODE_TOKENS REPEATS
elif [ -x "$BUILD_DIR/bench/tf_cuda_bench" ]; then
  # A CUDA-only build (MLX off) has no tf_model_speed_bench: its model section decodes 256 tokens after a
  # 64-token prompt, no prefill figure. The table says so.
  OUR_BENCH=("$BUILD_DIR/bench/tf_cuda_bench" --section model --model)
fi
# Memory ours may take (MiB): --ours-max-mem, else what is available now less 1.5 GiB for the rest of the
# machine. Past it, ours is stopped (the bench by `sbs.py guard`, the server by `sbs.py http`'s watcher).
mem_limit_mb() {
  if [ -n "$OURS_MAX_MEM" ]; then echo "$OURS_MAX_MEM"; return; fi
  awk '/^MemAvailable:/ {print int($2 / 1024) - 1536}' /proc/meminfo
}
# `tensorfold info`'s estimate (weights + a full KV cache) in MiB.
info_mib() {
  "$BUILD_DIR/tensorfold" info "$1" 2>/dev/null | awk '/^memory/ {v = $2; gsub(",", "", v);
    if ($3 == "GiB") v *= 1024; else if ($3 == "KiB") v /= 1024; print int(v)}'
}

{
  echo "machine: $(nproc) cores, $(awk '/^MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo),"\
       "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "llama.cpp: llama-cpp-python $VERSION vendor, $([ $CUDA = 1 ] && echo 'CUDA sm_90' || echo 'CPU, GGML_NATIVE'); ours: $BUILD_DIR"
  echo "threads $THREADS; pp$PP, tg$TG, $REPS repeats; HTTP max_tokens $HTTP_TOKENS"
} | tee "$RUN/header" >&2

for name in ${MODELS//,/ }; do
  f=$(model_path "$name")
  tag=$(basename "$name" .gguf)
  echo "$tag" >>"$RUN/models"
  if [ ! -f "$f" ]; then
    log "$tag: $f is missing, skipped"
    echo "{\"error\": \"$f missing\"}" >"$RUN/$tag.llama-bench.json"
    continue
  fi
  log "$tag: $f"

  log "$tag: llama-bench"
  timeout 3600 "$LB/llama-bench" -m "$f" -t "$THREADS" -p "$PP" -n "$TG" -r "$REPS" "${NGL[@]}" -o json \
    >"$RUN/$tag.llama-bench.out" 2>"$RUN/$tag.llama-bench.err" || log "$tag: llama-bench failed (see $RUN/$tag.llama-bench.err)"
  $SBS llama-bench "$RUN/$tag.llama-bench.out" "$RUN/$tag.llama-bench.json"

  our_skip=
  if [ $OURS = 0 ]; then
    our_skip="--no-ours"
  elif [ ${#OUR_BENCH[@]} = 0 ] || [ ! -x "$BUILD_DIR/tensorfold" ]; then
    our_skip="no tensorfold / bench binary in $BUILD_DIR"
  elif [ $CUDA = 0 ]; then
    need=$(info_mib "$f")
    limit=$(mem_limit_mb)
    if [ -n "$need" ] && [ "$need" -gt "$limit" ]; then
      our_skip="tensorfold info estimates $need MiB, more than the $limit MiB available"
    fi
  fi
  if [ -n "$our_skip" ]; then
    log "$tag: ours skipped: $our_skip"
    echo "{\"error\": \"skipped: $our_skip\"}" >"$RUN/$tag.ours-bench.json"
  else
    log "$tag: ours (memory limit $(mem_limit_mb) MiB)"
    # Decode from an empty context, as the tg test of llama-bench runs: its KV cache starts empty each repeat.
    if [ "${OUR_BENCH[${#OUR_BENCH[@]} - 1]}" = --model ]; then args=("$f"); else args=("$f" "$PP" "$TG" "$REPS" 0 empty); fi
    rc=0
    $SBS guard "$(mem_limit_mb)" "$OURS_TIMEOUT" -- "${PIN[@]}" "${OUR_BENCH[@]}" "${args[@]}" \
      >"$RUN/$tag.ours-bench.out" 2>&1 || rc=$?
    $SBS ours-bench "$RUN/$tag.ours-bench.out" "$RUN/$tag.ours-bench.json"
    if [ $rc != 0 ]; then
      log "$tag: ours failed (exit $rc): $(tail -2 "$RUN/$tag.ours-bench.out" | tr '\n' ' ')"
      # Past the memory limit or the time limit in the bench: the server would fare no better.
      grep -q 'guard: killed: resident memory' "$RUN/$tag.ours-bench.out" && our_skip="ours ran out of memory in the bench"
      grep -q 'guard: killed: still running' "$RUN/$tag.ours-bench.out" && our_skip="ours ran past --ours-timeout in the bench"
    fi
  fi

  if [ $HTTP = 1 ]; then
    log "$tag: llama-server, one request"
    $SBS http --port "$PORT" --out "$RUN/$tag.http-llama.json" --log "$RUN/$tag.llama-server.log" \
      --max-tokens "$HTTP_TOKENS" -- "$LB/llama-server" -m "$f" -t "$THREADS" --host 127.0.0.1 --port "$PORT" \
      -c 4096 -np 1 "${NGL[@]}" || true
    if [ -z "$our_skip" ]; then
      # --no-drafts: llama-server does not draft either, so both decode one token a step per stream.
      log "$tag: tensorfold serve, one request, then 4 at once"
      $SBS http --port $((PORT + 1)) --out "$RUN/$tag.http-ours.json" --log "$RUN/$tag.tensorfold.log" \
        --max-tokens "$HTTP_TOKENS" --streams 4 --max-rss-mb "$(mem_limit_mb)" -- \
        "${PIN[@]}" "$BUILD_DIR/tensorfold" serve "$f" --port $((PORT + 1)) --parallel 4 --no-drafts \
        --context 4096 "${OUR_BACKEND[@]}" || true
    else
      echo "{\"error\": \"skipped: $our_skip\"}" >"$RUN/$tag.http-ours.json"
    fi
  fi
done

echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$RUN/header"
{ cat "$RUN/header"; $SBS table "$RUN"; } | tee "$RUN/table.md"
log "raw outputs and the table: $RUN"
