#!/usr/bin/env bash
# Tensor parallelism's device checks (docs/tensor-parallel.md). With two or more GPUs the ranks sum over NCCL
# (--tp 2 as users run it); with one, TF_TP_ONE_DEVICE=1 puts both ranks on device 0, each on its own thread,
# summing through the host (NCCL refuses two ranks on one device), and the NCCL sum is checked on one rank.
#   scripts/device/tensor-parallel.sh --prebuilt BIN [--llama DIR] [--wheels DIR]
# BIN holds tf_cuda_tests, tf_cuda_greedy_tool, tf_cuda_mtp_tool and tensorfold (scripts/device/prepare-carry.sh);
# --llama: a tiny llama checkpoint (tests/conformance/test_tensor_parallel.py's write_tiny_llama makes one);
# --wheels: the openai SDK wheels for the serving tests. NCCL comes from $TF_NCCL_LIBRARY, else the nvidia-nccl
# wheel beside torch. Prints one line per check and the failures; the logs stay in /tmp/tp.
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN="" LLAMA="" WHEELS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --prebuilt) BIN=$2; shift 2 ;;
    --llama) LLAMA=$2; shift 2 ;;
    --wheels) WHEELS=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$BIN" ] || { echo "--prebuilt BIN is required" >&2; exit 2; }
LOG=/tmp/tp  # logs stay on the machine: this script prints what matters
mkdir -p "$LOG"
note() { echo "[ tp ] $1: $2"; }

if [ -z "${TF_NCCL_LIBRARY:-}" ]; then
  TF_NCCL_LIBRARY=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
  [ -f "$TF_NCCL_LIBRARY" ] || TF_NCCL_LIBRARY=$(find / -name 'libnccl.so.2' 2>/dev/null | head -1)
fi
export TF_NCCL_LIBRARY
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "$GPUS" -ge 2 ]; then
  unset TF_TP_ONE_DEVICE
  MODE="two devices, NCCL ($TF_NCCL_LIBRARY)"
else
  export TF_TP_ONE_DEVICE=1
  MODE="one device: ranks on their own threads, sums through the host"
fi
note mode "$GPUS GPU(s); $MODE"

"$BIN/tf_cuda_tests" --gtest_filter='CudaTensorParallel.*' >"$LOG/unit.log" 2>&1
note unit "rc $?: $(grep -E '^\[ +(PASSED|FAILED) +\]' "$LOG/unit.log" | tr '\n' ' ')"
grep -E '^\[ tensor parallel \]|Failure|rror' "$LOG/unit.log" | head -8

TF_TP=2 python3 tests/conformance/qwen3_5_golden_check.py --exact-dequant "$BIN/tf_cuda_greedy_tool" \
  "$BIN/tf_cuda_mtp_tool" "${QWEN_LOGIT_TOL:-1e-4}" >"$LOG/goldens.log" 2>&1
note qwen3_5_goldens_tp2 "$(tail -1 "$LOG/goldens.log")"
head -6 "$LOG/goldens.log" | cut -c1-400

MODELS=(tests/goldens/qwen3_5/mlx-4bit tests/goldens/qwen3_5/bf16-mtp)
[ -n "$LLAMA" ] && MODELS+=("$LLAMA")
# Logits within the CUDA goldens' tolerance: the kernels' float32 arithmetic differs from one rank's where a
# sum is split in two (measured 2.6e-5 on mlx-4bit, the same size as one rank's distance to the golden).
python3 tests/conformance/test_tensor_parallel.py "$BIN/tf_cuda_greedy_tool" "$LOG" "${QWEN_LOGIT_TOL:-1e-4}" \
  "${MODELS[@]}" >"$LOG/compare.log" 2>&1
note two_vs_one "rc $?"
tail -6 "$LOG/compare.log"

if [ "$GPUS" -lt 2 ]; then  # as users run it: --tp 2 on one GPU is refused at startup, in one line
  env -u TF_TP_ONE_DEVICE "$BIN/tensorfold" serve tests/goldens/qwen3_5/mlx-4bit --tp 2 --port 0 >"$LOG/refuse.log" 2>&1
  note refuse_one_gpu "rc $? ($(wc -l <"$LOG/refuse.log") line): $(tail -1 "$LOG/refuse.log")"
fi

if [ -n "$WHEELS" ] && [ -d "$WHEELS" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/tf-site \
    "$WHEELS"/*.whl >"$LOG/wheels.log" 2>&1 && export PYTHONPATH=/tmp/tf-site:${PYTHONPATH:-}
  TF_BUILD_DIR=$BIN TF_E2E_BACKEND=cuda timeout 600 python3 -m pytest -q -p no:cacheprovider \
    tests/e2e/test_tensor_parallel_serving.py >"$LOG/serving.log" 2>&1
  note serving "$(tail -1 "$LOG/serving.log")"
  grep -E 'FAILED|Error|rror:' "$LOG/serving.log" | head -12
fi
