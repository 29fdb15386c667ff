#include "server/address_policy.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

namespace tf::server {
namespace {

// True when the first `bits` bits of `a` equal those of `prefix` (bytes past the prefix's own are zero).
template <std::size_t N>
bool in(const std::array<std::uint8_t, N>& a, std::initializer_list<std::uint8_t> prefix, int bits) {
  for (std::size_t i = 0; bits > 0; ++i, bits -= 8) {
    const int take = bits >= 8 ? 8 : bits;
    const auto mask = static_cast<std::uint8_t>(0xFF << (8 - take));
    const std::uint8_t p = i < prefix.size() ? prefix.begin()[i] : 0;
    if ((a[i] & mask) != (p & mask)) return false;
  }
  return true;
}

std::array<std::uint8_t, 4> low_v4(const std::array<std::uint8_t, 16>& a) { return {a[12], a[13], a[14], a[15]}; }

}  // namespace

std::string non_public_v4(const std::array<std::uint8_t, 4>& a) {
  if (in(a, {0}, 8)) return "unspecified (0.0.0.0/8)";
  if (in(a, {127}, 8)) return "loopback";
  if (in(a, {10}, 8) || in(a, {172, 16}, 12) || in(a, {192, 168}, 16)) return "private";
  if (in(a, {100, 64}, 10)) return "shared address space (carrier-grade NAT)";
  if (in(a, {169, 254}, 16)) return "link-local";
  if (in(a, {192, 0, 0}, 24)) return "IETF protocol assignments (192.0.0.0/24)";
  if (in(a, {192, 0, 2}, 24) || in(a, {198, 51, 100}, 24) || in(a, {203, 0, 113}, 24)) return "documentation";
  if (in(a, {198, 18}, 15)) return "benchmarking (198.18.0.0/15)";
  if (in(a, {192, 88, 99}, 24)) return "6to4 relay anycast";
  if (in(a, {224}, 4)) return "multicast";
  if (in(a, {240}, 4)) return "reserved (240.0.0.0/4, broadcast)";
  return {};
}

std::string non_public_v6(const std::array<std::uint8_t, 16>& a) {
  const std::array<std::uint8_t, 16> zero{};
  if (a == zero) return "unspecified (::)";
  auto loop = zero;
  loop[15] = 1;
  if (a == loop) return "loopback";
  // IPv4 written as IPv6 reaches the IPv4 address: judged as it.
  if (in(a, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF}, 96)) {
    const auto r = non_public_v4(low_v4(a));
    return r.empty() ? r : r + " (IPv4-mapped)";
  }
  if (in(a, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 96)) return "IPv4-compatible (deprecated)";
  if (in(a, {0x00, 0x64, 0xFF, 0x9B}, 96) || in(a, {0x00, 0x64, 0xFF, 0x9B, 0x00, 0x01}, 48))
    return "NAT64 (its IPv4 address is not checked)";
  if (in(a, {0x01, 0x00, 0, 0, 0, 0, 0, 0}, 64)) return "discard-only (100::/64)";
  if (in(a, {0x20, 0x01, 0x0D, 0xB8}, 32) || in(a, {0x3F, 0xFF}, 20)) return "documentation";
  if (in(a, {0x20, 0x01}, 23)) return "IETF protocol assignments (2001::/23, Teredo)";
  if (in(a, {0x20, 0x02}, 16)) return "6to4 (its IPv4 address is not checked)";
  if (in(a, {0x5F, 0x00}, 16)) return "segment routing (5f00::/16)";
  if (in(a, {0xFC}, 7)) return "private (unique local)";
  if (in(a, {0xFE, 0x80}, 10)) return "link-local";
  if (in(a, {0xFE, 0xC0}, 10)) return "site-local (deprecated)";
  if (in(a, {0xFF}, 8)) return "multicast";
  // Only 2000::/3 is allocated as global unicast.
  if (!in(a, {0x20}, 3)) return "not global unicast (outside 2000::/3)";
  return {};
}

std::string non_public(const sockaddr* address) {
  if (address == nullptr) return "no address";
  if (address->sa_family == AF_INET) {
    std::array<std::uint8_t, 4> a{};
    std::memcpy(a.data(), &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, 4);
    return non_public_v4(a);
  }
  if (address->sa_family == AF_INET6) {
    std::array<std::uint8_t, 16> a{};
    std::memcpy(a.data(), &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr, 16);
    return non_public_v6(a);
  }
  return "not an IPv4 or IPv6 address";
}

std::string non_public(const std::string& address) {
  std::array<std::uint8_t, 4> v4{};
  std::array<std::uint8_t, 16> v6{};
  if (inet_pton(AF_INET, address.c_str(), v4.data()) == 1) return non_public_v4(v4);
  if (inet_pton(AF_INET6, address.c_str(), v6.data()) == 1) return non_public_v6(v6);
  return "not an IP address";
}

}  // namespace tf::server
