#include "backends/tensor_parallel/tp_state.h"

#include <cstring>
#include <stdexcept>

namespace tf {
namespace {

void put_u64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

std::uint64_t get_u64(std::span<const std::uint8_t> bytes, std::size_t& at) {
  if (at + 8 > bytes.size()) throw std::invalid_argument("tensor-parallel state: the bytes end early");
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(bytes[at + static_cast<std::size_t>(i)]) << (8 * i);
  at += 8;
  return v;
}

}  // namespace

std::size_t RankImages::bytes() const {
  std::size_t n = 0;
  for (const auto& r : ranks_) n += r->bytes();
  return n;
}

std::vector<std::uint8_t> RankImages::host_bytes() const {
  std::vector<std::vector<std::uint8_t>> parts;
  for (const auto& r : ranks_) parts.push_back(r->host_bytes());
  return join_rank_bytes(parts);
}

std::vector<std::uint8_t> join_rank_bytes(const std::vector<std::vector<std::uint8_t>>& ranks) {
  std::vector<std::uint8_t> out;
  std::size_t total = 8;
  for (const auto& r : ranks) total += 8 + r.size();
  out.reserve(total);
  put_u64(out, ranks.size());
  for (const auto& r : ranks) {
    put_u64(out, r.size());
    out.insert(out.end(), r.begin(), r.end());
  }
  return out;
}

std::vector<std::span<const std::uint8_t>> split_rank_bytes(std::span<const std::uint8_t> bytes, std::size_t ranks) {
  std::size_t at = 0;
  if (get_u64(bytes, at) != ranks)
    throw std::invalid_argument("tensor-parallel state: saved with another number of ranks");
  std::vector<std::span<const std::uint8_t>> parts;
  for (std::size_t r = 0; r < ranks; ++r) {
    const std::uint64_t n = get_u64(bytes, at);
    if (n > bytes.size() - at) throw std::invalid_argument("tensor-parallel state: the bytes end early");
    parts.push_back(bytes.subspan(at, n));
    at += n;
  }
  if (at != bytes.size()) throw std::invalid_argument("tensor-parallel state: bytes past the last rank's");
  return parts;
}

}  // namespace tf
