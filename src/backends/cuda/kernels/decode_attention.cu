// KV-cache writes and decode attention (with RoPE and the cache write of a decode call's own rows).
//
// Decode attention. Each query row's cache is split at FIXED position boundaries (kAttnSplit = 64
// positions: split s covers positions 64 s .. 64 s + 63), and one block of 256 threads handles one
// (split, kv head, row). That block serves every query head of the GQA group of its kv head (a chunk of
// up to kGroupChunk = 8 of them at a time), so the split's keys and values are read from memory once per kv
// head instead of once per query head, and a GQA model's group size in query heads comes for free.
//
// Inside a block nothing is staged through shared memory but the query and small score/partial tables:
//   * every thread issues its loads at once, right after the row's AttnRow: its slice of the split's keys
//     and of its values go straight to registers, the query chunk to shared memory: one memory round trip;
//   * scores: four threads per position, each a fixed quarter of head_dim (float4 j, j + 4, ...), summed in
//     dim order with explicit FMAs, then joined by two xor shuffles ((q0 + q1) + (q2 + q3), the same bits in
//     all four lanes: addition is commutative). So 2 shuffles per score instead of a 5-step butterfly;
//   * softmax within the split: warp g takes head g's 64 scores (two per lane): max, exp(s - max), and the
//     sum (pair, then butterfly); every order is a function of the position inside the split alone;
//   * o = sum p v: a thread per (position group, float4 of dims) sums its positions (group, group + NG, ...)
//     in order, then the NG group partials are added in group order through shared memory.
// A row with one split (len <= 64) writes o / l directly. With several, each block publishes (m, l, o) per
// query head and the last block to finish for (row, kv head) combines them: M = max m_s, f_s = exp(m_s - M),
// L = sum f_s l_s and O = sum f_s o_s, both in split order, out = O / L. The atomic counter only elects that
// block; it orders no arithmetic, and the last block leaves it zero again. The combine loads every (m, l)
// at once (a lane per split) and its first eight splits of o before it even knows M, so it costs about two
// L2 round trips, not one per split.
// The grid is (kv head, row, split) so that the blocks that have work are dispatched first and the ones past
// a row's length (they only read the row's length and exit) last; only static shared memory (< 48 KiB).
// Workspace: o partials [row * heads + head][max_splits][head_dim] then (m, l) pairs, the same size as
// before; counters: one per (row, kv head), inside the n_rows * heads ints the caller zeroes.
// So a row's output depends on its query, its cache and its length alone: not on the other rows in the
// call, on which streams they belong to, on the grid, or on which block finishes last. The code is compiled
// with -fmad=false: every FMA is an explicit __fmaf_rn, every other operation rounds on its own.
//
// Fresh rows (DecodeAttnArgs::k_new): a decode call's RoPE of q and k and its cache write, rope_kv_write's
// job, done here instead, so a decode layer launches one kernel fewer (SmolLM2's decode is bound by launches,
// not bytes). q arrives raw; the positions a call adds to a stream (new_from .. len - 1: the row itself and
// the stream's earlier rows in the call) are read from the raw k and v rows, not from the cache, since no
// kernel has written them there before this one. The query chunk and those keys go through shared memory
// anyway (qs, and kf in `part`, free until the o phase), so they are rotated there in place, a pair per
// thread with rope_math.cuh's rope_rotate: the operands and the operations of rope_kv_write, so the scores
// see the bits they saw when the cache and q came from it. Values need no rotation and load raw straight to
// registers with the cached ones. The block whose split holds a row's write_pos stores that row's rotated key
// and value for its kv head in the cache (the next call reads them there); no other block of the launch
// reads that slot. The cost is one barrier a chunk and a sincosf per pair in a block that would otherwise
// wait on the loads.
#include <cfloat>

#include "backends/cuda/kernels/common.cuh"
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
constexpr int kSplit = kAttnSplit;      // positions per split: fixed, so the arithmetic is a function of position
constexpr int kGroupChunk = kWarps;     // query heads per pass (a warp per head in the softmax and the combine)
constexpr int kQuarters = kAttnThreads / kSplit;  // threads per position in the scores (4)
static_assert(kSplit == 64 && kQuarters == 4, "the score and softmax mappings assume 64 positions, 4 threads each");
constexpr int kCombineBatch = 8;  // splits of o loaded at once in the combine

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

// DMAX: head_dim rounded up to 64, 128 or 256 (the register slices are sized for it; dims past head_dim
// are predicated off, so the arithmetic of a given head_dim is the same whichever DMAX runs it).
// Blocks per SM asked of the register allocator: 3 (<= 80 registers) and 2 (<= 128) compile without
// spills; head_dim 256 holds 64 key and 64 value floats per thread (about 200 registers): one block per SM.
constexpr int attn_min_blocks(int dmax) { return dmax <= 64 ? 3 : dmax <= 128 ? 2 : 1; }

template <int DMAX>
__global__ void __launch_bounds__(kAttnThreads, attn_min_blocks(DMAX)) decode_attention_kernel(DecodeAttnArgs a) {
  constexpr int C4 = DMAX / 4;                  // float4 columns of a row at most
  constexpr int NG = kAttnThreads / C4;         // position groups in the o phase (16, 8, 4)
  constexpr int KP = kSplit / NG;               // positions per thread in the o phase (4, 8, 16)
  constexpr int KU = C4 / kQuarters;            // float4s of a key per thread in the scores (4, 8, 16)
  constexpr int kItems = (kGroupChunk * C4 + kAttnThreads - 1) / kAttnThreads;  // (head, float4) outputs per thread

  pdl_launch();
  pdl_wait();  // the cache (earlier calls, kv_write) and q, k, v come from earlier kernels
  // Grid (kv head, row, split): the blocks of the first splits, which every row has, are dispatched first
  // and the blocks past the rows' lengths (which only exit) last.
  const int kvh = blockIdx.x, r = blockIdx.y, split = blockIdx.z;
  const int t = threadIdx.x, warp = t >> 5, lane = t & 31;
  const AttnRow row = a.rows[r];
  const int len = row.len;
  const int nsplit = (len + kSplit - 1) / kSplit;
  if (split >= nsplit) return;  // past this row's length (the grid is sized for the longest cache)
  const int D = a.head_dim, D4 = D / 4;
  const int G = a.heads / a.kv_heads;
  const int p0 = split * kSplit;
  const int n = min(len - p0, kSplit);
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

  __shared__ float4 qs[kGroupChunk * C4];            // the query chunk [head][float4]
  __shared__ float sc[kGroupChunk][kSplit];          // scores, then the weights exp(s - m)
  __shared__ float sm[kGroupChunk], sl[kGroupChunk];  // per head of the chunk: this split's max and sum
  __shared__ float4 part[NG * kGroupChunk * C4];     // o partials [group][head][float4]
  __shared__ int is_last;
  float4* const kf = part;  // fresh keys [position - n_old][float4] (part is free until the first o phase)
  static_assert(kMaxDecodeRows * C4 <= NG * kGroupChunk * C4, "a stream's fresh keys fit in part");

  // All of this thread's key and value slices are loaded at once (registers; positions past n read as 0).
  // Scores: position ps = t / 4, quarter jq = t % 4 takes float4s jq, jq + 4, ... of the key.
  const int ps = t / kQuarters, jq = t % kQuarters;
  // Fresh keys come from kf after the first barrier; fresh values are read raw like the cached ones.
  float4 kr[KU];
#pragma unroll
  for (int u = 0; u < KU; ++u) {
    const int c = jq + kQuarters * u;
    kr[u] = (ps < n_old && c < D4) ? __ldg(K4 + ps * D4 + c) : make_float4(0.f, 0.f, 0.f, 0.f);
  }
  // o: group og = t / C4 takes positions og, og + NG, ... (a warp reads whole rows: coalesced); column oc.
  const int og = t / C4, oc = t % C4;
  float4 vr[KP];
#pragma unroll
  for (int k = 0; k < KP; ++k) {
    const int p = og + NG * k;
    const std::int64_t raw = (static_cast<std::int64_t>(fresh_row + p) * a.kv_heads + kvh) * D;
    if (p < n_old && oc < D4)
      vr[k] = __ldg(V4 + p * D4 + oc);
    else if (p < n && oc < D4)
      vr[k] = __ldg(reinterpret_cast<const float4*>(a.v_new + raw) + oc);
    else
      vr[k] = make_float4(0.f, 0.f, 0.f, 0.f);
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

  const std::int64_t head0 = static_cast<std::int64_t>(r) * a.heads + static_cast<std::int64_t>(kvh) * G;
  const std::int64_t nslots = static_cast<std::int64_t>(a.n_rows) * a.heads * a.max_splits;
  float* work_o = a.work;                          // [row * heads + head][max_splits][D]
  float* work_ml = a.work + nslots * D;            // [row * heads + head][max_splits][2]: m, l

  for (int g0 = 0; g0 < G; g0 += kGroupChunk) {
    const int ng = min(kGroupChunk, G - g0);
    {
      const float4* q4 = reinterpret_cast<const float4*>(a.q + (head0 + g0) * D);
      for (int i = t; i < ng * C4; i += kAttnThreads) {
        const int gi = i / C4, c = i % C4;
        if (c < D4) qs[i] = q4[gi * D4 + c];
      }
    }
    __syncthreads();  // qs (and kf) ready; also: the previous chunk is done with sc and part
    if (fresh) {
      // RoPE in place, a pair per thread: the raw query chunk at pos[r], and (first chunk) the fresh keys at
      // their rows' positions. rope_rotate on the same operands as rope_kv_write, so the same bits.
      const int half = D / 2, nk = g0 == 0 ? n - n_old : 0;
      for (int i = t; i < (ng + nk) * half; i += kAttnThreads) {
        const int h = i / half, pair = i % half;
        const bool key = h >= ng;
        float* x = key ? reinterpret_cast<float*>(kf + (h - ng) * D4) : reinterpret_cast<float*>(qs + h * C4);
        const std::int64_t prow = key ? fresh_row + n_old + (h - ng) : r;
        int i0, i1;
        rope_pair(pair, half, a.interleaved, i0, i1);
        float y0, y1;
        rope_rotate(x[i0], x[i1], static_cast<float>(a.pos[prow]), a.inv_freq[pair], y0, y1);
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
          const int c = jq + kQuarters * u;
          if (c < D4) kr[u] = kf[(ps - n_old) * D4 + c];
        }
      }
    }

    // Scores: this thread's quarter of each dot, in dim order, then the two shuffles.
    float dot[kGroupChunk];
#pragma unroll
    for (int gi = 0; gi < kGroupChunk; ++gi) dot[gi] = 0.0f;
#pragma unroll
    for (int u = 0; u < KU; ++u) {
      const int c = jq + kQuarters * u;
#pragma unroll
      for (int gi = 0; gi < kGroupChunk; ++gi)
        if (gi < ng && c < D4) {
          const float4 q = qs[gi * C4 + c];
          dot[gi] = __fmaf_rn(q.x, kr[u].x, dot[gi]);
          dot[gi] = __fmaf_rn(q.y, kr[u].y, dot[gi]);
          dot[gi] = __fmaf_rn(q.z, kr[u].z, dot[gi]);
          dot[gi] = __fmaf_rn(q.w, kr[u].w, dot[gi]);
        }
    }
#pragma unroll
    for (int gi = 0; gi < kGroupChunk; ++gi) {
      float d = dot[gi];
      d = __fadd_rn(d, __shfl_xor_sync(0xffffffffu, d, 1));
      d = __fadd_rn(d, __shfl_xor_sync(0xffffffffu, d, 2));
      if (gi < ng && (gi % kQuarters) == jq) sc[gi][ps] = __fmul_rn(d, a.scale);
    }
    __syncthreads();

    // Softmax within the split: warp gi takes head gi, lanes positions lane and lane + 32.
    if (warp < ng) {
      const bool in0 = lane < n, in1 = lane + 32 < n;
      const float s0 = sc[warp][lane], s1 = sc[warp][lane + 32];
      const float m = warp_max(fmaxf(in0 ? s0 : -FLT_MAX, in1 ? s1 : -FLT_MAX));
      const float e0 = in0 ? expf(__fsub_rn(s0, m)) : 0.0f;
      const float e1 = in1 ? expf(__fsub_rn(s1, m)) : 0.0f;
      const float l = warp_sum(__fadd_rn(e0, e1));
      sc[warp][lane] = e0;
      sc[warp][lane + 32] = e1;
      if (lane == 0) {
        sm[warp] = m;
        sl[warp] = l;
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
          if (og + NG * k < n) acc = fma4(sc[gi][og + NG * k], vr[k], acc);
        part[(og * kGroupChunk + gi) * C4 + oc] = acc;
      }
    }
    __syncthreads();
#pragma unroll
    for (int it = 0; it < kItems; ++it) {
      const int item = t + it * kAttnThreads;
      const int gi = item / C4, c = item % C4;
      if (gi >= ng || c >= D4) continue;
      float4 o = part[gi * C4 + c];
#pragma unroll
      for (int grp = 1; grp < NG; ++grp) o = add4(o, part[(grp * kGroupChunk + gi) * C4 + c]);
      const std::int64_t slot = head0 + g0 + gi;
      if (nsplit == 1) {
        reinterpret_cast<float4*>(a.out + slot * D)[c] = div4(o, sl[gi]);
      } else {
        reinterpret_cast<float4*>(work_o + (slot * a.max_splits + split) * D)[c] = o;
      }
    }
    if (nsplit > 1 && t < ng) {
      const std::int64_t slot = head0 + g0 + t;
      reinterpret_cast<float2*>(work_ml)[slot * a.max_splits + split] = make_float2(sm[t], sl[t]);
    }
  }
  if (nsplit == 1) return;

  // Several splits: the last block of (row, kv head) to publish combines them.
  __threadfence();
  __syncthreads();
  unsigned int* counter = a.counters + static_cast<std::int64_t>(r) * a.kv_heads + kvh;
  if (t == 0) is_last = atomicAdd(counter, 1u) == static_cast<unsigned int>(nsplit - 1);
  __syncthreads();
  if (!is_last) return;
  __threadfence();

  // sc is reused a chunk of 32 splits at a time: sc[head][s] = f_s = exp(m_s - M), sc[head][32 + s] = l_s.
  static_assert(kSplit == 64, "f and l of 32 splits share a row of sc");
  for (int g0 = 0; g0 < G; g0 += kGroupChunk) {
    const int ng = min(kGroupChunk, G - g0);
    __syncthreads();  // the previous chunk (or the o phase) is done with sc
    // This thread's outputs: (head gi, float4 c) items; the first batch of their o partials is loaded now,
    // before M is known, so those loads overlap the (m, l) loads below.
    float4 ob[kItems][kCombineBatch];
    auto load_batch = [&](int sb) {
#pragma unroll
      for (int it = 0; it < kItems; ++it) {
        const int item = t + it * kAttnThreads;
        const int gi = item / C4, c = item % C4;
        const std::int64_t slot = head0 + g0 + gi;
#pragma unroll
        for (int k = 0; k < kCombineBatch; ++k)
          if (gi < ng && c < D4 && sb + k < nsplit)
            ob[it][k] = __ldcg(reinterpret_cast<const float4*>(work_o + (slot * a.max_splits + sb + k) * D) + c);
      }
    };
    load_batch(0);
    // Warp gi: M over the splits (a lane per split; max is exact in any order), keeping the first 32 (m, l).
    float M = -FLT_MAX, m_first = -FLT_MAX, l_first = 0.0f;
    if (warp < ng) {
      const float2* ml = reinterpret_cast<const float2*>(work_ml) + (head0 + g0 + warp) * a.max_splits;
      for (int s = lane; s < nsplit; s += 32) {
        const float2 v = __ldcg(ml + s);
        if (s < 32) {
          m_first = v.x;
          l_first = v.y;
        }
        M = fmaxf(M, v.x);
      }
      M = warp_max(M);
    }
    float4 acc[kItems];
    float L[kItems];
#pragma unroll
    for (int it = 0; it < kItems; ++it) {
      acc[it] = make_float4(0.f, 0.f, 0.f, 0.f);
      L[it] = 0.0f;
    }
    for (int s0 = 0; s0 < nsplit; s0 += 32) {
      if (warp < ng && s0 + lane < nsplit) {
        float m = m_first, l = l_first;
        if (s0 > 0) {
          const float2 v = __ldcg(reinterpret_cast<const float2*>(work_ml) + (head0 + g0 + warp) * a.max_splits + s0 + lane);
          m = v.x;
          l = v.y;
        }
        sc[warp][lane] = expf(__fsub_rn(m, M));
        sc[warp][32 + lane] = l;
      }
      __syncthreads();
      const int s1 = min(s0 + 32, nsplit);
      for (int sb = s0; sb < s1; sb += kCombineBatch) {
        if (sb > 0) load_batch(sb);
#pragma unroll
        for (int it = 0; it < kItems; ++it) {
          const int item = t + it * kAttnThreads;
          const int gi = item / C4, c = item % C4;
          if (gi >= ng || c >= D4) continue;
#pragma unroll
          for (int k = 0; k < kCombineBatch; ++k)
            if (sb + k < s1) {  // in split order
              const float f = sc[gi][sb + k - s0];
              acc[it] = fma4(f, ob[it][k], acc[it]);
              L[it] = __fmaf_rn(f, sc[gi][32 + sb + k - s0], L[it]);
            }
        }
      }
      __syncthreads();  // sc is rewritten by the next chunk
    }
#pragma unroll
    for (int it = 0; it < kItems; ++it) {
      const int item = t + it * kAttnThreads;
      const int gi = item / C4, c = item % C4;
      if (gi >= ng || c >= D4) continue;
      reinterpret_cast<float4*>(a.out + (head0 + g0 + gi) * D)[c] = div4(acc[it], L[it]);
    }
  }
  if (t == 0) *counter = 0u;
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

void decode_attention(const DecodeAttnArgs& a, cudaStream_t s) {
  if (a.n_rows <= 0) return;
  if (a.head_dim > kMaxHeadDim || a.head_dim <= 0 || a.head_dim % 4 != 0)
    throw std::invalid_argument("decode_attention: head_dim a multiple of 4, at most 256");
  if (a.kv_heads <= 0 || a.heads % a.kv_heads != 0) throw std::invalid_argument("decode_attention: heads % kv_heads");
  if (a.max_splits > 1 && (a.work == nullptr || a.counters == nullptr))
    throw std::invalid_argument("decode_attention: several splits need work and counters");
  if (a.max_splits < 1 || a.max_splits > 65535 || a.n_rows > 65535)
    throw std::invalid_argument("decode_attention: max_splits and n_rows at most 65535 (grid y, z)");
  if (a.k_new != nullptr &&
      (a.v_new == nullptr || a.pos == nullptr || a.inv_freq == nullptr || a.n_rows > kMaxDecodeRows))
    throw std::invalid_argument("decode_attention: fresh rows need v_new, pos and inv_freq, and at most 16 rows");
  const dim3 grid(static_cast<unsigned int>(a.kv_heads), static_cast<unsigned int>(a.n_rows),
                  static_cast<unsigned int>(a.max_splits));
  if (a.head_dim <= 64)
    launch_pdl(decode_attention_kernel<64>, grid, dim3(kAttnThreads), 0, s, a);
  else if (a.head_dim <= 128)
    launch_pdl(decode_attention_kernel<128>, grid, dim3(kAttnThreads), 0, s, a);
  else
    launch_pdl(decode_attention_kernel<256>, grid, dim3(kAttnThreads), 0, s, a);
  check_launch("decode_attention");
}

}  // namespace tf::cuda
