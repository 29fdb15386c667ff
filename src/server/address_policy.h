#pragma once
// Which addresses an image URL may reach (--vision-urls): public unicast addresses only, so that a request cannot
// make the server read its own host, its network or a cloud metadata service (SSRF). The ranges are IANA's
// special-purpose registries (RFC 6890 and its updates) less the globally reachable ones.
#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <string>

namespace tf::server {

// Empty when `a` is a public address, else what it is ("loopback", "private", "link-local", "multicast", ...).
std::string non_public_v4(const std::array<std::uint8_t, 4>& a);
std::string non_public_v6(const std::array<std::uint8_t, 16>& a);
// The same for a socket address (AF_INET or AF_INET6; any other family is refused).
std::string non_public(const sockaddr* address);
// The same for an address written as text ("10.0.0.1", "::1"); "not an IP address" when it is none.
std::string non_public(const std::string& address);

}  // namespace tf::server
