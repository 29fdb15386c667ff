// The two collectives that sum on the host (collective.h): HostCollective (ranks in turn) and ThreadCollective
// (ranks apart).
#include <exception>
#include <stdexcept>

#include "backends/tensor_parallel/collective.h"

namespace tf {

std::vector<Tensor> HostCollective::all_reduce(std::span<Backend* const> ranks, std::span<const Tensor> partials,
                                               std::int64_t cols) {
  if (ranks.size() != partials.size() || ranks.empty() || cols <= 0)
    throw std::logic_error("all_reduce: one partial per rank");
  std::vector<float> sum = ranks[0]->to_host(partials[0]);
  for (std::size_t r = 1; r < ranks.size(); ++r) {
    const std::vector<float> part = ranks[r]->to_host(partials[r]);
    if (part.size() != sum.size()) throw std::logic_error("all_reduce: ranks of different shapes");
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += part[i];
  }
  const auto rows = static_cast<std::int64_t>(sum.size()) / cols;
  std::vector<Tensor> out;
  out.reserve(ranks.size());
  for (Backend* b : ranks) out.push_back(b->from_host(sum, rows, cols));
  return out;
}

void HostCollective::each_rank(int ranks, const std::function<void(int)>& f) {
  std::exception_ptr first;
  for (int r = 0; r < ranks; ++r) {
    try {
      f(r);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

ThreadCollective::ThreadCollective(int ranks) : threads_(ranks), meet_(ranks) {}

Tensor ThreadCollective::all_reduce_rank(std::size_t r, Backend& rank, const Tensor& partial, std::int64_t cols) {
  std::vector<float> sum = meet_.sum(r, rank.to_host(partial));
  return rank.from_host(sum, static_cast<std::int64_t>(sum.size()) / cols, cols);
}

void ThreadCollective::each_rank(int /*ranks*/, const std::function<void(int)>& f) {
  threads_.run(f, [this] { meet_.abort(); });
}

}  // namespace tf
