#pragma once
// How the ranks of a tensor-parallel backend (tp_backend.h) exchange partial sums and run together: on the
// host (host_collective.h: any backend, ranks one after another; tests and the CPU), or over NCCL inside the
// ranks' CUDA graphs (backends/cuda/nccl_collective.h).
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"

namespace tf {

class Collective {
 public:
  virtual ~Collective() = default;
  // Rank r's partial sums (a tensor of ranks[r], every rank the same [rows, cols]) -> each rank's copy of
  // their sum. Every rank gets the same bits: with two ranks each value is one IEEE addition, a + b == b + a.
  virtual std::vector<Tensor> all_reduce(std::span<Backend* const> ranks, std::span<const Tensor> partials,
                                         std::int64_t cols) = 0;
  // Calls f(r) for every rank: all at once where a rank's work waits for its peers' (NCCL), else in turn.
  // The first exception thrown is rethrown once every call has returned.
  virtual void each_rank(int ranks, const std::function<void(int)>& f) = 0;
  virtual std::string name() const = 0;
};

// all_reduce through the host: each partial copied out, summed in rank order, copied back to every rank.
// Slow (two host round trips per sum) but exact and backend-neutral: the CPU's tensor parallelism, and a
// check of a split's arithmetic on one GPU (NCCL refuses two ranks on one device).
class HostCollective final : public Collective {
 public:
  std::vector<Tensor> all_reduce(std::span<Backend* const> ranks, std::span<const Tensor> partials,
                                 std::int64_t cols) override;
  void each_rank(int ranks, const std::function<void(int)>& f) override;
  std::string name() const override { return "host"; }
};

}  // namespace tf
