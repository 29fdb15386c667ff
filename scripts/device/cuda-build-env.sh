# Sourced by the device scripts (run-gpu-suite.sh, prompt-cache-bench.sh): the one configuration of the CUDA
# build on the device machine, and the environment a carried sysroot needs (make-sysroot.sh makes it).
#   use_sysroot DIR         headers, libraries and pkg-config files of DIR, for the build and at run time
#   configure_cuda BUILD    cmake -G Ninja, Release, MLX off, CUDA on for sm_90a, the GPU tests' targets too
#                           (so that every device script shares one build directory)
use_sysroot() {
  [ -n "$1" ] || return 0
  local sr
  sr=$(cd "$1" && pwd)
  export PKG_CONFIG_PATH="$sr/lib/pkgconfig:${PKG_CONFIG_PATH:-}" CPATH="$sr/include:${CPATH:-}"
  export LIBRARY_PATH="$sr/lib:${LIBRARY_PATH:-}" LD_LIBRARY_PATH="$sr/lib:${LD_LIBRARY_PATH:-}"
}
configure_cuda() {
  cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTENSORFOLD_MLX=OFF -DTENSORFOLD_CUDA=ON \
    -DTENSORFOLD_GPU_TESTS=ON -DCMAKE_CUDA_ARCHITECTURES=90a
}
