#include "lexer.h"

#include <cerrno>
#include <cstdlib>

#include "template_error.h"
#include "unicode.h"

namespace tf::jinja {

namespace {

[[noreturn]] void fail(const std::string& msg, int line) { throw TemplateError(TemplateError::Kind::Syntax, msg, line); }

int count_newlines(std::string_view s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// Length of the run of (Unicode) whitespace at s[pos:].
std::size_t whitespace_len(std::string_view s, std::size_t pos) {
  std::size_t i = pos;
  while (i < s.size()) {
    std::size_t j = i;
    const char32_t c = uni::decode(s, j);
    if (!uni::is_space(c)) break;
    i = j;
  }
  return i - pos;
}

std::string_view rstrip(std::string_view s) {
  std::size_t keep = 0;
  for (std::size_t i = 0; i < s.size();) {
    const char32_t c = uni::decode(s, i);
    if (!uni::is_space(c)) keep = i;
  }
  return s.substr(0, keep);
}

bool all_whitespace(std::string_view s) {
  if (s.empty()) return false;  // jinja2 fullmatches \s+
  return whitespace_len(s, 0) == s.size();
}

// Applies jinja2's OptionalLStrip rule to the text before a tag.
std::string_view strip_before(std::string_view text, char sign, bool lstrip_allowed, bool line_starting) {
  if (sign == '-') return rstrip(text);
  if (sign != '+' && lstrip_allowed) {
    const std::size_t nl = text.rfind('\n');
    const std::size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
    if ((l_pos > 0 || line_starting) && all_whitespace(text.substr(l_pos))) return text.substr(0, l_pos);
  }
  return text;
}

void append_hex_escape(std::string& out, char32_t c) {
  static const char* hex = "0123456789abcdef";
  if (c < 0x100) {
    out += "\\x";
    out.push_back(hex[(c >> 4) & 0xF]);
    out.push_back(hex[c & 0xF]);
  } else if (c < 0x10000) {
    out += "\\u";
    for (int s = 12; s >= 0; s -= 4) out.push_back(hex[(c >> s) & 0xF]);
  } else {
    out += "\\U";
    for (int s = 28; s >= 0; s -= 4) out.push_back(hex[(c >> s) & 0xF]);
  }
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Python: body.encode("ascii", "backslashreplace").decode("unicode-escape")
std::string unescape_string(std::string_view body, int line) {
  std::string ascii;
  ascii.reserve(body.size());
  for (std::size_t i = 0; i < body.size();) {
    if (static_cast<unsigned char>(body[i]) < 0x80) {
      ascii.push_back(body[i++]);
      continue;
    }
    append_hex_escape(ascii, uni::decode(body, i));
  }
  std::string out;
  out.reserve(ascii.size());
  for (std::size_t i = 0; i < ascii.size();) {
    const char c = ascii[i];
    if (c != '\\') {
      out.push_back(c);
      ++i;
      continue;
    }
    if (i + 1 >= ascii.size()) fail("\\ at end of string", line);
    const char e = ascii[i + 1];
    i += 2;
    switch (e) {
      case '\n':
        break;
      case '\\':
        out.push_back('\\');
        break;
      case '\'':
        out.push_back('\'');
        break;
      case '"':
        out.push_back('"');
        break;
      case 'a':
        out.push_back('\a');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'v':
        out.push_back('\v');
        break;
      case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
        char32_t v = static_cast<char32_t>(e - '0');
        for (int k = 0; k < 2 && i < ascii.size() && ascii[i] >= '0' && ascii[i] <= '7'; ++k, ++i)
          v = v * 8 + static_cast<char32_t>(ascii[i] - '0');
        uni::append(out, v);
        break;
      }
      case 'x':
      case 'u':
      case 'U': {
        const int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        char32_t v = 0;
        for (int k = 0; k < n; ++k) {
          if (i >= ascii.size() || hex_digit(ascii[i]) < 0) {
            fail(std::string("truncated \\") + e + (e == 'x' ? "XX" : e == 'u' ? "XXXX" : "XXXXXXXX") + " escape", line);
          }
          v = v * 16 + static_cast<char32_t>(hex_digit(ascii[i++]));
        }
        if (v > 0x10FFFF) fail("illegal Unicode character", line);
        uni::append(out, v);
        break;
      }
      case 'N':
        fail("\\N{...} escapes are not supported", line);
      default:
        out.push_back('\\');
        out.push_back(e);
    }
  }
  return out;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// (\d+_)*\d+ at pos; returns end or npos
std::size_t match_digits(std::string_view s, std::size_t pos) {
  if (pos >= s.size() || !is_digit(s[pos])) return std::string_view::npos;
  std::size_t i = pos;
  while (true) {
    while (i < s.size() && is_digit(s[i])) ++i;
    if (i + 1 < s.size() && s[i] == '_' && is_digit(s[i + 1])) {
      ++i;
      continue;
    }
    return i;
  }
}

// jinja2 float_re; returns end or npos
std::size_t match_float(std::string_view s, std::size_t pos) {
  if (pos > 0 && s[pos - 1] == '.') return std::string_view::npos;
  const std::size_t a = match_digits(s, pos);
  if (a == std::string_view::npos) return a;
  // alternative 1: (\.digits)? e[+-]?digits
  {
    std::size_t i = a;
    if (i < s.size() && s[i] == '.') {
      const std::size_t f = match_digits(s, i + 1);
      if (f != std::string_view::npos) i = f;
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      std::size_t j = i + 1;
      if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
      const std::size_t x = match_digits(s, j);
      if (x != std::string_view::npos) return x;
    }
  }
  // alternative 2: \.digits
  if (a < s.size() && s[a] == '.') {
    const std::size_t f = match_digits(s, a + 1);
    if (f != std::string_view::npos) return f;
  }
  return std::string_view::npos;
}

// jinja2 integer_re; returns end or npos and sets the base
std::size_t match_integer(std::string_view s, std::size_t pos, int& base) {
  auto run = [&](std::size_t i, auto ok) -> std::size_t {  // (_?X)+
    std::size_t end = std::string_view::npos;
    while (true) {
      std::size_t j = i;
      if (j < s.size() && s[j] == '_') ++j;
      if (j < s.size() && ok(s[j])) {
        i = j + 1;
        end = i;
      } else {
        return end;
      }
    }
  };
  if (pos + 1 < s.size() && s[pos] == '0') {
    const char p = static_cast<char>(s[pos + 1] | 0x20);
    std::size_t e = std::string_view::npos;
    if (p == 'b') e = run(pos + 2, [](char c) { return c == '0' || c == '1'; }), base = 2;
    else if (p == 'o') e = run(pos + 2, [](char c) { return c >= '0' && c <= '7'; }), base = 8;
    else if (p == 'x') e = run(pos + 2, [](char c) { return hex_digit(c) >= 0; }), base = 16;
    if (e != std::string_view::npos) return e;
  }
  base = 10;
  if (pos < s.size() && s[pos] >= '1' && s[pos] <= '9') {
    const std::size_t e = run(pos + 1, is_digit);
    return e == std::string_view::npos ? pos + 1 : e;
  }
  if (pos < s.size() && s[pos] == '0') {
    const std::size_t e = run(pos + 1, [](char c) { return c == '0'; });
    return e == std::string_view::npos ? pos + 1 : e;
  }
  return std::string_view::npos;
}

std::size_t match_string(std::string_view s, std::size_t pos) {
  const char q = s[pos];
  std::size_t i = pos + 1;
  while (i < s.size()) {
    if (s[i] == '\\') {
      i += 2;
      continue;
    }
    if (s[i] == q) return i + 1;
    ++i;
  }
  return std::string_view::npos;
}

struct Op {
  const char* text;
  Tok tok;
};
constexpr Op kOps2[] = {{"**", Tok::Pow}, {"//", Tok::FloorDiv}, {"==", Tok::Eq},
                        {"!=", Tok::Ne},  {">=", Tok::Gteq},     {"<=", Tok::Lteq}};
constexpr Op kOps1[] = {{"+", Tok::Add},      {"-", Tok::Sub},      {"/", Tok::Div},    {"*", Tok::Mul},
                        {"%", Tok::Mod},      {"~", Tok::Tilde},    {"[", Tok::LBracket}, {"]", Tok::RBracket},
                        {"(", Tok::LParen},   {")", Tok::RParen},   {"{", Tok::LBrace}, {"}", Tok::RBrace},
                        {">", Tok::Gt},       {"<", Tok::Lt},       {"=", Tok::Assign}, {".", Tok::Dot},
                        {":", Tok::Colon},    {"|", Tok::Pipe},     {",", Tok::Comma},  {";", Tok::Semicolon}};

class Lexer {
 public:
  explicit Lexer(std::string src) : s_(std::move(src)) {}

  std::vector<Token> run() {
    while (pos_ < s_.size()) root();
    push(Tok::Eof, "");
    return std::move(out_);
  }

 private:
  std::string s_;
  std::size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> out_;

  void push(Tok t, std::string v) {
    Token tok;
    tok.type = t;
    tok.value = std::move(v);
    tok.line = line_;
    out_.push_back(std::move(tok));
  }

  // {%(-|+|)\s*raw\s*(?:-%}\s*|%}) at p; returns end or npos
  std::size_t match_raw_begin(std::size_t p) const {
    std::size_t i = p + 2;
    if (i < s_.size() && (s_[i] == '-' || s_[i] == '+')) ++i;
    i += whitespace_len(s_, i);
    if (s_.compare(i, 3, "raw") != 0) return std::string::npos;
    i += 3;
    i += whitespace_len(s_, i);
    if (s_.compare(i, 3, "-%}") == 0) return i + 3 + whitespace_len(s_, i + 3);
    if (s_.compare(i, 2, "%}") == 0) return i + 2;
    return std::string::npos;
  }

  void root() {
    std::size_t idx = pos_;
    while (true) {
      idx = s_.find('{', idx);
      if (idx == std::string::npos || idx + 1 >= s_.size()) {
        // the rest is data
        const std::string_view rest(s_.data() + pos_, s_.size() - pos_);
        push(Tok::Data, std::string(rest));
        line_ += count_newlines(rest);
        pos_ = s_.size();
        return;
      }
      const char k = s_[idx + 1];
      if (k == '{' || k == '%' || k == '#') break;
      ++idx;
    }
    const std::string_view text(s_.data() + pos_, idx - pos_);
    const char kind = s_[idx + 1];
    const char sign = (idx + 2 < s_.size() && (s_[idx + 2] == '-' || s_[idx + 2] == '+')) ? s_[idx + 2] : '\0';
    std::size_t raw_end = kind == '%' ? match_raw_begin(idx) : std::string::npos;
    const std::string_view kept = strip_before(text, sign, kind != '{', line_starting_);
    if (!kept.empty()) push(Tok::Data, std::string(kept));
    line_ += count_newlines(text);
    if (raw_end != std::string::npos) {
      line_ += count_newlines(std::string_view(s_).substr(idx, raw_end - idx));
      line_starting_ = s_[raw_end - 1] == '\n';
      pos_ = raw_end;
      raw();
      return;
    }
    pos_ = idx + 2 + (sign ? 1 : 0);
    line_starting_ = false;
    if (kind == '#') {
      comment();
    } else if (kind == '{') {
      push(Tok::VariableBegin, "{{");
      tag(false);
    } else {
      push(Tok::BlockBegin, "{%");
      tag(true);
    }
  }

  void comment() {
    for (std::size_t p = pos_; p < s_.size(); ++p) {
      std::size_t end = std::string::npos;
      if (s_.compare(p, 3, "+#}") == 0) {
        end = p + 3;
      } else if (s_.compare(p, 3, "-#}") == 0) {
        end = p + 3 + whitespace_len(s_, p + 3);
      } else if (s_.compare(p, 2, "#}") == 0) {
        end = p + 2;
        if (end < s_.size() && s_[end] == '\n') ++end;
      }
      if (end != std::string::npos) {
        line_ += count_newlines(std::string_view(s_).substr(pos_, end - pos_));
        line_starting_ = s_[end - 1] == '\n';
        pos_ = end;
        return;
      }
    }
    fail("Missing end of comment tag", line_);
  }

  void raw() {
    for (std::size_t p = s_.find("{%", pos_); p != std::string::npos; p = s_.find("{%", p + 1)) {
      std::size_t i = p + 2;
      char sign = '\0';
      if (i < s_.size() && (s_[i] == '-' || s_[i] == '+')) sign = s_[i++];
      i += whitespace_len(s_, i);
      if (s_.compare(i, 6, "endraw") != 0) continue;
      i += 6;
      i += whitespace_len(s_, i);
      std::size_t end = std::string::npos;
      if (s_.compare(i, 3, "+%}") == 0) {
        end = i + 3;
      } else if (s_.compare(i, 3, "-%}") == 0) {
        end = i + 3 + whitespace_len(s_, i + 3);
      } else if (s_.compare(i, 2, "%}") == 0) {
        end = i + 2;
        if (end < s_.size() && s_[end] == '\n') ++end;
      }
      if (end == std::string::npos) continue;
      const std::string_view text(s_.data() + pos_, p - pos_);
      const std::string_view kept = strip_before(text, sign, true, line_starting_);
      if (!kept.empty()) push(Tok::Data, std::string(kept));
      line_ += count_newlines(std::string_view(s_).substr(pos_, end - pos_));
      line_starting_ = s_[end - 1] == '\n';
      pos_ = end;
      return;
    }
    fail("Missing end of raw directive", line_);
  }

  // Inside {% ... %} (block) or {{ ... }} (variable).
  void tag(bool block) {
    std::vector<char> balance;
    while (true) {
      if (pos_ >= s_.size()) return;  // the parser reports the unexpected end
      if (balance.empty()) {
        std::size_t end = std::string::npos;
        if (block) {
          if (s_.compare(pos_, 3, "+%}") == 0) {
            end = pos_ + 3;
          } else if (s_.compare(pos_, 3, "-%}") == 0) {
            end = pos_ + 3 + whitespace_len(s_, pos_ + 3);
          } else if (s_.compare(pos_, 2, "%}") == 0) {
            end = pos_ + 2;
            if (end < s_.size() && s_[end] == '\n') ++end;
          }
        } else {
          if (s_.compare(pos_, 3, "-}}") == 0)
            end = pos_ + 3 + whitespace_len(s_, pos_ + 3);
          else if (s_.compare(pos_, 2, "}}") == 0)
            end = pos_ + 2;
        }
        if (end != std::string::npos) {
          push(block ? Tok::BlockEnd : Tok::VariableEnd, "");
          line_ += count_newlines(std::string_view(s_).substr(pos_, end - pos_));
          line_starting_ = s_[end - 1] == '\n';
          pos_ = end;
          return;
        }
      }
      const std::size_t ws = whitespace_len(s_, pos_);
      if (ws) {
        line_ += count_newlines(std::string_view(s_).substr(pos_, ws));
        pos_ += ws;
        continue;
      }
      if (std::size_t e = match_float(s_, pos_); e != std::string::npos) {
        std::string text;
        for (std::size_t i = pos_; i < e; ++i)
          if (s_[i] != '_') text.push_back(s_[i]);
        Token t;
        t.type = Tok::Float;
        t.value = text;
        t.float_value = std::strtod(text.c_str(), nullptr);
        t.line = line_;
        out_.push_back(std::move(t));
        pos_ = e;
        continue;
      }
      int base = 10;
      if (std::size_t e = match_integer(s_, pos_, base); e != std::string::npos) {
        std::string digits;
        for (std::size_t i = pos_ + (base == 10 ? 0 : 2); i < e; ++i)
          if (s_[i] != '_') digits.push_back(s_[i]);
        errno = 0;
        const unsigned long long v = std::strtoull(digits.c_str(), nullptr, base);
        if (errno == ERANGE || v > 9223372036854775807ULL) fail("integer literal too large", line_);
        Token t;
        t.type = Tok::Integer;
        t.value = s_.substr(pos_, e - pos_);
        t.int_value = static_cast<std::int64_t>(v);
        t.line = line_;
        out_.push_back(std::move(t));
        pos_ = e;
        continue;
      }
      if (std::size_t e = match_name(); e != std::string::npos) {
        std::string name = s_.substr(pos_, e - pos_);
        std::size_t k = 0;
        if (!uni::is_ident_start(uni::decode(name, k))) fail("Invalid character in identifier", line_);
        push(Tok::Name, std::move(name));
        pos_ = e;
        continue;
      }
      if (s_[pos_] == '\'' || s_[pos_] == '"') {
        const std::size_t e = match_string(s_, pos_);
        if (e != std::string::npos) {
          const std::string_view body(s_.data() + pos_ + 1, e - pos_ - 2);
          push(Tok::String, unescape_string(body, line_));
          line_ += count_newlines(body);
          pos_ = e;
          continue;
        }
      }
      if (op(balance)) continue;
      std::size_t k = pos_;
      const char32_t c = uni::decode(s_, k);
      std::string ch;
      uni::append(ch, c);
      fail("unexpected char '" + ch + "' at " + std::to_string(pos_), line_);
    }
  }

  std::size_t match_name() const {
    std::size_t i = pos_;
    while (i < s_.size()) {
      const auto b = static_cast<unsigned char>(s_[i]);
      if (b < 0x80) {
        if (b == '_' || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9')) {
          ++i;
          continue;
        }
        break;
      }
      std::size_t j = i;
      const char32_t c = uni::decode(s_, j);
      if (!uni::is_ident_continue(c)) break;
      i = j;
    }
    return i == pos_ ? std::string::npos : i;
  }

  bool op(std::vector<char>& balance) {
    for (const auto& o : kOps2)
      if (s_.compare(pos_, 2, o.text) == 0) {
        push(o.tok, o.text);
        pos_ += 2;
        return true;
      }
    for (const auto& o : kOps1)
      if (s_[pos_] == o.text[0]) {
        const char c = o.text[0];
        if (c == '{') balance.push_back('}');
        if (c == '(') balance.push_back(')');
        if (c == '[') balance.push_back(']');
        if (c == '}' || c == ')' || c == ']') {
          if (balance.empty()) fail(std::string("unexpected '") + c + "'", line_);
          const char expected = balance.back();
          balance.pop_back();
          if (expected != c) fail(std::string("unexpected '") + c + "', expected '" + expected + "'", line_);
        }
        push(o.tok, o.text);
        pos_ += 1;
        return true;
      }
    return false;
  }
};

std::string normalize_source(std::string_view src) {
  std::string out;
  out.reserve(src.size());
  for (std::size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
    } else {
      out.push_back(src[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();  // keep_trailing_newline=False
  return out;
}

}  // namespace

const char* describe(Tok t) {
  switch (t) {
    case Tok::Add: return "+";
    case Tok::Sub: return "-";
    case Tok::Div: return "/";
    case Tok::FloorDiv: return "//";
    case Tok::Mul: return "*";
    case Tok::Mod: return "%";
    case Tok::Pow: return "**";
    case Tok::Tilde: return "~";
    case Tok::LBracket: return "[";
    case Tok::RBracket: return "]";
    case Tok::LParen: return "(";
    case Tok::RParen: return ")";
    case Tok::LBrace: return "{";
    case Tok::RBrace: return "}";
    case Tok::Eq: return "==";
    case Tok::Ne: return "!=";
    case Tok::Gt: return ">";
    case Tok::Gteq: return ">=";
    case Tok::Lt: return "<";
    case Tok::Lteq: return "<=";
    case Tok::Assign: return "=";
    case Tok::Dot: return ".";
    case Tok::Colon: return ":";
    case Tok::Pipe: return "|";
    case Tok::Comma: return ",";
    case Tok::Semicolon: return ";";
    case Tok::Name: return "name";
    case Tok::String: return "string";
    case Tok::Integer: return "integer";
    case Tok::Float: return "float";
    case Tok::Data: return "template data / text";
    case Tok::VariableBegin: return "begin of print statement";
    case Tok::VariableEnd: return "end of print statement";
    case Tok::BlockBegin: return "begin of statement block";
    case Tok::BlockEnd: return "end of statement block";
    case Tok::Eof: return "end of template";
  }
  return "?";
}

std::string describe(const Token& t) { return t.type == Tok::Name ? t.value : describe(t.type); }

std::vector<Token> tokenize(std::string_view source) {
  if (!uni::valid_utf8(source)) throw TemplateError(TemplateError::Kind::Syntax, "template source is not valid UTF-8");
  return Lexer(normalize_source(source)).run();
}

}  // namespace tf::jinja
