// Layer-stack read probe (docs/benchmarks.md, "Eighth session" and "Twelfth session"): how long does one
// decode token's weight stream of the 8B and 27B-class shapes take when nothing but the reads and the
// dependencies between matrices remain? A token reads every layer's q/k/v, o, gate/up and down (codes and
// the tiled scale copy, 0.5625 bytes a weight, as the benchmark's bound counts them) and the lm_head: 4.2 GB
// (8B) or 13.0 GB (27B). A matrix may only be consumed once the step before it has finished (attention sits
// between q/k/v and o), so the question is what a dependency costs:
//
//   per-matrix kernels   one read kernel a matrix in a CUDA graph with programmatic dependent launch, D
//                        loads a lane issued before griddepcontrol.wait: today's design;
//   persistent           one kernel a token, one wave, a grid barrier at every dependency (five a layer:
//                        after q/k/v, after an attention phase, after o, gate/up and down), loads of the
//                        next matrix issued only after the barrier;
//   persistent+ahead     the same, but each warp's first D loads of the next matrix are issued before it
//                        arrives at the barrier (weights never depend on activations);
//   persistent+ring      one block an SM: a producer warp streams the block's share of every matrix into
//                        a shared-memory ring with the bulk copy engine, a few copies in flight, never
//                        waiting for a barrier; the consumer warps alone meet the barriers (session 12).
//
// Every variant reads the same bytes, the whole matrices to within a batch of warp-loads each (before
// session 12 the per-warp share was rounded down: the per-matrix variant read 86% of the 8B bytes, the
// persistent ones other fractions, so their µs were not comparable). Each variant either folds the words
// (reads only) or does a stand-in of the integer matmul's arithmetic on them (`matmul_unit`): the 3-8-row
// form (three x terms, or two), or since session 14 the 1-2-row form a decode step runs (one mma a unit).
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

// What the integer decode matmul (decode_linear_imma_stream.cu) does with 512 bytes of 4-bit codes, a warp
// a unit of 16 rows x 64 k at one activation row: the codes' even and odd nibbles as two u8 A fragments,
// six mma.m16n8k32 against x's three int8 terms (TERMS = 3; 2: the two-term variant docs/cuda.md proposes),
// the terms' sums combined and scaled into four float outputs a lane. The x terms and scales are stand-ins
// (registers, not loads): the arithmetic's pace, not its values, is what the variants are timed on.
// The probe builds alone (no backend includes), and its mma is not volatile, unlike
// decode_linear_imma_terms.cuh's, so the compiler may interleave the independent ones.
__device__ __forceinline__ void mma_u8s8(int (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm(
      "mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <int TERMS>
__device__ __forceinline__ void matmul_unit(const uint4 w, int lane, float (&out)[4]) {
  if constexpr (TERMS == 1) {
    // The kernel's 1-2-row form (decode_linear_imma_stream.cu, PACKED): the three terms of one activation
    // row share an mma as columns, so a unit of 32 k is one mma.m16n8k32; a quad shuffle puts a row's
    // three sums together, and each lane scales two outputs (weight rows r and r + 8).
    const unsigned b = 0x01010101u * static_cast<unsigned>(lane);
    int d[4] = {0, 0, 0, 0};
    const unsigned a0[4] = {w.x & 0x0F0F0F0Fu, w.y & 0x0F0F0F0Fu, (w.x >> 4) & 0x0F0F0F0Fu, (w.y >> 4) & 0x0F0F0F0Fu};
    const unsigned a1[4] = {w.z & 0x0F0F0F0Fu, w.w & 0x0F0F0F0Fu, (w.z >> 4) & 0x0F0F0F0Fu, (w.w >> 4) & 0x0F0F0F0Fu};
    mma_u8s8(d, a0, b, b ^ 1u);
    mma_u8s8(d, a1, b + 1u, b ^ 2u);
    const int n0 = __shfl_down_sync(0xffffffffu, d[0], 1), n2 = __shfl_down_sync(0xffffffffu, d[2], 1);
    const int whole0 = d[0] * 16384 + d[1] * 128 + n0, whole1 = d[2] * 16384 + d[3] * 128 + n2;
    const float ex = __uint_as_float(0x30000000u | static_cast<unsigned>(lane)), ey = 0.5f;  // the group's steps
    out[0] = __fmaf_rn(__fmul_rn(__uint_as_float(w.x << 16), ex), static_cast<float>(whole0),
                       __fmaf_rn(__uint_as_float(w.x & 0xFFFF0000u), ey, out[0]));
    out[1] = __fmaf_rn(__fmul_rn(__uint_as_float(w.y << 16), ex), static_cast<float>(whole1),
                       __fmaf_rn(__uint_as_float(w.y & 0xFFFF0000u), ey, out[1]));
    return;
  }
  const unsigned lo[4] = {w.x & 0x0F0F0F0Fu, w.y & 0x0F0F0F0Fu, w.z & 0x0F0F0F0Fu, w.w & 0x0F0F0F0Fu};
  const unsigned hi[4] = {(w.x >> 4) & 0x0F0F0F0Fu, (w.y >> 4) & 0x0F0F0F0Fu, (w.z >> 4) & 0x0F0F0F0Fu,
                          (w.w >> 4) & 0x0F0F0F0Fu};
  const unsigned b = 0x01010101u * static_cast<unsigned>(lane);
  int d[3][4] = {};
#pragma unroll
  for (int term = 0; term < TERMS; ++term) mma_u8s8(d[term], lo, b + term, b ^ term);
#pragma unroll
  for (int term = 0; term < TERMS; ++term) mma_u8s8(d[term], hi, b - term, b | term);
  const float scale = __uint_as_float(0x3c000000u | (w.x & 0xFFFFu)), bias = __uint_as_float(0x3b000000u | w.y >> 16);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int sum = d[0][i] * 16384 + d[1][i] * 128 + d[2][i];
    out[i] = __fmaf_rn(scale, static_cast<float>(sum), __fmaf_rn(bias, 0.5f, out[i]));
  }
}

// A warp-load's 512 bytes consumed: folded into acc (TERMS = 0), or as a matmul unit into out.
template <int TERMS>
__device__ __forceinline__ void consume(const uint4& w, int lane, unsigned& acc, float (&out)[4]) {
  if constexpr (TERMS == 0)
    acc ^= w.x ^ w.y ^ w.z ^ w.w;
  else
    matmul_unit<TERMS>(w, lane, out);
}

// The token's matrices in order: a base pointer and the warp-loads (512 bytes) each warp reads of it.
struct Stack {
  const uint4* base[kMaxMatrices];
  long long steps[kMaxMatrices];  // per warp, a multiple of the batch
  long long extra[kMaxMatrices];  // warps 0 .. extra - 1 read one batch more: the whole matrix is read
  int batch = 1;
  int n = 0;
};

// Warp w's share of matrix m: its first warp-load and how many it reads.
__device__ __forceinline__ long long warp_first(const Stack& st, int m, long long w) {
  return w * st.steps[m] + (w < st.extra[m] ? w : st.extra[m]) * st.batch;
}
__device__ __forceinline__ long long warp_steps(const Stack& st, int m, long long w) {
  return st.steps[m] + (w < st.extra[m] ? st.batch : 0);
}

// A grid barrier over one resident wave among `threads` threads of each block (from thread `first` on; named
// barrier 1, so a ring's producer warp runs on): one release add to a counter that only grows (zeroed before
// each launch), then acquire loads until every block has added for this barrier: no reset and no second
// write by the last block. (Session 8's sense-reversing barrier, atomicAdd and a generation word with
// __threadfence around them, cost the persistent variants ~0.7-0.8 µs a barrier more; docs/benchmarks.md.)
__device__ void grid_barrier(unsigned* count, unsigned& target, int first, int threads) {
  asm volatile("bar.sync 1, %0;" ::"r"(threads) : "memory");
  target += gridDim.x;
  if (static_cast<int>(threadIdx.x) == first) {
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(count) : "memory");
    unsigned v;
    do asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(count) : "memory");
    while (v < target);
  }
  asm volatile("bar.sync 1, %0;" ::"r"(threads) : "memory");
}

// Barriers before matrix m (m > 0): one after the previous matrix, and for an o projection (m % 4 == 1) a
// second one after the attention phase, in which `attn_blocks` blocks spin for attn_ns. `fewer` (session
// 14): the dependencies a restructured persistent kernel could drop (docs/cuda.md): none before the down
// projection (a block's gate/up rows are its own down K range) and none between q/k/v and the attention
// phase (blocks of whole heads); the down's partial sums and their reduction are not modelled.
__device__ void dependency(int m, unsigned* count, unsigned& target, int first, int threads, int attn_blocks,
                           long long attn_ns, bool fewer = false) {
  if (fewer && m % 4 == 3) return;
  if (!fewer || m % 4 != 1) grid_barrier(count, target, first, threads);
  if (m % 4 == 1) {
    if (static_cast<int>(blockIdx.x) < attn_blocks && attn_ns > 0) spin_ns(attn_ns);
    grid_barrier(count, target, first, threads);
  }
}

template <int D, bool AHEAD, int TERMS>
__global__ void persistent_kernel(Stack st, unsigned* count, int attn_blocks, long long attn_ns, unsigned* sink) {
  const long long warp = (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x & 31);
  unsigned acc = 0, target = 0;
  float out[2][4] = {};
  int m = 0;        // the matrix being read
  long long s = 0;  // its next warp-load
  uint4 cur[D];
  auto load = [&](uint4(&v)[D], int mm, long long ss) {
    const uint4* p = st.base[mm] + (warp_first(st, mm, warp) + ss) * 32 + lane;
#pragma unroll
    for (int i = 0; i < D; ++i) v[i] = load_stream(p + i * 32);
  };
  load(cur, 0, 0);
  for (;;) {
    // The next batch: the rest of this matrix, or the first loads of the next one.
    int nm = m;
    long long ns = s + D;
    if (ns >= warp_steps(st, m, warp)) nm = m + 1, ns = 0;
    const bool more = nm < st.n;
    uint4 nxt[D];
    if (more && (AHEAD || nm == m)) load(nxt, nm, ns);
#pragma unroll
    for (int i = 0; i < D; ++i) consume<TERMS>(cur[i], lane, acc, out[i & 1]);
    if (!more) break;
    if (nm != m) {
      dependency(nm, count, target, 0, static_cast<int>(blockDim.x), attn_blocks, attn_ns);
      if (!AHEAD) load(nxt, nm, ns);
    }
    m = nm, s = ns;
#pragma unroll
    for (int i = 0; i < D; ++i) cur[i] = nxt[i];
  }
  for (int i = 0; i < 8; ++i) acc ^= __float_as_uint(out[i >> 2][i & 3]);
  if (acc == 0x12345678u) *sink = acc;  // keeps the loads; never true for the fill pattern
}

// Today's design, reduced to its reads (or with the matmul's arithmetic): D loads a lane before
// griddepcontrol.wait, the rest after, 2D in flight as in the persistent kernel; 32 warps an SM.
template <int D, int TERMS>
__global__ void __launch_bounds__(256, 4)
    matrix_kernel(const uint4* __restrict__ src, long long steps, long long extra, unsigned* sink) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const long long warp = (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) >> 5;
  const int lane = static_cast<int>(threadIdx.x & 31);
  const uint4* p = src + (warp * steps + (warp < extra ? warp : extra) * D) * 32 + lane;
  if (warp < extra) steps += D;
  unsigned acc = 0;
  float out[2][4] = {};
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
    for (int i = 0; i < D; ++i) consume<TERMS>(cur[i], lane, acc, out[i & 1]);
    if (!more) break;
#pragma unroll
    for (int i = 0; i < D; ++i) cur[i] = nxt[i];
  }
  for (int i = 0; i < 8; ++i) acc ^= __float_as_uint(out[i >> 2][i & 3]);
  if (acc == 0x12345678u) *sink = acc;
}

// Persistent with a weight ring: the weights never depend on activations, so one producer warp a block
// streams the block's share of every matrix, in order, into a ring of shared-memory stages with the bulk
// copy engine (cp.async.bulk completing on an mbarrier), waiting only for a free stage and for the copy
// `inflight` places back to land (more in flight only queues); the consumer warps take each stage as it
// fills and alone meet the grid barriers and the attention phase. The ring keeps the block's reads going
// through a dependency as far as its stages reach (one SM streams ~32 GB/s: a 192 KB ring holds ~6 µs).
struct Ring {
  const char* base[kMaxMatrices];
  long long bytes[kMaxMatrices];  // per block, a multiple of 16
  int n = 0;
};

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
#if __CUDA_ARCH__ >= 900
  asm volatile(
      "{\n .reg .pred p;\n W%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra W%=;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
#endif
}

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// stall[0]: ns the producers waited to issue a copy (a free stage, or fewer than `inflight` outstanding),
// stall[1]: ns the consumers waited for a full stage, stall[2]: ns they spent at the barriers (attention
// phases included); each summed over blocks. deps = 0 drops the barriers and the attention phase; 2 keeps
// three of the five a layer (dependency's `fewer`).
__global__ void ring_kernel(Ring r, int stages, int chunk, unsigned* count, int attn_blocks, long long attn_ns,
                            unsigned* sink, int deps, int inflight, int work, unsigned long long* stall) {
#if __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned long long* full = reinterpret_cast<unsigned long long*>(smem + static_cast<size_t>(stages) * chunk);
  unsigned long long* empty = full + stages;
  const int consumer_warps = static_cast<int>(blockDim.x / 32) - 1;
  if (threadIdx.x == 0) {
    for (int i = 0; i < stages; ++i) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(full + i)));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(empty + i)), "r"(consumer_warps));
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x < 32) {  // the producer
    if (threadIdx.x != 0) return;
    unsigned long long waited = 0;
    int st = 0, lag_st = 0;
    unsigned phase = 0, lag_phase = 0;  // of stage st, and of the copy `inflight` behind
    long long issued = 0;
    for (int m = 0; m < r.n; ++m) {
      const char* src = r.base[m] + blockIdx.x * r.bytes[m];
      for (long long off = 0; off < r.bytes[m]; off += chunk, ++issued) {
        const unsigned long long t0 = now_ns();
        mbar_wait(smem_addr(empty + st), phase ^ 1u);
        if (inflight > 0 && issued >= inflight) {  // at most `inflight` copies outstanding
          mbar_wait(smem_addr(full + lag_st), lag_phase);
          if (++lag_st == stages) lag_st = 0, lag_phase ^= 1u;
        }
        waited += now_ns() - t0;
        const unsigned n = static_cast<unsigned>(r.bytes[m] - off < chunk ? r.bytes[m] - off : chunk);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(full + st)), "r"(n)
                     : "memory");
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                smem_addr(smem + static_cast<size_t>(st) * chunk)),
            "l"(src + off), "r"(n), "r"(smem_addr(full + st))
            : "memory");
        if (++st == stages) st = 0, phase ^= 1u;
      }
    }
    atomicAdd(stall, waited);
    return;
  }
  const int consumers = consumer_warps * 32;
  const int t = static_cast<int>(threadIdx.x) - 32;
  unsigned acc = 0, target = 0;
  float out[4] = {0.0f, 0.0f, 0.0f, 0.0f}, out2[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  unsigned long long waited = 0, at_barriers = 0;
  int st = 0;
  unsigned phase = 0;
  for (int m = 0; m < r.n; ++m) {
    if (m > 0 && deps) {  // the dependencies of the per-matrix and persistent variants
      const unsigned long long t0 = t == 0 ? now_ns() : 0;
      dependency(m, count, target, 32, consumers, attn_blocks, attn_ns, deps == 2);
      if (t == 0) at_barriers += now_ns() - t0;
    }
    for (long long off = 0; off < r.bytes[m]; off += chunk) {
      const unsigned long long t0 = t == 0 ? now_ns() : 0;
      mbar_wait(smem_addr(full + st), phase);
      if (t == 0) waited += now_ns() - t0;
      const int n = static_cast<int>(r.bytes[m] - off < chunk ? r.bytes[m] - off : chunk) / 16;
      const uint4* v = reinterpret_cast<const uint4*>(smem + static_cast<size_t>(st) * chunk);
      if (work == 0) {
        for (int i = t; i < n; i += consumers) {
          const uint4 w = v[i];
          acc ^= w.x ^ w.y ^ w.z ^ w.w;
        }
      } else {
        // Two units at a time into separate outputs: two independent chains a warp, as an unrolled kernel
        // would keep (one chain at a time left the consumers waiting on their own latency).
        for (int u = t >> 5; u * 32 < n; u += 2 * consumer_warps) {
          const int u2 = u + consumer_warps;
          const uint4 w0 = v[u * 32 + (t & 31)];
          const uint4 w1 = u2 * 32 < n ? v[u2 * 32 + (t & 31)] : make_uint4(0, 0, 0, 0);
          if (work == 3) matmul_unit<3>(w0, t & 31, out), matmul_unit<3>(w1, t & 31, out2);
          if (work == 2) matmul_unit<2>(w0, t & 31, out), matmul_unit<2>(w1, t & 31, out2);
          if (work == 1) matmul_unit<1>(w0, t & 31, out), matmul_unit<1>(w1, t & 31, out2);
        }
      }
      __syncwarp();
      if ((t & 31) == 0)
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(empty + st)) : "memory");
      if (++st == stages) st = 0, phase ^= 1u;
    }
  }
  if (t == 0) atomicAdd(stall + 1, waited), atomicAdd(stall + 2, at_barriers);
  for (int i = 0; i < 4; ++i) acc ^= __float_as_uint(out[i]) ^ __float_as_uint(out2[i]);
  if (acc == 0x12345678u) *sink = acc;
#endif
}

__global__ void attn_spin_kernel(long long ns) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if (ns > 0) spin_ns(ns);
}

template <typename... KArgs, typename... Args>
void launch_pdl(void (*kernel)(KArgs...), dim3 grid, dim3 block, int smem, cudaStream_t s, Args... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = static_cast<size_t>(smem);
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  cudaLaunchKernelEx(&cfg, kernel, args...);
}

// How a variant's label names the consumers' work (TERMS / work: 0 reads only).
const char* work_name(int terms) {
  if (terms == 0) return "";
  return terms == 3 ? " doing matmul (3 terms)" : terms == 2 ? " doing matmul (2 terms)" : " doing matmul (1 row)";
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
      cudaMalloc(&bar, 64) != cudaSuccess) {
    std::fprintf(stderr, "tf_cuda_stack_probe: no device memory\n");
    return 1;
  }
  cudaMemset(buf, 1, alloc);
  cudaMemset(bar, 0, 64);
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
      // Every warp reads `steps` warp-loads and the first `extra` one batch more: the matrix to within a
      // batch a warp-load short of its end (so every variant reads the same bytes).
      const long long loads = static_cast<long long>(b / 512);
      long long steps = loads / warps / batch * batch, extra = (loads - steps * warps) / batch;
      if (steps < batch) steps = batch, extra = 0;
      st.batch = batch;
      st.steps[st.n] = steps;
      st.extra[st.n++] = extra;
      *read += static_cast<double>(steps * warps + extra * batch) * 512;
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
    // Per-matrix kernels in a graph (one wave of 32 warps an SM, D = 4), reading or doing the matmul's
    // arithmetic (3 x terms; 64 registers, a few spilled).
    auto per_matrix = [&](auto terms, int smem) {
      constexpr int T = decltype(terms)::value;
      cudaFuncSetAttribute(matrix_kernel<4, T>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
      const long long warps = sms * 32LL;
      double read = 0;
      const Stack st = make_stack(warps, 4, &read);
      cudaGraph_t g;
      cudaGraphExec_t ge;
      cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
      for (int m = 0; m < st.n; ++m) {
        launch_pdl(matrix_kernel<4, T>, dim3(sms * 4), dim3(256), smem, stream, st.base[m], st.steps[m],
                   st.extra[m], sink);
        if (m % 4 == 0 && m < st.n - 1) launch_pdl(attn_spin_kernel, dim3(80), dim3(256), 0, stream, attn_ns);
      }
      cudaStreamEndCapture(stream, &g);
      cudaGraphInstantiate(&ge, g, 0);
      const double us = time_us([&] { cudaGraphLaunch(ge, stream); }, 20);
      int regs = 0;
      cudaFuncAttributes fa;
      if (cudaFuncGetAttributes(&fa, matrix_kernel<4, T>) == cudaSuccess) regs = fa.numRegs;
      std::printf(
          "per-matrix kernels (graph, PDL, 32 warps an SM, 4 loads ahead; %d registers, %d KB shared)%s: %7.1f us, "
          "%.2f TB/s\n",
          regs, smem >> 10, work_name(T), us, read / us / 1e6);
      cudaGraphExecDestroy(ge);
      cudaGraphDestroy(g);
    };
    // 56 KB of shared memory a block keeps the next kernel's blocks off an SM until this one's leave.
    per_matrix(std::integral_constant<int, 0>{}, 0);
    per_matrix(std::integral_constant<int, 0>{}, 56 << 10);
    per_matrix(std::integral_constant<int, 3>{}, 0);
    per_matrix(std::integral_constant<int, 1>{}, 0);
    auto persistent = [&](auto depth, auto ahead, int warps_per_sm, auto terms) {
      constexpr int D = decltype(depth)::value;
      constexpr bool A = decltype(ahead)::value;
      constexpr int T = decltype(terms)::value;
      const int threads = 256, per_sm_blocks = warps_per_sm / 8;
      int fit = 0;
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, persistent_kernel<D, A, T>, threads, 0);
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
            int attn_blocks = 80;
            void* args[] = {const_cast<Stack*>(&st), &bar, &attn_blocks, &attn_ns, &sink};
            cudaMemsetAsync(bar, 0, 4, stream);  // the barrier counter
            cudaLaunchCooperativeKernel(reinterpret_cast<void*>(persistent_kernel<D, A, T>), dim3(blocks),
                                        dim3(threads), args, 0, stream);
          },
          20);
      std::printf("persistent, %2d warps an SM, %d loads a lane in flight, %s%s: %7.1f us, %.2f TB/s\n",
                  warps_per_sm, D, A ? "next matrix's loads before the barrier" : "loads after the barrier         ",
                  work_name(T), us, read / us / 1e6);
    };
    const std::integral_constant<int, 0> reads;
    const std::integral_constant<int, 3> matmul;
    const std::integral_constant<int, 1> matmul_1row;
    for (int w : {16, 32}) {
      persistent(std::integral_constant<int, 4>{}, std::false_type{}, w, reads);
      persistent(std::integral_constant<int, 4>{}, std::true_type{}, w, reads);
      persistent(std::integral_constant<int, 8>{}, std::true_type{}, w, reads);
      persistent(std::integral_constant<int, 4>{}, std::true_type{}, w, matmul);
      persistent(std::integral_constant<int, 8>{}, std::true_type{}, w, matmul);
      persistent(std::integral_constant<int, 4>{}, std::true_type{}, w, matmul_1row);
      persistent(std::integral_constant<int, 8>{}, std::true_type{}, w, matmul_1row);
    }
    // Persistent with the weight ring: one block an SM, a producer warp and 8 consumer warps.
    // {ring KB, copy KB, copies in flight (0: as many as the ring holds), consumer warps, barriers (2: the
    //  three dependencies a layer of `dependency(..., fewer)`),
    //  consumers' work (0: a XOR of the words; 3 or 2: the integer matmul's arithmetic with 3 or 2 x terms; 1: its
    //  one-row form)}
    const int cfgs[][6] = {{192, 16, 0, 8, 1, 0},  {192, 16, 2, 8, 1, 0},  {192, 16, 3, 8, 1, 0},
                           {192, 16, 4, 8, 1, 0},  {192, 16, 3, 16, 1, 0}, {192, 32, 2, 8, 1, 0},
                           {96, 16, 3, 8, 1, 0},   {192, 16, 3, 8, 0, 0},  {192, 16, 3, 8, 1, 3},
                           {192, 16, 3, 16, 1, 3}, {192, 16, 3, 8, 0, 3},  {192, 16, 3, 16, 0, 3},
                           {192, 16, 3, 8, 1, 2},  {192, 16, 3, 16, 1, 2}, {192, 16, 3, 16, 0, 2},
                           {192, 16, 3, 8, 1, 1},  {192, 16, 3, 16, 1, 1}, {192, 16, 3, 16, 0, 1},
                           {192, 16, 3, 16, 2, 0}, {192, 16, 3, 16, 2, 1}};
    for (const auto& c : cfgs) {
      const int kb = c[0], chunk = c[1] << 10, inflight = c[2], cw = c[3], deps = c[4], work = c[5];
      if (!deps && attn_ns > 0) continue;
      const int stages = (kb << 10) / chunk, threads = 32 * (1 + cw);
      const size_t shm = static_cast<size_t>(stages) * chunk + 16 * stages;
      cudaFuncSetAttribute(ring_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shm));
      Ring rg;
      double read = 0;
      size_t off = 0;
      for (double b : bytes) {
        rg.base[rg.n] = buf + off;
        rg.bytes[rg.n] = static_cast<long long>(b / sms) / 16 * 16;
        read += static_cast<double>(rg.bytes[rg.n++]) * sms;
        off += (static_cast<size_t>(b) + 4095) / 4096 * 4096;
      }
      // bar[0]: the barrier counter; bar[2..7]: the stall sums.
      unsigned long long* stall = reinterpret_cast<unsigned long long*>(bar + 2);
      const int reps = 20;
      int attn_blocks = 80;
      const double us = time_us(
          [&] {
            cudaMemsetAsync(bar, 0, 32, stream);
            void* args[] = {&rg,        const_cast<int*>(&stages), const_cast<int*>(&chunk), &bar,
                            &attn_blocks, &attn_ns,                 &sink,                    const_cast<int*>(&deps),
                            const_cast<int*>(&inflight), const_cast<int*>(&work), &stall};
            cudaLaunchCooperativeKernel(reinterpret_cast<void*>(ring_kernel), dim3(sms), dim3(threads), args, shm,
                                        stream);
          },
          reps);
      unsigned long long st[3] = {0, 0, 0};
      cudaMemcpy(st, stall, 24, cudaMemcpyDeviceToHost);
      std::printf(
          "persistent, weight ring of %3d KB an SM (copies of %2d KB, %2d in flight), %2d consumer warps%s%s: %7.1f "
          "us, %.2f TB/s; a block: %.0f us to issue, %.0f us for a full stage, %.0f us at barriers\n",
          kb, chunk >> 10, inflight ? inflight : stages, cw, work_name(work),
          deps == 2 ? ", 3 dependencies a layer" : deps ? "" : ", no barriers", us, read / us / 1e6,
          st[0] / 1e3 / sms, st[1] / 1e3 / sms, st[2] / 1e3 / sms);
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
