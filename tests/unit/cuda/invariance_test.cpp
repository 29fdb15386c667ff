// Row invariance (ARCHITECTURE §4): every kernel a decode or verify step uses computes a row bit for bit the
// same alone and inside 2-, 3-, 8- and 16-row calls, at any place in the call, beside rows of other streams.
// Then, through the whole backend: a verify window equals serial decoding, two interleaved streams equal
// each alone, and graph replay equals kernel-by-kernel launches. Real head sizes (64, 128, 256).
#include <cmath>

#include "backends/cuda/cuda_backend.h"
#include "bench/cuda/random_llama.h"
#include "cuda_test_util.h"

namespace tf::cuda::test {
namespace {

const std::vector<int> kCallRows = {1, 2, 3, 8, 16};

// Runs `call(x rows, n)` with the target row at every place of an n-row call whose other rows are fresh
// random rows, and checks the target's output bits against the 1-row call.
template <typename Call>
void check_rows(std::int64_t in_width, std::int64_t out_width, Call call, const std::string& what) {
  const auto target = random_floats(static_cast<std::size_t>(in_width));
  const std::vector<float> alone = call(target, 1);
  int checked = 0;
  for (int n : kCallRows) {
    for (int place : {0, n / 2, n - 1}) {
      auto x = random_floats(static_cast<std::size_t>(n * in_width));
      std::copy(target.begin(), target.end(), x.begin() + static_cast<std::ptrdiff_t>(place * in_width));
      const auto out = call(x, n);
      ASSERT_TRUE(same_bits(alone.data(), out.data() + place * out_width, static_cast<std::size_t>(out_width)))
          << what << ": row differs at place " << place << " of a " << n << "-row call";
      ++checked;
    }
  }
  std::printf("[ invariance ] %s: %d calls bit-identical\n", what.c_str(), checked);
}

TEST(CudaInvariance, DecodeLinear) {
  TF_NEED_GPU();
  struct C {
    const char* name;
    std::int64_t n, k;
    int bits, group;
    ElemType t;
  };
  for (const C& c : {C{"smollm2 q 576x576 q4 g32", 576, 576, 4, 32, ElemType::F16},
                     C{"smollm2 out 49152x576 q8 g32", 49152, 576, 8, 32, ElemType::F16},
                     C{"8b q 4096x4096 q4 g64", 4096, 4096, 4, 64, ElemType::BF16},
                     C{"8b down 4096x14336 q4 g64", 4096, 14336, 4, 64, ElemType::BF16},
                     C{"27b q 6144x5120 q4 g64", 6144, 5120, 4, 64, ElemType::BF16},
                     C{"q4 g128 f32", 1000, 2048, 4, 128, ElemType::F32},
                     C{"bonsai 27b q 6144x5120 q2 g128", 6144, 5120, 2, 128, ElemType::BF16},
                     C{"q2 g64 f16 1000x576", 1000, 576, 2, 64, ElemType::F16},
                     C{"dense bf16 1024x4096", 1024, 4096, 0, 0, ElemType::BF16},
                     C{"dense f32 512x576", 512, 576, 0, 0, ElemType::F32}}) {
    const HostW hw = make_weight(c.n, c.k, c.bits, c.group, c.t);
    DevW dw(hw);
    // Without scratch and, where the weight takes it, with x prepared for the launch: then 1-8 rows run on
    // the streaming integer kernel and 16 on the blocked one, so this also compares the two.
    const std::size_t scratch = decode_linear_scratch_bytes(dw.view);
    for (const bool with_scratch : {false, true}) {
      if (with_scratch && scratch == 0) continue;
      DevBuf<std::uint8_t> sb(with_scratch ? scratch : 1);
      check_rows(c.k, c.n, [&](const std::vector<float>& x, int n) {
        DevBuf<float> dx(x), dy(static_cast<std::size_t>(n * c.n));
        dy.poison();
        DecodeLinearArgs a = linear_args(dx.p, c.k, n, dw.view, dy.p, c.n);
        if (with_scratch) {
          a.imma_scratch = sb.p;
          a.imma_scratch_bytes = scratch;
        }
        decode_linear(a, nullptr);
        return dy.download();
      }, std::string(c.name) + (with_scratch ? " (x prepared)" : ""));
    }
  }
  // Fused forms (qkv segments, gate/up with the swiglu epilogue) give each segment's rows the same bits as
  // the plain call.
  const HostW g = make_weight(1536, 576, 4, 32, ElemType::F16), u = make_weight(1536, 576, 4, 32, ElemType::F16);
  DevW dg(g), du(u);
  const auto x = random_floats(3 * 576);
  DevBuf<float> dx(x), plain(3 * 1536), fused_g(3 * 1536), fused_u(3 * 1536), sw(3 * 1536);
  DecodeLinearArgs a = linear_args(dx.p, 576, 3, dg.view, plain.p, 1536);
  decode_linear(a, nullptr);
  a.segments = 2;
  a.seg[0] = {dg.view, fused_g.p, 1536};
  a.seg[1] = {du.view, fused_u.p, 1536};
  decode_linear(a, nullptr);
  const auto p = plain.download(), fg = fused_g.download();
  EXPECT_TRUE(same_bits(p.data(), fg.data(), p.size())) << "segments change a weight's bits";
  a.swiglu_out = sw.p;
  a.swiglu_stride = 1536;
  decode_linear(a, nullptr);
  EXPECT_TRUE(same_bits(p.data(), fused_g.download().data(), p.size())) << "the swiglu epilogue changes the gate's bits";
}

TEST(CudaInvariance, RmsNormRopeEmbed) {
  TF_NEED_GPU();
  for (std::int64_t cols : {576, 4096, 5120}) {
    const auto w = random_floats(static_cast<std::size_t>(cols), 0.5f, 1.5f);
    DevBuf<float> dw(w);
    check_rows(cols, cols, [&](const std::vector<float>& x, int n) {
      DevBuf<float> dx(x), out(x.size());
      out.poison();
      rms_norm(dx.p, nullptr, nullptr, out.p, dw.p, n, cols, 1e-5f, nullptr);
      return out.download();
    }, "rms_norm " + std::to_string(cols));
  }
  for (int d : {64, 128, 256}) {
    const int heads = 8;
    std::vector<float> inv(static_cast<std::size_t>(d / 2));
    for (int i = 0; i < d / 2; ++i) inv[static_cast<std::size_t>(i)] = std::pow(10000.0f, -2.0f * static_cast<float>(i) / static_cast<float>(d));
    DevBuf<float> dinv(inv);
    check_rows(heads * d, heads * d, [&](const std::vector<float>& x, int n) {
      // The target row sits at position 1234 wherever it is in the call.
      std::vector<std::int64_t> pos(static_cast<std::size_t>(n));
      for (auto& p : pos) p = 1234;
      DevBuf<float> dx(x), out(x.size());
      DevBuf<std::int64_t> dpos(pos);
      out.poison();
      rope(dx.p, out.p, n, heads, d, d, dpos.p, dinv.p, false, nullptr);
      return out.download();
    }, "rope d" + std::to_string(d));
  }
}

TEST(CudaInvariance, DecodeAttentionBesideOtherStreams) {
  TF_NEED_GPU();
  struct Shape {
    int heads, kv_heads, d;
  };
  for (const Shape sh : {Shape{9, 3, 64}, Shape{32, 8, 128}, Shape{24, 4, 256}}) {
    const int cap = 1024;
    // The target stream's cache, and 16 other streams' caches of other lengths.
    auto make = [&] {
      std::vector<float> v = random_floats(static_cast<std::size_t>(sh.kv_heads) * cap * sh.d);
      return v;
    };
    const auto tk = make(), tv = make();
    DevBuf<float> dtk(tk), dtv(tv);
    std::vector<std::unique_ptr<DevBuf<float>>> others;
    for (int i = 0; i < 32; ++i) others.push_back(std::make_unique<DevBuf<float>>(make()));
    // The target row at every place of the call; the other rows read other streams' caches and lengths.
    const std::int64_t width = static_cast<std::int64_t>(sh.heads) * sh.d;
    const int max_splits = decode_attention_max_splits(cap, sh.kv_heads);
    DevBuf<float> work(decode_attention_work_floats(16, sh.heads, sh.d, max_splits));
    auto run = [&](const std::vector<float>& q, const std::vector<AttnRow>& rows) {
      DevBuf<float> dq(q), out(q.size());
      DevBuf<AttnRow> drows(rows);
      out.poison();
      decode_attention(attn_args(dq.p, out.p, drows.p, static_cast<int>(rows.size()), sh.heads, sh.kv_heads, sh.d,
                                 max_splits, work.p),
                       nullptr);
      return out.download();
    };
    int checked = 0;
    for (int len : {37, 256, 600, 1024}) {
      const auto tq = random_floats(static_cast<std::size_t>(width));
      const AttnRow target{dtk.p, dtv.p, len, cap, 0, 0};
      const auto alone = run(tq, {target});
      for (int n : kCallRows)
        for (int place : {0, n / 2, n - 1}) {
          auto q = random_floats(static_cast<std::size_t>(n * width));
          std::copy(tq.begin(), tq.end(), q.begin() + static_cast<std::ptrdiff_t>(place * width));
          std::vector<AttnRow> rows(static_cast<std::size_t>(n));
          for (int r = 0; r < n; ++r)
            rows[static_cast<std::size_t>(r)] = r == place ? target
                                                           : AttnRow{others[static_cast<std::size_t>(2 * r)]->p,
                                                                     others[static_cast<std::size_t>(2 * r + 1)]->p,
                                                                     1 + (r * 97 + len) % cap, cap, 0, 0};
          const auto out = run(q, rows);
          ASSERT_TRUE(same_bits(alone.data(), out.data() + place * width, static_cast<std::size_t>(width)))
              << "attention d" << sh.d << " len " << len << ": differs at place " << place << " of " << n;
          ++checked;
        }
    }
    std::printf("[ invariance ] decode attention heads %d/%d d%d: %d calls bit-identical\n", sh.heads, sh.kv_heads, sh.d,
                checked);
  }
}

// The whole backend: logits of a verify window (k tokens in one forward) equal serial decoding bit for
// bit; so do two streams run interleaved; graphs on and off agree.
// Hidden 512 runs every linear on the bf16 tensor-core kernel; 2560 (K > 2048) puts q/k/v, o and gate/up on
// the integer one, whose norms write x's terms themselves at up to four rows and not beyond: the verify
// windows of 8 and 16 rows and the shared rounds then take the other path than serial decoding. Two bits
// (Ternary Bonsai: groups of 128, the embedding too) runs every linear on the SIMT decode kernel.
bench::LlamaShape small_shape(int head_dim, std::int64_t hidden = 512, bool two_bit = false) {
  bench::LlamaShape s;
  s.name = "small";
  s.hidden = hidden;
  s.layers = 3;
  s.head_dim = head_dim;
  s.heads = hidden / head_dim * 2;
  s.kv_heads = s.heads / 4 > 0 ? s.heads / 4 : 1;
  s.ffn = 1536;
  s.vocab = 5000;
  s.bits = 4;
  s.group = 64;
  s.scale_type = HostDType::BF16;
  s.embed_bits = 8;
  s.tied = true;
  if (two_bit) {
    s.bits = 2;
    s.group = 128;
    s.embed_bits = 2;
  }
  return s;
}

// Shared rounds: six streams at different lengths (stream s first decodes s + round tokens of `cont` serially)
// run their windows of 1, 3, 1, 5, 2 and 4 rows in one forward pass; every row must equal serial decoding.
// The second round has the first's shape over other caches and positions (with graphs: the same graph).
void shared_rounds_equal_serial(bench::RandomLlama& m, std::span<const std::int32_t> prompt,
                                std::span<const std::int32_t> cont, const std::vector<std::vector<float>>& serial,
                                int head_dim, const char* what) {
  const std::size_t widths[] = {1, 3, 1, 5, 2, 4};
  const std::size_t vocab = serial.front().size();
  for (std::size_t round = 0; round < 2; ++round) {
    std::vector<std::unique_ptr<KvCache>> caches;
    std::vector<DecoderPart> parts;
    for (std::size_t s = 0; s < 6; ++s) {
      const std::size_t d = s + round;
      caches.push_back(m.new_cache());
      m.forward(*caches.back(), prompt, 1);
      for (std::size_t i = 0; i < d; ++i) m.forward(*caches.back(), cont.subspan(i, 1), 1);
      parts.push_back({caches.back().get(), nullptr, cont.subspan(d, widths[s]), nullptr});
    }
    const auto logits = m.forward_parts(parts);
    ASSERT_EQ(logits.size(), 16 * vocab);
    std::size_t row = 0;
    for (std::size_t s = 0; s < 6; ++s)
      for (std::size_t j = 0; j < widths[s]; ++j, ++row)
        ASSERT_TRUE(same_bits(serial[s + round + j].data(), logits.data() + row * vocab, vocab))
            << "d" << head_dim << " (" << what << "): shared round " << round << ", stream " << s << " row " << j
            << " differs from serial decoding";
    for (std::size_t s = 0; s < 6; ++s)
      ASSERT_EQ(caches[s]->length(), static_cast<std::int64_t>(prompt.size() + s + round + widths[s]));
  }
}

TEST(CudaInvariance, BackendVerifyWindowEqualsSerial) {
  TF_NEED_GPU();
  struct Config {
    int head_dim;
    std::int64_t hidden;
    bool two_bit = false;
  };
  for (const Config cfg : {Config{64, 512}, Config{128, 512}, Config{256, 512}, Config{128, 2560},
                           Config{128, 512, true}, Config{128, 2560, true}}) {
    const int head_dim = cfg.head_dim;
    auto be = make_cuda_backend();
    bench::RandomLlama m(*be, small_shape(head_dim, cfg.hidden, cfg.two_bit), 1234);
    std::vector<std::int32_t> prompt(40);
    for (auto& t : prompt) t = static_cast<std::int32_t>(rng()() % 5000);
    std::vector<std::int32_t> cont(16);
    for (auto& t : cont) t = static_cast<std::int32_t>(rng()() % 5000);
    const std::int64_t vocab = 5000;
    // Serial: one token per forward.
    auto serial_cache = m.new_cache();
    m.forward(*serial_cache, prompt, 1);
    std::vector<std::vector<float>> serial;
    for (auto t : cont) {
      const std::int32_t one[1] = {t};
      serial.push_back(m.forward(*serial_cache, one, 1));
    }
    for (int k : {2, 3, 8, 16}) {
      auto cache = m.new_cache();
      m.forward(*cache, prompt, 1);
      for (std::size_t at = 0; at + static_cast<std::size_t>(k) <= cont.size(); at += static_cast<std::size_t>(k)) {
        const auto logits = m.forward(*cache, std::span<const std::int32_t>(cont).subspan(at, static_cast<std::size_t>(k)), k);
        for (int r = 0; r < k; ++r)
          ASSERT_TRUE(same_bits(serial[at + static_cast<std::size_t>(r)].data(), logits.data() + r * vocab,
                                static_cast<std::size_t>(vocab)))
              << "d" << head_dim << ": verify window of " << k << ", row " << r << " differs from serial decoding";
      }
    }
    // Two streams interleaved step by step equal each alone; graphs off equals graphs on.
    auto c1 = m.new_cache(), c2 = m.new_cache();
    std::vector<std::int32_t> p2(23);
    for (auto& t : p2) t = static_cast<std::int32_t>(rng()() % 5000);
    m.forward(*c1, prompt, 1);
    m.forward(*c2, p2, 1);
    for (std::size_t i = 0; i < cont.size(); ++i) {
      const std::int32_t one[1] = {cont[i]};
      const auto l1 = m.forward(*c1, one, 1);
      m.forward(*c2, one, 1);
      ASSERT_TRUE(same_bits(serial[i].data(), l1.data(), static_cast<std::size_t>(vocab)))
          << "d" << head_dim << ": interleaved stream differs at step " << i;
    }
    shared_rounds_equal_serial(m, prompt, cont, serial, head_dim, "graphs on");
    be->set_graphs(false);
    shared_rounds_equal_serial(m, prompt, cont, serial, head_dim, "graphs off");
    auto c3 = m.new_cache();
    m.forward(*c3, prompt, 1);
    for (std::size_t i = 0; i < cont.size(); ++i) {
      const std::int32_t one[1] = {cont[i]};
      const auto l = m.forward(*c3, one, 1);
      ASSERT_TRUE(same_bits(serial[i].data(), l.data(), static_cast<std::size_t>(vocab)))
          << "d" << head_dim << ": graphs off differ at step " << i;
    }
    const auto st = be->stats();
    std::printf(
        "[ invariance ] backend d%d hidden %lld%s: verify windows 2/3/8/16 == serial, interleaved == solo, shared "
        "rounds of 6 streams (16 rows) == serial, graphs on == off "
        "(%lld graph replays, %lld captures)\n",
        head_dim, static_cast<long long>(cfg.hidden), cfg.two_bit ? " 2-bit" : "",
        static_cast<long long>(st.graph_replays), static_cast<long long>(st.graph_captures));
    EXPECT_GT(st.graph_replays, 0);
  }
}

// Greedy steps queued ahead, fed the token on the device (families/greedy_ahead.h), give the tokens of steps
// recorded once the token is back, leave the same cache (the logits of a step after them are the same bits),
// and the queue drops a step whose token the caller does not pass (then truncates as a drafted round would).
// The prompt is long enough that the cache grows (256 -> 512 positions) under a queued step.
TEST(CudaInvariance, GreedyStepsQueuedAheadEqualHostFed) {
  TF_NEED_GPU();
  for (const std::int64_t hidden : {512, 2560}) {
    auto be = make_cuda_backend();
    bench::RandomLlama m(*be, small_shape(128, hidden), 99);
    std::vector<std::int32_t> prompt(236);
    for (auto& t : prompt) t = static_cast<std::int32_t>(rng()() % 5000);
    const int steps = 48;
    // The caller's input at step i: the last token found, except at a few steps (a different token: the
    // queued step must be dropped), and a rollback of two positions before step 30.
    const auto input_at = [](int i, std::int32_t found) { return i == 11 || i == 23 ? (found + 1) % 5000 : found; };
    const std::int32_t probe[1] = {17};

    auto host_fed = m.new_cache();
    m.forward(*host_fed, prompt, 1);
    std::vector<std::int32_t> want;
    std::vector<std::int64_t> lengths;
    std::int32_t t = 5;
    for (int i = 0; i < steps; ++i) {
      if (i == 30) host_fed->truncate(host_fed->length() - 2);
      const std::int32_t one[1] = {input_at(i, t)};
      t = m.forward_greedy(*host_fed, one, 1)[0];
      want.push_back(t);
      lengths.push_back(host_fed->length());
    }
    const auto want_probe = m.forward(*host_fed, probe, 1);

    auto ahead = m.new_cache();
    m.forward(*ahead, prompt, 1);
    GreedyAhead queue;
    t = 5;
    int distinct = 0;
    for (int i = 0; i < steps; ++i) {
      if (i == 30) {
        queue.drop(*ahead);
        ahead->truncate(ahead->length() - 2);
      }
      t = m.greedy_ahead(*ahead, queue, input_at(i, t), i + 1 < steps);
      ASSERT_EQ(t, want[static_cast<std::size_t>(i)]) << "hidden " << hidden << ": step " << i;
      ASSERT_EQ(ahead->length() - queue.ahead(), lengths[static_cast<std::size_t>(i)]) << "step " << i;
      if (i > 0 && t != want[static_cast<std::size_t>(i) - 1]) ++distinct;
    }
    // Every step but the first was queued; those at 11 and 23 (another token) and 30 (the rollback) dropped.
    ASSERT_EQ(queue.used(), steps - 1 - 3);
    ASSERT_EQ(queue.dropped(), 3);
    queue.drop(*ahead);
    ASSERT_EQ(ahead->length(), host_fed->length() - 1);
    const auto got_probe = m.forward(*ahead, probe, 1);
    ASSERT_TRUE(same_bits(want_probe.data(), got_probe.data(), want_probe.size()))
        << "hidden " << hidden << ": the cache after queued steps differs";
    // The random model's greedy token barely changes, so the embedding fed on the device is checked on its own
    // too: ids an argmax leaves on the device embed as the same ids given by the host, for any id.
    for (const std::int32_t id : {0, 1, 2345, 4999}) {
      std::vector<float> row(5000, 0.0f);
      row[static_cast<std::size_t>(id)] = 1.0f;
      auto ids = be->argmax_rows_async(be->from_host(row, 1, 5000));
      const auto fed = be->to_host(be->embed(m.weights().embed, ids));
      const std::int32_t one[1] = {id};
      const auto given = be->to_host(be->embed(m.weights().embed, std::span<const std::int32_t>(one, 1)));
      ASSERT_EQ(ids->get().at(0), id);
      ASSERT_TRUE(same_bits(fed.data(), given.data(), given.size())) << "id " << id << " embedded from the device";
    }
    std::printf("[ invariance ] hidden %lld: %d greedy steps queued ahead == host-fed (token %d, %d changes), "
                "2 dropped, a rollback, the cache after them bit-identical; device-fed embedding == host ids\n",
                static_cast<long long>(hidden), steps, want.back(), distinct);
  }
}

}  // namespace
}  // namespace tf::cuda::test

namespace tf::cuda::test {
namespace {

// A new cache of m holding 300 random tokens (past the first 256-position allocation).
std::unique_ptr<KvCache> prefilled_300(bench::RandomLlama& m) {
  std::vector<std::int32_t> prompt(300);
  for (auto& t : prompt) t = static_cast<std::int32_t>(rng()() % 5000);
  auto cache = m.new_cache();
  m.forward(*cache, prompt, 1);
  return cache;
}

// A KV cache saved with snapshot() and restored into a new cache continues exactly: the next steps' logits
// are the same bits as the original cache's. Restoring past the new cache's capacity grows it first (300
// positions > the first 256-position allocation), and bytes of another shape are refused.
TEST(CudaInvariance, KvCacheSnapshotRestoreContinuesExactly) {
  TF_NEED_GPU();
  auto be = make_cuda_backend();
  bench::RandomLlama m(*be, small_shape(128), 7);
  auto original = prefilled_300(m);
  const auto saved = original->snapshot();
  const std::int32_t next[3] = {11, 22, 33};
  const auto want = m.forward(*original, next, 3);
  auto restored = m.new_cache();
  restored->restore(saved);
  ASSERT_EQ(restored->length(), 300);
  const auto got = m.forward(*restored, next, 3);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_TRUE(same_bits(want.data(), got.data(), want.size())) << "a restored cache continues differently";
  std::vector<std::uint8_t> odd(saved.begin(), saved.end() - 4);
  EXPECT_THROW(restored->restore(odd), std::invalid_argument);
}

// The same through a device image (the prompt cache's retained prefixes, cuda_state_image.h): its host bytes
// are snapshot()'s, a cache restored from it on the device, or from those bytes, continues with the same bits,
// and an image stays valid after its cache moves on.
TEST(CudaInvariance, KvCacheDeviceImageRestoresExactly) {
  TF_NEED_GPU();
  auto be = make_cuda_backend();
  bench::RandomLlama m(*be, small_shape(128), 7);
  auto original = prefilled_300(m);
  const auto image = original->image();
  EXPECT_EQ(image->bytes(), original->snapshot().size());
  EXPECT_TRUE(image->host_bytes() == original->snapshot()) << "an image's bytes are not the snapshot's";
  const std::int32_t next[3] = {11, 22, 33};
  const auto want = m.forward(*original, next, 3);
  for (const bool from_host : {false, true}) {
    auto restored = m.new_cache();
    if (from_host) restored->restore_image(HostStateImage(image->host_bytes()));
    else restored->restore_image(*image);
    ASSERT_EQ(restored->length(), 300);
    const auto got = m.forward(*restored, next, 3);
    EXPECT_TRUE(same_bits(want.data(), got.data(), want.size())) << (from_host ? "host bytes" : "device image");
  }
}

}  // namespace
}  // namespace tf::cuda::test
