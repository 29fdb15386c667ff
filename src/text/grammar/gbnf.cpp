#include "text/grammar/gbnf.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace tf::grammar {

namespace {

using Expr = GrammarBuilder::Expr;
using Ranges = std::vector<std::pair<char32_t, char32_t>>;

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view text) : s_(text) {}

  Grammar parse() {
    skip_space();
    while (more()) {
      const auto name = read_name();
      if (name.empty()) fail("a rule name was expected");
      skip_space();
      if (s_.substr(i_, 3) != "::=") fail("'::=' was expected after the rule name '" + name + "'");
      i_ += 3;
      const auto r = rule_id(name);
      if (b_.defined(r)) fail("the rule '" + name + "' is defined twice");
      for (auto& alt : alternatives(0)) b_.add(r, std::move(alt));
      skip_space();
    }
    const auto root = rules_.find("root");
    if (root == rules_.end()) throw GrammarError("the grammar has no rule named 'root'", "grammar");
    try {
      return b_.build(root->second);
    } catch (const GrammarError& e) {
      throw GrammarError(std::string("the grammar is not usable: ") + e.what(), "grammar");
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    const auto line = 1 + std::count(s_.begin(), s_.begin() + static_cast<std::ptrdiff_t>(std::min(i_, s_.size())), '\n');
    throw GrammarError("grammar line " + std::to_string(line) + ": " + what, "grammar");
  }
  bool more() const { return i_ < s_.size(); }

  // Spaces, newlines and comments.
  void skip_space() {
    while (more()) {
      if (s_[i_] == '#') {
        while (more() && s_[i_] != '\n') ++i_;
      } else if (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r') {
        ++i_;
      } else {
        break;
      }
    }
  }

  std::string read_name() {
    const auto start = i_;
    while (more() && name_char(s_[i_])) ++i_;
    return std::string(s_.substr(start, i_ - start));
  }

  // Whether what follows (after spaces) is `name ::=`: the start of the next rule.
  bool at_rule_start() {
    auto j = i_;
    while (j < s_.size() && name_char(s_[j])) ++j;
    if (j == i_) return false;
    while (j < s_.size() && (s_[j] == ' ' || s_[j] == '\t')) ++j;
    return s_.substr(j, 3) == "::=";
  }

  std::uint32_t rule_id(const std::string& name) {
    auto it = rules_.find(name);
    if (it == rules_.end()) it = rules_.emplace(name, b_.rule(name)).first;
    return it->second;
  }

  std::vector<Expr> alternatives(int depth) {
    if (depth > 100) fail("groups are nested too deeply");
    std::vector<Expr> alts;
    alts.push_back(sequence(depth));
    while (more() && s_[i_] == '|') {
      ++i_;
      alts.push_back(sequence(depth));
    }
    return alts;
  }

  Expr sequence(int depth) {
    Expr e;
    for (;;) {
      skip_space();
      if (!more() || s_[i_] == '|' || s_[i_] == ')') return e;
      if (depth == 0 && at_rule_start()) return e;
      Expr atom = primary(depth);
      postfix(atom);
      GrammarBuilder::append(e, atom);
    }
  }

  void postfix(Expr& atom) {
    for (;;) {
      if (!more()) return;
      const char c = s_[i_];
      if (c == '*' || c == '+' || c == '?') {
        ++i_;
        atom = b_.repeat(atom, c == '+' ? 1 : 0, c == '?' ? 1 : -1);
      } else if (c == '{') {
        ++i_;
        const auto lo = number();
        std::int64_t hi = lo;
        skip_inline();
        if (more() && s_[i_] == ',') {
          ++i_;
          skip_inline();
          hi = more() && s_[i_] != '}' ? number() : -1;
        }
        skip_inline();
        if (!more() || s_[i_] != '}') fail("'}' was expected to close a repetition");
        ++i_;
        if (hi >= 0 && hi < lo) fail("a repetition {m,n} with n below m");
        if (lo > 10000 || hi > 10000) fail("a repetition count over 10,000");
        atom = b_.repeat(atom, lo, hi);
      } else {
        return;
      }
    }
  }

  void skip_inline() {
    while (more() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  }

  std::int64_t number() {
    skip_inline();
    const auto start = i_;
    std::int64_t v = 0;
    while (more() && s_[i_] >= '0' && s_[i_] <= '9') {
      v = std::min<std::int64_t>(v * 10 + (s_[i_] - '0'), 1000000);
      ++i_;
    }
    if (i_ == start) fail("a number was expected in a repetition");
    return v;
  }

  char32_t utf8_char() {
    const auto c = static_cast<unsigned char>(s_[i_]);
    int n = c < 0x80 ? 1 : c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    char32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    ++i_;
    for (int k = 1; k < n; ++k) {
      if (!more()) fail("a truncated UTF-8 character");
      cp = (cp << 6) | (static_cast<unsigned char>(s_[i_]) & 0x3F);
      ++i_;
    }
    return cp;
  }

  char32_t hex(int digits) {
    char32_t v = 0;
    for (int k = 0; k < digits; ++k) {
      if (!more()) fail("a truncated escape");
      const char c = s_[i_++];
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) fail("a bad hexadecimal escape");
      v = v * 16 + static_cast<char32_t>(d);
    }
    return v;
  }

  // One character of a literal or class (escapes read).
  char32_t character() {
    if (!more()) fail("an unterminated literal or class");
    if (s_[i_] != '\\') return utf8_char();
    ++i_;
    if (!more()) fail("a trailing backslash");
    const char c = s_[i_++];
    switch (c) {
      case 'n': return '\n';
      case 'r': return '\r';
      case 't': return '\t';
      case '0': return 0;
      case 'x': return hex(2);
      case 'u': return hex(4);
      case 'U': return hex(8);
      default: return static_cast<unsigned char>(c);
    }
  }

  Expr primary(int depth) {
    const char c = s_[i_];
    if (c == '"') {
      ++i_;
      Expr e;
      while (more() && s_[i_] != '"') {
        const auto cp = character();
        GrammarBuilder::append(e, b_.code_points({{cp, cp}}));
      }
      if (!more()) fail("an unterminated literal");
      ++i_;
      return e;
    }
    if (c == '[') {
      ++i_;
      bool negate = false;
      if (more() && s_[i_] == '^') {
        negate = true;
        ++i_;
      }
      Ranges r;
      while (more() && s_[i_] != ']') {
        const auto lo = character();
        auto hi = lo;
        if (more() && s_[i_] == '-' && i_ + 1 < s_.size() && s_[i_ + 1] != ']') {
          ++i_;
          hi = character();
          if (hi < lo) fail("a class range out of order");
        }
        r.emplace_back(lo, hi);
      }
      if (!more()) fail("an unterminated class");
      ++i_;
      std::sort(r.begin(), r.end());
      if (negate) {
        Ranges out;
        char32_t next = 0;
        for (const auto& [lo, hi] : r) {
          if (lo > next) out.emplace_back(next, lo - 1);
          next = std::max<char32_t>(next, hi + 1);
        }
        if (next <= 0x10FFFF) out.emplace_back(next, 0x10FFFF);
        r = std::move(out);
      }
      return b_.code_points(r);
    }
    if (c == '.') {
      ++i_;
      return b_.code_points({{0, 0x10FFFF}});
    }
    if (c == '(') {
      ++i_;
      auto alts = alternatives(depth + 1);
      skip_space();
      if (!more() || s_[i_] != ')') fail("')' was expected");
      ++i_;
      return b_.wrap(b_.alt(std::move(alts)));
    }
    if (name_char(c)) return b_.ref(rule_id(read_name()));
    fail(std::string("an unexpected character '") + c + "'");
  }

  std::string_view s_;
  std::size_t i_ = 0;
  GrammarBuilder b_;
  std::map<std::string, std::uint32_t> rules_;
};

}  // namespace

Grammar gbnf_grammar(std::string_view text) { return GbnfParser(text).parse(); }

}  // namespace tf::grammar
