// CUDA benchmarks (run on the device by scripts/device/run-gpu-suite.sh; never by `make test`):
//   copy bandwidth (device to device, bytes read + written), measured in the same run as everything else;
//   decode tokens/s for llama shapes with weights generated on the device, one stream, CUDA graphs, and
//     their share of the bandwidth bound: (weight bytes + KV bytes read per token) / measured bandwidth;
//   prefill tokens/s at a 2k-token prompt;
//   our invariant decode matmul (4-bit g64 and dense bf16) against cuBLAS bf16 on the 8B linear stack;
//   with --model PATH, decode speed of a real checkpoint through the llama family (the default model).
// Prints "RESULT name value unit" lines and writes them as JSON to --json FILE.
//   tf_cuda_bench [--model PATH] [--json FILE] [--quick] [--precision bf16|full]  (prompt rows' precision)
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "bench/cuda/bench_common.h"
#include "bench/cuda/random_llama.h"
#include "bench/cuda/random_qwen3_5.h"
#include "engine/decode_loop.h"
#include "engine/sampler.h"
#include "families/model.h"

namespace {

// --precision: how every backend made here multiplies prompt rows (backends/prompt_precision.h).
tf::PromptPrecision g_prompt_precision = tf::PromptPrecision::Bf16;
std::unique_ptr<tf::CudaBackend> new_backend() {
  auto b = tf::make_cuda_backend();
  b->set_prompt_precision(g_prompt_precision);
  return b;
}

using tf::bench::ck;
using tf::bench::copy_bandwidth;
using tf::bench::g_results;
using tf::bench::ids;
using tf::bench::LlamaShape;
using tf::bench::median;
using tf::bench::RandomLlama;
using tf::bench::result;
using tf::bench::time_ms;

// Decode speed of one stream: prefill `ctx` tokens, then `steps` greedy decode steps (the argmax found on
// the device, as the engine's greedy rounds do), each step queued before the host has the token before it
// (families/greedy_ahead.h: the engine's greedy rounds without drafts). Reports wall tokens/s and the share
// of the bound at the mean context; `.decode_tokens_per_s_host_fed` is the same with every step recorded
// once its token is back (rounds with drafts).
void bench_decode(tf::CudaBackend& be, RandomLlama& m, const std::string& tag, std::int64_t ctx, int steps, double bw,
                  bool prefill_2k) {
  const auto& s = m.shape();
  tf::SamplingParams greedy;
  greedy.temperature = 0.0f;
  auto run = [&](int n, bool ahead) {
    auto kv = m.new_cache();
    const auto logits = m.forward(*kv, ids(ctx, s.vocab, 1), 1);
    std::int32_t t = tf::sample_token(logits, greedy, 0, kv->length());
    tf::GreedyAhead queue;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
      const std::int32_t one[1] = {t};
      t = ahead ? m.greedy_ahead(*kv, queue, t, i + 1 < n) : m.forward_greedy(*kv, one, 1)[0];
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  // TF_BENCH_HOST_FED=0 leaves out the host-fed runs (a kernel trace of queued steps alone).
  const char* host_fed_env = std::getenv("TF_BENCH_HOST_FED");
  const bool with_host_fed = host_fed_env == nullptr || std::string(host_fed_env) != "0";
  if (with_host_fed) run(8, false);  // warm-up: captures the graphs
  run(8, true);
  std::vector<double> tps, host_fed;
  for (int r = 0; r < 3; ++r) {  // alternating
    tps.push_back(steps / run(steps, true));
    if (with_host_fed) host_fed.push_back(steps / run(steps, false));
  }
  const double tok_s = median(tps);
  if (with_host_fed) result(tag + ".decode_tokens_per_s_host_fed", median(host_fed), "tok/s");
  const double bytes = m.weight_bytes_per_token() + m.kv_bytes_per_token(ctx + steps / 2);
  const double bound = bw / bytes;
  result(tag + ".decode_tokens_per_s", tok_s, "tok/s");
  result(tag + ".bytes_per_token", bytes / 1e9, "GB");
  result(tag + ".bound_tokens_per_s", bound, "tok/s");
  result(tag + ".share_of_bound", tok_s / bound, "");
  // GPU-side time of one decode forward (graph replay + the dyn and logits copies), without host recording.
  {
    auto kv = m.new_cache();
    m.forward(*kv, ids(ctx, s.vocab, 2), 1);
    const std::int32_t one[1] = {7};
    cudaEvent_t a, b;
    ck(cudaEventCreate(&a), "event");
    ck(cudaEventCreate(&b), "event");
    std::vector<double> host, gpu;
    tf::CudaBackendStats st0{};
    for (int i = 0; i < 8 + steps; ++i) {
      if (i == 8) st0 = be.stats();
      const auto t0 = std::chrono::steady_clock::now();
      ck(cudaEventRecord(a, be.stream()), "record");
      m.forward(*kv, one, 1);
      ck(cudaEventRecord(b, be.stream()), "record");
      ck(cudaEventSynchronize(b), "sync");
      float ms = 0;
      ck(cudaEventElapsedTime(&ms, a, b), "elapsed");
      if (i >= 8) {
        gpu.push_back(ms);
        host.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
    }
    result(tag + ".forward_gpu_ms", median(gpu), "ms");
    result(tag + ".forward_wall_ms", median(host), "ms");
    result(tag + ".share_of_bound_gpu_time", (bytes / bw) / (median(gpu) * 1e-3), "");
    const auto st1 = be.stats();
    result(tag + ".launches_per_token", static_cast<double>(st1.launches), "");
    result(tag + ".graph_replays_per_token", static_cast<double>(st1.graph_replays - st0.graph_replays) / steps, "");
    result(tag + ".graph_captures_per_token", static_cast<double>(st1.graph_captures - st0.graph_captures) / steps, "");
    result(tag + ".host_plan_us_per_token", (st1.plan_us - st0.plan_us) / steps, "us");
    result(tag + ".gpu_wait_us_per_token", (st1.wait_us - st0.wait_us) / steps, "us");
  }
  // Host time of a greedy step outside the GPU's work: recording the tape (the model's ops, before anything
  // is launched) and the rest of the step's wall time (plan, launch, argmax, wake-up) beside the GPU wait.
  // The GPU idles through both: one stream's decode is serial.
  {
    auto kv = m.new_cache();
    m.forward(*kv, ids(ctx, s.vocab, 3), 1);
    std::vector<double> rec, wall, wait;
    std::int32_t t = 7;
    for (int i = 0; i < 8 + steps; ++i) {
      const std::int32_t one[1] = {t};
      const double w0 = be.stats().wait_us;
      const auto t0 = std::chrono::steady_clock::now();
      const tf::Tensor lg = m.logits(*kv, one, 1);
      const auto t1 = std::chrono::steady_clock::now();
      t = be.argmax_rows(lg)[0];
      const auto t2 = std::chrono::steady_clock::now();
      if (i >= 8) {
        rec.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        wall.push_back(std::chrono::duration<double, std::micro>(t2 - t0).count());
        wait.push_back(be.stats().wait_us - w0);
      }
    }
    result(tag + ".host_record_us_per_token", median(rec), "us");
    result(tag + ".greedy_step_wall_us", median(wall), "us");
    result(tag + ".greedy_step_gpu_wait_us", median(wait), "us");
  }
  if (prefill_2k) {
    const std::int64_t n = 2048;
    std::vector<double> t;
    for (int r = 0; r < 3; ++r) {
      auto kv = m.new_cache();
      const auto t0 = std::chrono::steady_clock::now();
      for (std::int64_t at = 0; at < n; at += 512)
        m.forward(*kv, ids(512, s.vocab, static_cast<std::uint64_t>(at + r)), 1);
      t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    result(tag + ".prefill_2k_tokens_per_s", static_cast<double>(n) / median(t), "tok/s");
  }
}

// The cost of verifying K drafts (issue 6): wall time of one K-row forward (all K rows' logits, as the decode
// loop asks) over one 1-row decode forward, at the same cache length (the cache is truncated back each time).
// Aggregate decode speed of N concurrent greedy streams whose rounds share one forward pass (the
// scheduler's shared rounds), N = 1, 2, 4, 8, 16: each stream prefills `ctx` tokens of its own, then every
// step runs one token of every stream; tokens/s counts all streams' tokens. `prefill(i)` returns stream i's
// first token; `round(tokens)` runs one shared round and returns each stream's next token.
template <class Prefill, class Round>
void bench_aggregate(const std::string& tag, int steps, Prefill prefill, Round round) {
  double one = 0.0;
  for (int n : {1, 2, 4, 8, 16}) {
    std::vector<std::int32_t> tokens;
    for (int i = 0; i < n; ++i) tokens.push_back(prefill(n, i));
    for (int i = 0; i < 4; ++i) tokens = round(n, tokens);  // warm-up: captures the graph of n rows
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) tokens = round(n, tokens);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double tok_s = n * steps / s;
    if (n == 1) one = tok_s;
    result(tag + ".aggregate_tokens_per_s." + std::to_string(n), tok_s, "tok/s");
    result(tag + ".aggregate_over_one." + std::to_string(n), tok_s / one, "x");
  }
}

void bench_aggregate_random(RandomLlama& m, const std::string& tag) {
  // 200 tokens of context plus 52 steps stay inside the caches' first 256 positions (no growth while timed).
  std::vector<std::unique_ptr<tf::KvCache>> caches;
  bench_aggregate(
      tag, 48,
      [&](int, int i) {
        if (i == 0) caches.clear();
        caches.push_back(m.new_cache());
        return m.forward_greedy(*caches.back(), ids(200, m.shape().vocab, 40 + static_cast<std::uint64_t>(i)), 1)[0];
      },
      [&](int n, const std::vector<std::int32_t>& tokens) {
        std::vector<tf::DecoderPart> parts;
        for (int i = 0; i < n; ++i)
          parts.push_back({caches[static_cast<std::size_t>(i)].get(), nullptr,
                           std::span(&tokens[static_cast<std::size_t>(i)], 1), nullptr});
        return m.forward_greedy_parts(parts);
      });
}

void bench_verify(tf::CudaBackend& be, RandomLlama& m, const std::string& tag, std::int64_t ctx) {
  const auto& s = m.shape();
  auto kv = m.new_cache();
  m.forward(*kv, ids(ctx, s.vocab, 5), 1);
  auto time_rows = [&](int k) {
    const auto tokens = ids(k, s.vocab, static_cast<std::uint64_t>(100 + k));
    std::vector<double> ms;
    for (int r = 0; r < 13; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      m.forward_greedy(*kv, tokens, k);  // every row's greedy token, as a greedy verify round: synchronised
      const double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      kv->truncate(ctx);
      if (r >= 3) ms.push_back(t);  // the first runs capture graphs
    }
    return median(ms);
  };
  const double one = time_rows(1);
  result(tag + ".decode_1row_ms", one, "ms");
  const auto st0 = be.stats();
  for (int k : {2, 4, 8, 16}) result(tag + ".verify_" + std::to_string(k) + "rows_over_1row", time_rows(k) / one, "x");
  // The same 8-row window returning every row's logits to the host (a sampled round, host sampling not
  // counted), for comparison.
  {
    const auto tokens = ids(8, s.vocab, 108);
    std::vector<double> ms;
    for (int r = 0; r < 13; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      m.forward(*kv, tokens, 8);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      kv->truncate(ctx);
    }
    ms.erase(ms.begin(), ms.begin() + 3);
    result(tag + ".verify_8rows_host_logits_over_1row", median(ms) / one, "x");
  }
  // Each width is captured once (its first runs); more captures would mean a verify pays for a new graph.
  result(tag + ".verify_graph_captures", static_cast<double>(be.stats().graph_captures - st0.graph_captures), "");
}

// Our decode matmul vs cuBLAS bf16 over the 8B linear stack (32 layers x q, k, v, o, gate, up, down),
// one activation row; weights distinct per layer so nothing is served from L2.
void bench_matmul(tf::CudaBackend& be, double bw) {
  const std::int64_t H = 4096, F = 14336, KV = 1024, L = 32;
  struct Shape {
    std::int64_t n, k;
  };
  const std::vector<Shape> shapes = {{H, H}, {KV, H}, {KV, H}, {H, H}, {F, H}, {F, H}, {H, F}};
  cudaStream_t s = be.stream();
  std::vector<tf::DeviceWeight> q4, dense;
  double q4_bytes = 0, bf_bytes = 0;
  for (std::int64_t l = 0; l < L; ++l)
    for (const auto& sh : shapes) {
      q4.push_back(
          be.random_weight(sh.n, sh.k, 4, 64, tf::HostDType::BF16, static_cast<std::uint64_t>(l * 10 + q4.size())));
      q4_bytes += static_cast<double>(sh.n * sh.k) / 2.0 + 4.0 * static_cast<double>(sh.n * sh.k) / 64.0;
    }
  float *x = nullptr, *y = nullptr;
  ck(cudaMalloc(reinterpret_cast<void**>(&x), 16 * F * 4), "malloc");
  ck(cudaMalloc(reinterpret_cast<void**>(&y), 16 * F * 4), "malloc");
  tf::cuda::fill_random_uniform(x, tf::cuda::ElemType::F32, 16 * F, -1.0f, 1.0f, 5, s);
  // With scratch for the x terms, as the backend calls it (x prepared once per launch).
  std::size_t scratch_bytes = 0;
  for (const auto& w : q4)
    scratch_bytes = std::max(scratch_bytes, tf::cuda::decode_linear_scratch_bytes(be.weight_view(w)));
  void* scratch = nullptr;
  ck(cudaMalloc(&scratch, std::max<std::size_t>(scratch_bytes, 16)), "malloc");
  auto ours = [&](const std::vector<tf::DeviceWeight>& ws, int rows) {
    for (const auto& w : ws) {
      tf::cuda::DecodeLinearArgs a;
      a.x = x;
      a.x_stride = w.cols;
      a.rows = rows;
      a.seg[0] = {be.weight_view(w), y, w.rows};
      a.imma_scratch = scratch;
      a.imma_scratch_bytes = scratch_bytes;
      tf::cuda::decode_linear(a, s);
    }
  };
  auto graph_of = [&](const std::function<void()>& fn) {
    cudaGraph_t g;
    cudaGraphExec_t e;
    ck(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "capture");
    fn();
    ck(cudaStreamEndCapture(s, &g), "capture");
    ck(cudaGraphInstantiate(&e, g, 0), "instantiate");
    cudaGraphDestroy(g);
    return e;
  };
  for (int rows : {1, 2, 4, 8, 16}) {
    auto e = graph_of([&] { ours(q4, rows); });
    const double ms = time_ms(s, 3, 10, [&] { ck(cudaGraphLaunch(e, s), "launch"); });
    cudaGraphExecDestroy(e);
    result("matmul8b.ours_q4g64_rows" + std::to_string(rows) + "_ms", ms, "ms");
    if (rows == 1) {
      result("matmul8b.ours_q4g64_share_of_bandwidth", (q4_bytes / bw) / (ms * 1e-3), "");
      result("matmul8b.ours_q4g64_ms_value", ms, "ms");
    }
  }
  double ours_q4_ms = g_results["matmul8b.ours_q4g64_rows1_ms"]["value"];
  q4.clear();  // free 4.5 GB before the bf16 stack
  for (std::int64_t l = 0; l < L; ++l)
    for (const auto& sh : shapes) {
      dense.push_back(be.random_weight(sh.n, sh.k, 0, 0, tf::HostDType::BF16,
                                       static_cast<std::uint64_t>(l * 10 + dense.size() + 7)));
      bf_bytes += static_cast<double>(sh.n * sh.k) * 2.0;
    }
  auto e_dense = graph_of([&] { ours(dense, 1); });
  const double ours_bf16_ms = time_ms(s, 3, 10, [&] { ck(cudaGraphLaunch(e_dense, s), "launch"); });
  cudaGraphExecDestroy(e_dense);
  result("matmul8b.ours_bf16_rows1_ms", ours_bf16_ms, "ms");
  result("matmul8b.ours_bf16_share_of_bandwidth", (bf_bytes / bw) / (ours_bf16_ms * 1e-3), "");

  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasCreate");
  cublasSetStream(h, s);
  __nv_bfloat16* xb = nullptr;
  ck(cudaMalloc(reinterpret_cast<void**>(&xb), 16 * F * 2), "malloc");
  tf::cuda::fill_random_uniform(xb, tf::cuda::ElemType::BF16, 16 * F, -1.0f, 1.0f, 9, s);
  auto cublas = [&](int rows) {
    for (const auto& w : dense) tf::bench::cublas_bf16_linear(h, be.weight_view(w), xb, rows, y);
  };
  for (int rows : {1, 16}) {
    cublas(rows);  // warm-up outside capture (heuristics, workspace)
    ck(cudaStreamSynchronize(s), "sync");
    auto e = graph_of([&] { cublas(rows); });
    const double ms = time_ms(s, 3, 10, [&] { ck(cudaGraphLaunch(e, s), "launch"); });
    cudaGraphExecDestroy(e);
    result("matmul8b.cublas_bf16_rows" + std::to_string(rows) + "_ms", ms, "ms");
    if (rows == 1) {
      result("matmul8b.cublas_bf16_share_of_bandwidth", (bf_bytes / bw) / (ms * 1e-3), "");
      result("matmul8b.ratio_cublas_bf16_over_ours_q4", ms / ours_q4_ms, "x");
      result("matmul8b.ratio_cublas_bf16_over_ours_bf16", ms / ours_bf16_ms, "x");
    }
  }
  cublasDestroy(h);
  cudaFree(xb);
  cudaFree(x);
  cudaFree(y);
  cudaFree(scratch);
}

// A few decode steps between cudaProfilerStart/Stop, for `ncu --profile-from-start off` (per-kernel times).
// Two forwards of `rows` tokens each (all rows' logits returned, as a verify window does) under the profiler.
void bench_profile(const LlamaShape& shape, int rows = 1, std::int64_t ctx = 64) {
  auto b = new_backend();
  RandomLlama m(*b, shape, 21);
  auto kv = m.new_cache();
  m.forward(*kv, ids(ctx, shape.vocab, 4), 1);
  const auto window = ids(rows, shape.vocab, 9);
  for (int i = 0; i < 2; ++i) {
    m.forward(*kv, window, rows);
    kv->truncate(ctx);
  }
  ck(cudaDeviceSynchronize(), "sync");
  ck(cudaProfilerStart(), "profiler start");
  for (int i = 0; i < 2; ++i) {
    m.forward(*kv, window, rows);
    kv->truncate(ctx);
  }
  ck(cudaProfilerStop(), "profiler stop");
}

// The same for the Qwen3.8-27B shape (4-bit g64): two windows of `rows` rows, rolled back after each.
void bench_profile_qwen27b(int rows) {
  auto b = new_backend();
  tf::bench::RandomQwen35 m(*b, tf::bench::qwen27b_shape(), 17);
  auto st = m.new_stream();
  const auto prompt = ids(256, m.shape().vocab, 4);
  const tf::DecoderPart first = st.part(prompt);
  m.forward_greedy(std::span<const tf::DecoderPart>(&first, 1), 1);
  const auto window = ids(rows, m.shape().vocab, 9);
  const tf::DecoderPart part = st.part(window);
  auto run = [&] {
    for (int i = 0; i < 2; ++i) {
      m.forward_greedy(std::span<const tf::DecoderPart>(&part, 1), rows);
      st.truncate(256);
    }
  };
  run();
  ck(cudaDeviceSynchronize(), "sync");
  ck(cudaProfilerStart(), "profiler start");
  run();
  ck(cudaProfilerStop(), "profiler stop");
}

LlamaShape smollm2_shape() {
  LlamaShape s;
  s.name = "smollm2_135m_shape";
  s.hidden = 576;
  s.layers = 30;
  s.heads = 9;
  s.kv_heads = 3;
  s.head_dim = 64;
  s.ffn = 1536;
  s.vocab = 49152;
  s.bits = 4;
  s.group = 32;
  s.scale_type = tf::HostDType::F16;
  s.embed_bits = 8;
  s.tied = true;
  s.rope_base = 100000.0f;
  s.interleaved = true;
  return s;
}
LlamaShape llama8b_shape() {
  LlamaShape s;
  s.name = "llama_8b_shape";
  s.hidden = 4096;
  s.layers = 32;
  s.heads = 32;
  s.kv_heads = 8;
  s.head_dim = 128;
  s.ffn = 14336;
  s.vocab = 128256;
  s.bits = 4;
  s.group = 64;
  s.scale_type = tf::HostDType::BF16;
  s.embed_bits = 4;
  s.rope_base = 500000.0f;
  return s;
}
// The Qwen3.8-27B shape (issue 36): one-stream greedy decode as a share of the bound (weights + recurrent
// state read and written + KV bytes a token over the copy bandwidth), verify of 4 rows against 1 (the rows
// rolled back after each), 8 streams in shared rounds against 1, and a 2k-token prefill. Each step's token
// comes back to the host before the next is recorded (no steps queued ahead).
// `bits`/`group`: 4/64 (the MLX 4-bit recipe) or 2/128 (Ternary Bonsai's).
void bench_qwen27b(tf::CudaBackend& be, double bw, bool quick, int bits, int group) {
  using tf::bench::RandomQwen35;
  tf::bench::Qwen35Shape shape = tf::bench::qwen27b_shape();
  shape.bits = bits;
  shape.group = group;
  RandomQwen35 m(be, shape, 17);
  const auto& s = m.shape();
  const std::string tag = "qwen3_5_27b_q" + std::to_string(bits) + "g" + std::to_string(group);
  const std::int64_t ctx = 256;
  const int steps = quick ? 16 : 64;
  auto prefilled = [&](std::uint64_t salt) {
    auto st = m.new_stream();
    const auto prompt = ids(ctx, s.vocab, salt);
    const tf::DecoderPart part = st.part(prompt);
    m.forward_greedy(std::span<const tf::DecoderPart>(&part, 1), 1);
    return st;
  };
  auto decode = [&](std::vector<RandomQwen35::Stream>& streams, int n) {
    std::vector<std::int32_t> tok(streams.size(), 1);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
      std::vector<tf::DecoderPart> parts;
      for (std::size_t k = 0; k < streams.size(); ++k)
        parts.push_back(streams[k].part(std::span<const std::int32_t>(&tok[k], 1)));
      tok = m.forward_greedy(parts, 1);
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  std::vector<RandomQwen35::Stream> one;
  one.push_back(prefilled(1));
  decode(one, 4);  // captures the graphs
  std::vector<double> tps;
  for (int r = 0; r < 3; ++r) tps.push_back(steps / decode(one, steps));
  const double tok_s = median(tps);
  const double bytes = m.bytes_per_token(ctx + 3 * steps);
  result(tag + ".decode_tokens_per_s", tok_s, "tok/s");
  result(tag + ".bytes_per_token", bytes / 1e9, "GB");
  result(tag + ".bound_tokens_per_s", bw / bytes, "tok/s");
  result(tag + ".share_of_bound", tok_s * bytes / bw, "");

  // Verify windows: 1 and 4 rows, then rolled back to where they started (no row kept: nothing to replay).
  auto window = [&](int rows) {
    auto& st = one.front();
    const std::int64_t at = st.length();
    std::vector<std::int32_t> draft(static_cast<std::size_t>(rows), 5);
    const tf::DecoderPart part = st.part(draft);
    std::vector<double> t;
    for (int r = 0; r < (quick ? 8 : 24); ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      m.forward_greedy(std::span<const tf::DecoderPart>(&part, 1), rows);
      t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      st.truncate(at);
    }
    return median(t);
  };
  window(1);
  window(4);
  const double w1 = window(1), w4 = window(4);
  result(tag + ".verify1_ms", w1, "ms");
  result(tag + ".verify4_ms", w4, "ms");
  result(tag + ".verify4_over_1", w4 / w1, "x");

  // 8 streams in shared rounds.
  std::vector<RandomQwen35::Stream> eight;
  for (std::uint64_t k = 0; k < 8; ++k) eight.push_back(prefilled(10 + k));
  decode(eight, 4);
  std::vector<double> agg;
  for (int r = 0; r < 3; ++r) agg.push_back(8.0 * (steps / 2) / decode(eight, steps / 2));
  result(tag + ".aggregate8_tokens_per_s", median(agg), "tok/s");
  result(tag + ".aggregate8_over_1", median(agg) / tok_s, "x");
  eight.clear();

  // A 2k-token prompt in one call (the Gated DeltaNet layers walk it position by position).
  std::vector<double> pf;
  for (int r = 0; r < (quick ? 1 : 2); ++r) {
    auto st = m.new_stream();
    const auto prompt = ids(2048, s.vocab, 99 + static_cast<std::uint64_t>(r));
    const tf::DecoderPart part = st.part(prompt);
    const auto t0 = std::chrono::steady_clock::now();
    m.forward_greedy(std::span<const tf::DecoderPart>(&part, 1), 1);
    pf.push_back(2048.0 / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  result(tag + ".prefill_2k_tokens_per_s", pf.back(), "tok/s");
}

LlamaShape class27b_shape() {
  LlamaShape s;
  s.name = "class_27b_shape";
  s.hidden = 5120;
  s.layers = 64;
  s.heads = 24;
  s.kv_heads = 4;
  s.head_dim = 256;
  s.ffn = 17408;
  s.vocab = 248320;
  s.bits = 4;
  s.group = 64;
  s.scale_type = tf::HostDType::BF16;
  s.embed_bits = 4;
  s.rope_base = 1000000.0f;
  return s;
}

// The real default model through the llama family (GGUF Q4_1): decode tokens/s, one stream, greedy.
void bench_model(tf::CudaBackend& be, const std::string& path, double bw) {
  auto model = tf::load_model(path, be);
  const auto vocab = model->info().vocab;
  tf::SamplingParams greedy;
  greedy.temperature = 0.0f;
  const int steps = 256;
  // The engine's decoder without drafts (decode_stream: greedy rounds queued ahead), and every step recorded
  // once its token is back (the host-fed figure: Model::forward_greedy, as rounds with drafts run).
  std::vector<double> tps, host_fed;
  for (int r = 0; r < 8; ++r) {  // alternating; the first of each kind is a warm-up
    const bool ahead = r % 2 == 0;
    auto st = model->new_state();
    const auto prompt = ids(64, vocab, 3);
    const auto logits = model->forward(*st, prompt, 1);
    double s = 0.0;
    if (ahead) {
      std::vector<std::int32_t> history = prompt;
      tf::DecodeSettings settings;
      settings.sampling = greedy;
      settings.budget = steps + 1;  // the first token comes from the prompt's logits: `steps` rounds
      tf::DecodeCounters c;
      const auto t0 = std::chrono::steady_clock::now();
      tf::decode_stream(
          *model, *st, logits, history, settings, nullptr, [](std::int32_t) { return true; }, [] { return false; }, c);
      s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (c.rounds != steps) throw std::logic_error("bench_model: decode_stream ran " + std::to_string(c.rounds));
    } else {
      std::int32_t t = tf::sample_token(logits, greedy, 0, st->length());
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < steps; ++i) {
        const std::int32_t one[1] = {t};
        t = model->forward_greedy(*st, one, 1)[0];
      }
      s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    if (r > 1) (ahead ? tps : host_fed).push_back(steps / s);
  }
  const double tok_s = median(tps);
  result("smollm2_q4_1.decode_tokens_per_s_host_fed", median(host_fed), "tok/s");
  // Weights read per token: all of them (SmolLM2 ties its output projection to the embedding table).
  const double bytes = static_cast<double>(be.weight_bytes()) + 2.0 * 30 * 3 * 64 * 4 * (64 + steps / 2);
  result("smollm2_q4_1.decode_tokens_per_s", tok_s, "tok/s");
  result("smollm2_q4_1.bytes_per_token", bytes / 1e9, "GB");
  result("smollm2_q4_1.share_of_bound", tok_s / (bw / bytes), "");
  result("smollm2_q4_1.launches_per_token", static_cast<double>(be.stats().launches), "");
  be.set_graphs(false);
  {
    auto st = model->new_state();
    const auto logits = model->forward(*st, ids(64, vocab, 3), 1);
    std::int32_t t = tf::sample_token(logits, greedy, 0, st->length());
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 128; ++i) {
      const std::int32_t one[1] = {t};
      t = model->forward_greedy(*st, one, 1)[0];
    }
    result("smollm2_q4_1.decode_tokens_per_s_no_graphs",
           128 / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), "tok/s");
  }
  be.set_graphs(true);
  std::vector<double> t;
  for (int r = 0; r < 3; ++r) {
    auto st = model->new_state();
    const auto t0 = std::chrono::steady_clock::now();
    for (std::int64_t at = 0; at < 2048; at += 512)
      model->forward(*st, ids(512, vocab, static_cast<std::uint64_t>(at + r)), 1);
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  result("smollm2_q4_1.prefill_2k_tokens_per_s", 2048.0 / median(t), "tok/s");
}

// The real default model's shared rounds through Model::forward_parts (greedy ids), as the scheduler runs them.
void bench_aggregate_model(tf::CudaBackend& be, const std::string& path) {
  auto model = tf::load_model(path, be);
  const auto vocab = model->info().vocab;
  std::vector<std::unique_ptr<tf::SequenceState>> states;
  bench_aggregate(
      "smollm2_q4_1", 256,
      [&](int, int i) {
        if (i == 0) states.clear();
        states.push_back(model->new_state());
        return model->forward_greedy(*states.back(), ids(64, vocab, 60 + static_cast<std::uint64_t>(i)), 1)[0];
      },
      [&](int n, const std::vector<std::int32_t>& tokens) {
        std::vector<tf::ForwardPart> parts;
        for (int i = 0; i < n; ++i)
          parts.push_back({states[static_cast<std::size_t>(i)].get(),
                           std::span(&tokens[static_cast<std::size_t>(i)], 1), true, false, false, tf::TokenChoice{}});
        std::vector<std::int32_t> next;
        for (const auto& r : model->forward_parts(parts)) next.push_back(r.ids.at(0));
        return next;
      });
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_path, json_path;
  std::vector<std::string> sections;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--model" && i + 1 < argc)
      model_path = argv[++i];
    else if (a == "--json" && i + 1 < argc)
      json_path = argv[++i];
    else if (a == "--section" && i + 1 < argc)
      sections.push_back(argv[++i]);
    else if (a == "--quick")
      quick = true;
    else if (a == "--precision" && i + 1 < argc && tf::parse_prompt_precision(argv[i + 1]))
      g_prompt_precision = *tf::parse_prompt_precision(argv[++i]);
    else {
      std::fprintf(stderr,
                   "usage: tf_cuda_bench [--section "
                   "smollm2_shape|llama8b|class27b|qwen27b|verify27b|aggregate_smollm2|aggregate27b|aggregate_model|"
                   "matmul|model|profile_smollm2|profile_8b|profile_27b_1|profile_27b_8|qwen27b_2bit|qwen27b_tp2|"
                   "profile_qwen27b_1|profile_qwen27b_4|prefill_attention|prefill_gemm]... [--model PATH] "
                   "[--json FILE] [--quick] [--precision bf16|full]\n");
      return 2;
    }
  }
  if (sections.empty()) {
    sections = {"smollm2_shape", "llama8b", "class27b", "matmul"};
    if (!model_path.empty()) sections.insert(sections.begin(), "model");
  }
  try {
    auto be = new_backend();
    cudaDeviceProp p{};
    ck(cudaGetDeviceProperties(&p, 0), "props");
    std::printf("device: %s, %d SMs, L2 %d MB; prompt precision %s\n", p.name, p.multiProcessorCount,
                p.l2CacheSize >> 20, tf::prompt_precision_name(g_prompt_precision));
    const double bw = copy_bandwidth(be->stream());
    result("copy_bandwidth", bw / 1e12, "TB/s");
    for (const auto& sec : sections) {
      if (sec == "model") {
        if (model_path.empty()) throw std::runtime_error("--section model needs --model");
        bench_model(*be, model_path, bw);
      } else if (sec == "smollm2_shape") {
        auto b = new_backend();
        RandomLlama m(*b, smollm2_shape(), 11);
        bench_decode(*b, m, "smollm2_shape_random", 64, 256, bw, !quick);
        bench_verify(*b, m, "smollm2_shape_random", 256);
      } else if (sec == "llama8b") {
        auto b = new_backend();
        RandomLlama m(*b, llama8b_shape(), 12);
        bench_decode(*b, m, "llama8b_q4g64", 512, 128, bw, !quick);
      } else if (sec == "class27b") {
        auto b = new_backend();
        RandomLlama m(*b, class27b_shape(), 13);
        bench_decode(*b, m, "class27b_q4g64", 256, 64, bw, !quick);
      } else if (sec == "qwen27b_tp2") {
        tf::bench::bench_qwen27b_tp(bw, quick, 2);
      } else if (sec == "qwen27b" || sec == "qwen27b_2bit") {
        auto b = new_backend();
        if (sec == "qwen27b")
          bench_qwen27b(*b, bw, quick, 4, 64);
        else
          bench_qwen27b(*b, bw, quick, 2, 128);
      } else if (sec == "aggregate_smollm2") {
        auto b = new_backend();
        RandomLlama m(*b, smollm2_shape(), 11);
        bench_aggregate_random(m, "smollm2_shape_random");
      } else if (sec == "aggregate27b") {
        auto b = new_backend();
        RandomLlama m(*b, class27b_shape(), 13);
        bench_aggregate_random(m, "class27b_q4g64");
      } else if (sec == "aggregate_model") {
        if (model_path.empty()) throw std::runtime_error("--section aggregate_model needs --model");
        auto b = new_backend();
        bench_aggregate_model(*b, model_path);
      } else if (sec == "verify27b") {
        auto b = new_backend();
        RandomLlama m(*b, class27b_shape(), 13);
        bench_verify(*b, m, "class27b_q4g64", 256);
      } else if (sec == "profile_smollm2") {
        bench_profile(smollm2_shape());
      } else if (sec == "profile_8b") {
        bench_profile(llama8b_shape());
      } else if (sec == "profile_27b_1" || sec == "profile_27b_8") {
        bench_profile(class27b_shape(), sec == "profile_27b_8" ? 8 : 1, 256);
      } else if (sec == "profile_qwen27b_1" || sec == "profile_qwen27b_4") {
        bench_profile_qwen27b(sec == "profile_qwen27b_4" ? 4 : 1);
      } else if (sec == "prefill_attention") {
        tf::bench::bench_prefill_attention();
      } else if (sec == "prefill_gemm") {
        auto b = new_backend();
        tf::bench::bench_prefill_gemm(*b);
      } else if (sec == "matmul") {
        auto b = new_backend();
        bench_matmul(*b, bw);
      } else {
        throw std::runtime_error("unknown section " + sec);
      }
    }
    if (!json_path.empty()) std::ofstream(json_path) << g_results.dump(1) << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tf_cuda_bench: %s\n", e.what());
    if (!json_path.empty()) std::ofstream(json_path) << g_results.dump(1) << "\n";
    return 1;
  }
}
