// `tf_cuda_bench --section prefill_attention`: the prefill attention kernel alone (issue 32), on the head
// shapes of llama-3-8B (32 heads, 8 kv heads, d 128), the 27B-class llama (48/8, d 128), the SmolLM2 shape
// (9/3, d 64) and qwen3_5's gated attention (24/4, d 256). For each: one 512-row chunk at the end of a prompt
// of 2k, 8k and 32k tokens (what a chunked long prompt pays per chunk), and the four chunks of a 2k prompt.
// TFLOPS count 4 * d flops per causal (query, key) pair and head, the arithmetic of a float32 attention
// (the kernel runs each product as three tf32 passes, so its tensor-core work is three times that).
#include <cstdint>
#include <string>
#include <vector>

#include "bench/cuda/bench_common.h"

namespace tf::bench {

namespace {

struct HeadShape {
  const char* tag;
  int heads, kv_heads, d;
};

// Causal (query, key) pairs of rows [start, start + n).
double pairs(std::int64_t start, std::int64_t n) {
  return static_cast<double>(n) * static_cast<double>(start) +
         static_cast<double>(n) * static_cast<double>(n + 1) / 2.0;
}

}  // namespace

void bench_prefill_attention() {
  cudaStream_t s = nullptr;
  const std::int64_t cap = 32768, chunk = 512;
  for (const HeadShape sh : {HeadShape{"llama8b", 32, 8, 128}, HeadShape{"class27b", 48, 8, 128},
                             HeadShape{"smollm2", 9, 3, 64}, HeadShape{"qwen27b", 24, 4, 256}}) {
    const std::size_t kv_elems = static_cast<std::size_t>(sh.kv_heads) * cap * sh.d;
    const std::size_t q_elems = static_cast<std::size_t>(chunk) * sh.heads * sh.d;
    float *k = nullptr, *v = nullptr, *q = nullptr, *out = nullptr;
    std::int64_t* start = nullptr;
    ck(cudaMalloc(reinterpret_cast<void**>(&k), kv_elems * 4), "malloc");
    ck(cudaMalloc(reinterpret_cast<void**>(&v), kv_elems * 4), "malloc");
    ck(cudaMalloc(reinterpret_cast<void**>(&q), q_elems * 4), "malloc");
    ck(cudaMalloc(reinterpret_cast<void**>(&out), q_elems * 4), "malloc");
    ck(cudaMalloc(reinterpret_cast<void**>(&start), 4 * sizeof(std::int64_t)), "malloc");
    cuda::fill_random_uniform(k, cuda::ElemType::F32, static_cast<std::int64_t>(kv_elems), -1.0f, 1.0f, 1, s);
    cuda::fill_random_uniform(v, cuda::ElemType::F32, static_cast<std::int64_t>(kv_elems), -1.0f, 1.0f, 2, s);
    cuda::fill_random_uniform(q, cuda::ElemType::F32, static_cast<std::int64_t>(q_elems), -1.0f, 1.0f, 3, s);
    cuda::PrefillAttnArgs a;
    a.q = q;
    a.out = out;
    a.k = k;
    a.v = v;
    a.cap = static_cast<int>(cap);
    a.n_rows = static_cast<int>(chunk);
    a.heads = sh.heads;
    a.kv_heads = sh.kv_heads;
    a.head_dim = sh.d;
    a.scale = 0.1f;
    const std::string tag = std::string("prefill_attention.") + sh.tag + "_d" + std::to_string(sh.d);
    const auto flops = [&](double p) { return 4.0 * sh.d * sh.heads * p; };
    for (const std::int64_t prompt : {std::int64_t{2048}, std::int64_t{8192}, std::int64_t{32768}}) {
      const std::int64_t st = prompt - chunk;
      ck(cudaMemcpy(start, &st, sizeof st, cudaMemcpyHostToDevice), "copy");
      a.start = start;
      const double ms = time_ms(s, 2, 7, [&] { cuda::prefill_attention(a, s); });
      result(tag + ".last_chunk_of_" + std::to_string(prompt / 1024) + "k_ms", ms, "ms");
      result(tag + ".last_chunk_of_" + std::to_string(prompt / 1024) + "k_tflops", flops(pairs(st, chunk)) / (ms * 1e9),
             "TFLOPS");
    }
    const std::vector<std::int64_t> starts = {0, 512, 1024, 1536};
    ck(cudaMemcpy(start, starts.data(), starts.size() * sizeof(std::int64_t), cudaMemcpyHostToDevice), "copy");
    const double ms = time_ms(s, 2, 7, [&] {
      for (std::size_t c = 0; c < starts.size(); ++c) {
        a.start = start + c;
        cuda::prefill_attention(a, s);
      }
    });
    result(tag + ".prompt_2k_ms", ms, "ms");
    result(tag + ".prompt_2k_tflops", flops(pairs(0, 2048)) / (ms * 1e9), "TFLOPS");
    for (void* p : {static_cast<void*>(k), static_cast<void*>(v), static_cast<void*>(q), static_cast<void*>(out),
                    static_cast<void*>(start)})
      cudaFree(p);
  }
}

}  // namespace tf::bench
