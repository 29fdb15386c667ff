#pragma once
// Python str operations on UTF-8 strings, with code point (not byte) semantics.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tf::jinja::pystr {

// strip/lstrip/rstrip: chars == nullopt strips whitespace (str.isspace)
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// str.split / str.rsplit: sep == nullopt splits on whitespace runs; maxsplit < 0: no limit
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, std::int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, std::int64_t maxsplit);
std::vector<std::string> splitlines(std::string_view s, bool keepends);
std::string replace(std::string_view s, std::string_view old, std::string_view repl, std::int64_t count);
// find/rfind/count within s[start:end] (code point indices with slice semantics); -1 when absent
std::int64_t find(std::string_view s, std::string_view sub, std::optional<std::int64_t> start,
                  std::optional<std::int64_t> end, bool reverse);
std::int64_t count(std::string_view s, std::string_view sub, std::optional<std::int64_t> start,
                   std::optional<std::int64_t> end);
bool startswith(std::string_view s, std::string_view prefix, std::optional<std::int64_t> start,
                std::optional<std::int64_t> end, bool ends);
std::string center(std::string_view s, std::int64_t width, const std::string& fill, char align);  // '^' '<' '>'
std::string zfill(std::string_view s, std::int64_t width);
std::string expandtabs(std::string_view s, std::int64_t tabsize, std::size_t max_bytes);
// jinja2's |title: each run split by [-\s({\[<]+ gets item[0].upper() + item[1:].lower()
std::string jinja_title(std::string_view s);
std::size_t word_count(std::string_view s);  // len(re.findall(r"\w+", s))
bool is_ascii(std::string_view s);

}  // namespace tf::jinja::pystr
