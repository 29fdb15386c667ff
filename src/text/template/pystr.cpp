#include "pystr.h"

#include <algorithm>

#include "template_error.h"
#include "unicode.h"
#include "value.h"

namespace tf::jinja::pystr {

namespace {

bool in_set(char32_t c, const std::u32string& set) { return set.find(c) != std::u32string::npos; }

// Python slice-style clamping of [start, end) over n code points.
void clamp(std::optional<std::int64_t> start, std::optional<std::int64_t> end, std::int64_t n, std::int64_t& lo, std::int64_t& hi) {
  lo = start.value_or(0);
  hi = end.value_or(n);
  if (lo < 0) lo = std::max<std::int64_t>(lo + n, 0);
  if (hi < 0) hi = std::max<std::int64_t>(hi + n, 0);
  lo = std::min(lo, n);
  hi = std::min(hi, n);
}

}  // namespace

bool is_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  const std::u32string u = uni::to_u32(s);
  const std::u32string set = chars ? uni::to_u32(*chars) : std::u32string();
  auto strip_it = [&](char32_t c) { return chars ? in_set(c, set) : uni::is_space(c); };
  std::size_t a = 0, b = u.size();
  if (left)
    while (a < b && strip_it(u[a])) ++a;
  if (right)
    while (b > a && strip_it(u[b - 1])) --b;
  return uni::from_u32(std::u32string_view(u).substr(a, b - a));
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, std::int64_t maxsplit) {
  std::vector<std::string> out;
  if (maxsplit < 0) maxsplit = INT64_MAX;
  if (sep) {
    if (sep->empty()) value_error("empty separator");
    std::size_t pos = 0;
    while (maxsplit-- > 0) {
      const std::size_t k = s.find(*sep, pos);
      if (k == std::string_view::npos) break;
      out.emplace_back(s.substr(pos, k - pos));
      pos = k + sep->size();
    }
    out.emplace_back(s.substr(pos));
    return out;
  }
  const std::u32string u = uni::to_u32(s);
  std::size_t i = 0, n = u.size();
  while (true) {
    while (i < n && uni::is_space(u[i])) ++i;
    if (i >= n) break;
    if (maxsplit-- <= 0) {
      out.push_back(uni::from_u32(std::u32string_view(u).substr(i)));
      break;
    }
    std::size_t j = i;
    while (j < n && !uni::is_space(u[j])) ++j;
    out.push_back(uni::from_u32(std::u32string_view(u).substr(i, j - i)));
    i = j;
  }
  return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, std::int64_t maxsplit) {
  std::vector<std::string> out;
  if (maxsplit < 0) maxsplit = INT64_MAX;
  if (sep) {
    if (sep->empty()) value_error("empty separator");
    std::size_t end = s.size();
    while (maxsplit-- > 0) {
      if (end < sep->size()) break;
      const std::size_t k = s.rfind(*sep, end - sep->size());
      if (k == std::string_view::npos) break;
      out.emplace_back(s.substr(k + sep->size(), end - k - sep->size()));
      end = k;
    }
    out.emplace_back(s.substr(0, end));
    std::reverse(out.begin(), out.end());
    return out;
  }
  const std::u32string u = uni::to_u32(s);
  std::size_t j = u.size();
  while (true) {
    while (j > 0 && uni::is_space(u[j - 1])) --j;
    if (j == 0) break;
    if (maxsplit-- <= 0) {
      out.push_back(uni::from_u32(std::u32string_view(u).substr(0, j)));
      break;
    }
    std::size_t i = j;
    while (i > 0 && !uni::is_space(u[i - 1])) --i;
    out.push_back(uni::from_u32(std::u32string_view(u).substr(i, j - i)));
    j = i;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
  const std::u32string u = uni::to_u32(s);
  std::vector<std::string> out;
  std::size_t i = 0, start = 0;
  const std::size_t n = u.size();
  auto is_break = [](char32_t c) {
    return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E || c == 0x85 ||
           c == 0x2028 || c == 0x2029;
  };
  while (i < n) {
    if (!is_break(u[i])) {
      ++i;
      continue;
    }
    std::size_t eol = i + 1;
    if (u[i] == '\r' && i + 1 < n && u[i + 1] == '\n') eol = i + 2;
    out.push_back(uni::from_u32(std::u32string_view(u).substr(start, (keepends ? eol : i) - start)));
    start = i = eol;
  }
  if (start < n) out.push_back(uni::from_u32(std::u32string_view(u).substr(start)));
  return out;
}

std::string replace(std::string_view s, std::string_view old, std::string_view repl, std::int64_t count) {
  if (count < 0) count = INT64_MAX;
  std::string out;
  if (old.empty()) {
    // insert repl before every code point and at the end, up to count times
    std::size_t i = 0;
    std::int64_t done = 0;
    while (i <= s.size()) {
      if (done < count) {
        out += repl;
        ++done;
      }
      if (i == s.size()) break;
      const std::size_t start = i;
      uni::decode(s, i);
      out += s.substr(start, i - start);
    }
    return out;
  }
  std::size_t pos = 0;
  while (count-- > 0) {
    const std::size_t k = s.find(old, pos);
    if (k == std::string_view::npos) break;
    out += s.substr(pos, k - pos);
    out += repl;
    pos = k + old.size();
  }
  out += s.substr(pos);
  return out;
}

std::int64_t find(std::string_view s, std::string_view sub, std::optional<std::int64_t> start,
                  std::optional<std::int64_t> end, bool reverse) {
  if (is_ascii(s)) {
    std::int64_t lo, hi;
    clamp(start, end, static_cast<std::int64_t>(s.size()), lo, hi);
    if (hi - lo < static_cast<std::int64_t>(sub.size())) return -1;
    const std::string_view w = s.substr(static_cast<std::size_t>(lo), static_cast<std::size_t>(hi - lo));
    const std::size_t k = reverse ? w.rfind(sub) : w.find(sub);
    return k == std::string_view::npos ? -1 : lo + static_cast<std::int64_t>(k);
  }
  const std::u32string u = uni::to_u32(s), v = uni::to_u32(sub);
  std::int64_t lo, hi;
  clamp(start, end, static_cast<std::int64_t>(u.size()), lo, hi);
  if (hi - lo < static_cast<std::int64_t>(v.size())) return -1;
  const std::u32string_view w = std::u32string_view(u).substr(static_cast<std::size_t>(lo), static_cast<std::size_t>(hi - lo));
  const std::size_t k = reverse ? w.rfind(v) : w.find(v);
  return k == std::u32string_view::npos ? -1 : lo + static_cast<std::int64_t>(k);
}

std::int64_t count(std::string_view s, std::string_view sub, std::optional<std::int64_t> start,
                   std::optional<std::int64_t> end) {
  const std::u32string u = uni::to_u32(s), v = uni::to_u32(sub);
  std::int64_t lo, hi;
  clamp(start, end, static_cast<std::int64_t>(u.size()), lo, hi);
  if (hi - lo < static_cast<std::int64_t>(v.size())) return 0;
  if (v.empty()) return hi - lo + 1;
  const std::u32string_view w = std::u32string_view(u).substr(static_cast<std::size_t>(lo), static_cast<std::size_t>(hi - lo));
  std::int64_t n = 0;
  for (std::size_t k = w.find(v); k != std::u32string_view::npos; k = w.find(v, k + v.size())) ++n;
  return n;
}

bool startswith(std::string_view s, std::string_view prefix, std::optional<std::int64_t> start,
                std::optional<std::int64_t> end, bool ends) {
  if (!start && !end) {
    if (prefix.size() > s.size()) return false;
    return ends ? s.substr(s.size() - prefix.size()) == prefix : s.substr(0, prefix.size()) == prefix;
  }
  const std::u32string u = uni::to_u32(s), p = uni::to_u32(prefix);
  const auto n = static_cast<std::int64_t>(u.size());
  std::int64_t lo = start.value_or(0), hi = end.value_or(n);
  if (lo < 0) lo = std::max<std::int64_t>(lo + n, 0);
  if (hi < 0) hi = std::max<std::int64_t>(hi + n, 0);
  hi = std::min(hi, n);
  if (lo > n) return false;
  if (hi - lo < static_cast<std::int64_t>(p.size())) return false;
  const std::u32string_view w = std::u32string_view(u).substr(static_cast<std::size_t>(lo), static_cast<std::size_t>(hi - lo));
  return ends ? w.substr(w.size() - p.size()) == p : w.substr(0, p.size()) == p;
}

std::string center(std::string_view s, std::int64_t width, const std::string& fill, char align) {
  const auto len = static_cast<std::int64_t>(uni::length(s));
  if (width <= len) return std::string(s);
  const std::int64_t marg = width - len;
  std::int64_t left;
  if (align == '<') left = 0;
  else if (align == '>') left = marg;
  else left = marg / 2 + (marg & width & 1);
  std::string out;
  for (std::int64_t i = 0; i < left; ++i) out += fill;
  out += s;
  for (std::int64_t i = 0; i < marg - left; ++i) out += fill;
  return out;
}

std::string zfill(std::string_view s, std::int64_t width) {
  const auto len = static_cast<std::int64_t>(uni::length(s));
  if (width <= len) return std::string(s);
  std::string out;
  std::size_t rest = 0;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    out.push_back(s[0]);
    rest = 1;
  }
  out.append(static_cast<std::size_t>(width - len), '0');
  out += s.substr(rest);
  return out;
}

std::string expandtabs(std::string_view s, std::int64_t tabsize, std::size_t max_bytes) {
  std::string out;
  std::int64_t col = 0;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t start = i;
    const char32_t c = uni::decode(s, i);
    if (c == '\t') {
      if (tabsize > 0) {
        const std::int64_t n = tabsize - (col % tabsize);
        out.append(static_cast<std::size_t>(n), ' ');
        col += n;
        if (out.size() > max_bytes) throw TemplateError(TemplateError::Kind::Limit, "expandtabs() result exceeds the size limit");
      }
    } else {
      out += s.substr(start, i - start);
      col = (c == '\n' || c == '\r') ? 0 : col + 1;
    }
  }
  return out;
}

std::string jinja_title(std::string_view s) {
  // re.split(r"([-\s({\[<]+)", s): separators kept; empty items dropped
  const std::u32string u = uni::to_u32(s);
  auto is_sep = [](char32_t c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || uni::is_space(c); };
  std::string out;
  std::size_t i = 0;
  while (i < u.size()) {
    std::size_t j = i;
    const bool sep = is_sep(u[i]);
    while (j < u.size() && is_sep(u[j]) == sep) ++j;
    const std::u32string_view item = std::u32string_view(u).substr(i, j - i);
    std::string first;
    uni::append(first, item[0]);
    out += uni::upper(first);
    out += uni::lower(uni::from_u32(item.substr(1)));
    i = j;
  }
  return out;
}

std::size_t word_count(std::string_view s) {
  std::size_t n = 0;
  bool in_word = false;
  for (std::size_t i = 0; i < s.size();) {
    const bool w = uni::is_word(uni::decode(s, i));
    if (w && !in_word) ++n;
    in_word = w;
  }
  return n;
}

}  // namespace tf::jinja::pystr
