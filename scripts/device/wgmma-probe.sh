#!/usr/bin/env bash
# Issue 53, step 2 on the device, one call: the wgmma prefill GEMM (kernels/prefill_linear_wgmma.cu) checked and
# timed beside the mma.sync GEMM it would replace for --precision bf16, then the GPU suite on the baseline binaries.
# Here, first: scripts/device/prepare-carry.sh (or an archive of the same binaries) for .cuda-carry/bin.tar.xz
# (the baseline), and for .cuda-carry/probe/: the probe
#   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -DTF_CUDA_WGMMA=1 -fmad=false \
#     --expt-relaxed-constexpr -Isrc -I. bench/cuda/wgmma_probe.cu -o .cuda-carry/probe/wgmma_probe
# and new.tar.xz, bin/tf_cuda_tests and bin/bench/tf_cuda_bench of this tree (build-cuda, 90a), stripped.
# Device: run with carry .cuda-carry/bin.tar.xz .cuda-carry/probe. Steps: the probe (float64 check, both
# readings of the descriptor if needed, the 8B layer's GEMM times), the unit test
# `tf_cuda_bench --section prefill_gemm` (mma.sync bf16 / full, wgmma, cuBLAS), with PREFILL_AB=1 the 2k
# prefill of the 8B and SmolLM2 shapes in bf16 with TF_CUDA_PREFILL_WGMMA=0 and 1 (only when the probe
# passed); then the unit test CudaKernels.PrefillLinearWgmma* beside run-gpu-suite.sh --skip-bench on the
# baseline binaries (SUITE_S, 200 s).
set -uo pipefail
cd "$(dirname "$0")/../.."
R=${OUT:-./wgmma-out}
mkdir -p "$R"
W=/tmp/tfw
mkdir -p $W/base $W/new
tar -C $W/base -xJf .cuda-carry/bin.tar.xz
tar -C $W/new -xJf .cuda-carry/probe/new.tar.xz
export LD_LIBRARY_PATH=$W/base/bin/lib:${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64
T0=$(date +%s)
t() { echo "== $1 ($(($(date +%s) - T0)) s)"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
t probe
timeout "${PROBE_S:-100}" .cuda-carry/probe/wgmma_probe >"$R/probe.log" 2>&1
echo "rc $?"
cat "$R/probe.log"
command -v cuobjdump >/dev/null &&
  echo "HGMMA in the probe's SASS: $(cuobjdump --dump-sass .cuda-carry/probe/wgmma_probe | grep -c HGMMA)"
t prefill_gemm
timeout "${GEMM_S:-80}" $W/new/bin/bench/tf_cuda_bench --section prefill_gemm >"$R/gemm.log" 2>&1
echo "rc $?"
grep RESULT "$R/gemm.log" | grep -E '_ms|tflops|over'
if [ "${PREFILL_AB:-0}" = 1 ] && grep -q "correct: kernel's reading PASS" "$R/probe.log"; then
  for on in 0 1; do
    t "2k prefill, bf16, TF_CUDA_PREFILL_WGMMA=$on"
    TF_CUDA_PREFILL_WGMMA=$on timeout 120 $W/new/bin/bench/tf_cuda_bench --section llama8b --section smollm2_shape \
      --precision bf16 >"$R/prefill_$on.log" 2>&1
    echo "rc $?"
    grep -E "RESULT.*(prefill_2k|decode_tokens_per_s)" "$R/prefill_$on.log"
  done
fi
# Correctness only from here: the unit test beside the suite (its host references take CPU time, not GPU).
t "unit test and suite"
timeout "${SUITE_S:-200}" $W/new/bin/tf_cuda_tests --gtest_filter='CudaKernels.PrefillLinearWgmma*' >"$R/unit.log" 2>&1 &
UPID=$!
OUT=$W/suite timeout "${SUITE_S:-200}" scripts/device/run-gpu-suite.sh --prebuilt $W/base/bin --skip-bench \
  >$W/suite.console 2>&1
echo "suite rc $?"
cat $W/suite/summary.tsv
grep -h FAILED $W/suite/*.log | head
tar -C $W/suite -czf "$R/suite.tgz" .
cp $W/suite.console "$R/"
wait $UPID
echo "unit test rc $?"
grep -E '^\[ wgmma|OK \]|FAILED|SKIPPED|Failure|Expected|Which is' "$R/unit.log" | head -20
t done
