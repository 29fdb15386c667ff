#!/usr/bin/env bash
# Builds the libFuzzer targets (build-fuzz/, clang, ASan+UBSan), replays the regression inputs under
# tests/fuzz/regressions/, then fuzzes each target for SECONDS seconds.
#
#   scripts/run_fuzzers.sh [SECONDS] [TARGET...]     (default 30 seconds, all targets)
#
# Environment: FUZZ_BUILD_DIR (default build-fuzz), FUZZ_JOBS (targets fuzzed at once, default 1),
# FUZZ_MAX_LEN (default 8192), FUZZ_ARGS (extra libFuzzer flags).
# The corpus of each target grows in $FUZZ_BUILD_DIR/corpus-<target>, seeded from the generated
# $FUZZ_BUILD_DIR/seeds/<target>; crash inputs land in $FUZZ_BUILD_DIR/artifacts/<target>/ and the full
# libFuzzer output in $FUZZ_BUILD_DIR/logs/<target>.log. Exits non-zero if any input crashes a target.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
SECONDS_PER_TARGET="${1:-30}"
shift || true
[[ "$SECONDS_PER_TARGET" =~ ^[0-9]+$ ]] || { echo "usage: $0 [SECONDS] [TARGET...]" >&2; exit 2; }
ALL_TARGETS=(fuzz_gguf fuzz_safetensors fuzz_mlx_quant_config fuzz_tokenizer fuzz_template fuzz_request fuzz_image)
TARGETS=("${@:-${ALL_TARGETS[@]}}")
BUILD="${FUZZ_BUILD_DIR:-build-fuzz}"
JOBS="${FUZZ_JOBS:-1}"
MAX_LEN="${FUZZ_MAX_LEN:-8192}"
read -r -a EXTRA <<<"${FUZZ_ARGS:-}"

# ---- configure + build (idempotent: ninja rebuilds only what changed) ----------------------------------
if ! grep -qs '^TENSORFOLD_FUZZ:BOOL=ON' "$BUILD/CMakeCache.txt" || [[ ! -f "$BUILD/build.ninja" ]]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  CC="${CC:-clang}" CXX="${CXX:-clang++}" cmake -S . -B "$BUILD" -G Ninja -DTENSORFOLD_FUZZ=ON \
    -DTENSORFOLD_MLX=OFF -DTENSORFOLD_CUDA=OFF -DTENSORFOLD_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "${launcher[@]}" >/dev/null
fi
cmake --build "$BUILD" --target "${TARGETS[@]}" -j "$(nproc)"

python3 tests/fuzz/make_seeds.py "$BUILD/seeds" >/dev/null
# Real chat templates seed the template fuzzer; the README and docs seed the tokenizer's.
mkdir -p "$BUILD/seeds/fuzz_template" "$BUILD/seeds/fuzz_tokenizer"
if corpus=$(scripts/fetch_text_corpus.sh 2>/dev/null); then
  cp "$corpus"/templates/*.jinja "$BUILD/seeds/fuzz_template/" 2>/dev/null || true
fi
cp README.md docs/*.md "$BUILD/seeds/fuzz_tokenizer/"

# ---- regressions: every input that once crashed a target must now pass ---------------------------------
status=0
for t in "${TARGETS[@]}"; do
  reg="tests/fuzz/regressions/$t"
  [[ -d "$reg" ]] || continue
  mapfile -t files < <(find "$reg" -type f ! -name '*.md' | sort)
  ((${#files[@]})) || continue
  mkdir -p "$BUILD/logs"
  if "$BUILD/fuzz/$t" -runs=1 "${files[@]}" >"$BUILD/logs/$t.regressions.log" 2>&1; then
    echo "$t: regressions OK (${#files[@]} inputs)"
  else
    echo "$t: REGRESSION FAILED (see $BUILD/logs/$t.regressions.log)"
    status=1
  fi
done

# ---- fuzz ---------------------------------------------------------------------------------------------
fuzz_one() {
  local t="$1" corpus="$BUILD/corpus-$1" art="$BUILD/artifacts/$1/" log="$BUILD/logs/$1.log"
  local dict=() start rc=0
  mkdir -p "$corpus" "$art" "$BUILD/logs"
  [[ -f "tests/fuzz/$t.dict" ]] && dict=(-dict="tests/fuzz/$t.dict")
  start=$(date +%s)
  # New inputs go to the first directory (the corpus); the seeds directory is only read.
  "$BUILD/fuzz/$t" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 -max_len="$MAX_LEN" \
    -print_final_stats=1 -artifact_prefix="$art" "${dict[@]}" "${EXTRA[@]}" "$corpus" "$BUILD/seeds/$t" \
    >"$log" 2>&1 || rc=$?
  local secs=$(( $(date +%s) - start ))
  local execs corpus_n
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  corpus_n=$(find "$corpus" -type f | wc -l)
  if ((rc == 0)); then
    echo "$t: OK execs=${execs:-?} time=${secs}s corpus=${corpus_n}"
  else
    local crash
    crash=$(grep -o "Test unit written to .*" "$log" | tail -1 | sed 's/Test unit written to //')
    echo "$t: CRASH (exit $rc) execs=${execs:-?} time=${secs}s input=${crash:-?} log=$log"
  fi
  echo "$rc" >"$BUILD/logs/$t.rc"
}

for t in "${TARGETS[@]}"; do
  rm -f "$BUILD/logs/$t.rc"
  while (($(jobs -rp | wc -l) >= JOBS)); do wait -n || true; done
  fuzz_one "$t" &
done
wait
for t in "${TARGETS[@]}"; do
  [[ "$(cat "$BUILD/logs/$t.rc" 2>/dev/null)" == 0 ]] || status=1
done
exit "$status"
