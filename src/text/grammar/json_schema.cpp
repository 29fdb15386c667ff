#include "text/grammar/json_schema.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "text/grammar/regex_grammar.h"

namespace tf::grammar {

namespace {

using json = nlohmann::ordered_json;
using Expr = GrammarBuilder::Expr;

constexpr int kMaxDepth = 64;
constexpr std::int64_t kMaxCount = 10000;  // minLength, maxLength, minItems, maxItems
constexpr int kDigits = 16;                // integer and fraction digits at most
const std::int64_t kMaxInt = 9999999999999999;  // 16 digits

const std::set<std::string, std::less<>>& annotations() {
  static const std::set<std::string, std::less<>> s{"title",    "description", "default",   "examples", "$comment",
                                                    "$schema",  "$id",         "deprecated", "readOnly", "writeOnly",
                                                    "$anchor",  "$defs",       "definitions"};
  return s;
}

const std::set<std::string, std::less<>>& supported() {
  static const std::set<std::string, std::less<>> s{
      "type",        "enum",      "const",     "anyOf",     "oneOf",       "allOf",          "$ref",
      "properties",  "required",  "additionalProperties",   "items",       "prefixItems",    "additionalItems",
      "minItems",    "maxItems",  "uniqueItems", "minLength", "maxLength",   "pattern",        "format",
      "minimum",     "maximum",   "exclusiveMinimum",       "exclusiveMaximum"};
  return s;
}

// Keywords that do not change what a composition ($ref, anyOf, ...) allows.
bool inert(const std::string& k) { return annotations().count(k) > 0; }

std::string regex_for_format(const std::string& f) {
  static const std::string date =
      "[1-9][0-9]{3}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-"
      "(?:0[1-9]|1[0-9]|2[0-8]))";
  static const std::string time =
      "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,6})?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])";
  if (f == "date") return date;
  if (f == "time") return time;
  if (f == "date-time") return date + "T" + time;
  if (f == "uuid") return "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
  if (f == "email") return "[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\\.[A-Za-z0-9-]{1,63}){1,4}";
  return {};
}

bool fits_type(const json& v, const std::string& t) {
  if (t == "string") return v.is_string();
  if (t == "integer") return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  if (t == "number") return v.is_number();
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  return false;
}

}  // namespace

class SchemaCompiler {
 public:
  SchemaCompiler(GrammarBuilder& b, const json& root) : root_(root), b_(b) {
    // ws ::= "" | " " | "\n" [ \t]{0,24}
    ws_ = b_.rule("ws");
    b_.add(ws_, {});
    b_.add(ws_, b_.bytes(" "));
    ByteSet indent;
    indent.set(' ');
    indent.set('\t');
    b_.add(ws_, GrammarBuilder::cat({b_.bytes("\n"), b_.repeat(b_.set(indent), 0, 24)}));
    // A string's character: anything but a quote, a backslash or a control character, or an escape.
    char_ = b_.rule("char");
    b_.add(char_, b_.code_points({{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x10FFFF}}));
    b_.add(char_, GrammarBuilder::cat({b_.bytes("\\"), b_.set(bytes_of("\"\\/bfnrt"))}));
    const auto hexd = b_.set(bytes_of("0123456789abcdefABCDEF"));
    b_.add(char_, GrammarBuilder::cat({b_.bytes("\\u"), hexd, hexd, hexd, hexd}));
  }

  Expr whitespace() const { return ref(ws_); }
  Expr document() { return value(root_, "#", 0); }
  Expr value_at(const json& s, const std::string& path) { return value(s, path, 1); }
  Expr object() { return any_object(); }

  Grammar compile_schema() {
    const auto r = b_.rule("root");
    b_.add(r, GrammarBuilder::cat({ref(ws_), value(root_, "#", 0)}));
    return b_.build(r);
  }

  Grammar compile_object() {
    const auto r = b_.rule("root");
    b_.add(r, GrammarBuilder::cat({ref(ws_), any_object()}));
    return b_.build(r);
  }

 private:
  friend class JsonSchemaRules;
  static ByteSet bytes_of(std::string_view s) {
    ByteSet set;
    for (const char c : s) set.set(static_cast<std::uint8_t>(c));
    return set;
  }
  Expr ref(std::uint32_t r) const { return b_.ref(r); }
  Expr lit(std::string_view s) { return b_.bytes(s); }
  Expr sep() { return GrammarBuilder::cat({ref(ws_), lit(","), ref(ws_)}); }
  Expr colon() { return GrammarBuilder::cat({ref(ws_), lit(":"), ref(ws_)}); }

  [[noreturn]] static void fail(const std::string& path, const std::string& keyword, const std::string& what) {
    if (keyword.empty()) throw GrammarError("the schema at '" + path + "' " + what);
    throw GrammarError("'" + keyword + "' at '" + path + "' " + what, keyword);
  }

  static std::string child(const std::string& path, const std::string& key) {
    std::string k;
    for (const char c : key) k += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
    return path + "/" + k;
  }

  // ---- any JSON value (json_object, empty schemas, additionalProperties: true) ----
  Expr string_literal() {
    if (!string_) {
      string_ = b_.rule("string");
      b_.add(*string_, GrammarBuilder::cat({lit("\""), b_.star(ref(char_)), lit("\"")}));
    }
    return ref(*string_);
  }
  Expr number_any() {
    if (!number_) {
      number_ = b_.rule("number");
      b_.add(*number_, GrammarBuilder::cat({b_.opt(lit("-")), integer_digits(), fraction(), exponent()}));
    }
    return ref(*number_);
  }
  Expr integer_digits() {
    return b_.alt({lit("0"), GrammarBuilder::cat({b_.byte_range('1', '9'), b_.repeat(digit(), 0, kDigits - 1)})});
  }
  Expr digit() { return b_.byte_range('0', '9'); }
  Expr fraction() { return b_.opt(GrammarBuilder::cat({lit("."), b_.repeat(digit(), 1, kDigits)})); }
  Expr exponent() {
    return b_.opt(GrammarBuilder::cat({b_.set(bytes_of("eE")), b_.opt(b_.set(bytes_of("+-"))), b_.repeat(digit(), 1, 3)}));
  }
  Expr any_value() {
    if (!value_) {
      value_ = b_.rule("value");
      const auto obj = any_object();
      const auto arr = any_array();
      for (const auto& e : {obj, arr, string_literal(), number_any(), lit("true"), lit("false"), lit("null")})
        b_.add(*value_, e);
    }
    return ref(*value_);
  }
  Expr any_object() {
    if (!object_) {
      object_ = b_.rule("object");
      const auto kv = GrammarBuilder::cat({string_literal(), colon(), any_value()});
      b_.add(*object_, GrammarBuilder::cat({lit("{"), ref(ws_), b_.opt(GrammarBuilder::cat({kv, b_.star(GrammarBuilder::cat({sep(), kv}))})),
                                            ref(ws_), lit("}")}));
    }
    return ref(*object_);
  }
  Expr any_array() {
    if (!array_) {
      array_ = b_.rule("array");
      const auto v = any_value();
      b_.add(*array_, GrammarBuilder::cat({lit("["), ref(ws_), b_.opt(GrammarBuilder::cat({v, b_.star(GrammarBuilder::cat({sep(), v}))})),
                                           ref(ws_), lit("]")}));
    }
    return ref(*array_);
  }

  Expr literal(const json& v, const std::string& path, const std::string& keyword) {
    try {
      return lit(v.dump());
    } catch (const nlohmann::json::exception&) {
      fail(path, keyword, "holds a string that is not valid UTF-8");
    }
  }

  // ---- schemas ----
  Expr value(const json& s, const std::string& path, int depth) {
    if (depth > kMaxDepth) fail(path, "", "is nested more than 64 levels deep");
    if (s.is_boolean()) {
      if (s.get<bool>()) return any_value();
      fail(path, "false", "can never be satisfied");
    }
    if (!s.is_object()) fail(path, "", "is not an object or a boolean");
    for (const auto& [k, v] : s.items())
      if (!inert(k) && !supported().count(k)) fail(path, k, "is not supported by this server's structured output");
    const auto count_active = [&] {
      int n = 0;
      for (const auto& [k, v] : s.items()) n += inert(k) ? 0 : 1;
      return n;
    };

    if (s.contains("$ref")) {
      if (count_active() > 1) fail(path, "$ref", "beside other keywords is not supported");
      return reference(s["$ref"], path, depth);
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key)) continue;
      if (count_active() > 1) fail(path, key, "beside other keywords is not supported");
      const auto& list = s[key];
      if (!list.is_array() || list.empty()) fail(path, key, "must be a non-empty array");
      std::vector<Expr> alts;
      for (std::size_t i = 0; i < list.size(); ++i)
        alts.push_back(value(list[i], child(child(path, key), std::to_string(i)), depth + 1));
      return b_.alt(std::move(alts));
    }
    if (s.contains("allOf")) {
      const auto& list = s["allOf"];
      if (!list.is_array() || list.size() != 1 || count_active() > 1)
        fail(path, "allOf", "is supported only with one schema and no other keywords");
      return value(list[0], child(path, "allOf") + "/0", depth + 1);
    }

    std::vector<std::string> types;
    if (s.contains("type")) {
      const auto& t = s["type"];
      if (t.is_string()) {
        types.push_back(t.get<std::string>());
      } else if (t.is_array() && !t.empty()) {
        for (const auto& x : t) {
          if (!x.is_string()) fail(path, "type", "must be a string or an array of strings");
          types.push_back(x.get<std::string>());
        }
      } else {
        fail(path, "type", "must be a string or a non-empty array of strings");
      }
      for (const auto& x : types)
        if (x != "string" && x != "integer" && x != "number" && x != "boolean" && x != "null" && x != "object" &&
            x != "array")
          fail(path, "type", "names an unknown type '" + x + "'");
    }
    const auto fits = [&](const json& v) {
      if (types.empty()) return true;
      for (const auto& t : types)
        if (fits_type(v, t)) return true;
      return false;
    };
    if (s.contains("const")) {
      if (!fits(s["const"])) fail(path, "const", "does not have the schema's type");
      return literal(s["const"], path, "const");
    }
    if (s.contains("enum")) {
      const auto& list = s["enum"];
      if (!list.is_array() || list.empty()) fail(path, "enum", "must be a non-empty array");
      std::vector<Expr> alts;
      for (const auto& v : list)
        if (fits(v)) alts.push_back(literal(v, path, "enum"));
      if (alts.empty()) fail(path, "enum", "has no value of the schema's type");
      return b_.alt(std::move(alts));
    }
    if (types.empty()) {  // the type the keywords given are about; none: any value
      for (const char* k : {"properties", "required", "additionalProperties"})
        if (s.contains(k)) types.push_back("object");
      for (const char* k : {"items", "prefixItems", "additionalItems", "minItems", "maxItems"})
        if (s.contains(k) && types.empty()) types.push_back("array");
      for (const char* k : {"minLength", "maxLength", "pattern", "format"})
        if (s.contains(k) && types.empty()) types.push_back("string");
      for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
        if (s.contains(k) && types.empty()) types.push_back("number");
      if (types.empty()) return any_value();
    }
    std::vector<Expr> alts;
    for (const auto& t : types) {
      if (t == "string") alts.push_back(string_schema(s, path));
      else if (t == "integer") alts.push_back(integer_schema(s, path));
      else if (t == "number") alts.push_back(number_schema(s, path));
      else if (t == "boolean") alts.push_back(b_.alt({lit("true"), lit("false")}));
      else if (t == "null") alts.push_back(lit("null"));
      else if (t == "object") alts.push_back(object_schema(s, path, depth));
      else alts.push_back(array_schema(s, path, depth));
    }
    return b_.alt(std::move(alts));
  }

  Expr reference(const json& r, const std::string& path, int depth) {
    if (!r.is_string()) fail(path, "$ref", "must be a string");
    const auto target = r.get<std::string>();
    if (target.empty() || target[0] != '#')
      fail(path, "$ref", "'" + target + "' is not supported: only references within the schema ('#...') are");
    if (auto it = refs_.find(target); it != refs_.end()) return ref(it->second);
    const json* node = nullptr;
    try {
      const auto pointer = target.substr(1);
      node = &root_.at(nlohmann::ordered_json::json_pointer(pointer));
    } catch (const nlohmann::json::exception&) {
      fail(path, "$ref", "'" + target + "' does not name a part of the schema");
    }
    const auto rule = b_.rule("ref " + target);
    refs_.emplace(target, rule);
    b_.add(rule, value(*node, target, depth + 1));
    return ref(rule);
  }

  static std::optional<std::int64_t> count(const json& s, const std::string& path, const char* key) {
    if (!s.contains(key)) return std::nullopt;
    const auto& v = s[key];
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0) fail(path, key, "must be a non-negative integer");
    if (v.get<std::int64_t>() > kMaxCount) fail(path, key, "over 10,000 is not supported");
    return v.get<std::int64_t>();
  }

  Expr string_schema(const json& s, const std::string& path) {
    const auto min = count(s, path, "minLength").value_or(0);
    const auto max = count(s, path, "maxLength");
    if (max && *max < min) fail(path, "maxLength", "is below minLength");
    const bool lengths = min > 0 || max.has_value();
    if (s.contains("format")) {
      if (!s["format"].is_string()) fail(path, "format", "must be a string");
      const auto f = s["format"].get<std::string>();
      const auto re = regex_for_format(f);
      if (re.empty()) fail(path, "format", "'" + f + "' is not supported (date, time, date-time, uuid and email are)");
      if (lengths || s.contains("pattern")) fail(path, "format", "beside minLength, maxLength or pattern is not supported");
      return GrammarBuilder::cat({lit("\""), regex_expr(b_, re, RegexMode::JsonString), lit("\"")});
    }
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) fail(path, "pattern", "must be a string");
      if (lengths) fail(path, "pattern", "beside minLength or maxLength is not supported");
      try {
        return GrammarBuilder::cat({lit("\""), pattern_expr(b_, s["pattern"].get<std::string>()), lit("\"")});
      } catch (const GrammarError& e) {
        fail(path, "pattern", std::string("cannot be used: ") + e.what());
      }
    }
    if (!lengths) return string_literal();
    return GrammarBuilder::cat({lit("\""), b_.repeat(ref(char_), min, max.value_or(-1)), lit("\"")});
  }

  // Reads a numeric bound; nullopt when absent.
  static std::optional<double> bound(const json& s, const std::string& path, const char* key) {
    if (!s.contains(key)) return std::nullopt;
    const auto& v = s[key];
    if (!v.is_number()) fail(path, key, "must be a number");
    const double d = v.get<double>();
    if (!std::isfinite(d)) fail(path, key, "must be finite");
    return d;
  }

  // Inclusive integer bounds from minimum, maximum and the exclusive forms (a number, or draft 4's boolean).
  static std::pair<std::optional<double>, std::optional<double>> integer_bounds(const json& s, const std::string& path) {
    std::optional<double> lo, hi;
    const auto take_lo = [&](double v) { lo = lo ? std::max(*lo, v) : v; };
    const auto take_hi = [&](double v) { hi = hi ? std::min(*hi, v) : v; };
    const bool draft4_lo = s.contains("exclusiveMinimum") && s["exclusiveMinimum"].is_boolean();
    const bool draft4_hi = s.contains("exclusiveMaximum") && s["exclusiveMaximum"].is_boolean();
    if (auto v = bound(s, path, "minimum"))
      take_lo(draft4_lo && s["exclusiveMinimum"].get<bool>() ? std::floor(*v) + 1 : std::ceil(*v));
    if (auto v = bound(s, path, "maximum"))
      take_hi(draft4_hi && s["exclusiveMaximum"].get<bool>() ? std::ceil(*v) - 1 : std::floor(*v));
    if (!draft4_lo)
      if (auto v = bound(s, path, "exclusiveMinimum")) take_lo(std::floor(*v) + 1);
    if (!draft4_hi)
      if (auto v = bound(s, path, "exclusiveMaximum")) take_hi(std::ceil(*v) - 1);
    return {lo, hi};
  }

  // The decimal numbers x..y of the same length, written without leading zeros beyond x's own.
  Expr same_length(const std::string& x, const std::string& y) {
    if (x.empty()) return {};
    if (x == y) return lit(x);
    if (x.size() == 1) return b_.byte_range(static_cast<std::uint8_t>(x[0]), static_cast<std::uint8_t>(y[0]));
    const std::string xr = x.substr(1), yr = y.substr(1);
    if (x[0] == y[0]) return GrammarBuilder::cat({lit(x.substr(0, 1)), same_length(xr, yr)});
    const auto n = static_cast<std::int64_t>(xr.size());
    if (xr == std::string(xr.size(), '0') && yr == std::string(yr.size(), '9'))
      return GrammarBuilder::cat({b_.byte_range(static_cast<std::uint8_t>(x[0]), static_cast<std::uint8_t>(y[0])),
                                  b_.repeat(digit(), n, n)});
    std::vector<Expr> alts;
    alts.push_back(GrammarBuilder::cat({lit(x.substr(0, 1)), same_length(xr, std::string(xr.size(), '9'))}));
    if (x[0] + 1 <= y[0] - 1)
      alts.push_back(GrammarBuilder::cat({b_.byte_range(static_cast<std::uint8_t>(x[0] + 1), static_cast<std::uint8_t>(y[0] - 1)),
                                          b_.repeat(digit(), n, n)}));
    alts.push_back(GrammarBuilder::cat({lit(y.substr(0, 1)), same_length(std::string(yr.size(), '0'), yr)}));
    return b_.alt(std::move(alts));
  }

  // Non-negative integers a..b (b <= kMaxInt), in decimal without leading zeros.
  Expr digits_range(std::int64_t a, std::int64_t b) {
    std::vector<Expr> alts;
    std::int64_t low = 0, high = 9;
    for (int d = 1; d <= kDigits; ++d) {
      const auto x = std::max(a, low), y = std::min(b, high);
      if (x <= y) alts.push_back(same_length(std::to_string(x), std::to_string(y)));
      low = high + 1;
      high = high * 10 + 9;
    }
    return b_.alt(std::move(alts));
  }

  Expr integer_range(std::optional<double> lo, std::optional<double> hi, const std::string& path) {
    const std::int64_t a = lo && *lo > -static_cast<double>(kMaxInt) ? static_cast<std::int64_t>(*lo) : -kMaxInt;
    const std::int64_t b = hi && *hi < static_cast<double>(kMaxInt) ? static_cast<std::int64_t>(*hi) : kMaxInt;
    if (a > b) fail(path, "minimum", "is above the maximum: no integer satisfies the schema");
    if (a > kMaxInt || b < -kMaxInt) fail(path, "minimum", "is beyond 16 digits, which is not supported");
    std::vector<Expr> alts;
    if (b >= 0) alts.push_back(digits_range(std::max<std::int64_t>(a, 0), b));
    if (a < 0) alts.push_back(GrammarBuilder::cat({lit("-"), digits_range(std::max<std::int64_t>(1, -b), -a)}));
    return b_.alt(std::move(alts));
  }

  Expr integer_schema(const json& s, const std::string& path) {
    const auto [lo, hi] = integer_bounds(s, path);
    if (!lo && !hi) {
      if (!integer_) {
        integer_ = b_.rule("integer");
        b_.add(*integer_, GrammarBuilder::cat({b_.opt(lit("-")), integer_digits()}));
      }
      return ref(*integer_);
    }
    return integer_range(lo, hi, path);
  }

  Expr number_schema(const json& s, const std::string& path) {
    for (const char* k : {"exclusiveMinimum", "exclusiveMaximum"})
      if (s.contains(k)) fail(path, k, "on a number is not supported (on an integer it is)");
    const auto lo = bound(s, path, "minimum"), hi = bound(s, path, "maximum");
    if (!lo && !hi) return number_any();
    for (const auto& [v, k] : {std::pair{lo, "minimum"}, std::pair{hi, "maximum"}})
      if (v && (std::floor(*v) != *v || std::fabs(*v) > static_cast<double>(kMaxInt)))
        fail(path, k, "on a number is supported only as a whole number of at most 16 digits");
    if (lo && *lo < 0) fail(path, "minimum", "on a number is supported only when it is 0 or more");
    if (lo && hi && *lo > *hi) fail(path, "minimum", "is above the maximum: no number satisfies the schema");
    const auto a = static_cast<std::int64_t>(lo.value_or(0));
    std::vector<Expr> alts;
    if (!lo) {  // only a maximum (>= 0 here, else refused below): every negative number, then 0..max
      if (*hi < 0) fail(path, "maximum", "on a number is supported only when it is 0 or more");
      alts.push_back(GrammarBuilder::cat({lit("-"), integer_digits(), fraction()}));
    }
    if (!hi) {
      alts.push_back(GrammarBuilder::cat({digits_range(a, kMaxInt), fraction()}));
    } else {
      const auto b = static_cast<std::int64_t>(*hi);
      if (b > a) alts.push_back(GrammarBuilder::cat({digits_range(a, b - 1), fraction()}));
      alts.push_back(GrammarBuilder::cat({lit(std::to_string(b)), b_.opt(GrammarBuilder::cat({lit("."), b_.repeat(lit("0"), 1, kDigits)}))}));
    }
    return b_.alt(std::move(alts));
  }

  // A JSON string key, written without escapes, that is none of `excluded`.
  Expr key_except(const std::vector<std::string>& excluded) {
    ByteSet plain;
    for (int c = 0x20; c < 0x7F; ++c)
      if (c != '"' && c != '\\') plain.set(static_cast<std::size_t>(c));
    struct TrieNode {
      std::map<char, std::size_t> kids;
      bool end = false;
    };
    std::vector<TrieNode> trie(1);
    for (const auto& k : excluded) {
      bool ok = true;
      for (const char c : k) ok = ok && plain.test(static_cast<std::uint8_t>(c));
      if (!ok) continue;  // it cannot be written without escapes: nothing to leave out
      std::size_t at = 0;
      for (const char c : k) {
        auto it = trie[at].kids.find(c);
        if (it == trie[at].kids.end()) {
          trie.push_back({});
          it = trie[at].kids.emplace(c, trie.size() - 1).first;
        }
        at = it->second;
      }
      trie[at].end = true;
    }
    const auto rest = GrammarBuilder::cat({b_.star(b_.set(plain)), lit("\"")});
    std::vector<std::uint32_t> rules(trie.size());
    for (auto& r : rules) r = b_.rule("key");
    for (std::size_t i = 0; i < trie.size(); ++i) {
      if (!trie[i].end) b_.add(rules[i], lit("\""));
      ByteSet others = plain;
      for (const auto& [c, next] : trie[i].kids) {
        b_.add(rules[i], GrammarBuilder::cat({lit(std::string(1, c)), ref(rules[next])}));
        others.reset(static_cast<std::uint8_t>(c));
      }
      if (others.any()) b_.add(rules[i], GrammarBuilder::cat({b_.set(others), rest}));
    }
    return GrammarBuilder::cat({lit("\""), ref(rules[0])});
  }

  Expr object_schema(const json& s, const std::string& path, int depth) {
    const json empty = json::object();
    const json& props = s.contains("properties") ? s["properties"] : empty;
    if (!props.is_object()) fail(path, "properties", "must be an object");
    std::vector<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) fail(path, "required", "must be an array of strings");
      for (const auto& r : s["required"]) {
        if (!r.is_string()) fail(path, "required", "must be an array of strings");
        required.push_back(r.get<std::string>());
      }
    }
    // Extra properties: absent with properties given: none (a subset of what validates); absent without
    // properties, or true: any; a schema: keys beyond properties with values of that schema.
    const json* extra = nullptr;
    bool extras = false;
    if (s.contains("additionalProperties")) {
      const auto& ap = s["additionalProperties"];
      if (ap.is_boolean()) {
        extras = ap.get<bool>();
      } else if (ap.is_object()) {
        extras = true;
        extra = &ap;
      } else {
        fail(path, "additionalProperties", "must be a boolean or a schema");
      }
    } else {
      extras = props.empty();
    }
    struct Prop {
      std::string key;
      const json* schema;
      bool required;
    };
    std::vector<Prop> list;
    for (const auto& [k, v] : props.items())
      list.push_back({k, &v, std::find(required.begin(), required.end(), k) != required.end()});
    const json any_schema = true;
    for (const auto& r : required) {
      bool found = false;
      for (const auto& p : list) found = found || p.key == r;
      if (found) continue;
      if (!extras) fail(path, "required", "names '" + r + "', which no property or additionalProperties allows");
      list.push_back({r, extra ? extra : &any_schema, true});  // required beyond properties: a property of its own
    }
    std::vector<Expr> kv;
    std::vector<std::string> keys;
    for (const auto& p : list) {
      keys.push_back(p.key);
      kv.push_back(GrammarBuilder::cat(
          {literal(json(p.key), path, "properties"), colon(), value(*p.schema, child(child(path, "properties"), p.key), depth + 1)}));
    }
    Expr extra_kv;
    if (extras) {
      const auto v = extra ? value(*extra, child(path, "additionalProperties"), depth + 1) : any_value();
      extra_kv = GrammarBuilder::cat({key_except(keys), colon(), v});
    }
    // rest[i]: properties i.. after at least one was written (each behind a comma); first[i]: before any.
    const std::size_t n = list.size();
    std::vector<std::uint32_t> rest(n + 1), first(n + 1);
    for (std::size_t i = 0; i <= n; ++i) {
      rest[i] = b_.rule("rest");
      first[i] = b_.rule("first");
    }
    if (extras) {
      b_.add(rest[n], b_.star(GrammarBuilder::cat({sep(), extra_kv})));
      b_.add(first[n], b_.opt(GrammarBuilder::cat({extra_kv, b_.star(GrammarBuilder::cat({sep(), extra_kv}))})));
    } else {
      b_.add(rest[n], {});
      b_.add(first[n], {});
    }
    for (std::size_t i = n; i-- > 0;) {
      b_.add(rest[i], GrammarBuilder::cat({sep(), kv[i], ref(rest[i + 1])}));
      b_.add(first[i], GrammarBuilder::cat({kv[i], ref(rest[i + 1])}));
      if (!list[i].required) {
        b_.add(rest[i], ref(rest[i + 1]));
        b_.add(first[i], ref(first[i + 1]));
      }
    }
    return GrammarBuilder::cat({lit("{"), ref(ws_), ref(first[0]), ref(ws_), lit("}")});
  }

  Expr array_schema(const json& s, const std::string& path, int depth) {
    if (s.contains("uniqueItems")) {
      if (!s["uniqueItems"].is_boolean()) fail(path, "uniqueItems", "must be a boolean");
      if (s["uniqueItems"].get<bool>()) fail(path, "uniqueItems", "true is not supported");
    }
    const auto min = count(s, path, "minItems").value_or(0);
    const auto max = count(s, path, "maxItems");
    if (max && *max < min) fail(path, "maxItems", "is below minItems");
    // Tuple items (prefixItems, or draft 7's items array with additionalItems), then the rest's schema.
    const json* tuple = nullptr;
    const json* rest_schema = nullptr;
    bool rest_allowed = true;
    std::string tuple_key = "prefixItems", rest_key = "items";
    if (s.contains("prefixItems")) {
      tuple = &s["prefixItems"];
      if (!tuple->is_array()) fail(path, "prefixItems", "must be an array of schemas");
    } else if (s.contains("items") && s["items"].is_array()) {
      tuple = &s["items"];
      tuple_key = "items";
      rest_key = "additionalItems";
    }
    if (s.contains(rest_key)) {
      const auto& r = s[rest_key];
      if (r.is_boolean()) rest_allowed = r.get<bool>();
      else if (r.is_object()) rest_schema = &r;
      else fail(path, rest_key, "must be a schema");
    }
    const std::size_t k = tuple ? tuple->size() : 0;
    const json any_schema = true;
    if (rest_allowed && !rest_schema) rest_schema = &any_schema;
    if (!rest_allowed) rest_schema = nullptr;
    if (static_cast<std::size_t>(min) > k && !rest_schema) fail(path, "minItems", "asks for more items than the schema allows");
    const std::int64_t hi = max ? *max : -1;
    Expr rest_item;
    if (rest_schema) rest_item = value(*rest_schema, child(path, rest_key), depth + 1);
    // The items after the tuple: count max(min - k, 0) .. hi - k.
    const auto tail_count_lo = std::max<std::int64_t>(min - static_cast<std::int64_t>(k), 0);
    const auto tail_count_hi = hi < 0 ? std::int64_t{-1} : hi - static_cast<std::int64_t>(k);
    Expr list;
    if (k == 0) {
      if (rest_schema && hi != 0) {
        const auto more = b_.repeat(GrammarBuilder::cat({sep(), rest_item}), std::max<std::int64_t>(min - 1, 0),
                                    hi < 0 ? -1 : hi - 1);
        const auto some = GrammarBuilder::cat({rest_item, more});
        list = min == 0 ? b_.opt(some) : some;
      }
    } else {
      Expr tail;
      if (rest_schema && (tail_count_hi < 0 || tail_count_hi > 0))
        tail = b_.repeat(GrammarBuilder::cat({sep(), rest_item}), tail_count_lo, tail_count_hi);
      for (std::size_t i = k; i-- > 0;) {
        if (hi >= 0 && static_cast<std::int64_t>(i) >= hi) {
          tail = {};
          continue;
        }
        const auto item = value((*tuple)[i], child(child(path, tuple_key), std::to_string(i)), depth + 1);
        auto here = GrammarBuilder::cat({i == 0 ? Expr{} : sep(), item, b_.wrap(tail)});
        tail = static_cast<std::int64_t>(i) >= min ? b_.opt(here) : here;
      }
      list = tail;
    }
    return GrammarBuilder::cat({lit("["), ref(ws_), list, ref(ws_), lit("]")});
  }

  const json& root_;
  GrammarBuilder& b_;
  std::uint32_t ws_ = 0, char_ = 0;
  std::optional<std::uint32_t> string_, number_, integer_, value_, object_, array_;
  std::map<std::string, std::uint32_t> refs_;
};

JsonSchemaRules::JsonSchemaRules(GrammarBuilder& b, const nlohmann::ordered_json& document)
    : c_(std::make_unique<SchemaCompiler>(b, document)) {}
JsonSchemaRules::~JsonSchemaRules() = default;
GrammarBuilder::Expr JsonSchemaRules::document() { return c_->document(); }
GrammarBuilder::Expr JsonSchemaRules::value(const nlohmann::ordered_json& schema, const std::string& path) {
  return c_->value_at(schema, path);
}
GrammarBuilder::Expr JsonSchemaRules::any_object() { return c_->object(); }
GrammarBuilder::Expr JsonSchemaRules::whitespace() const { return c_->whitespace(); }

Grammar json_schema_grammar(const nlohmann::ordered_json& schema) {
  GrammarBuilder b;
  return SchemaCompiler(b, schema).compile_schema();
}

Grammar json_object_grammar() {
  const nlohmann::ordered_json none;
  GrammarBuilder b;
  return SchemaCompiler(b, none).compile_object();
}

}  // namespace tf::grammar
