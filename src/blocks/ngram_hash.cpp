#include "blocks/ngram_hash.h"

#include <algorithm>
#include <stdexcept>

namespace tf {
namespace {

constexpr std::uint64_t kGamma = 0x9E3779B97F4A7C15ULL;

std::uint64_t splitmix64(std::uint64_t v) {
  v += kGamma;
  v = (v ^ (v >> 30)) * 0xBF58476D1CE4E5B9ULL;
  v = (v ^ (v >> 27)) * 0x94D049BB133111EBULL;
  return v ^ (v >> 31);
}

bool is_prime(std::int64_t v) {
  if (v < 2) return false;
  if (v % 2 == 0) return v == 2;
  for (std::int64_t d = 3; d * d <= v; d += 2)
    if (v % d == 0) return false;
  return true;
}

}  // namespace

NgramHash::NgramHash(const NgramHashSpec& spec) : spec_(spec) {
  if (spec.ngram_size < 2 || spec.heads_per_ngram < 1 || spec.vocab < 1 || spec.vocab_base < 2 || spec.divisor < 1 ||
      spec.layer_index < 0)
    throw std::invalid_argument("NgramHash: an impossible spec");
  const std::uint64_t max_long = (1ULL << 63) - 1;
  const std::uint64_t half = std::max<std::uint64_t>(1, max_long / static_cast<std::uint64_t>(spec.vocab) / 2);
  const std::uint64_t base_seed =
      static_cast<std::uint64_t>(spec.seed) + 10007ULL * static_cast<std::uint64_t>(spec.layer_index);
  for (int i = 0; i < spec.ngram_size; ++i)
    multipliers_.push_back(2 * (splitmix64(base_seed + kGamma * static_cast<std::uint64_t>(i + 1)) % half) + 1);
  // Head g of all layers' heads takes the (g + 1)-th prime >= vocab_base; this layer's heads follow the
  // earlier layers', so the search starts past theirs.
  std::int64_t prime = spec.vocab_base - 1;
  const std::int64_t first = static_cast<std::int64_t>(spec.layer_index) * spec.heads();
  std::int64_t total = 0;
  for (std::int64_t g = 0; g < first + spec.heads(); ++g) {
    ++prime;
    while (!is_prime(prime)) ++prime;
    if (g < first) continue;
    sizes_.push_back(prime);
    offsets_.push_back(total);
    total += prime;
  }
  padded_rows_ = (total + spec.divisor - 1) / spec.divisor * spec.divisor;
}

void NgramHash::rows(std::span<const std::int32_t> window, std::span<std::int64_t> rows) const {
  const auto n = static_cast<std::size_t>(spec_.ngram_size);
  if (window.size() != n || rows.size() != static_cast<std::size_t>(spec_.heads()))
    throw std::invalid_argument("NgramHash::rows: a window or output of another size");
  // The tokens 0 .. N-1 places back; EOS from the first EOS met going back (itself included).
  std::vector<std::uint64_t> back(n);
  bool ended = false;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t t = window[n - 1 - i];
    back[i] = static_cast<std::uint64_t>(i > 0 && ended ? spec_.eos : t);
    if (i > 0 && t == spec_.eos) ended = true;
  }
  std::size_t head = 0;
  for (std::size_t order = 2; order <= n; ++order) {
    std::uint64_t h = back[0] * multipliers_[0];
    for (std::size_t i = 1; i < order; ++i) h ^= back[i] * multipliers_[i];
    for (int j = 0; j < spec_.heads_per_ngram; ++j, ++head)
      rows[head] = static_cast<std::int64_t>(h % static_cast<std::uint64_t>(sizes_[head])) + offsets_[head];
  }
}

}  // namespace tf
