#include "server/openai_ids.h"

#include <chrono>
#include <mutex>
#include <random>

namespace tf::server {

std::string random_id(std::string_view prefix, int hex_digits) {
  static std::mutex mu;
  static std::mt19937_64 rng{[] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(),
                      static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count())};
    return std::mt19937_64(seq);
  }()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(prefix);
  std::lock_guard lock(mu);
  std::uint64_t bits = 0;
  for (int i = 0; i < hex_digits; ++i) {
    if (i % 16 == 0) bits = rng();
    id += kHex[bits & 15u];
    bits >>= 4;
  }
  return id;
}

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace tf::server
