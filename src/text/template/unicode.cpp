#include "unicode.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

namespace tf::jinja::uni {
namespace {

struct CodeRange {
  std::uint32_t lo, hi;
};
struct CaseEntry {
  std::uint32_t cp;
  std::uint32_t to[3];
};

#include "unicode_tables.inc"

template <std::size_t N>
bool in_ranges(const CodeRange (&table)[N], char32_t c) {
  const auto* end = table + N;
  const auto* it = std::upper_bound(table, end, static_cast<std::uint32_t>(c),
                                    [](std::uint32_t v, const CodeRange& r) { return v < r.lo; });
  if (it == table) return false;
  --it;
  return c >= it->lo && c <= it->hi;
}

template <std::size_t N>
const CaseEntry* find_case(const CaseEntry (&table)[N], char32_t c) {
  const auto* end = table + N;
  const auto* it = std::lower_bound(table, end, static_cast<std::uint32_t>(c),
                                    [](const CaseEntry& e, std::uint32_t v) { return e.cp < v; });
  if (it != end && it->cp == c) return it;
  return nullptr;
}

template <std::size_t N>
void append_mapped(const CaseEntry (&table)[N], std::string& out, char32_t c) {
  if (const CaseEntry* e = find_case(table, c)) {
    for (std::uint32_t m : e->to)
      if (m) append(out, m);
  } else {
    append(out, c);
  }
}

bool is_title_char(char32_t c) { return is_cased(c) && !is_lower(c) && !is_upper(c); }

// U+03A3 lowercases to final sigma when preceded by a cased letter and not followed by one (skipping
// case-ignorable characters both ways), as CPython's handle_capital_sigma.
char32_t lower_sigma(const std::u32string& s, std::size_t i) {
  std::size_t j = i;
  char32_t c = 0;
  bool found = false;
  while (j > 0) {
    c = s[--j];
    if (!is_case_ignorable(c)) {
      found = true;
      break;
    }
  }
  bool final_sigma = found && is_cased(c);
  if (final_sigma && i + 1 < s.size()) {
    std::size_t k = i + 1;
    for (; k < s.size(); ++k) {
      c = s[k];
      if (!is_case_ignorable(c)) break;
    }
    final_sigma = k == s.size() || !is_cased(c);
  }
  return final_sigma ? 0x3C2 : 0x3C3;
}

void append_lower_at(std::string& out, const std::u32string& s, std::size_t i) {
  if (s[i] == 0x3A3)
    append(out, lower_sigma(s, i));
  else
    append_lower(out, s[i]);
}

}  // namespace

char32_t decode(std::string_view s, std::size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  int n = 0;
  char32_t c = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 1;
    c = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 2;
    c = b0 & 0x0F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 3;
    c = b0 & 0x07;
  } else {
    ++i;
    return 0xDC00 + b0;
  }
  if (i + static_cast<std::size_t>(n) >= s.size()) {
    ++i;
    return 0xDC00 + b0;
  }
  for (int k = 1; k <= n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
    if ((b & 0xC0) != 0x80) {
      ++i;
      return 0xDC00 + b0;
    }
    c = (c << 6) | (b & 0x3F);
  }
  // overlong 3/4-byte forms, surrogates (kept only as escapes) and > U+10FFFF are invalid
  if ((n == 2 && c < 0x800) || (n == 3 && (c < 0x10000 || c > 0x10FFFF)) || (c >= 0xD800 && c <= 0xDFFF)) {
    ++i;
    return 0xDC00 + b0;
  }
  i += static_cast<std::size_t>(n) + 1;
  return c;
}

void append(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c >= 0xDC80 && c <= 0xDCFF) {
    out.push_back(static_cast<char>(c - 0xDC00));  // an escaped invalid byte goes back as itself
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::size_t length(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
    } else {
      decode(s, i);
    }
    ++n;
  }
  return n;
}

bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const char32_t c = decode(s, i);
    if (c >= 0xDC80 && c <= 0xDCFF) return false;
  }
  return true;
}

std::u32string to_u32(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) out.push_back(decode(s, i));
  return out;
}

std::string from_u32(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) append(out, c);
  return out;
}

std::size_t byte_offset(std::string_view s, std::size_t cp_index) {
  std::size_t i = 0;
  for (std::size_t n = 0; n < cp_index && i < s.size(); ++n) decode(s, i);
  return i;
}

bool is_space(char32_t c) {
  if (c < 0x80) return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
}
bool is_printable(char32_t c) {
  if (c < 0x80) return c >= 0x20 && c < 0x7F;
  return in_ranges(kPrintable, c);
}
bool is_alnum(char32_t c) {
  if (c < 0x80) return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  return in_ranges(kAlnum, c);
}
bool is_alpha(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  return in_ranges(kAlpha, c);
}
bool is_decimal(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return in_ranges(kDecimal, c);
}
int decimal_value(char32_t c) {
  if (c < 0x80) return (c >= '0' && c <= '9') ? static_cast<int>(c - '0') : -1;
  const auto* end = kDecimal + std::size(kDecimal);
  const auto* it = std::upper_bound(kDecimal, end, static_cast<std::uint32_t>(c),
                                    [](std::uint32_t v, const CodeRange& r) { return v < r.lo; });
  if (it == kDecimal) return -1;
  --it;
  if (c < it->lo || c > it->hi) return -1;
  return static_cast<int>((c - it->lo) % 10);
}
bool is_digit(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return in_ranges(kDigit, c);
}
bool is_numeric(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return in_ranges(kNumeric, c);
}
bool is_lower(char32_t c) {
  if (c < 0x80) return c >= 'a' && c <= 'z';
  return in_ranges(kLower, c);
}
bool is_upper(char32_t c) {
  if (c < 0x80) return c >= 'A' && c <= 'Z';
  return in_ranges(kUpper, c);
}
bool is_cased(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  return in_ranges(kCased, c);
}
bool is_case_ignorable(char32_t c) { return in_ranges(kCaseIgnorable, c); }
bool is_ident_start(char32_t c) {
  if (c < 0x80) return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  return in_ranges(kIdentStart, c);
}
bool is_ident_continue(char32_t c) {
  if (c < 0x80) return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  return in_ranges(kIdentContinue, c);
}
bool is_word(char32_t c) { return c == '_' || is_alnum(c); }

void append_upper(std::string& out, char32_t c) {
  if (c < 0x80) {
    append(out, (c >= 'a' && c <= 'z') ? c - 32 : c);
    return;
  }
  append_mapped(kUpperMap, out, c);
}
void append_lower(std::string& out, char32_t c) {
  if (c < 0x80) {
    append(out, (c >= 'A' && c <= 'Z') ? c + 32 : c);
    return;
  }
  append_mapped(kLowerMap, out, c);
}
void append_title(std::string& out, char32_t c) {
  if (c < 0x80) {
    append(out, (c >= 'a' && c <= 'z') ? c - 32 : c);
    return;
  }
  append_mapped(kTitleMap, out, c);
}

std::string upper(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) append_upper(out, decode(s, i));
  return out;
}

std::string lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool has_sigma = s.find("\xCE\xA3") != std::string_view::npos;
  if (!has_sigma) {
    for (std::size_t i = 0; i < s.size();) append_lower(out, decode(s, i));
    return out;
  }
  const std::u32string u = to_u32(s);
  for (std::size_t i = 0; i < u.size(); ++i) append_lower_at(out, u, i);
  return out;
}

std::string title(std::string_view s) {
  const std::u32string u = to_u32(s);
  std::string out;
  out.reserve(s.size());
  bool previous_is_cased = false;
  for (std::size_t i = 0; i < u.size(); ++i) {
    if (previous_is_cased)
      append_lower_at(out, u, i);
    else
      append_title(out, u[i]);
    previous_is_cased = is_cased(u[i]);
  }
  return out;
}

std::string capitalize(std::string_view s) {
  const std::u32string u = to_u32(s);
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < u.size(); ++i) {
    if (i == 0)
      append_title(out, u[i]);
    else
      append_lower_at(out, u, i);
  }
  return out;
}

std::string swapcase(std::string_view s) {
  const std::u32string u = to_u32(s);
  std::string out;
  for (std::size_t i = 0; i < u.size(); ++i) {
    if (is_upper(u[i]))
      append_lower_at(out, u, i);
    else if (is_lower(u[i]))
      append_upper(out, u[i]);
    else
      append(out, u[i]);
  }
  return out;
}

bool str_islower(std::string_view s) {
  bool cased = false;
  for (std::size_t i = 0; i < s.size();) {
    const char32_t c = decode(s, i);
    if (is_upper(c) || is_title_char(c)) return false;
    if (!cased && is_lower(c)) cased = true;
  }
  return cased;
}

bool str_isupper(std::string_view s) {
  bool cased = false;
  for (std::size_t i = 0; i < s.size();) {
    const char32_t c = decode(s, i);
    if (is_lower(c) || is_title_char(c)) return false;
    if (!cased && is_upper(c)) cased = true;
  }
  return cased;
}

bool str_istitle(std::string_view s) {
  bool cased = false, previous_is_cased = false;
  for (std::size_t i = 0; i < s.size();) {
    const char32_t c = decode(s, i);
    if (is_upper(c) || is_title_char(c)) {
      if (previous_is_cased) return false;
      previous_is_cased = cased = true;
    } else if (is_lower(c)) {
      if (!previous_is_cased) return false;
      previous_is_cased = cased = true;
    } else {
      previous_is_cased = false;
    }
  }
  return cased;
}

}  // namespace tf::jinja::uni
