#pragma once
// UTF-8 and Unicode helpers for the tokenizer (character properties and normalization through utf8proc).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tf::tokenizer_detail {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// Length of the UTF-8 sequence a lead byte announces (1 for a stray continuation or invalid byte).
inline std::size_t utf8_len(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

// Decodes the character at s[i] of VALID UTF-8 and advances i.
char32_t utf8_next(std::string_view s, std::size_t& i);
void utf8_append(std::string& out, char32_t cp);

// Length of the valid UTF-8 character at s[i], or 0 when the bytes there are not one.
std::size_t utf8_valid_len(std::string_view s, std::size_t i);
bool is_valid_utf8(std::string_view s);
// Rust's String::from_utf8_lossy: each maximal invalid subsequence becomes one U+FFFD.
std::string utf8_lossy(std::string_view bytes);
// Bytes at the end of s that begin a UTF-8 character but do not finish it (0..3): a stream holds them back.
std::size_t utf8_incomplete_tail(std::string_view s);

// Character properties, as Rust's char methods and regex classes define them (Unicode 15 tables).
bool is_white_space(char32_t c);  // White_Space: char::is_whitespace, regex \s
bool is_numeric(char32_t c);      // char::is_numeric: Nd, Nl, No
bool is_punctuation(char32_t c);  // general category P*
bool is_other(char32_t c);        // general category C* (Cc, Cf, Cs, Co, Cn)
bool is_mark_nonspacing(char32_t c);  // Mn
bool is_mark(char32_t c);             // M*
bool is_word_char(char32_t c);    // regex \w: alphabetic, marks, Nd, Pc, join controls
bool is_cjk_ideograph(char32_t c);  // the BERT "Chinese character" ranges

enum class NormalForm { NFC, NFD, NFKC, NFKD };
std::string normalize(std::string_view s, NormalForm form);
// char::to_lowercase applied to each character (full mappings, no context: no final-sigma rule).
std::string to_lowercase(std::string_view s);

// GPT-2's byte-to-character map used by ByteLevel: each byte as the UTF-8 of its printable stand-in.
const std::string& byte_to_unicode(unsigned char b);
// The inverse; -1 for a character that is not a stand-in.
int unicode_to_byte(char32_t c);

}  // namespace tf::tokenizer_detail
