#!/usr/bin/env bash
# Sampled vs greedy decoding on the device, beside llama-server on the same GGUF (issue: sampled replies as fast
# as greedy ones). Three calls of one warm machine, each issued at once after the last: the binaries
# (scripts/device/prepare-carry.sh's bin.tar.xz, 21 MB) and the default model (98 MB, cut in three here:
# `split -n 3 -d -a 1 MODEL .cuda-carry/m3/p`) are more than one call's 64 MiB of carry:
#   parts (first), carry .cuda-carry/m3/p1 .cuda-carry/whl .bench-carry/pack/llama.cpp-src.tar.xz: keeps them
#     and starts the llama-server build (CUDA sm_90) in the background;
#   phase1, carry .cuda-carry/bin.tar.xz .cuda-carry/m3/p0: the GPU suite's unit, invariance, qwen3_5 golden
#     and serving steps on the prebuilt binaries, while llama.cpp builds;
#   phase2, carry .cuda-carry/m3/p2:
#     joins the model, checks drafted == serial and concurrent == solo over HTTP (every temperature and filter),
#     times bench/sampling/sampled_speed.py against `tensorfold serve --backend cuda` (drafts on and off), then
#     against llama-server -np 16 once its build is done.
# Logs and JSON go to $OUT.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/sampling-out}
mkdir -p "$OUT"
W=/tmp/tfsample
mkdir -p $W
export LD_LIBRARY_PATH="$W/bin/lib:${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64"
PORT=18091
LPORT=18092

wait_up() {  # $1 port, $2 pid: until a one-token chat is answered (the model list answers before loading ends)
  for _ in $(seq 1 240); do
    curl -sf "http://127.0.0.1:$1/v1/chat/completions" -H 'Content-Type: application/json' \
      -d '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":1}' >/dev/null 2>&1 && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.5
  done
  return 1
}

case "${1:-}" in
phase1)
  tar -C $W -xJf .cuda-carry/bin.tar.xz
  cp .cuda-carry/m3/p0 $W/
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/machine.txt"
  B=$W/bin/tf_cuda_tests
  $B --gtest_filter='CudaKernels.Sampling*:CudaKernels.Gumbel*' 2>&1 | tee "$OUT/sampling_kernel.log" | grep -E '^\[ sampling|OK|FAILED|Failure|PASSED' | head -30
  # KERNEL_ONLY=1: the sampler's kernel test alone (a rerun after a change to sample.cu only).
  [ "${KERNEL_ONLY:-0}" = 1 ] || OUT=$OUT/suite scripts/device/run-gpu-suite.sh --prebuilt $W/bin --skip-bench --wheels $W/whl 2>&1 | tail -25
  ;;
parts)
  cp .cuda-carry/m3/p1 $W/
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/tf-site \
    .cuda-carry/whl/*.whl && echo "wheels installed"
  mkdir -p $W/whl && cp .cuda-carry/whl/*.whl $W/whl/
  [ -f .bench-carry/pack/llama.cpp-src.tar.xz ] || exit 0  # not carried: no llama-server this time
  mkdir -p $W/llama && tar -C $W/llama -xJf .bench-carry/pack/llama.cpp-src.tar.xz
  (cd $W/llama && setsid nohup bash -c "cmake -S src -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
      -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
      -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DGGML_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES=90 >configure.log 2>&1 && cmake --build build --target llama-server -j12 >build.log 2>&1; \
      echo \$? >build.rc" >/dev/null 2>&1 &)
  ;;
phase2)
  cat $W/p0 $W/p1 .cuda-carry/m3/p2 >$W/model.gguf
  ls -la $W/model.gguf
  export PYTHONPATH=/tmp/tf-site:${PYTHONPATH:-}
  M=$W/model.gguf
  $W/bin/tensorfold serve $M --backend cuda --port $PORT --parallel 16 >"$OUT/serve.log" 2>&1 &
  SPID=$!
  if wait_up $PORT $SPID; then
    timeout 240 python3 scripts/device/drafting_equality.py http://127.0.0.1:$PORT >"$OUT/drafting_equality.log" 2>&1
    echo "drafting_equality rc $?: $(tail -1 "$OUT/drafting_equality.log")"
    timeout 240 python3 scripts/device/concurrency_equality.py http://127.0.0.1:$PORT 16 >"$OUT/concurrency_equality.log" 2>&1
    echo "concurrency_equality rc $?: $(tail -1 "$OUT/concurrency_equality.log")"
    for d in ${DRAFTS:-false true}; do
      timeout 200 python3 bench/sampling/sampled_speed.py --url http://127.0.0.1:$PORT --label ours --draft $d \
        --reps "${REPS:-2}" --json "$OUT/ours_draft_$d.json" 2>&1 | grep -v RESULT
    done
  else
    echo "serve did not start: $(tail -3 "$OUT/serve.log")"
  fi
  kill $SPID 2>/dev/null; wait $SPID 2>/dev/null
  [ "${SKIP_LLAMA:-0}" = 1 ] && exit 0
  for _ in $(seq 1 100); do [ -f $W/llama/build.rc ] && break; sleep 3; done
  echo "llama-server build rc $(cat $W/llama/build.rc 2>/dev/null || echo unfinished)"
  LS=$W/llama/build/bin/llama-server
  if [ -x "$LS" ]; then
    $LS -m $M -ngl 99 -np 16 -c 32768 --port $LPORT >"$OUT/llama_server.log" 2>&1 &
    LPID=$!
    if wait_up $LPORT $LPID; then
      timeout 200 python3 bench/sampling/sampled_speed.py --url http://127.0.0.1:$LPORT --label llama-server \
        --reps "${REPS:-2}" --json "$OUT/llama_server.json" 2>&1 | grep -v RESULT
    else
      echo "llama-server did not start: $(tail -3 "$OUT/llama_server.log")"
    fi
    kill $LPID 2>/dev/null; wait $LPID 2>/dev/null
  else
    tail -5 $W/llama/build.log 2>/dev/null
  fi
  ;;
*) echo "usage: $0 phase1|parts|phase2" >&2; exit 2 ;;
esac
