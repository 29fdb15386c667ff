// The 27B-class qwen3_5 decode on tensor-parallel ranks (issue 38, docs/tensor-parallel.md): one rank plain,
// one rank through the tensor-parallel path, and `tp` ranks.
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/nccl_collective.h"
#include "backends/tensor_parallel/tp_backend.h"
#include "bench/cuda/bench_common.h"
#include "bench/cuda/random_qwen3_5.h"
#include "families/decoder_forward.h"

namespace tf::bench {

// One-stream decode of the 27B-class qwen3_5 shape (4-bit, groups of 64) on one rank and on `tp` ranks
// (make_cuda_ranks: one device each over NCCL; with TF_TP_ONE_DEVICE=1 both on device 0 summing through the
// host, which checks that the path runs but says nothing of its speed). Issue 38's target: >= 1.6x on two.
void bench_qwen27b_tp(double bw, bool quick, int tp) {
  const std::string tag = "qwen3_5_27b_q4g64";
  const std::int64_t ctx = 256;
  const int steps = quick ? 16 : 64;
  double base = 0;
  // 0: one rank through the tensor-parallel path (queued on a rank thread, a one-rank NCCL sum after every
  // output projection): what the path itself costs, measurable on one GPU.
  for (int ranks : {1, 0, tp}) {
    std::unique_ptr<Backend> be;
    if (ranks == 1) {
      be = make_cuda_backend(0);
    } else if (ranks == 0) {
      std::vector<std::unique_ptr<Backend>> one;
      one.push_back(make_cuda_backend(0));
      be = make_tensor_parallel_backend(std::move(one), make_nccl_collective({0}));
    } else {
      be = make_cuda_ranks(ranks);
    }
    const auto maker = ranks == 1 ? plain_maker(dynamic_cast<CudaBackend&>(*be)) : tensor_parallel_maker(*be);
    RandomQwen35 m(*be, qwen27b_shape(), 17, maker);
    auto st = m.new_stream();
    const auto prompt = ids(ctx, m.shape().vocab, 1);
    DecoderPart part = st.part(prompt);
    m.forward_greedy(std::span<const DecoderPart>(&part, 1), 1);
    // The host's time recording a step (decoder_logits: on the tensor-parallel path only queueing), apart from
    // the step's whole time (the ranks' own recording, launches and the GPU).
    std::vector<double> record_ms;
    auto decode = [&](int n) {
      std::int32_t tok = 1;
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < n; ++i) {
        const DecoderPart p = st.part(std::span<const std::int32_t>(&tok, 1));
        const auto r0 = std::chrono::steady_clock::now();
        const Tensor logits = decoder_logits(*be, m.weights(), std::span<const DecoderPart>(&p, 1), 1);
        record_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - r0).count());
        tok = be->argmax_rows(logits).front();
      }
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    decode(4);  // captures the graphs
    record_ms.clear();
    std::vector<double> tps;
    for (int r = 0; r < 3; ++r) tps.push_back(steps / decode(steps));
    const double tok_s = median(tps);
    const std::string t = tag + (ranks == 0 ? std::string(".tp1_nccl_path") : ".tp" + std::to_string(ranks));
    result(t + ".decode_tokens_per_s", tok_s, "tok/s");
    result(t + ".record_ms", median(record_ms), "ms");
    if (ranks == 1) {
      base = tok_s;
      result(t + ".share_of_bound", tok_s * m.bytes_per_token(ctx + 3 * steps) / bw, "");
    } else {
      result(t + ".over_tp1", tok_s / base, "x");
    }
  }
}

}  // namespace tf::bench
