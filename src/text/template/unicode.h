#pragma once
// UTF-8 and the Unicode character properties that Python's str methods use, so that string operations in
// templates give the same code points as CPython 3.11 (Unicode 14.0). Invalid UTF-8 bytes decode to
// U+DC80..U+DCFF (like Python's surrogateescape) and encode back to the same byte, so bytes survive.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tf::jinja::uni {

char32_t decode(std::string_view s, std::size_t& i);  // reads one code point at i, advances i
void append(std::string& out, char32_t c);
std::size_t length(std::string_view s);               // number of code points
bool valid_utf8(std::string_view s);
std::u32string to_u32(std::string_view s);
std::string from_u32(std::u32string_view s);
// Byte offset of the code point with index `cp_index` (or s.size() when past the end).
std::size_t byte_offset(std::string_view s, std::size_t cp_index);

bool is_space(char32_t c);       // str.isspace
bool is_printable(char32_t c);   // str.isprintable
bool is_alnum(char32_t c);
bool is_alpha(char32_t c);
bool is_decimal(char32_t c);
int decimal_value(char32_t c);   // -1 unless is_decimal
bool is_digit(char32_t c);
bool is_numeric(char32_t c);
bool is_lower(char32_t c);
bool is_upper(char32_t c);
bool is_cased(char32_t c);
bool is_case_ignorable(char32_t c);
bool is_ident_start(char32_t c);
bool is_ident_continue(char32_t c);
bool is_word(char32_t c);        // regex \w

// Full case mappings (one code point may map to up to three).
void append_upper(std::string& out, char32_t c);
void append_lower(std::string& out, char32_t c);
void append_title(std::string& out, char32_t c);

std::string upper(std::string_view s);
std::string lower(std::string_view s);     // with the final-sigma rule, as str.lower
std::string title(std::string_view s);     // str.title
std::string capitalize(std::string_view s);
std::string swapcase(std::string_view s);
bool str_islower(std::string_view s);
bool str_isupper(std::string_view s);
bool str_istitle(std::string_view s);

}  // namespace tf::jinja::uni
