#pragma once
// Tensor parallelism (docs/tensor-parallel.md): one Backend made of several ranks' backends. Every weight a
// block declares divided (WeightSplit) is cut into one part per rank, so each rank holds and computes its own
// attention heads, Gated DeltaNet heads and MLP features; the products of weights divided by their inputs
// (o_proj, down_proj, out_proj) are partial sums that meet in the Collective, after which every rank holds the
// same residual stream. Families are unchanged: they write against Backend, and this class divides what their
// blocks declared. Rank 0's results are the model's; every other rank's must equal them bit for bit, and
// to_host and argmax_rows check that they do.
#include <memory>
#include <vector>

#include "backends/backend.h"
#include "backends/tensor_parallel/collective.h"

namespace tf {

// `shared_memory`: the ranks compute in one memory (MLX ranks on the host, CUDA ranks on one device), so the
// memory budget is one rank's, not the sum of theirs.
std::unique_ptr<Backend> make_tensor_parallel_backend(std::vector<std::unique_ptr<Backend>> ranks,
                                                      std::unique_ptr<Collective> collective,
                                                      bool shared_memory = false);

// The ranks of a backend make_tensor_parallel_backend made (std::invalid_argument for another backend), and
// a weight of `rows` x `cols` in all from each rank's part made on it, divided as `kind` says: the CUDA
// benchmarks generate their random weights on each rank's device this way.
std::vector<Backend*> tensor_parallel_ranks(Backend& tp);
DeviceWeight rank_weight(std::vector<DeviceWeight> parts, WeightSplit::Kind kind, std::int64_t rows, std::int64_t cols);

}  // namespace tf
