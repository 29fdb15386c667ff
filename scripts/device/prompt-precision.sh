#!/usr/bin/env bash
# Prompt precision on the device (issue 53, step 1): both modes of the CUDA prompt path (bf16, the default, and
# --precision full) checked and timed in one warm machine, on binaries built here (scripts/device/prepare-carry.sh
# builds build-cuda/ and packs .cuda-carry/bin.tar.xz; the models are the in-tree tiny qwen3_5 checkpoints and
# random-weight shapes, so no model file travels). Two calls, the second issued at once after the first:
#   check, carry .cuda-carry/bin.tar.xz .cuda-carry/whl: the float64 reference of the bf16 mode
#     (scripts/golden/make_qwen3_5_bf16x_goldens.py, into $OUT to be committed), the GEMM's kernel tests in both
#     forms, the qwen3_5 goldens in both modes, the prefill benchmarks in both modes (tf_cuda_bench
#     --section prefill_gemm, then smollm2_shape and llama8b with --precision full and bf16: 2k-token prefill),
#     then, while time is left (CHECK_BUDGET_S, 470), the startup report and /health in both modes and prompt
#     caching's cached == fresh on mlx-4bit in both modes;
#   serve (no carry): the tiny qwen3_5 served (drafted == serial == concurrent, the suite's pytest file; bf16),
#     and the unit, invariance and piece suites.
# Logs: $OUT/logs-check.tgz and logs-serve.tgz; the new goldens: $OUT/VARIANT.golden_bf16x.json.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
RESULTS=${OUT:-$ROOT/precision-out}
W=/tmp/tfprec
# Logs in $W/logs, packed into $RESULTS/logs-PHASE.tgz after every step (the device returns at most 8 files).
OUT=$W/logs
mkdir -p "$RESULTS" "$OUT"
export LD_LIBRARY_PATH="$W/bin/lib:${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64"
B=$W/bin
T0=$(date +%s)
stamp() {
  tar -C "$OUT" -czf "$RESULTS/logs-${PHASE:-x}.tgz" . 2>/dev/null
  echo "== $1 ($(( $(date +%s) - T0 )) s)"
}
PHASE=${1:-}

case "${1:-}" in
check)
  tar -C $W -xJf .cuda-carry/bin.tar.xz
  mkdir -p $W/whl && cp .cuda-carry/whl/*.whl $W/whl/ 2>/dev/null
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/machine.txt"
  stamp "golden_bf16x"
  timeout 240 python3 scripts/golden/make_qwen3_5_bf16x_goldens.py >"$OUT/bf16x_goldens.log" 2>&1
  echo "rc $?"; grep -E "linears rounded|Error|assert" "$OUT/bf16x_goldens.log"
  for v in mlx-4bit mlx-mixed bonsai-2bit; do
    cp tests/goldens/qwen3_5/$v/golden_bf16x.json "$RESULTS/$v.golden_bf16x.json" 2>/dev/null
  done
  stamp "GEMM kernel tests"
  timeout 300 $B/tf_cuda_tests --gtest_filter='CudaKernels.PrefillLinearMma*' >"$OUT/mma_tests.log" 2>&1
  echo "rc $?"; grep -E '^\[ mma|OK \]|FAILED|Failure|Expected|Which is' "$OUT/mma_tests.log" | head -20
  for mode in full bf16; do
    stamp "qwen3_5 goldens, $mode"
    python3 tests/conformance/qwen3_5_golden_check.py --exact-dequant --precision=$mode $B/tf_cuda_greedy_tool \
      $B/tf_cuda_mtp_tool 1e-4 >"$OUT/qwen3_5_goldens_$mode.log" 2>&1
    echo "rc $?"; cat "$OUT/qwen3_5_goldens_$mode.log"
  done
  stamp "bench prefill_gemm"
  timeout 200 $B/bench/tf_cuda_bench --section prefill_gemm --json "$OUT/bench_prefill_gemm.json" >"$OUT/bench_prefill_gemm.log" 2>&1
  grep RESULT "$OUT/bench_prefill_gemm.log" | grep -E "ms |over"
  for sec in smollm2_shape llama8b; do
    for mode in full bf16; do
      stamp "bench $sec $mode"
      timeout 120 $B/bench/tf_cuda_bench --section $sec --precision $mode --json "$OUT/bench_${sec}_$mode.json" \
        >"$OUT/bench_${sec}_$mode.log" 2>&1
      grep -E "RESULT.*(prefill_2k|decode_tokens_per_s)" "$OUT/bench_${sec}_$mode.log"
    done
  done
  M=tests/goldens/qwen3_5/mlx-4bit
  for mode in full bf16; do
    [ $(( $(date +%s) - T0 )) -gt ${CHECK_BUDGET_S:-470} ] && { echo "== out of time: report, /health, cache equality skipped"; break; }
    stamp "report and /health, $mode"
    $B/tensorfold serve $M --backend cuda --port 18095 --precision $mode >"$OUT/serve_$mode.log" 2>&1 &
    SPID=$!
    for _ in $(seq 1 120); do curl -sf http://127.0.0.1:18095/health >/dev/null 2>&1 && break; sleep 0.5; done
    grep -E "^\s*(backend|prompts)" "$OUT/serve_$mode.log"
    curl -s http://127.0.0.1:18095/health; echo
    kill $SPID; wait $SPID 2>/dev/null
    stamp "prompt cache equality, $mode"
    timeout 150 python3 bench/prompt_cache/equality.py --bin $B/tensorfold --model $M --serve-arg=--backend=cuda \
      --serve-arg=--precision=$mode --cases 0.0,0.1,0.2 --turns 3 --workdir "$OUT/pc_$mode" >"$OUT/prompt_cache_$mode.log" 2>&1
    echo "rc $?: $(tail -1 "$OUT/prompt_cache_$mode.log")"
  done
  stamp done
  ;;
serve)
  [ -x $B/tensorfold ] || { echo "no binaries: run the check phase first on this machine"; exit 1; }
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/tf-site \
    $W/whl/*.whl >/dev/null 2>&1 && export PYTHONPATH=/tmp/tf-site:${PYTHONPATH:-}
  stamp "qwen3_5 served (bf16): drafted == serial == concurrent"
  TF_BUILD_DIR=$B TF_E2E_BACKEND=cuda timeout 240 python3 -m pytest -q -p no:cacheprovider -x \
    tests/e2e/test_qwen3_5_serving.py >"$OUT/qwen3_5_serving.log" 2>&1
  echo "rc $?: $(tail -1 "$OUT/qwen3_5_serving.log")"
  stamp "unit, invariance, pieces"
  OUT=$OUT/suite timeout 280 scripts/device/run-gpu-suite.sh --prebuilt $B --skip-bench 2>&1 | tail -8
  stamp done
  ;;
*) echo "usage: $0 check|serve" >&2; exit 2 ;;
esac
