#pragma once
// How the ranks of a tensor-parallel backend (tp_backend.h) sum their partial products and run together.
// Two ways:
// - in turn (apart() false): the caller's thread runs every rank's ops one after another and all_reduce()
//   sums all ranks at once. HostCollective: through the host; MLX ranks on the CPU.
// - apart (apart() true): each rank's ops are queued and run on a thread of its own (rank_threads.h), as one
//   process per rank would; each rank takes its part of a sum with all_reduce_rank(), which waits for its
//   peers. NcclCollective (backends/cuda/nccl_collective.h): NCCL inside the ranks' CUDA graphs;
//   ThreadCollective: through the host, the same threads (a check of the queued path on one GPU, where
//   NCCL refuses two ranks on one device).
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/tensor_parallel/rank_threads.h"

namespace tf {

class Collective {
 public:
  virtual ~Collective() = default;
  virtual std::string name() const = 0;
  virtual bool apart() const = 0;
  // In turn: rank r's partial sums (a tensor of ranks[r], every rank [rows, cols]) -> each rank's copy of
  // their sum, the same bits on every rank (with two ranks each value is one IEEE addition, a + b == b + a).
  virtual std::vector<Tensor> all_reduce(std::span<Backend* const> /*ranks*/, std::span<const Tensor> /*partials*/,
                                         std::int64_t /*cols*/) {
    throw std::logic_error("all_reduce: this collective sums one rank at a time");
  }
  // Apart, on rank r's thread: rank r's copy of the sum of every rank's `partial` ([rows, cols] on `rank`).
  virtual Tensor all_reduce_rank(std::size_t /*r*/, Backend& /*rank*/, const Tensor& /*partial*/,
                                 std::int64_t /*cols*/) {
    throw std::logic_error("all_reduce_rank: this collective sums all ranks at once");
  }
  // Calls f(r) for every rank (apart: each on its rank's thread, all at once) and returns when all have; the
  // first exception is rethrown then.
  virtual void each_rank(int ranks, const std::function<void(int)>& f) = 0;
};

// In turn, through the host: each partial copied out, summed in rank order, copied back to every rank. Slow
// (two host round trips per sum) but exact and backend-neutral.
class HostCollective final : public Collective {
 public:
  std::string name() const override { return "host"; }
  bool apart() const override { return false; }
  std::vector<Tensor> all_reduce(std::span<Backend* const> ranks, std::span<const Tensor> partials,
                                 std::int64_t cols) override;
  void each_rank(int ranks, const std::function<void(int)>& f) override;
};

// Apart, through the host: each rank's thread copies its partial out, waits for its peers', adds them in rank
// order and copies the sum back. What NcclCollective does, on the host: for tests of the queued path.
class ThreadCollective final : public Collective {
 public:
  explicit ThreadCollective(int ranks);
  std::string name() const override { return "threads"; }
  bool apart() const override { return true; }
  Tensor all_reduce_rank(std::size_t r, Backend& rank, const Tensor& partial, std::int64_t cols) override;
  void each_rank(int ranks, const std::function<void(int)>& f) override;

 private:
  RankThreads threads_;
  Rendezvous meet_;
};

}  // namespace tf
