#include "text/tokenizer/unicode.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <memory>
#include <stdexcept>

namespace tf::tokenizer_detail {

char32_t utf8_next(std::string_view s, std::size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  const std::size_t n = std::min(utf8_len(b0), s.size() - i);
  char32_t cp = 0;
  switch (n) {
    case 1: cp = b0; break;
    case 2: cp = (b0 & 0x1Fu); break;
    case 3: cp = (b0 & 0x0Fu); break;
    default: cp = (b0 & 0x07u); break;
  }
  for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3Fu);
  i += n;
  return cp;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

namespace {

// For a lead byte: the sequence length and the allowed range of the first continuation byte (the rest are
// 80..BF). Length 0: not a lead byte. This is the table of well-formed UTF-8 (Unicode 3.9, table 3-7).
struct LeadInfo {
  unsigned char len, lo, hi;
};
LeadInfo lead_info(unsigned char b) {
  if (b < 0x80) return {1, 0, 0};
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

// How many bytes from s[i] match a well-formed sequence's prefix (the lead included); `complete` says whether
// the whole sequence is there.
std::size_t valid_prefix(std::string_view s, std::size_t i, bool& complete) {
  const LeadInfo li = lead_info(static_cast<unsigned char>(s[i]));
  complete = false;
  if (li.len == 0) return 0;
  if (li.len == 1) {
    complete = true;
    return 1;
  }
  std::size_t k = 1;
  for (; k < li.len && i + k < s.size(); ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    const unsigned char lo = k == 1 ? li.lo : 0x80, hi = k == 1 ? li.hi : 0xBF;
    if (c < lo || c > hi) return k;
  }
  complete = k == li.len;
  return k;
}

}  // namespace

std::size_t utf8_valid_len(std::string_view s, std::size_t i) {
  bool complete = false;
  const std::size_t n = valid_prefix(s, i, complete);
  return complete ? n : 0;
}

bool is_valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t n = utf8_valid_len(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      out += s[i++];
      continue;
    }
    bool complete = false;
    const std::size_t n = valid_prefix(s, i, complete);
    if (complete) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      i += n == 0 ? 1 : n;
    }
  }
  return out;
}

std::size_t utf8_incomplete_tail(std::string_view s) {
  for (std::size_t k = 1; k <= 3 && k <= s.size(); ++k) {
    const std::size_t p = s.size() - k;
    const LeadInfo li = lead_info(static_cast<unsigned char>(s[p]));
    if (li.len == 0) continue;  // a continuation byte: look further back
    bool complete = false;
    const std::size_t n = valid_prefix(s, p, complete);
    return (!complete && n == k) ? k : 0;
  }
  return 0;
}

namespace {
utf8proc_category_t category(char32_t c) {
  return static_cast<utf8proc_category_t>(utf8proc_category(static_cast<utf8proc_int32_t>(c)));
}
}  // namespace

bool is_white_space(char32_t c) {
  switch (c) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0: case 0x1680:
    case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

bool is_numeric(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  const auto k = category(c);
  return k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_NO;
}

bool is_punctuation(char32_t c) {
  const auto k = category(c);
  return k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO;
}

bool is_other(char32_t c) {
  const auto k = category(c);
  return k == UTF8PROC_CATEGORY_CC || k == UTF8PROC_CATEGORY_CF || k == UTF8PROC_CATEGORY_CS ||
         k == UTF8PROC_CATEGORY_CO || k == UTF8PROC_CATEGORY_CN;
}

bool is_mark_nonspacing(char32_t c) { return category(c) == UTF8PROC_CATEGORY_MN; }

bool is_mark(char32_t c) {
  const auto k = category(c);
  return k == UTF8PROC_CATEGORY_MN || k == UTF8PROC_CATEGORY_MC || k == UTF8PROC_CATEGORY_ME;
}

bool is_word_char(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  if (c == 0x200C || c == 0x200D) return true;  // Join_Control
  // Other_Alphabetic symbols: circled and squared Latin letters.
  if ((c >= 0x24B6 && c <= 0x24E9) || (c >= 0x1F130 && c <= 0x1F149) || (c >= 0x1F150 && c <= 0x1F169) ||
      (c >= 0x1F170 && c <= 0x1F189))
    return true;
  const auto k = category(c);
  switch (k) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT: case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

bool is_cjk_ideograph(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

std::string normalize(std::string_view s, NormalForm form) {
  bool ascii = true;
  for (const char ch : s)
    if (static_cast<unsigned char>(ch) >= 0x80) {
      ascii = false;
      break;
    }
  if (ascii) return std::string(s);  // every normal form leaves ASCII as it is
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::NFC: options |= UTF8PROC_COMPOSE; break;
    case NormalForm::NFD: options |= UTF8PROC_DECOMPOSE; break;
    case NormalForm::NFKC: options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
    case NormalForm::NFKD: options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
  }
  utf8proc_uint8_t* dest = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()), static_cast<utf8proc_ssize_t>(s.size()),
                   &dest, static_cast<utf8proc_option_t>(options));
  if (n < 0) {
    std::free(dest);
    return std::string(s);  // only invalid UTF-8 fails, and the tokenizer sanitizes its input first
  }
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> guard(dest, &std::free);
  return std::string(reinterpret_cast<const char*>(dest), static_cast<std::size_t>(n));
}

std::string to_lowercase(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      out += static_cast<char>(b >= 'A' && b <= 'Z' ? b + 32 : b);
      ++i;
      continue;
    }
    const char32_t c = utf8_next(s, i);
    if (c == 0x130) {  // the one unconditional multi-character lowercase mapping
      out += "i\xCC\x87";
      continue;
    }
    utf8_append(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
  }
  return out;
}

namespace {
struct ByteMap {
  std::array<std::string, 256> to_char;
  std::array<int, 324> from_char{};  // the stand-ins are all below U+0144
  ByteMap() {
    from_char.fill(-1);
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      const char32_t c = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + extra++);
      utf8_append(to_char[static_cast<std::size_t>(b)], c);
      from_char[c] = b;
    }
  }
};
const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}
}  // namespace

const std::string& byte_to_unicode(unsigned char b) { return byte_map().to_char[b]; }

int unicode_to_byte(char32_t c) { return c < 324 ? byte_map().from_char[c] : -1; }

}  // namespace tf::tokenizer_detail
