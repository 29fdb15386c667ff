#pragma once
// Object ids ("chatcmpl-…", "resp_…") and timestamps for replies.
#include <cstdint>
#include <string>
#include <string_view>

namespace tf::server {

// prefix + `hex_digits` random lowercase hex digits (from a per-process random source; thread-safe).
std::string random_id(std::string_view prefix, int hex_digits = 24);
// Seconds since the Unix epoch.
std::int64_t unix_now();

}  // namespace tf::server
