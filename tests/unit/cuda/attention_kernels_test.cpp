// RoPE, the KV-cache writes and attention (decode and prefill) against float64 or against each other bit for
// bit; split from kernels_test.cpp (the other kernels). Runs only on a machine with a GPU.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "cuda_test_util.h"

namespace tf::cuda::test {
namespace {

TEST(CudaKernels, RopeBothPairingsWithFactors) {
  TF_NEED_GPU();
  for (int head_dim : {64, 128, 256})
    for (bool interleaved : {false, true})
      for (bool factors : {false, true}) {
        const int heads = 5, half = head_dim / 2;
        const std::int64_t rows = 9;
        std::vector<float> inv(static_cast<std::size_t>(half));
        for (int i = 0; i < half; ++i) {
          inv[static_cast<std::size_t>(i)] = 1.0f / std::pow(500000.0f, static_cast<float>(2 * i) / static_cast<float>(head_dim));
          if (factors) inv[static_cast<std::size_t>(i)] /= 1.0f + static_cast<float>(i % 7);
        }
        std::vector<std::int64_t> pos(static_cast<std::size_t>(rows));
        for (auto& p : pos) p = static_cast<std::int64_t>(rng()() % 5000);
        const auto x = random_floats(static_cast<std::size_t>(rows * heads * head_dim));
        DevBuf<float> dx(x), out(x.size()), dinv(inv);
        DevBuf<std::int64_t> dpos(pos);
        out.poison();
        rope(dx.p, out.p, rows, heads, head_dim, head_dim, dpos.p, dinv.p, interleaved, nullptr);
        std::vector<double> ref(x.size());
        for (std::int64_t r = 0; r < rows; ++r)
          for (int h = 0; h < heads; ++h)
            for (int i = 0; i < half; ++i) {
              // The angle as the kernel forms it (a float32 product), then exact trigonometry.
              const float ang = static_cast<float>(pos[static_cast<std::size_t>(r)]) * inv[static_cast<std::size_t>(i)];
              const double c = std::cos(static_cast<double>(ang)), s = std::sin(static_cast<double>(ang));
              const std::int64_t base = (r * heads + h) * head_dim;
              const auto i0 = static_cast<std::size_t>(base + (interleaved ? 2 * i : i));
              const auto i1 = static_cast<std::size_t>(base + (interleaved ? 2 * i + 1 : i + half));
              ref[i0] = x[i0] * c - x[i1] * s;
              ref[i1] = x[i0] * s + x[i1] * c;
            }
        EXPECT_LT(rel_err(out.download(), ref), 1e-6) << head_dim << " " << interleaved << " " << factors;
      }
}

// Host-side attention cache for tests: K, V [kv_heads, cap, d].
struct HostCache {
  int kv_heads, cap, d;
  std::vector<float> k, v;
  DevBuf<float> dk, dv;
  HostCache(int kvh, int capacity, int dim)
      : kv_heads(kvh), cap(capacity), d(dim), k(random_floats(static_cast<std::size_t>(kvh) * capacity * dim)),
        v(random_floats(static_cast<std::size_t>(kvh) * capacity * dim)), dk(k), dv(v) {}
  float K(int h, int p, int i) const { return k[(static_cast<std::size_t>(h) * cap + p) * d + i]; }
  float V(int h, int p, int i) const { return v[(static_cast<std::size_t>(h) * cap + p) * d + i]; }
};

std::vector<double> ref_attention_row(const float* q, const HostCache& c, int len, int heads, float scale) {
  const int d = c.d, group = heads / c.kv_heads;
  std::vector<double> out(static_cast<std::size_t>(heads) * d);
  for (int h = 0; h < heads; ++h) {
    const int kvh = h / group;
    std::vector<double> s(static_cast<std::size_t>(len));
    double m = -INFINITY;
    for (int p = 0; p < len; ++p) {
      double dot = 0.0;
      for (int i = 0; i < d; ++i) dot += static_cast<double>(q[h * d + i]) * c.K(kvh, p, i);
      s[static_cast<std::size_t>(p)] = dot * scale;
      m = std::max(m, s[static_cast<std::size_t>(p)]);
    }
    double l = 0.0;
    for (auto& x : s) l += (x = std::exp(x - m));
    for (int i = 0; i < d; ++i) {
      double acc = 0.0;
      for (int p = 0; p < len; ++p) acc += s[static_cast<std::size_t>(p)] * c.V(kvh, p, i);
      out[static_cast<std::size_t>(h * d + i)] = acc / l;
    }
  }
  return out;
}

TEST(CudaKernels, DecodeAttentionSplitsAndGqa) {
  TF_NEED_GPU();
  struct Shape {
    int heads, kv_heads, d;
  };
  for (const Shape sh : {Shape{9, 3, 64}, Shape{32, 8, 128}, Shape{24, 4, 256}}) {
    const int cap = 2048;
    HostCache c0(sh.kv_heads, cap, sh.d), c1(sh.kv_heads, cap, sh.d);
    const std::vector<int> lens = {1, 100, 256, 257, 700, 1500, 2048};
    const int n = static_cast<int>(lens.size());
    std::vector<AttnRow> rows(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
      const HostCache& c = r % 2 ? c1 : c0;
      rows[static_cast<std::size_t>(r)] = {const_cast<float*>(c.dk.p), const_cast<float*>(c.dv.p), lens[static_cast<std::size_t>(r)], cap, 0, 0};
    }
    const auto q = random_floats(static_cast<std::size_t>(n) * sh.heads * sh.d);
    DevBuf<float> dq(q), out(q.size());
    DevBuf<AttnRow> drows(rows);
    const int max_splits = decode_attention_max_splits(cap, sh.kv_heads);
    DevBuf<float> work(decode_attention_work_floats(n, sh.heads, sh.d, max_splits));
    const float scale = 1.0f / std::sqrt(static_cast<float>(sh.d));
    for (int rep = 0; rep < 2; ++rep) {  // twice: over the first run's partials, the same result
      out.poison();
      const DecodeAttnArgs a = attn_args(dq.p, out.p, drows.p, n, sh.heads, sh.kv_heads, sh.d, max_splits, work.p);
      decode_attention(a, nullptr);
      const auto got = out.download();
      for (int r = 0; r < n; ++r) {
        const auto ref = ref_attention_row(q.data() + static_cast<std::size_t>(r) * sh.heads * sh.d, r % 2 ? c1 : c0,
                                           lens[static_cast<std::size_t>(r)], sh.heads, scale);
        std::vector<float> row(got.begin() + static_cast<std::ptrdiff_t>(r) * sh.heads * sh.d,
                               got.begin() + static_cast<std::ptrdiff_t>(r + 1) * sh.heads * sh.d);
        EXPECT_LT(rel_err(row, ref), kF32Tol) << "d " << sh.d << " len " << lens[static_cast<std::size_t>(r)];
      }
    }
  }
}

TEST(CudaKernels, KvWrite) {
  TF_NEED_GPU();
  const int kvh = 3, d = 64, cap = 512, n = 5;
  DevBuf<float> K(static_cast<std::size_t>(kvh) * cap * d), V(static_cast<std::size_t>(kvh) * cap * d);
  K.poison();
  V.poison();
  std::vector<AttnRow> rows(n);
  for (int r = 0; r < n; ++r) rows[static_cast<std::size_t>(r)] = {K.p, V.p, 0, cap, 100 + 7 * r, 0};
  const auto k = random_floats(static_cast<std::size_t>(n) * kvh * d), v = random_floats(k.size());
  DevBuf<float> dk(k), dv(v);
  DevBuf<AttnRow> drows(rows);
  kv_write(drows.p, dk.p, dv.p, n, kvh, d, nullptr);
  const auto hk = K.download(), hv = V.download();
  for (int r = 0; r < n; ++r)
    for (int h = 0; h < kvh; ++h)
      for (int i = 0; i < d; ++i) {
        const std::size_t at = (static_cast<std::size_t>(h) * cap + 100 + 7 * r) * d + i;
        const std::size_t src = (static_cast<std::size_t>(r) * kvh + h) * d + i;
        ASSERT_EQ(hk[at], k[src]);
        ASSERT_EQ(hv[at], v[src]);
      }
}

TEST(CudaKernels, PrefillAttentionCausalGqa) {
  TF_NEED_GPU();
  struct Shape {
    int heads, kv_heads, d;
  };
  // Every head size the kernel has; starts that put a query tile across key tiles of both widths (64 and 32),
  // and a chunk of fewer rows than a query tile.
  for (const Shape sh : {Shape{9, 3, 64}, Shape{32, 8, 128}, Shape{24, 4, 256}, Shape{4, 2, 32}, Shape{8, 8, 80},
                         Shape{6, 2, 96}})
    for (const auto& [start, n] : {std::pair{0, 150}, std::pair{77, 150}, std::pair{300, 37}}) {
      const int cap = 512;
      HostCache c(sh.kv_heads, cap, sh.d);
      const auto q = random_floats(static_cast<std::size_t>(n) * sh.heads * sh.d);
      DevBuf<float> dq(q), out(q.size());
      DevBuf<std::int64_t> dstart(std::vector<std::int64_t>{start});
      out.poison();
      PrefillAttnArgs a;
      a.q = dq.p;
      a.out = out.p;
      a.k = c.dk.p;
      a.v = c.dv.p;
      a.cap = cap;
      a.start = dstart.p;
      a.n_rows = n;
      a.heads = sh.heads;
      a.kv_heads = sh.kv_heads;
      a.head_dim = sh.d;
      a.scale = 1.0f / std::sqrt(static_cast<float>(sh.d));
      prefill_attention(a, nullptr);
      const auto got = out.download();
      // A pure function of its inputs (the prompt cache's chunk grid relies on it): a second run, the same bits.
      out.poison();
      prefill_attention(a, nullptr);
      ASSERT_EQ(std::memcmp(got.data(), out.download().data(), got.size() * sizeof(float)), 0)
          << "d " << sh.d << " start " << start;
      std::vector<double> ref;
      for (int r = 0; r < n; ++r) {
        auto row = ref_attention_row(q.data() + static_cast<std::size_t>(r) * sh.heads * sh.d, c, start + r + 1, sh.heads, a.scale);
        ref.insert(ref.end(), row.begin(), row.end());
      }
      EXPECT_LT(rel_err(got, ref), kF32Tol) << "d " << sh.d << " start " << start;
    }
}


// The fused rope + cache write gives the unfused kernels' bits.
TEST(CudaKernels, RopeKvWriteEqualsRopeThenKvWrite) {
  TF_NEED_GPU();
  for (int d : {64, 128, 256})
    for (bool il : {false, true}) {
      const int heads = 8, kvh = 2, cap = 64, n = 5;
      std::vector<float> inv(static_cast<std::size_t>(d / 2));
      for (int i = 0; i < d / 2; ++i) inv[static_cast<std::size_t>(i)] = std::pow(10000.0f, -2.0f * static_cast<float>(i) / static_cast<float>(d));
      std::vector<std::int64_t> pos(n);
      for (int r = 0; r < n; ++r) pos[static_cast<std::size_t>(r)] = 17 + r;
      const auto q = random_floats(static_cast<std::size_t>(n) * heads * d), k = random_floats(static_cast<std::size_t>(n) * kvh * d),
                 v = random_floats(static_cast<std::size_t>(n) * kvh * d);
      DevBuf<float> dq(q), dk(k), dv(v), dinv(inv), q1(q.size()), q2(q.size()), k1(k.size());
      DevBuf<std::int64_t> dpos(pos);
      DevBuf<float> K1(static_cast<std::size_t>(kvh) * cap * d), V1(K1.n), K2(K1.n), V2(K1.n);
      for (auto* b : {&K1, &V1, &K2, &V2}) ck(cudaMemset(b->p, 0, b->n * 4), "memset");
      std::vector<AttnRow> r1(n), r2(n);
      for (int r = 0; r < n; ++r) {
        r1[static_cast<std::size_t>(r)] = {K1.p, V1.p, 0, cap, 17 + r, 0};
        r2[static_cast<std::size_t>(r)] = {K2.p, V2.p, 0, cap, 17 + r, 0};
      }
      DevBuf<AttnRow> dr1(r1), dr2(r2);
      rope(dq.p, q1.p, n, heads, d, d, dpos.p, dinv.p, il, nullptr);
      rope(dk.p, k1.p, n, kvh, d, d, dpos.p, dinv.p, il, nullptr);
      kv_write(dr1.p, k1.p, dv.p, n, kvh, d, nullptr);
      rope_kv_write(dq.p, dk.p, dv.p, q2.p, dr2.p, dpos.p, dinv.p, il, n, heads, kvh, d, nullptr);
      const auto a = q1.download(), b = q2.download(), ka = K1.download(), kb = K2.download(), va = V1.download(),
                 vb = V2.download();
      EXPECT_TRUE(same_bits(a.data(), b.data(), a.size())) << d << " " << il;
      EXPECT_TRUE(same_bits(ka.data(), kb.data(), ka.size())) << d << " " << il;
      EXPECT_TRUE(same_bits(va.data(), vb.data(), va.size())) << d << " " << il;
    }
}

// A decode call's attention with its RoPE and cache write fused in (DecodeAttnArgs::k_new) gives the bits of
// rope_kv_write then decode_attention: the output and every byte of the caches. Four streams with 1, 3, 5
// and 7 rows in the call (16 in all) after 10, 63, 130 and 190 cached positions (the 63 and 190 ones' rows
// cross a split boundary, the 130 one's sit inside its third split); RoPE positions also far past the caches
// (sincosf's slow argument reduction), GQA, both pairings.
TEST(CudaKernels, DecodeAttentionWithFreshRowsEqualsRopeKvWriteThenAttention) {
  TF_NEED_GPU();
  struct Shape {
    int heads, kv_heads, d;
  };
  struct Stream {
    int prior, rows;
  };
  const std::vector<Stream> streams = {{10, 1}, {63, 3}, {130, 5}, {190, 7}};
  const int cap = 256;
  for (const Shape sh : {Shape{8, 2, 64}, Shape{8, 2, 128}, Shape{24, 4, 256}})
    for (bool il : {false, true})
      for (std::int64_t pos_offset : {std::int64_t{0}, std::int64_t{300000}}) {
        const int d = sh.d, half = d / 2;
        std::vector<float> inv(static_cast<std::size_t>(half));
        for (int i = 0; i < half; ++i)
          inv[static_cast<std::size_t>(i)] = 1.0f / std::pow(500000.0f, static_cast<float>(2 * i) / static_cast<float>(d));
        // Two identical caches per stream: one for each path.
        const std::size_t cache_floats = static_cast<std::size_t>(sh.kv_heads) * cap * d;
        std::vector<DevBuf<float>> K1, V1, K2, V2;
        std::vector<AttnRow> rows;
        std::vector<std::int64_t> pos;
        for (const Stream& st : streams) {
          const auto k0 = random_floats(cache_floats), v0 = random_floats(cache_floats);
          K1.emplace_back(k0);
          V1.emplace_back(v0);
          K2.emplace_back(k0);
          V2.emplace_back(v0);
          for (int i = 0; i < st.rows; ++i) {
            const int wp = st.prior + i;
            rows.push_back({nullptr, nullptr, wp + 1, cap, wp, st.prior});
            pos.push_back(wp + pos_offset);
          }
        }
        const int n = static_cast<int>(rows.size());
        std::vector<AttnRow> r1 = rows, r2 = rows;
        for (std::size_t r = 0, row = 0; r < streams.size(); ++r)
          for (int i = 0; i < streams[r].rows; ++i, ++row) {
            r1[row].k = K1[r].p;
            r1[row].v = V1[r].p;
            r2[row].k = K2[r].p;
            r2[row].v = V2[r].p;
          }
        const auto q = random_floats(static_cast<std::size_t>(n) * sh.heads * d),
                   k = random_floats(static_cast<std::size_t>(n) * sh.kv_heads * d),
                   v = random_floats(static_cast<std::size_t>(n) * sh.kv_heads * d);
        DevBuf<float> dq(q), dk(k), dv(v), dinv(inv), qrot(q.size()), out1(q.size()), out2(q.size());
        DevBuf<std::int64_t> dpos(pos);
        DevBuf<AttnRow> dr1(r1), dr2(r2);
        const int max_splits = decode_attention_max_splits(cap, sh.kv_heads);
        DevBuf<float> work(decode_attention_work_floats(n, sh.heads, d, max_splits));
        for (int rep = 0; rep < 2; ++rep) {  // twice: over the first run's partials, the cache slots rewritten
          out1.poison();
          out2.poison();
          // Today's prefill path (and the decode path before the fusion): rope_kv_write, then attention.
          rope_kv_write(dq.p, dk.p, dv.p, qrot.p, dr1.p, dpos.p, dinv.p, il, n, sh.heads, sh.kv_heads, d, nullptr);
          DecodeAttnArgs a = attn_args(qrot.p, out1.p, dr1.p, n, sh.heads, sh.kv_heads, d, max_splits, work.p);
          decode_attention(a, nullptr);
          // The fused one: raw q, k and v.
          a.q = dq.p;
          a.out = out2.p;
          a.rows = dr2.p;
          a.k_new = dk.p;
          a.v_new = dv.p;
          a.pos = dpos.p;
          a.inv_freq = dinv.p;
          a.interleaved = il;
          decode_attention(a, nullptr);
          const auto o1 = out1.download(), o2 = out2.download();
          EXPECT_TRUE(same_bits(o1.data(), o2.data(), o1.size())) << "d " << d << " il " << il << " offset " << pos_offset;
          EXPECT_TRUE(std::all_of(o2.begin(), o2.end(), [](float x) { return std::isfinite(x); }));  // all written
          for (std::size_t r = 0; r < streams.size(); ++r) {
            const auto ka = K1[r].download(), kb = K2[r].download(), va = V1[r].download(), vb = V2[r].download();
            EXPECT_TRUE(same_bits(ka.data(), kb.data(), ka.size())) << "K stream " << r << " d " << d << " il " << il;
            EXPECT_TRUE(same_bits(va.data(), vb.data(), va.size())) << "V stream " << r << " d " << d << " il " << il;
          }
        }
      }
}

// The attention that writes the o projection's x terms in its combine kernel (DecodeAttnArgs::prepare_x,
// then decode_linear with x_prepared) gives the bits of the attention then decode_linear: its output and
// the matmul's, at 1, 2, 3, 8 and 16 rows (the streaming and the blocked kernel), rows of one split and of
// many, head sizes 128 and 256, groups of 64 and 32.
TEST(CudaKernels, AttentionWritingXTermsEqualsAttentionThenMatmul) {
  TF_NEED_GPU();
  struct Shape {
    int heads, kv_heads, d, group;
    ElemType dt;
  };
  for (const Shape sh : {Shape{32, 8, 128, 64, ElemType::BF16}, Shape{24, 4, 256, 32, ElemType::F16}}) {
    const int cap = 1024, K = sh.heads * sh.d, N = 320;
    const HostW hw = make_weight(N, K, 4, sh.group, sh.dt);
    DevW dw(hw);
    ASSERT_TRUE(attention_prepare_fusable(dw.view, sh.heads, sh.d));
    EXPECT_FALSE(attention_prepare_fusable(dw.view, sh.heads + 1, sh.d));
    HostCache c(sh.kv_heads, cap, sh.d);
    const std::size_t scratch = decode_linear_scratch_bytes(dw.view);
    DevBuf<std::uint8_t> sc1(scratch), sc2(scratch);
    for (int n : {1, 2, 3, 8, 16}) {
      std::vector<AttnRow> rows(static_cast<std::size_t>(n));
      for (int r = 0; r < n; ++r)  // lengths of one split (<= 16) and of many
        rows[static_cast<std::size_t>(r)] = {const_cast<float*>(c.dk.p), const_cast<float*>(c.dv.p),
                                             r % 3 == 0 ? 1 + 5 * r % 16 : 17 + 61 * r, cap, 0, 0};
      const auto q = random_floats(static_cast<std::size_t>(n) * K);
      DevBuf<float> dq(q), out1(q.size()), out2(q.size()), y1(static_cast<std::size_t>(n) * N), y2(y1.n);
      DevBuf<AttnRow> drows(rows);
      const int max_splits = decode_attention_max_splits(cap, sh.kv_heads);
      DevBuf<float> work(decode_attention_work_floats(n, sh.heads, sh.d, max_splits));
      out1.poison();
      out2.poison();
      y1.poison();
      y2.poison();
      DecodeAttnArgs a = attn_args(dq.p, out1.p, drows.p, n, sh.heads, sh.kv_heads, sh.d, max_splits, work.p);
      decode_attention(a, nullptr);
      DecodeLinearArgs plain = linear_args(out1.p, K, n, dw.view, y1.p, N);
      plain.imma_scratch = sc1.p;
      plain.imma_scratch_bytes = scratch;
      decode_linear(plain, nullptr);
      a.out = out2.p;
      a.prepare_x = sc2.p;
      a.prepare_bytes = scratch;
      a.prepare_g64 = sh.group == 64;
      decode_attention(a, nullptr);
      DecodeLinearArgs fused = plain;
      fused.x = nullptr;
      fused.x_prepared = true;
      fused.seg[0].out = y2.p;
      fused.imma_scratch = sc2.p;
      decode_linear(fused, nullptr);
      const std::string what = "d " + std::to_string(sh.d) + " rows " + std::to_string(n);
      const auto o1 = out1.download(), o2 = out2.download(), w1 = y1.download(), w2 = y2.download();
      EXPECT_TRUE(same_bits(o1.data(), o2.data(), o1.size())) << what << ": attention output";
      EXPECT_TRUE(same_bits(w1.data(), w2.data(), w1.size())) << what << ": matmul output";
      // Both start as the same NaN pattern: equal bits alone could mean neither was written.
      EXPECT_TRUE(std::all_of(w2.begin(), w2.end(), [](float v) { return std::isfinite(v); })) << what;
    }
  }
}

// The grid bound the backend sizes the attention with: no length up to the cache's capacity has more splits
// (host arithmetic only: runs without a GPU too).
TEST(CudaKernels, DecodeAttentionMaxSplitsBoundsEveryLength) {
  for (int kv_heads : {1, 2, 3, 4, 8, 16, 128, 200})
    for (int cap : {1, 15, 16, 17, 64, 256, 1000, 1024, 4096, 8192, 40000}) {
      int most = 0;
      for (int len = 1; len <= cap; ++len) {
        const int s = attn_split_size(len, kv_heads);
        ASSERT_GE(s, kAttnMinSplit);
        ASSERT_LE(s, kAttnMaxSplit);
        most = std::max(most, attn_split_count(len, kv_heads));
      }
      EXPECT_GE(decode_attention_max_splits(cap, kv_heads), most) << "kv_heads " << kv_heads << " cap " << cap;
      EXPECT_LE(decode_attention_max_splits(cap, kv_heads), std::max(most, (cap + 15) / 16)) << "not loose";
    }
}

}  // namespace
}  // namespace tf::cuda::test

