#!/usr/bin/env bash
# Prepares .cuda-carry/ (ignored by git) for the device machine, which has no network and lacks the text
# libraries' headers: builds the CUDA targets and `tensorfold` here (CUDA on, MLX off) into build-cuda/,
# packs the stripped binaries and the shared libraries the device lacks into bin.tar.xz (one xz -9 archive:
# the binaries share most of their bytes, the kernels above all, so together they pack to ~13 MB), fetches
# the openai SDK wheels, and splits the default model in two (it is larger than one call's 64 MiB), so it
# travels in two calls of a warm machine:
#   run 1: carry .cuda-carry/bin.tar.xz .cuda-carry/m/part_a   (tests, benchmarks; bin/ and part_a kept in /tmp)
#   run 2: carry .cuda-carry/whl .cuda-carry/m/part_b   (joins the parts; golden, serve + openai, drafting,
#          the default model's benchmark). Issue run 2 at once: the machine stays warm only 30 s after a call.
# It also puts the kernel tracer and the CUPTI library it needs into .cuda-carry/trace (4 MB; carry it when
# tracing, docs/benchmarks.md "Eighth session").
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
EXCLUDE=$(git rev-parse --git-path info/exclude)  # also right in a git worktree (.git is a file there)
mkdir -p "$(dirname "$EXCLUDE")"
grep -qx '/.cuda-carry/' "$EXCLUDE" 2>/dev/null || echo '/.cuda-carry/' >>"$EXCLUDE"
C=.cuda-carry
mkdir -p $C/whl $C/m
cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DTENSORFOLD_MLX=OFF -DTENSORFOLD_CUDA=ON \
  -DTENSORFOLD_GPU_TESTS=ON -DCMAKE_CUDA_ARCHITECTURES=90a >/dev/null
ninja -C build-cuda tf_cuda_tests tf_cuda_greedy_tool tf_cuda_mtp_tool bench/tf_cuda_bench bench/tf_cuda_stack_probe tensorfold \
  bench/libtf_cuda_kernel_trace.so bench/tf_vision_encode_bench
rm -rf $C/bin && mkdir -p $C/bin/bench $C/bin/lib
cp build-cuda/tf_cuda_tests build-cuda/tf_cuda_greedy_tool build-cuda/tf_cuda_mtp_tool build-cuda/tensorfold $C/bin/
cp build-cuda/bench/tf_cuda_bench build-cuda/bench/tf_cuda_stack_probe build-cuda/bench/tf_vision_encode_bench $C/bin/bench/
mkdir -p $C/trace
cp build-cuda/bench/libtf_cuda_kernel_trace.so $C/trace/
cp -L "$(dirname "$(readlink -f "$(command -v nvcc)")")/../lib/libcupti.so.13" $C/trace/ 2>/dev/null ||
  cp -L /usr/local/cuda/lib64/libcupti.so.13 $C/trace/
strip $C/bin/tf_* $C/bin/tensorfold $C/bin/bench/*
for l in libutf8proc.so.2 libcpp-httplib.so.0.11 libfmt.so.9 libpcre2-8.so.0 libbrotlidec.so.1 libbrotlienc.so.1 \
         libbrotlicommon.so.1; do
  cp -L "/lib/x86_64-linux-gnu/$l" $C/bin/lib/
done
(cd $C && rm -f bin*.tar.xz && tar -cf - bin | xz -9 -T2 >bin.tar.xz)
if [ -z "$(ls $C/whl 2>/dev/null)" ]; then
  python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d $C/whl \
    "openai<2" pydantic pydantic_core jiter distro sniffio annotated_types typing_inspection typing_extensions
fi
MODEL=${TENSORFOLD_HOME:-$HOME/.cache/tensorfold/models}/SmolLM2-135M-Instruct.Q4_1.gguf
if [ -f "$MODEL" ]; then
  head -c 50000000 "$MODEL" >$C/m/part_a
  tail -c +50000001 "$MODEL" >$C/m/part_b
fi
du -sh $C/bin.tar.xz $C/whl $C/m/* 2>/dev/null
