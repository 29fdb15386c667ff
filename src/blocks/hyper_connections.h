#pragma once
// Hyper-connections (families-and-formats §1.6): the residual stream is `streams` copies of the hidden row
// ([n, streams * hidden]), and each block of a layer (a mixer, an MLP or experts) is wrapped: its input is a
// learned mix of the streams and its output is added back to every stream with a learned per-stream weight.
//   enter: u = groupnorm(x) (RMSNorm per stream, times the norm's weight over all streams);
//          m = sigmoid(up(silu(down(u) / S))) (a low-rank map, [n, S * hidden]);
//          input = mean over streams of m * u; the per-stream weights g = 2 sigmoid(inject(u) / S);
//   leave: x_s + g_s * y for every stream s.
// The model's last mixer has no inject map: its `enter` alone makes the row the output projection reads.
// It wraps any block of the layer plan (DecoderLayer::mixer_hc / ffn_hc) and holds no state. The small maps
// run as backend products; the elementwise steps run on the host over each row alone (a row's result never
// depends on the rows beside it), as the expert routing does: a round trip per call, fine on the CPU.
#include <cstdint>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "blocks/weight_source.h"

namespace tf {

// What a layer plan wraps a block in when the residual is several streams (DecoderLayer::mixer_hc / ffn_hc,
// DecoderWeights::final_mixer): enter() makes the block's input row from the streams, and per-row values that
// leave() takes to fold the block's output back into them. Low-rank hyper-connections (below) and the
// manifold-constrained ones (blocks/manifold_hyper_connections.h) are two.
struct StreamWrapper {
  virtual ~StreamWrapper() = default;
  // x [n, streams * hidden] -> the block's input [n, hidden]; where `weights` is given, what leave() needs.
  virtual Tensor enter(Backend& b, const Tensor& x, std::vector<float>* weights) const = 0;
  // The streams after the block: [n, streams * hidden].
  virtual Tensor leave(Backend& b, const Tensor& x, const Tensor& y, const std::vector<float>& weights) const = 0;
};

struct HyperConnections final : StreamWrapper {
  int streams = 0;
  std::int64_t hidden = 0, rank = 0;
  float eps = 1e-6f;
  DeviceWeight norm;      // [streams * hidden] (plain multipliers)
  DeviceWeight mix_down;  // [rank, streams * hidden]
  DeviceWeight mix_up;    // [streams * hidden, rank]
  DeviceWeight inject;    // [streams, streams * hidden]; absent for the final mixer

  // `prefix` + hc_norm.weight, input_mix_weight_down/up.weight (+ block_inject_weight.weight with `inject`).
  static HyperConnections load(WeightSource& src, const std::string& prefix, int streams, std::int64_t hidden,
                               std::int64_t rank, float eps, bool with_inject, bool zero_centred_norm);
  // x [n, streams * hidden] -> the block's input [n, hidden]; where `weights` is given, each row's per-stream
  // output weights (n * streams values) for leave().
  Tensor enter(Backend& b, const Tensor& x, std::vector<float>* weights) const override;
  // x + y added to each stream with its weight: [n, streams * hidden].
  Tensor leave(Backend& b, const Tensor& x, const Tensor& y, const std::vector<float>& weights) const override;
};

// The embedding rows [n, hidden] copied into `streams` residual streams [n, streams * hidden].
Tensor widen_streams(Backend& b, const Tensor& x, std::int64_t hidden, int streams);

}  // namespace tf
