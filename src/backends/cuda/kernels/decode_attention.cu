// KV-cache writes and decode attention (with RoPE and the cache write of a decode call's own rows).
//
// Decode attention. Each query row's cache is split into splits of S = attn_split_size(len, kv_heads)
// positions (kernels.h: 16 to 64, about kAttnTargetBlocks blocks a row in all; split s covers positions
// S s .. S s + S - 1), and one block of 256 threads handles one (split, kv head, row) (in calls of more
// rows, a few splits of it in turn: attn_splits_per_block). That block serves
// every query head of the GQA group of its kv head (a chunk of up to kGroupChunk = 8 of them at a time), so
// the split's keys and values are read from memory once per kv head instead of once per query head, and a
// GQA model's group size in query heads comes for free. S is a function of the row's length alone, so the
// arithmetic of a row is too. Why not a fixed 64: one SM streams ~25 GB/s of cache (H200), and at a few
// hundred positions fixed 64-position splits kept most SMs idle (session 9: 80 of 132 blocks for the 8B
// shape at 576 positions, 20 for the 27B-class shape at 300).
//
// Inside a block nothing is staged through shared memory but the query and small score/partial tables:
//   * every thread issues its loads at once, right after the row's AttnRow: its slice of the split's keys
//     and of its values go straight to registers, the query chunk to shared memory: one memory round trip;
//   * scores: TPP = 4, 8 or 16 threads per position (64, 32 or 16 position slots, the fewest that hold S),
//     each a fixed part of head_dim (float4 j, j + TPP, ...), summed in dim order with explicit FMAs, then
//     joined by log2(TPP) xor shuffles (the same bits in all lanes of the position: addition is
//     commutative); a thread runs four query heads' dots side by side (kHeadBlock);
//   * softmax within the split: warp g takes head g's S scores (two per lane at most): max, exp(s - max), the
//     sum (pair, then butterfly); every order is a function of the position inside the split alone;
//   * o = sum p v: a thread per (position group, float4 of dims) sums its positions (group, group + NG, ...)
//     in order, then the NG group partials are added in group order through shared memory.
// A row with one split (len <= 16) writes o / l directly. With several, each block publishes (m, l, o) per
// query head, and a second kernel (decode_attention_combine_kernel, a block per (query head, row), launched
// with PDL right behind) combines them: M = max m_s, f_s = exp(m_s - M), L = sum f_s l_s and
// O = sum f_s o_s, both in split order, out = O / L.
// The grid is (kv head, row, splits) so that the blocks that have work are dispatched first and the ones past
// a row's splits (they only read the row and exit, before the wait) last; only static shared memory (< 48 KiB).
// Before its PDL wait a block reads its row (the dyn block, through L2) and takes the sines and cosines of
// its query's rotation: the rotation then costs no memory round trip after the wait. Its cache loads come
// after the wait (issuing them before it was a race: see decode_attention's TF_CUDA_ATTN_EARLY).
// Workspace: o partials [row * heads + head][max_splits][head_dim] then (m, l) pairs.
// So a row's output depends on its query, its cache and its length alone: not on the other rows in the
// call, on which streams they belong to, on the grid, or on the order in which blocks finish. The code is
// compiled with -fmad=false: every FMA is an explicit __fmaf_rn, every other operation rounds on its own.
//
// Fresh rows (DecodeAttnArgs::k_new): a decode call's RoPE of q and k and its cache write, rope_kv_write's
// job, done here instead, so a decode layer launches one kernel fewer (SmolLM2's decode is bound by launches,
// not bytes). q arrives raw; the positions a call adds to a stream (new_from .. len - 1: the row itself and
// the stream's earlier rows in the call) are read from the raw k and v rows, not from the cache, since no
// kernel has written them there before this one. The query chunk and those keys go through shared memory
// anyway (qs, and kf in `part`, free until the o phase), so they are rotated there in place, a pair per
// thread with rope_math.cuh's rotation: the operands and the operations of rope_kv_write, so the scores
// see the bits they saw when the cache and q came from it. Values need no rotation and load raw straight to
// registers with the cached ones. The block whose split holds a row's write_pos stores that row's rotated key
// and value for its kv head in the cache (the next call reads them there); no other block of the launch
// reads that slot. The cost is one barrier a chunk and a sincosf per pair in a block that would otherwise
// wait on the loads.
#include <algorithm>
#include <cfloat>
#include <cstddef>

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/decode_linear_imma_terms.cuh"
#include "backends/cuda/kernels/rope_math.cuh"

namespace tf::cuda {
namespace {

constexpr int kMaxHeadDim = 256;

__global__ void kv_write_kernel(const AttnRow* __restrict__ rows, const float* __restrict__ k,
                                const float* __restrict__ v, int kv_heads, int head_dim) {
  pdl_launch();
  pdl_wait();
  const std::int64_t r = blockIdx.x;
  const AttnRow row = rows[r];
  const int width = kv_heads * head_dim;
  for (int t = threadIdx.x; t < width; t += blockDim.x) {
    const int h = t / head_dim, d = t % head_dim;
    const std::int64_t at = (static_cast<std::int64_t>(h) * row.cap + row.write_pos) * head_dim + d;
    row.k[at] = k[r * width + t];
    row.v[at] = v[r * width + t];
  }
}

// ---- decode attention ----------------------------------------------------------------------------------

constexpr int kAttnThreads = 256;
constexpr int kWarps = kAttnThreads / 32;
constexpr int kGroupChunk = kWarps;  // query heads per pass (a warp per head in the softmax and the combine)
constexpr int kHeadBlock = 4;        // query heads whose dot products a thread runs side by side
constexpr int kRopeAhead = 4;        // rotation items a thread takes the sine and cosine of before the wait
static_assert(kAttnMaxSplit == 64, "the softmax maps a split's positions to lanes lane and lane + 32");

__device__ __forceinline__ float4 fma4(float s, float4 v, float4 acc) {
  return make_float4(__fmaf_rn(s, v.x, acc.x), __fmaf_rn(s, v.y, acc.y), __fmaf_rn(s, v.z, acc.z),
                     __fmaf_rn(s, v.w, acc.w));
}
__device__ __forceinline__ float4 add4(float4 a, float4 b) {
  return make_float4(__fadd_rn(a.x, b.x), __fadd_rn(a.y, b.y), __fadd_rn(a.z, b.z), __fadd_rn(a.w, b.w));
}
__device__ __forceinline__ float4 div4(float4 a, float b) {
  return make_float4(__fdiv_rn(a.x, b), __fdiv_rn(a.y, b), __fdiv_rn(a.z, b), __fdiv_rn(a.w, b));
}

// The row, read before the PDL wait: rows (and pos) are the tape's dyn block, copied before the graph
// began. Through L2 only (ld.global.cg): the same address held last step's rows, and a line of it left in
// this SM's L1 would be stale.
__device__ __forceinline__ AttnRow load_row_l2(const AttnRow* p) {
  static_assert(sizeof(AttnRow) == 32 && offsetof(AttnRow, len) == 16 && offsetof(AttnRow, new_from) == 28,
                "AttnRow: two pointers, then four ints");
  const longlong2 ptrs = __ldcg(reinterpret_cast<const longlong2*>(p));
  const int4 ints = __ldcg(reinterpret_cast<const int4*>(p) + 1);
  AttnRow row;
  row.k = reinterpret_cast<float*>(ptrs.x);
  row.v = reinterpret_cast<float*>(ptrs.y);
  row.len = ints.x;
  row.cap = ints.y;
  row.write_pos = ints.z;
  row.new_from = ints.w;
  return row;
}

// DMAX: head_dim rounded up to 64, 128 or 256 (the register slices are sized for it; dims past head_dim
// are predicated off, so the arithmetic of a given head_dim is the same whichever DMAX runs it).
// Blocks per SM asked of the register allocator: 2 (<= 128 registers, no spills) up to head_dim 128 (a
// row's ~128 blocks are one an SM anyway; the second helps verify calls); head_dim 256 holds up to 64 key and
// 64 value floats per thread: one block per SM.
constexpr int attn_min_blocks(int dmax) { return dmax <= 128 ? 2 : 1; }

template <int DMAX>
struct AttnShared {
  static constexpr int C4 = DMAX / 4, NG = kAttnThreads / C4;
  float4 qs[kGroupChunk * C4];            // the query chunk [head][float4]
  float sc[kGroupChunk][kAttnMaxSplit];   // scores, then the weights exp(s - m)
  float sm[kGroupChunk], sl[kGroupChunk];  // per head of the chunk: this split's max and sum
  float4 part[NG * kGroupChunk * C4];     // o partials [group][head][float4]; fresh keys before that
};

// What a block knows before its wait.
struct AttnSplit {
  AttnRow row;
  int S, nsplit, split, p0, n;                // split size, splits of the row, this split, first position, positions
  float rsn[kRopeAhead], rcs[kRopeAhead];     // the query rotation of items t + 256 j (first chunk)
};

// One split of one (row, kv head): TPP threads per position in the scores (16, 32 or 64 position slots).
template <int DMAX, int TPP>
__device__ __forceinline__ void attend_split(const DecodeAttnArgs& a, const AttnSplit& sp, AttnShared<DMAX>& sh,
                                             bool wait_after_cache) {
  constexpr int C4 = DMAX / 4;                  // float4 columns of a row at most
  constexpr int NG = kAttnThreads / C4;         // position groups in the o phase (16, 8, 4)
  constexpr int SP = kAttnThreads / TPP;        // position slots (64, 32, 16)
  constexpr int KP = (SP + NG - 1) / NG;        // positions per thread in the o phase
  constexpr int KU = (C4 + TPP - 1) / TPP;      // float4s of a key per thread in the scores
  constexpr int kItems = (kGroupChunk * C4 + kAttnThreads - 1) / kAttnThreads;  // (head, float4) outputs per thread
  static_assert(SP <= kAttnMaxSplit, "a split fits the score table");

  const int kvh = blockIdx.x, r = blockIdx.y, split = sp.split;
  const int t = threadIdx.x, warp = t >> 5, lane = t & 31;
  const AttnRow& row = sp.row;
  const int nsplit = sp.nsplit, p0 = sp.p0, n = sp.n;
  const int D = a.head_dim, D4 = D / 4;
  const int G = a.heads / a.kv_heads;
  const std::int64_t kv_off = (static_cast<std::int64_t>(kvh) * row.cap + p0) * D;
  const float4* K4 = reinterpret_cast<const float4*>(row.k + kv_off);
  const float4* V4 = reinterpret_cast<const float4*>(row.v + kv_off);
  // Fresh rows (k_new set): the split's positions n_old .. n - 1 (new_from and on) are this call's own rows
  // of the stream, read raw (position p0 + p from row fresh_row + p); positions before come from the cache.
  // A stream has at most kMaxDecodeRows rows in a call; the bound only keeps a row that broke that contract
  // inside kf.
  const bool fresh = a.k_new != nullptr;
  const int n_old = fresh ? max(min(max(row.new_from - p0, 0), n), n - kMaxDecodeRows) : n;
  const int fresh_row = r - (row.write_pos - p0);
  float4* const kf = sh.part;  // fresh keys [position - n_old][float4] (part is free until the first o phase)
  static_assert(kMaxDecodeRows * C4 <= NG * kGroupChunk * C4, "a stream's fresh keys fit in part");

  // All of this thread's key and value slices are loaded at once (registers; positions past n read as 0).
  // Scores: position ps = t / TPP, part jq = t % TPP takes float4s jq, jq + TPP, ... of the key.
  const int ps = t / TPP, jq = t % TPP;
  float4 kr[KU];
#pragma unroll
  for (int u = 0; u < KU; ++u) {
    const int c = jq + TPP * u;
    kr[u] = (ps < n_old && c < D4) ? __ldg(K4 + ps * D4 + c) : make_float4(0.f, 0.f, 0.f, 0.f);
  }
  // o: group og = t / C4 takes positions og, og + NG, ... (a warp reads whole rows: coalesced); column oc.
  const int og = t / C4, oc = t % C4;
  float4 vr[KP];
#pragma unroll
  for (int k = 0; k < KP; ++k) {
    const int p = og + NG * k;
    vr[k] = p < n_old && oc < D4 ? __ldg(V4 + p * D4 + oc) : make_float4(0.f, 0.f, 0.f, 0.f);
  }
  // The cached positions were written by earlier calls (stream operations before this graph), so with
  // fresh rows their loads go out before the PDL wait, while the previous matmul drains; everything else
  // (q, the fresh keys and values) is the previous kernels' output and comes after it.
  if (wait_after_cache) pdl_wait();
  // The first query chunk goes to registers: its loads (L2 hits) return ahead of the cache's, so the query is
  // in shared memory (and rotated) while the keys and values are still on their way.
  const std::int64_t head0 = static_cast<std::int64_t>(r) * a.heads + static_cast<std::int64_t>(kvh) * G;
  constexpr int kQItems = (kGroupChunk * C4 + kAttnThreads - 1) / kAttnThreads;
  float4 qr[kQItems];
  {
    const int ng = min(kGroupChunk, G);
    const float4* q4 = reinterpret_cast<const float4*>(a.q + head0 * D);
#pragma unroll
    for (int it = 0; it < kQItems; ++it) {
      const int i = t + it * kAttnThreads, gi = i / C4, c = i % C4;
      if (gi < ng && c < D4) qr[it] = q4[gi * D4 + c];
    }
  }
#pragma unroll
  for (int k = 0; k < KP; ++k) {
    const int p = og + NG * k;
    const std::int64_t raw = (static_cast<std::int64_t>(fresh_row + p) * a.kv_heads + kvh) * D;
    if (p >= n_old && p < n && oc < D4) vr[k] = __ldg(reinterpret_cast<const float4*>(a.v_new + raw) + oc);
  }
  // The fresh keys, raw, into kf (rotated in place below). The block whose split holds write_pos does
  // rope_kv_write's job for row r and kv head kvh: the value goes to the cache here, the rotated key below.
  // No other block of the launch reads that slot: the stream's later rows take position write_pos raw too.
  const std::int64_t w_at = (static_cast<std::int64_t>(kvh) * row.cap + row.write_pos) * D;
  if (fresh) {
    for (int i = t; i < (n - n_old) * D4; i += kAttnThreads) {
      const int p = n_old + i / D4, c = i % D4;
      const std::int64_t off = (static_cast<std::int64_t>(fresh_row + p) * a.kv_heads + kvh) * D;
      kf[i] = __ldg(reinterpret_cast<const float4*>(a.k_new + off) + c);
      if (p0 + p == row.write_pos)
        reinterpret_cast<float4*>(row.v + w_at)[c] = __ldg(reinterpret_cast<const float4*>(a.v_new + off) + c);
    }
  }

  const std::int64_t nslots = static_cast<std::int64_t>(a.n_rows) * a.heads * a.max_splits;
  float* work_o = a.work;                          // [row * heads + head][max_splits][D]
  float* work_ml = a.work + nslots * D;            // [row * heads + head][max_splits][2]: m, l

  for (int g0 = 0; g0 < G; g0 += kGroupChunk) {
    const int ng = min(kGroupChunk, G - g0);
    if (g0 == 0) {
#pragma unroll
      for (int it = 0; it < kQItems; ++it) {
        const int i = t + it * kAttnThreads, gi = i / C4, c = i % C4;
        if (gi < ng && c < D4) sh.qs[i] = qr[it];
      }
    } else {
      const float4* q4 = reinterpret_cast<const float4*>(a.q + (head0 + g0) * D);
      for (int i = t; i < ng * C4; i += kAttnThreads) {
        const int gi = i / C4, c = i % C4;
        if (c < D4) sh.qs[i] = q4[gi * D4 + c];
      }
    }
    __syncthreads();  // qs (and kf) ready; also: the previous chunk is done with sc and part
    if (fresh) {
      // RoPE in place, a pair per thread: the raw query chunk at pos[r], and (first chunk) the fresh keys at
      // their rows' positions. rope_math.cuh on the same operands as rope_kv_write, so the same bits; the
      // first chunk's query items took their sine and cosine before the wait.
      const int half = D / 2, nk = g0 == 0 ? n - n_old : 0;
      for (int i = t, j = 0; i < (ng + nk) * half; i += kAttnThreads, ++j) {
        const int h = i / half, pair = i % half;
        const bool key = h >= ng;
        float* x = key ? reinterpret_cast<float*>(kf + (h - ng) * D4) : reinterpret_cast<float*>(sh.qs + h * C4);
        int i0, i1;
        rope_pair(pair, half, a.interleaved, i0, i1);
        float sn, cs;
        bool ahead = false;
#pragma unroll
        for (int jj = 0; jj < kRopeAhead; ++jj)
          if (jj == j && g0 == 0 && !key) {
            sn = sp.rsn[jj];
            cs = sp.rcs[jj];
            ahead = true;
          }
        if (!ahead) {
          const std::int64_t prow = key ? fresh_row + n_old + (h - ng) : r;
          rope_sincos(static_cast<float>(a.pos[prow]), a.inv_freq[pair], sn, cs);
        }
        float y0, y1;
        rope_apply(x[i0], x[i1], sn, cs, y0, y1);
        x[i0] = y0;
        x[i1] = y1;
        if (key && p0 + n_old + (h - ng) == row.write_pos) {
          row.k[w_at + i0] = y0;
          row.k[w_at + i1] = y1;
        }
      }
      __syncthreads();
      if (g0 == 0 && ps >= n_old && ps < n) {  // this thread's position is fresh: its key slices from kf
#pragma unroll
        for (int u = 0; u < KU; ++u) {
          const int c = jq + TPP * u;
          if (c < D4) kr[u] = kf[(ps - n_old) * D4 + c];
        }
      }
    }

    // Scores, kHeadBlock heads side by side: this thread's part of each dot, in dim order, then log2(TPP)
    // xor shuffles (the same bits in every lane of the position: addition is commutative).
    for (int gb = 0; gb < ng; gb += kHeadBlock) {
      float dot[kHeadBlock];
#pragma unroll
      for (int gj = 0; gj < kHeadBlock; ++gj) dot[gj] = 0.0f;
#pragma unroll
      for (int u = 0; u < KU; ++u) {
        const int c = jq + TPP * u;
#pragma unroll
        for (int gj = 0; gj < kHeadBlock; ++gj)
          if (gb + gj < ng && c < D4) {
            const float4 q = sh.qs[(gb + gj) * C4 + c];
            dot[gj] = __fmaf_rn(q.x, kr[u].x, dot[gj]);
            dot[gj] = __fmaf_rn(q.y, kr[u].y, dot[gj]);
            dot[gj] = __fmaf_rn(q.z, kr[u].z, dot[gj]);
            dot[gj] = __fmaf_rn(q.w, kr[u].w, dot[gj]);
          }
      }
#pragma unroll
      for (int gj = 0; gj < kHeadBlock; ++gj) {
        float d = dot[gj];
#pragma unroll
        for (int off = 1; off < TPP; off <<= 1) d = __fadd_rn(d, __shfl_xor_sync(0xffffffffu, d, off));
        if (gb + gj < ng && (gj % TPP) == jq) sh.sc[gb + gj][ps] = __fmul_rn(d, a.scale);
      }
    }
    __syncthreads();

    // Softmax within the split: warp gi takes head gi, lanes positions lane and lane + 32.
    if (warp < ng) {
      const bool in0 = lane < n, in1 = lane + 32 < n;
      const float s0 = sh.sc[warp][lane], s1 = sh.sc[warp][lane + 32];
      const float m = warp_max(fmaxf(in0 ? s0 : -FLT_MAX, in1 ? s1 : -FLT_MAX));
      const float e0 = in0 ? expf(__fsub_rn(s0, m)) : 0.0f;
      const float e1 = in1 ? expf(__fsub_rn(s1, m)) : 0.0f;
      const float l = warp_sum(__fadd_rn(e0, e1));
      sh.sc[warp][lane] = e0;
      sh.sc[warp][lane + 32] = e1;
      if (lane == 0) {
        sh.sm[warp] = m;
        sh.sl[warp] = l;
      }
    }
    __syncthreads();

    // o: this thread's positions in order, per head; then the group partials in group order.
    if (oc < D4) {
#pragma unroll
      for (int gi = 0; gi < kGroupChunk; ++gi) {
        if (gi >= ng) break;
        float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int k = 0; k < KP; ++k)
          if (og + NG * k < n) acc = fma4(sh.sc[gi][og + NG * k], vr[k], acc);
        sh.part[(og * kGroupChunk + gi) * C4 + oc] = acc;
      }
    }
    __syncthreads();
#pragma unroll
    for (int it = 0; it < kItems; ++it) {
      const int item = t + it * kAttnThreads;
      const int gi = item / C4, c = item % C4;
      if (gi >= ng || c >= D4) continue;
      float4 o = sh.part[gi * C4 + c];
#pragma unroll
      for (int grp = 1; grp < NG; ++grp) o = add4(o, sh.part[(grp * kGroupChunk + gi) * C4 + c]);
      const std::int64_t slot = head0 + g0 + gi;
      if (nsplit == 1) {
        reinterpret_cast<float4*>(a.out + slot * D)[c] = div4(o, sh.sl[gi]);
      } else {
        reinterpret_cast<float4*>(work_o + (slot * a.max_splits + split) * D)[c] = o;
      }
    }
    if (nsplit > 1 && t < ng) {
      const std::int64_t slot = head0 + g0 + t;
      reinterpret_cast<float2*>(work_ml)[slot * a.max_splits + split] = make_float2(sh.sm[t], sh.sl[t]);
    }
  }
}

// The splits' combine as a kernel of its own, a block per (query head, row) and a float4 of head_dim per
// thread: M = max m_s, f_s = exp(m_s - M), L = sum f_s l_s and O = sum f_s o_s, both in split order,
// out = O / L. Every thread loads its splits' partials and their (m, l) at once (kCombineLoads at a time):
// one L2 round trip after the wait for rows of up to kCombineLoads splits, where a last-block combine
// inside the attention had a fence, an atomic and one round trip per eight splits, all on one SM (session
// 9: 2.9 µs a layer of the 8B shape, 6.5 of the 27B-class one). Rows of one split were written whole by
// the attention: their blocks exit, unless the block also writes the next matmul's x terms (a.prepare_x):
// then it reads the row back, and each warp prepares pairs of 64 of the head's output with prepare_row,
// the function every prepare path uses on the same float values (decode_linear_imma_terms.cuh): the o
// projection's prepare launch is gone.
// One round trip rather than a pass for M first (session 11, H200 trace, one machine): the combine's share
// of the 8B step's critical path 98.7 -> 83.5 µs, of the 27B-class step's 263 -> 227 µs. 32 loads at once
// take the 27B-class rows at ~300 positions (17-20 splits) too: 254 registers, no spills, 24-32 blocks.
constexpr int kCombineLoads = 32;
constexpr int kCombineMaxThreads = 128;  // head_dim 256 with x terms: a warp per pair of 64
__global__ void __launch_bounds__(kCombineMaxThreads) decode_attention_combine_kernel(DecodeAttnArgs a, int one_trip) {
  pdl_launch();
  const int head = blockIdx.x, r = blockIdx.y, t = threadIdx.x, lane = t & 31;
  const int len = __ldcg(&a.rows[r].len);  // the dyn block: before the wait, through L2 (load_row_l2)
  const int nsplit = attn_split_count(len, a.kv_heads);
  const bool prepare = a.prepare_x != nullptr;
  if (nsplit <= 1 && !prepare) return;
  const int D = a.head_dim, D4 = D / 4;
  const std::int64_t slot = static_cast<std::int64_t>(r) * a.heads + head;
  float4* out4 = reinterpret_cast<float4*>(a.out + slot * D);
  __shared__ __align__(16) float xs[kMaxHeadDim];  // the head's output, for the x terms
  pdl_wait();  // the partials (or the whole row) come from the attention kernel
  if (nsplit <= 1) {
    if (t < D4) reinterpret_cast<float4*>(xs)[t] = __ldcg(out4 + t);
  } else {
    const std::int64_t nslots = static_cast<std::int64_t>(a.n_rows) * a.heads * a.max_splits;
    const float4* o4 = reinterpret_cast<const float4*>(a.work + slot * a.max_splits * D) + t;
    const float2* ml = reinterpret_cast<const float2*>(a.work + nslots * D) + slot * a.max_splits;
    // M, the largest m (exact in any order): for rows of more than one_trip (kCombineLoads) splits a lane
    // per split first, every warp of the block finding the same M; for the others from the registers of the
    // one batch below, which loads the partials and the (m, l) pairs at once: one L2 round trip, not two.
    float M = -FLT_MAX;
    if (nsplit > one_trip) {
      for (int s = lane; s < nsplit; s += 32) M = fmaxf(M, __ldcg(ml + s).x);
      M = warp_max(M);
    }
    if (t < D4) {
      float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
      float L = 0.0f;
      for (int s0 = 0; s0 < nsplit; s0 += kCombineLoads) {
        float4 ob[kCombineLoads];
        float2 mb[kCombineLoads];
#pragma unroll
        for (int k = 0; k < kCombineLoads; ++k)
          if (s0 + k < nsplit) {
            ob[k] = __ldcg(o4 + static_cast<std::int64_t>(s0 + k) * D4);
            mb[k] = __ldcg(ml + s0 + k);
          }
        if (nsplit <= one_trip) {
#pragma unroll
          for (int k = 0; k < kCombineLoads; ++k)
            if (k < nsplit) M = fmaxf(M, mb[k].x);
        }
#pragma unroll
        for (int k = 0; k < kCombineLoads; ++k)
          if (s0 + k < nsplit) {  // in split order
            const float f = expf(__fsub_rn(mb[k].x, M));
            acc = fma4(f, ob[k], acc);
            L = __fmaf_rn(f, mb[k].y, L);
          }
      }
      const float4 o = div4(acc, L);
      out4[t] = o;
      reinterpret_cast<float4*>(xs)[t] = o;
    }
  }
  if (!prepare) return;
  __syncthreads();
  // The head's pairs of 64 in the matmul's input: pairs head * D / 64 .. + D / 64 - 1, row r of each.
  const int pairs = D / 64, warps = static_cast<int>(blockDim.x >> 5);
  auto* wx = static_cast<tiled::WarpX*>(a.prepare_x) + static_cast<std::int64_t>(head) * pairs;
  for (int j = t >> 5; j < pairs; j += warps) {
    if (a.prepare_g64) tiled::prepare_row<true>(xs + 64 * j, r, lane, wx[j]);
    else tiled::prepare_row<false>(xs + 64 * j, r, lane, wx[j]);
  }
}

// Splits a block takes in turn. One in calls of 1-2 rows, where ~128 blocks a row fill the GPU; in calls of
// more rows (verify windows, shared rounds) as many as keep the call's blocks near `call_blocks`, since
// blocks past a wave or two each pay their fixed costs (the row, the query's rotation, the query chunk)
// for little work. A function of the row's own split count and the call's shape; each split is
// attend_split as before, with its own partials, so the bits are the same whatever a block takes.
__device__ __forceinline__ int attn_splits_per_block(int nsplit, int kv_heads, int n_rows, int call_blocks) {
  if (n_rows <= 2) return 1;
  return (nsplit * kv_heads * n_rows + call_blocks - 1) / call_blocks;
}

template <int DMAX>
__global__ void __launch_bounds__(kAttnThreads, attn_min_blocks(DMAX)) decode_attention_kernel(DecodeAttnArgs a,
                                                                                               int call_blocks,
                                                                                               int early_cache) {
  __shared__ AttnShared<DMAX> sh;
  pdl_launch();
  // Before the wait: the row, its splits, and the sines and cosines of the query's rotation (the dyn block
  // and the weights; nothing an earlier kernel of the tape writes).
  const int r = blockIdx.y, t = threadIdx.x;
  AttnSplit sp;
  sp.row = load_row_l2(a.rows + r);
  const int len = sp.row.len;
  sp.S = attn_split_size(len, a.kv_heads);
  sp.nsplit = attn_split_count(len, a.kv_heads);
  const int per_block = attn_splits_per_block(sp.nsplit, a.kv_heads, a.n_rows, call_blocks);
  const int first = blockIdx.z * per_block;
  // Grid (kv head, row, splits): the blocks of the first splits, which every row has, are dispatched first
  // and the blocks past a row's splits (they exit before the wait: they read and write nothing) last.
  if (first >= sp.nsplit) return;
  if (a.k_new != nullptr) {
    const int half = a.head_dim / 2, nq = min(kGroupChunk, a.heads / a.kv_heads) * half;
    const float pr = static_cast<float>(__ldcg(reinterpret_cast<const long long*>(a.pos) + r));
#pragma unroll
    for (int j = 0; j < kRopeAhead; ++j) {
      const int i = t + j * kAttnThreads;
      if (i < nq) rope_sincos(pr, __ldg(a.inv_freq + i % half), sp.rsn[j], sp.rcs[j]);
    }
  }
  // The cache may come from a kernel still in flight (the kv_write just before, or an earlier call's writes
  // ahead of a PDL chain), so its loads wait, unless TF_CUDA_ATTN_EARLY=1 (A/B runs; racy, see the launch).
  const bool early = a.k_new != nullptr && early_cache != 0;
  if (!early) pdl_wait();  // the cache (kv_write) and q, k, v come from earlier kernels
  const int last = min(sp.nsplit, first + per_block);
  for (sp.split = first; sp.split < last; ++sp.split) {
    if (sp.split > first) __syncthreads();  // the previous split is done with the shared tables
    sp.p0 = sp.split * sp.S;
    sp.n = min(len - sp.p0, sp.S);
    const bool wait_here = early && sp.split == first;
    if (sp.S <= 16)
      attend_split<DMAX, 16>(a, sp, sh, wait_here);
    else if (sp.S <= 32)
      attend_split<DMAX, 8>(a, sp, sh, wait_here);
    else
      attend_split<DMAX, 4>(a, sp, sh, wait_here);
  }
}

}  // namespace

void kv_write(const AttnRow* rows, const float* k, const float* v, std::int64_t n_rows, int kv_heads, int head_dim,
              cudaStream_t s) {
  if (n_rows <= 0) return;
  launch_pdl(kv_write_kernel, dim3(static_cast<unsigned int>(n_rows)), dim3(256), 0, s, rows, k, v, kv_heads, head_dim);
  check_launch("kv_write");
}

// The kernels use static shared memory only (under 48 KiB), so there is no attribute to set any more; the
// function stays for the backend, which calls it before any graph capture.
void prepare_decode_attention() {}

// (m, l, o) per (row, query head, split): the o region first ([slots][max_splits][head_dim], so every o is
// 16-byte aligned), then the (m, l) pairs; the same total as before.
std::size_t decode_attention_work_floats(int n_rows, int heads, int head_dim, int max_splits) {
  return static_cast<std::size_t>(n_rows) * heads * max_splits * (head_dim + 2);
}

namespace {
// The blocks a decode attention call of more than two rows aims at (attn_splits_per_block): within one wave
// of resident blocks (132 SMs; attn_min_blocks: two an SM up to head_dim 128, one at 256), since a partial
// second wave doubles the call's tail. H200, session 10, `tf_cuda_bench --quick` (one split a block as in
// session 9 -> this target): 27B-class shape (head_dim 256) at 128 blocks: 16-row verify 3.07-3.08x ->
// 2.99x a 1-row step, 8 / 16 streams 899-900 / 986-991 -> 924 / 1,016 tokens/s (192 blocks: 881 / 984-991,
// 1.2 waves at 8 streams); SmolLM2 shape (head_dim 64) at 192: 8 / 16 streams 8,203-8,230 / 12,149-12,161 ->
// 8,558-8,563 / 12,359-12,373 tokens/s (128: 8,015 / 11,330). TF_CUDA_ATTN_CALL_BLOCKS sets it (A/B runs).
int attn_call_blocks(int head_dim) {
  static const int forced = std::max(0, env_int("TF_CUDA_ATTN_CALL_BLOCKS", 0));
  return forced > 0 ? forced : head_dim > 128 ? 128 : 192;
}
}  // namespace

void decode_attention(const DecodeAttnArgs& a, cudaStream_t s) {
  if (a.n_rows <= 0) return;
  if (a.head_dim > kMaxHeadDim || a.head_dim <= 0 || a.head_dim % 4 != 0)
    throw std::invalid_argument("decode_attention: head_dim a multiple of 4, at most 256");
  if (a.kv_heads <= 0 || a.heads % a.kv_heads != 0) throw std::invalid_argument("decode_attention: heads % kv_heads");
  if (a.max_splits > 1 && a.work == nullptr) throw std::invalid_argument("decode_attention: several splits need work");
  if (a.max_splits < 1 || a.max_splits > 65535 || a.n_rows > 65535)
    throw std::invalid_argument("decode_attention: max_splits and n_rows at most 65535 (grid y, z)");
  if (a.k_new != nullptr &&
      (a.v_new == nullptr || a.pos == nullptr || a.inv_freq == nullptr || a.n_rows > kMaxDecodeRows))
    throw std::invalid_argument("decode_attention: fresh rows need v_new, pos and inv_freq, and at most 16 rows");
  // z: max_splits (a row taking one split a block needs that many); blocks past their row's share exit.
  const dim3 grid(static_cast<unsigned int>(a.kv_heads), static_cast<unsigned int>(a.n_rows),
                  static_cast<unsigned int>(a.max_splits));
  const int cb = attn_call_blocks(a.head_dim);
  // The cache loads wait for pdl_wait (TF_CUDA_ATTN_EARLY=1 issues the first split's before it, for A/B runs
  // only). "Written by an earlier call" does not make a position safe to read before the wait: under
  // programmatic dependent launch each kernel lets the next one start at its top, so a chain of small kernels
  // (the SmolLM2 shape's) can run ahead of the kernel that wrote the position. Session 26 (H200): with the early
  // loads two fresh servers gave different replies to one 2k-token prompt (1 turn in 18, bench/prompt_cache/
  // equality.py --cache-gib 0); without them 18 of 18 agreed, cached and fresh alike. Cost: decode 1.2-1.4% slower.
  static const int early = env_int("TF_CUDA_ATTN_EARLY", 0) != 0 ? 1 : 0;
  if (a.head_dim <= 64)
    launch_pdl(decode_attention_kernel<64>, grid, dim3(kAttnThreads), 0, s, a, cb, early);
  else if (a.head_dim <= 128)
    launch_pdl(decode_attention_kernel<128>, grid, dim3(kAttnThreads), 0, s, a, cb, early);
  else
    launch_pdl(decode_attention_kernel<256>, grid, dim3(kAttnThreads), 0, s, a, cb, early);
  if (a.prepare_x != nullptr &&
      (a.head_dim % 64 != 0 || a.n_rows > kMaxDecodeRows ||
       a.prepare_bytes < tiled::imma_scratch_bytes(static_cast<std::int64_t>(a.heads) * a.head_dim)))
    throw std::invalid_argument("decode_attention: x terms need whole pairs of 64 a head, at most 16 rows, and the scratch");
  if (a.max_splits > 1 || a.prepare_x != nullptr) {
    // A float4 of head_dim a thread, in whole warps; with x terms also a warp per pair of 64 of the head
    // (the pairs side by side: each is a chain of shuffles).
    const int warps = std::max((a.head_dim / 4 + 31) / 32, a.prepare_x != nullptr ? a.head_dim / 64 : 1);
    // TF_CUDA_ATTN_ONE_TRIP=0: M by a pass of its own for every row (A/B runs; the same bits).
    static const int one_trip = env_int("TF_CUDA_ATTN_ONE_TRIP", 1) != 0 ? kCombineLoads : 0;
    launch_pdl(decode_attention_combine_kernel,
               dim3(static_cast<unsigned int>(a.heads), static_cast<unsigned int>(a.n_rows)), dim3(32 * warps), 0, s, a,
               one_trip);
  }
  check_launch("decode_attention");
}

}  // namespace tf::cuda
