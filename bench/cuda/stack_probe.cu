// Layer-stack read probe (docs/benchmarks.md, "Eighth session"): how long does one decode token's weight
// stream of the 8B and 27B-class shapes take when nothing but the reads and the dependencies between
// matrices remain? A token reads every layer's q/k/v, o, gate/up and down (codes and the tiled scale copy,
// 0.5625 bytes a weight, as the benchmark's bound counts them) and the lm_head: 4.2 GB (8B) or 13.0 GB
// (27B). A matrix may only be consumed once the step before it has finished (attention sits between q/k/v
// and o), so the question is what a dependency costs:
//
//   per-matrix kernels   one read kernel a matrix in a CUDA graph with programmatic dependent launch, D
//                        loads a lane issued before griddepcontrol.wait: today's design;
//   persistent           one kernel a token, one wave, a grid barrier at every dependency (five a layer:
//                        after q/k/v, after an attention phase, after o, gate/up and down), loads of the
//                        next matrix issued only after the barrier;
//   persistent+ahead     the same, but each warp's first D loads of the next matrix are issued before it
//                        arrives at the barrier (weights never depend on activations).
//
// The attention phase keeps 80 blocks busy for 0, 4 or 10 µs (a spin), as the real one takes time.
//   tf_cuda_stack_probe [8b|27b]...   (both without arguments)
#include <cuda_runtime.h>

#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "probe_common.cuh"

namespace {

using tf::bench::load_stream;
using tf::bench::spin_ns;

constexpr int kMaxMatrices = 64 * 4 + 1;

// The token's matrices in order: a base pointer and the warp-loads (512 bytes) each warp reads of it.
struct Stack {
  const uint4* base[kMaxMatrices];
  long long steps[kMaxMatrices];  // per warp, a multiple of the batch
  int n = 0;
};

// A sense-reversing grid barrier over one resident wave: the last block to arrive bumps the generation.
__device__ void grid_barrier(unsigned* count, volatile unsigned* gen) {
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned g = *gen;
    __threadfence();
    if (atomicAdd(count, 1u) == gridDim.x - 1) {
      *count = 0;
      __threadfence();
      *gen = g + 1;
    } else {
      while (*gen == g) {
      }
    }
    __threadfence();
  }
  __syncthreads();
}

// Barriers before matrix m (m > 0): one after the previous matrix, and for an o projection (m % 4 == 1) a
// second one after the attention phase, in which `attn_blocks` blocks spin for attn_ns.
__device__ void dependency(int m, unsigned* count, volatile unsigned* gen, int attn_blocks, long long attn_ns) {
  grid_barrier(count, gen);
  if (m % 4 == 1) {
    if (static_cast<int>(blockIdx.x) < attn_blocks && attn_ns > 0) spin_ns(attn_ns);
    grid_barrier(count, gen);
  }
}

template <int D, bool AHEAD>
__global__ void persistent_kernel(Stack st, unsigned* count, unsigned* gen, int attn_blocks, long long attn_ns,
                                  unsigned* sink) {
  const long long warp = (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x & 31);
  unsigned acc = 0;
  int m = 0;        // the matrix being read
  long long s = 0;  // its next warp-load
  uint4 cur[D];
  auto load = [&](uint4(&v)[D], int mm, long long ss) {
    const uint4* p = st.base[mm] + (warp * st.steps[mm] + ss) * 32 + lane;
#pragma unroll
    for (int i = 0; i < D; ++i) v[i] = load_stream(p + i * 32);
  };
  load(cur, 0, 0);
  for (;;) {
    // The next batch: the rest of this matrix, or the first loads of the next one.
    int nm = m;
    long long ns = s + D;
    if (ns >= st.steps[m]) nm = m + 1, ns = 0;
    const bool more = nm < st.n;
    uint4 nxt[D];
    if (more && (AHEAD || nm == m)) load(nxt, nm, ns);
#pragma unroll
    for (int i = 0; i < D; ++i) acc ^= cur[i].x ^ cur[i].y ^ cur[i].z ^ cur[i].w;
    if (!more) break;
    if (nm != m) {
      dependency(nm, count, gen, attn_blocks, attn_ns);
      if (!AHEAD) load(nxt, nm, ns);
    }
    m = nm, s = ns;
#pragma unroll
    for (int i = 0; i < D; ++i) cur[i] = nxt[i];
  }
  if (acc == 0x12345678u) *sink = acc;  // keeps the loads; never true for the fill pattern
}

// Today's design, reduced to its reads: D loads a lane before griddepcontrol.wait, the rest after, 2D in
// flight as in the persistent kernel.
template <int D>
__global__ void matrix_kernel(const uint4* __restrict__ src, long long steps, unsigned* sink) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const long long warp = (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) >> 5;
  const uint4* p = src + warp * steps * 32 + (threadIdx.x & 31);
  unsigned acc = 0;
  uint4 cur[D], nxt[D];
#pragma unroll
  for (int i = 0; i < D; ++i) cur[i] = load_stream(p + i * 32);
  asm volatile("griddepcontrol.wait;" ::: "memory");
  for (long long s = 0;; s += D) {
    const bool more = s + D < steps;
    if (more)
#pragma unroll
      for (int i = 0; i < D; ++i) nxt[i] = load_stream(p + (s + D + i) * 32);
#pragma unroll
    for (int i = 0; i < D; ++i) acc ^= cur[i].x ^ cur[i].y ^ cur[i].z ^ cur[i].w;
    if (!more) break;
#pragma unroll
    for (int i = 0; i < D; ++i) cur[i] = nxt[i];
  }
  if (acc == 0x12345678u) *sink = acc;
}

__global__ void attn_spin_kernel(long long ns) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if (ns > 0) spin_ns(ns);
}

template <typename... KArgs, typename... Args>
void launch_pdl(void (*kernel)(KArgs...), dim3 grid, dim3 block, cudaStream_t s, Args... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  cudaLaunchKernelEx(&cfg, kernel, args...);
}

struct Shape {
  const char* name;
  long long layers, hidden, q_dim, kv_dim, ffn, vocab;
};

int probe(const Shape& sh, int sms);

}  // namespace

int main(int argc, char** argv) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const Shape b8{"8B", 32, 4096, 4096, 1024, 14336, 128256}, b27{"27B-class", 64, 5120, 6144, 1024, 17408, 248320};
  int rc = 0;
  if (argc < 2) return probe(b8, sms) | probe(b27, sms);
  for (int i = 1; i < argc; ++i) rc |= probe(std::string(argv[i]) == "27b" ? b27 : b8, sms);
  return rc;
}

namespace {

int probe(const Shape& sh, int sms) {
  // Rows x cols of each matrix of a layer, then the lm_head; 0.5625 bytes a weight.
  std::vector<double> bytes;
  for (int l = 0; l < sh.layers; ++l)
    for (long long rc :
         {(sh.q_dim + 2 * sh.kv_dim) * sh.hidden, sh.hidden * sh.q_dim, 2 * sh.ffn * sh.hidden, sh.hidden * sh.ffn})
      bytes.push_back(static_cast<double>(rc) * 0.5625);
  bytes.push_back(static_cast<double>(sh.vocab * sh.hidden) * 0.5625);
  double total_bytes = 0;
  for (double b : bytes) total_bytes += b;
  char* buf = nullptr;
  unsigned *sink = nullptr, *bar = nullptr;
  const size_t alloc = static_cast<size_t>(total_bytes) + (64ull << 20);
  if (cudaMalloc(&buf, alloc) != cudaSuccess || cudaMalloc(&sink, 4) != cudaSuccess ||
      cudaMalloc(&bar, 8) != cudaSuccess) {
    std::fprintf(stderr, "tf_cuda_stack_probe: no device memory\n");
    return 1;
  }
  cudaMemset(buf, 1, alloc);
  cudaMemset(bar, 0, 8);
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  cudaEvent_t ea, eb;
  cudaEventCreate(&ea);
  cudaEventCreate(&eb);

  // Copy bandwidth in the same run (read + write of 1 GB), the bound's denominator.
  {
    char* dst = buf + (1ull << 30);
    cudaMemcpyAsync(dst, buf, 1ull << 30, cudaMemcpyDeviceToDevice, stream);
    cudaEventRecord(ea, stream);
    for (int i = 0; i < 10; ++i) cudaMemcpyAsync(dst, buf, 1ull << 30, cudaMemcpyDeviceToDevice, stream);
    cudaEventRecord(eb, stream);
    cudaEventSynchronize(eb);
    float ms = 0;
    cudaEventElapsedTime(&ms, ea, eb);
    const double bw = 2.0 * (1ull << 30) * 10 / (ms * 1e-3);
    std::printf(
        "== %s shape: SMs %d, copy bandwidth %.2f TB/s; the token's "
        "matrices %.3f GB: %.0f us at that rate\n",
        sh.name, sms, bw / 1e12, total_bytes / 1e9, total_bytes / bw * 1e6);
  }

  auto make_stack = [&](long long warps, int batch, double* read) {
    Stack st;
    size_t off = 0;
    *read = 0;
    for (double b : bytes) {
      st.base[st.n] = reinterpret_cast<const uint4*>(buf + off);
      const long long steps = static_cast<long long>(b / 512 / warps) / batch * batch;
      st.steps[st.n++] = steps < batch ? batch : steps;
      *read += static_cast<double>(st.steps[st.n - 1]) * warps * 512;
      off += (static_cast<size_t>(b) + 4095) / 4096 * 4096;
    }
    return st;
  };
  auto time_us = [&](auto token, int reps) {
    for (int i = 0; i < 3; ++i) token();
    cudaEventRecord(ea, stream);
    for (int i = 0; i < reps; ++i) token();
    cudaEventRecord(eb, stream);
    cudaEventSynchronize(eb);
    float ms = 0;
    cudaEventElapsedTime(&ms, ea, eb);
    return ms * 1e3 / reps;
  };

  for (long long attn_ns : {0LL, 4000LL, 10000LL}) {
    std::printf("-- attention phase: %lld ns on 80 blocks\n", attn_ns);
    // Per-matrix kernels in a graph (one wave of 32 warps an SM, D = 4).
    {
      const long long warps = sms * 32LL;
      double read = 0;
      const Stack st = make_stack(warps, 4, &read);
      cudaGraph_t g;
      cudaGraphExec_t ge;
      cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
      for (int m = 0; m < st.n; ++m) {
        launch_pdl(matrix_kernel<4>, dim3(sms * 4), dim3(256), stream, st.base[m], st.steps[m], sink);
        if (m % 4 == 0 && m < st.n - 1) launch_pdl(attn_spin_kernel, dim3(80), dim3(256), stream, attn_ns);
      }
      cudaStreamEndCapture(stream, &g);
      cudaGraphInstantiate(&ge, g, 0);
      const double us = time_us([&] { cudaGraphLaunch(ge, stream); }, 20);
      std::printf(
          "per-matrix kernels (graph, PDL, 32 warps an SM, 4 loads "
          "ahead): %7.1f us, %.2f TB/s\n",
          us, read / us / 1e6);
      cudaGraphExecDestroy(ge);
      cudaGraphDestroy(g);
    }
    auto persistent = [&](auto depth, auto ahead, int warps_per_sm) {
      constexpr int D = decltype(depth)::value;
      constexpr bool A = decltype(ahead)::value;
      const int threads = 256, per_sm_blocks = warps_per_sm / 8;
      int fit = 0;
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, persistent_kernel<D, A>, threads, 0);
      if (fit < per_sm_blocks) {
        std::printf(
            "persistent D=%d %s %d warps an SM: does not fit (%d "
            "blocks an SM)\n",
            D, A ? "ahead" : "", warps_per_sm, fit);
        return;
      }
      double read = 0;
      const Stack st = make_stack(static_cast<long long>(sms) * warps_per_sm, D, &read);
      const int blocks = sms * per_sm_blocks;
      const double us = time_us(
          [&] {
            void* args[] = {const_cast<Stack*>(&st), &bar, nullptr, nullptr, &attn_ns, &sink};
            unsigned* gen = bar + 1;
            int attn_blocks = 80;
            args[2] = &gen;
            args[3] = &attn_blocks;
            cudaLaunchCooperativeKernel(reinterpret_cast<void*>(persistent_kernel<D, A>), dim3(blocks), dim3(threads),
                                        args, 0, stream);
          },
          20);
      std::printf(
          "persistent, %2d warps an SM, %d loads a lane in flight, %s: "
          "%7.1f us, %.2f TB/s\n",
          warps_per_sm, D, A ? "next matrix's loads before the barrier" : "loads after the barrier         ", us,
          read / us / 1e6);
    };
    for (int w : {16, 32}) {
      persistent(std::integral_constant<int, 4>{}, std::false_type{}, w);
      persistent(std::integral_constant<int, 4>{}, std::true_type{}, w);
      persistent(std::integral_constant<int, 8>{}, std::true_type{}, w);
    }
  }
  const cudaError_t err = cudaGetLastError();
  cudaFree(buf);
  cudaFree(sink);
  cudaFree(bar);
  cudaStreamDestroy(stream);
  if (err != cudaSuccess) {
    std::fprintf(stderr, "tf_cuda_stack_probe: %s\n", cudaGetErrorString(err));
    return 1;
  }
  return 0;
}

}  // namespace
