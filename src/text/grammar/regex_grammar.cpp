#include "text/grammar/regex_grammar.h"

#include <algorithm>
#include <string>
#include <vector>

namespace tf::grammar {

namespace {

using Ranges = std::vector<std::pair<char32_t, char32_t>>;
constexpr char32_t kMax = 0x10FFFF;

Ranges normalize(Ranges r) {
  std::sort(r.begin(), r.end());
  Ranges out;
  for (const auto& [lo, hi] : r) {
    if (!out.empty() && lo <= out.back().second + 1)
      out.back().second = std::max(out.back().second, hi);
    else
      out.emplace_back(lo, hi);
  }
  return out;
}

Ranges complement(const Ranges& r) {
  Ranges out;
  char32_t next = 0;
  for (const auto& [lo, hi] : normalize(r)) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMax) out.emplace_back(next, kMax);
  return out;
}

const Ranges& digits() {
  static const Ranges r{{'0', '9'}};
  return r;
}
const Ranges& word() {
  static const Ranges r{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
  return r;
}
const Ranges& spaces() {  // ECMAScript's WhiteSpace and LineTerminator
  static const Ranges r = normalize({{0x09, 0x0D}, {0x20, 0x20}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A},
                                     {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000},
                                     {0xFEFF, 0xFEFF}});
  return r;
}

struct Re {
  enum Kind { Chars, Cat, Alt, Repeat } kind = Cat;
  Ranges ranges;
  std::vector<Re> kids;
  std::int64_t min = 0, max = 0;
};

bool nullable(const Re& r) {
  switch (r.kind) {
    case Re::Chars: return false;
    case Re::Cat: return std::all_of(r.kids.begin(), r.kids.end(), nullable);
    case Re::Alt: return std::any_of(r.kids.begin(), r.kids.end(), nullable);
    case Re::Repeat: return r.min == 0 || nullable(r.kids.front());
  }
  return false;
}

std::vector<char32_t> code_points(std::string_view s) {
  std::vector<char32_t> out;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    int n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (c >= 0x80 && c < 0xC0) n = 1;  // a stray continuation byte: taken as it is
    char32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < n && i + static_cast<std::size_t>(k) < s.size(); ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]) & 0x3F);
    out.push_back(cp);
    i += static_cast<std::size_t>(n);
  }
  return out;
}

class Parser {
 public:
  explicit Parser(std::vector<char32_t> s) : s_(std::move(s)) {}

  Re parse() {
    Re r = alternation();
    if (i_ < s_.size()) fail("an unmatched ')'");
    return r;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw GrammarError("the regular expression has " + what + " (at character " + std::to_string(i_) + ")",
                       "pattern");
  }
  bool more() const { return i_ < s_.size(); }
  char32_t peek() const { return s_[i_]; }

  Re alternation() {
    Re alt;
    alt.kind = Re::Alt;
    alt.kids.push_back(sequence());
    while (more() && peek() == '|') {
      ++i_;
      alt.kids.push_back(sequence());
    }
    return alt.kids.size() == 1 ? std::move(alt.kids.front()) : alt;
  }

  Re sequence() {
    Re cat;
    cat.kind = Re::Cat;
    while (more() && peek() != '|' && peek() != ')') cat.kids.push_back(quantified());
    return cat.kids.size() == 1 ? std::move(cat.kids.front()) : cat;
  }

  bool read_int(std::int64_t& v) {
    const auto start = i_;
    v = 0;
    while (more() && peek() >= '0' && peek() <= '9') {
      v = std::min<std::int64_t>(v * 10 + (peek() - '0'), 1000000);
      ++i_;
    }
    return i_ > start;
  }

  Re quantified() {
    Re atom_re = atom();
    for (int stacked = 0;; ++stacked) {
      if (stacked > 20) fail("more than 20 quantifiers in a row");
      if (!more()) return atom_re;
      std::int64_t lo = 0, hi = -1;
      const char32_t c = peek();
      if (c == '*') {
        ++i_;
      } else if (c == '+') {
        lo = 1;
        ++i_;
      } else if (c == '?') {
        hi = 1;
        ++i_;
      } else if (c == '{') {
        const auto save = i_;
        ++i_;
        if (!read_int(lo)) {
          i_ = save;
          return atom_re;  // a literal '{', taken by the next atom
        }
        hi = lo;
        if (more() && peek() == ',') {
          ++i_;
          if (!read_int(hi)) hi = -1;
        }
        if (!more() || peek() != '}') {
          i_ = save;
          return atom_re;
        }
        ++i_;
        if (hi >= 0 && hi < lo) fail("a quantifier {n,m} with m below n");
      } else {
        return atom_re;
      }
      if (more() && (peek() == '?' || peek() == '+')) ++i_;  // lazy or possessive: the same texts match
      Re rep;
      rep.kind = Re::Repeat;
      rep.min = lo;
      rep.max = hi;
      rep.kids.push_back(std::move(atom_re));
      atom_re = std::move(rep);
    }
  }

  static Re chars(Ranges r) {
    Re c;
    c.kind = Re::Chars;
    c.ranges = normalize(std::move(r));
    return c;
  }

  char32_t hex(int digits) {
    char32_t v = 0;
    for (int k = 0; k < digits; ++k) {
      if (!more()) fail("a short hexadecimal escape");
      const char32_t c = peek();
      int d = c >= '0' && c <= '9' ? static_cast<int>(c - '0')
              : c >= 'a' && c <= 'f' ? static_cast<int>(c - 'a' + 10)
              : c >= 'A' && c <= 'F' ? static_cast<int>(c - 'A' + 10)
                                     : -1;
      if (d < 0) fail("a bad hexadecimal escape");
      v = v * 16 + static_cast<char32_t>(d);
      ++i_;
    }
    return v;
  }

  // After a backslash: the class it stands for (in_class: inside [...], where \b is a backspace).
  Ranges escape(bool in_class) {
    if (!more()) fail("a trailing backslash");
    const char32_t c = peek();
    ++i_;
    switch (c) {
      case 'd': return digits();
      case 'D': return complement(digits());
      case 'w': return word();
      case 'W': return complement(word());
      case 's': return spaces();
      case 'S': return complement(spaces());
      case 'n': return {{'\n', '\n'}};
      case 'r': return {{'\r', '\r'}};
      case 't': return {{'\t', '\t'}};
      case 'f': return {{'\f', '\f'}};
      case 'v': return {{'\v', '\v'}};
      case '0': return {{0, 0}};
      case 'x': {
        const char32_t v = hex(2);
        return {{v, v}};
      }
      case 'u': {
        char32_t v;
        if (more() && peek() == '{') {
          ++i_;
          v = 0;
          int n = 0;
          while (more() && peek() != '}') {
            v = v * 16 + hex(1);
            if (++n > 6) fail("a bad \\u{...} escape");
          }
          if (!more()) fail("an unclosed \\u{...} escape");
          ++i_;
        } else {
          v = hex(4);
        }
        if (v > kMax) fail("an escape beyond U+10FFFF");
        return {{v, v}};
      }
      case 'b':
        if (in_class) return {{8, 8}};
        fail("a word boundary (\\b), which is not supported");
      default:
        if ((c >= '1' && c <= '9') || c == 'k') fail("a backreference, which is not supported");
        if (c == 'B' || c == 'p' || c == 'P' || c == 'c') fail("an escape (\\" + std::string(1, static_cast<char>(c)) + ") that is not supported");
        return {{c, c}};
    }
  }

  Re char_class() {
    bool negate = false;
    if (more() && peek() == '^') {
      negate = true;
      ++i_;
    }
    Ranges r;
    bool first = true;
    // One member of the class: an escape (a character or a class like \d) or a plain character.
    const auto class_atom = [&]() -> Ranges {
      if (peek() == '\\') {
        ++i_;
        return escape(true);
      }
      const char32_t c = peek();
      ++i_;
      return {{c, c}};
    };
    while (more() && (peek() != ']' || first)) {
      first = false;
      const Ranges lo_set = class_atom();
      char32_t lo;
      if (lo_set.size() == 1 && lo_set[0].first == lo_set[0].second && more() && peek() == '-' &&
          i_ + 1 < s_.size() && s_[i_ + 1] != ']') {
        lo = lo_set[0].first;
        ++i_;
        const Ranges hi_set = class_atom();
        if (hi_set.size() != 1 || hi_set[0].first != hi_set[0].second) fail("a class range ending in a class");
        if (hi_set[0].first < lo) fail("a class range out of order");
        r.emplace_back(lo, hi_set[0].first);
        continue;
      }
      r.insert(r.end(), lo_set.begin(), lo_set.end());
    }
    if (!more()) fail("an unclosed '['");
    ++i_;  // ']'
    return chars(negate ? complement(r) : r);
  }

  Re atom() {
    const char32_t c = peek();
    ++i_;
    switch (c) {
      case '(': {
        if (++depth_ > 200) fail("groups nested more than 200 deep");
        if (more() && peek() == '?') {
          ++i_;
          if (more() && peek() == ':') {
            ++i_;
          } else if (more() && peek() == '<' && i_ + 1 < s_.size() && s_[i_ + 1] != '=' && s_[i_ + 1] != '!') {
            while (more() && peek() != '>') ++i_;
            if (!more()) fail("an unclosed group name");
            ++i_;
          } else {
            fail("a lookaround group, which is not supported");
          }
        }
        Re inner = alternation();
        if (!more() || peek() != ')') fail("an unclosed '('");
        ++i_;
        --depth_;
        return inner;
      }
      case '[': return char_class();
      case '.': return chars(complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}));
      case '\\': return chars(escape(false));
      case '^':
      case '$': fail("an anchor ('^' or '$') that is not at the start or end, which is not supported");
      case '*':
      case '+':
      case '?': fail("a quantifier with nothing to repeat");
      case ')': fail("an unmatched ')'");
      default: return chars({{c, c}});
    }
  }

  std::vector<char32_t> s_;
  std::size_t i_ = 0;
  int depth_ = 0;
};

// The characters `r` as text (Raw) or as JSON string content.
GrammarBuilder::Expr lower_chars(GrammarBuilder& b, const Ranges& r, RegexMode mode) {
  if (mode == RegexMode::Raw) return b.code_points(r);
  Ranges plain;
  std::vector<GrammarBuilder::Expr> alts;
  for (const auto& [lo, hi] : r) {
    char32_t c = lo;
    for (; c <= hi && c < 0x20; ++c) {
      static const char* shorts[] = {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                     "\\b",   "\\t",   "\\n",   nullptr, "\\f",   "\\r"};
      if (c < 14 && shorts[c]) {
        alts.push_back(b.bytes(shorts[c]));
      } else {
        static const char* hexd = "0123456789abcdef";
        alts.push_back(b.bytes(std::string("\\u00") + hexd[c >> 4] + hexd[c & 15]));
      }
    }
    if (c > hi) continue;
    // c..hi, all >= 0x20: take the quote and the backslash out.
    char32_t from = c;
    for (const char32_t special : {char32_t{'"'}, char32_t{'\\'}}) {
      if (special >= from && special <= hi) {
        if (special > from) plain.emplace_back(from, special - 1);
        alts.push_back(b.bytes(special == '"' ? "\\\"" : "\\\\"));
        from = special + 1;
      }
    }
    if (from <= hi) plain.emplace_back(from, hi);
  }
  if (!plain.empty()) alts.insert(alts.begin(), b.code_points(plain));
  if (alts.empty()) return b.set(ByteSet{});
  return b.alt(std::move(alts));
}

GrammarBuilder::Expr lower(GrammarBuilder& b, const Re& r, RegexMode mode, int depth = 0) {
  if (depth > 200) throw GrammarError("the regular expression is nested too deeply", "pattern");
  switch (r.kind) {
    case Re::Chars: return lower_chars(b, r.ranges, mode);
    case Re::Cat: {
      GrammarBuilder::Expr e;
      for (const auto& k : r.kids) GrammarBuilder::append(e, lower(b, k, mode, depth + 1));
      return e;
    }
    case Re::Alt: {
      std::vector<GrammarBuilder::Expr> alts;
      for (const auto& k : r.kids) alts.push_back(lower(b, k, mode, depth + 1));
      return b.alt(std::move(alts));
    }
    case Re::Repeat: {
      if (r.max < 0 && nullable(r.kids.front()))
        throw GrammarError("the regular expression repeats without bound a part that can match nothing",
                           "pattern");
      if (r.min > 10000 || r.max > 10000) throw GrammarError("a regular-expression repetition over 10,000", "pattern");
      // Wrap the repeated part in a rule so that its copies share one rule.
      const auto inner = lower(b, r.kids.front(), mode, depth + 1);
      return b.repeat(b.wrap(inner), r.min, r.max);
    }
  }
  return {};
}

struct Anchors {
  std::string_view body;
  bool start = false, end = false;
};

Anchors strip_anchors(std::string_view s) {
  Anchors a;
  if (!s.empty() && s.front() == '^') {
    a.start = true;
    s.remove_prefix(1);
  }
  if (!s.empty() && s.back() == '$') {
    std::size_t slashes = 0;
    for (std::size_t k = s.size() - 1; k > 0 && s[k - 1] == '\\'; --k) ++slashes;
    if (slashes % 2 == 0) {
      a.end = true;
      s.remove_suffix(1);
    }
  }
  a.body = s;
  return a;
}

}  // namespace

GrammarBuilder::Expr regex_expr(GrammarBuilder& b, std::string_view regex, RegexMode mode) {
  const auto a = strip_anchors(regex);
  return lower(b, Parser(code_points(a.body)).parse(), mode);
}

GrammarBuilder::Expr pattern_expr(GrammarBuilder& b, std::string_view pattern) {
  const auto a = strip_anchors(pattern);
  const auto body = lower(b, Parser(code_points(a.body)).parse(), RegexMode::JsonString);
  // Any JSON string content around an unanchored match.
  const auto any = b.star(lower_chars(b, Ranges{{0, kMax}}, RegexMode::JsonString));
  GrammarBuilder::Expr e;
  if (!a.start) GrammarBuilder::append(e, any);
  GrammarBuilder::append(e, body);
  if (!a.end) GrammarBuilder::append(e, any);
  return e;
}

Grammar regex_grammar(std::string_view regex) {
  GrammarBuilder b;
  const auto root = b.rule("root");
  b.add(root, regex_expr(b, regex, RegexMode::Raw));
  return b.build(root);
}

}  // namespace tf::grammar
