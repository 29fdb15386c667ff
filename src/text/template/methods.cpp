// Methods and attributes of the builtin Python types as a sandboxed template sees them: str (and
// Markup), list, tuple, dict, the dict views, int, float. Methods that would mutate a list or dict are
// "unsafe" in jinja2's ImmutableSandboxedEnvironment: the attribute is an Undefined that raises a
// SecurityError when called.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "objects.h"
#include "pyformat.h"
#include "pystr.h"
#include "template_error.h"
#include "unicode.h"

namespace tf::jinja {

namespace {

constexpr const char* kStrMethods[] = {
    "capitalize", "casefold", "center", "count", "encode", "endswith", "expandtabs", "find", "format", "format_map",
    "index", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit", "isidentifier", "islower", "isnumeric",
    "isprintable", "isspace", "istitle", "isupper", "join", "ljust", "lower", "lstrip", "maketrans", "partition",
    "removeprefix", "removesuffix", "replace", "rfind", "rindex", "rjust", "rpartition", "rsplit", "rstrip", "split",
    "splitlines", "startswith", "strip", "swapcase", "title", "translate", "upper", "zfill"};
constexpr const char* kMarkupMethods[] = {"escape", "unescape", "striptags"};
constexpr const char* kListMethods[] = {"append", "clear", "copy", "count", "extend", "index", "insert", "pop",
                                        "remove", "reverse", "sort"};
constexpr const char* kListMutators[] = {"append", "clear", "pop", "reverse", "insert", "sort", "extend", "remove"};
constexpr const char* kTupleMethods[] = {"count", "index"};
constexpr const char* kDictMethods[] = {"clear", "copy", "fromkeys", "get", "items", "keys", "pop", "popitem",
                                        "setdefault", "update", "values"};
constexpr const char* kDictMutators[] = {"clear", "pop", "popitem", "setdefault", "update"};
constexpr const char* kIntMethods[] = {"as_integer_ratio", "bit_count", "bit_length", "conjugate", "from_bytes", "to_bytes"};
constexpr const char* kFloatMethods[] = {"as_integer_ratio", "conjugate", "fromhex", "hex", "is_integer"};

template <std::size_t N>
bool one_of(const char* const (&names)[N], std::string_view name) {
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

Value bound(const Value& self, std::string_view name) {
  return Value(std::shared_ptr<Object>(std::make_shared<BoundMethod>(self, std::string(name))));
}

std::optional<std::int64_t> opt_index(const Value& v, const char* what) {
  if (v.is_none()) return std::nullopt;
  if (!v.is_integral()) type_error(std::string("slice indices must be integers or None or have an __index__ method (") + what + ")");
  return v.as_int();
}

std::optional<std::string> opt_str(const Value& v, const std::string& fname) {
  if (v.is_none()) return std::nullopt;
  if (!v.is_str()) type_error(fname + " arg must be None or str");
  return v.str();
}

// Markup methods escape their string arguments.
Value esc(const Value& self, const Value& v) {
  if (self.is_markup() && v.is_str() && !v.is_markup()) return Value(html_escape(v.str()), true);
  return v;
}

Value list_of_str(const std::vector<std::string>& parts, bool markup) {
  std::vector<Value> v;
  v.reserve(parts.size());
  for (const auto& p : parts) v.emplace_back(p, markup);
  return Value::list(std::move(v));
}

std::int64_t to_int(const Value& v, const std::string& what) {
  if (!v.is_integral()) type_error("'" + python_type_name(v) + "' object cannot be interpreted as an integer (" + what + ")");
  return v.as_int();
}

std::string striptags(const std::string& s) {
  // markupsafe: drop comments and tags, unescape, collapse whitespace
  std::string noc;
  for (std::size_t i = 0; i < s.size();) {
    if (s.compare(i, 4, "<!--") == 0) {
      const std::size_t e = s.find("-->", i + 4);
      if (e != std::string::npos) {
        i = e + 3;
        continue;
      }
    }
    if (s[i] == '<') {
      const std::size_t e = s.find('>', i + 1);
      if (e != std::string::npos) {
        i = e + 1;
        continue;
      }
    }
    noc.push_back(s[i++]);
  }
  std::string un;
  for (std::size_t i = 0; i < noc.size();) {
    if (noc[i] == '&') {
      static const std::pair<const char*, const char*> ents[] = {{"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"},
                                                                 {"&quot;", "\""}, {"&#39;", "'"}, {"&#34;", "\""},
                                                                 {"&apos;", "'"}, {"&nbsp;", "\xC2\xA0"}};
      bool done = false;
      for (const auto& [e, r] : ents)
        if (noc.compare(i, std::strlen(e), e) == 0) {
          un += r;
          i += std::strlen(e);
          done = true;
          break;
        }
      if (done) continue;
    }
    un.push_back(noc[i++]);
  }
  const auto parts = pystr::split(un, std::nullopt, -1);
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? " " : "") + parts[i];
  return out;
}

std::string unescape_html(const std::string& s) {
  std::string out = s;
  out = pystr::replace(out, "&lt;", "<", -1);
  out = pystr::replace(out, "&gt;", ">", -1);
  out = pystr::replace(out, "&#34;", "\"", -1);
  out = pystr::replace(out, "&quot;", "\"", -1);
  out = pystr::replace(out, "&#39;", "'", -1);
  out = pystr::replace(out, "&amp;", "&", -1);
  return out;
}

Value str_method(Interpreter& in, const Value& self, const std::string& name, CallArgs& args) {
  const std::string& s = self.str();
  const bool mk = self.is_markup();
  const std::string fname = "str." + name;
  in.charge(s.size() / 32 + 1);
  auto nullary = [&] { bind_args(fname, args, {}); };
  if (name == "upper") return nullary(), Value(uni::upper(s), mk);
  if (name == "lower") return nullary(), Value(uni::lower(s), mk);
  if (name == "casefold") return nullary(), Value(pystr::replace(uni::lower(s), "\xC3\x9F", "ss", -1));
  if (name == "title") return nullary(), Value(uni::title(s), mk);
  if (name == "capitalize") return nullary(), Value(uni::capitalize(s), mk);
  if (name == "swapcase") return nullary(), Value(uni::swapcase(s), mk);
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    auto a = bind_args(fname, args, {{"chars", Value()}});
    const Value chars = esc(self, a[0]);
    return Value(pystr::strip(s, opt_str(chars, name), name != "rstrip", name != "lstrip"), mk);
  }
  if (name == "split" || name == "rsplit") {
    auto a = bind_args(fname, args, {{"sep", Value()}, {"maxsplit", Value(-1)}});
    const auto sep = opt_str(esc(self, a[0]), "sep");
    const std::int64_t maxsplit = to_int(a[1], "maxsplit");
    return list_of_str(name == "split" ? pystr::split(s, sep, maxsplit) : pystr::rsplit(s, sep, maxsplit), mk);
  }
  if (name == "splitlines") {
    auto a = bind_args(fname, args, {{"keepends", Value(false)}});
    return list_of_str(pystr::splitlines(s, truthy(a[0])), mk);
  }
  if (name == "startswith" || name == "endswith") {
    auto a = bind_args(fname, args, {{"prefix", std::nullopt}, {"start", Value()}, {"end", Value()}});
    const auto st = opt_index(a[1], "start"), en = opt_index(a[2], "end");
    std::vector<Value> prefixes;
    if (a[0].is_tuple())
      prefixes = a[0].items();
    else
      prefixes.push_back(a[0]);
    for (const auto& p : prefixes) {
      if (!p.is_str())
        type_error(name + " first arg must be str or a tuple of str, not " + python_type_name(p));
      if (pystr::startswith(s, p.str(), st, en, name == "endswith")) return Value(true);
    }
    return Value(false);
  }
  if (name == "replace") {
    auto a = bind_args(fname, args, {{"old", std::nullopt}, {"new", std::nullopt}, {"count", Value(-1)}});
    const Value o = esc(self, a[0]), n = esc(self, a[1]);
    if (!o.is_str() || !n.is_str()) type_error("replace() argument must be str, not " + python_type_name(o.is_str() ? n : o));
    std::string r = pystr::replace(s, o.str(), n.str(), to_int(a[2], "count"));
    in.check_size(r.size());
    return Value(std::move(r), mk);
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    auto a = bind_args(fname, args, {{"sub", std::nullopt}, {"start", Value()}, {"end", Value()}});
    if (!a[0].is_str()) type_error("must be str, not " + python_type_name(a[0]));
    const auto st = opt_index(a[1], "start"), en = opt_index(a[2], "end");
    if (name == "count") return Value(pystr::count(s, a[0].str(), st, en));
    const std::int64_t r = pystr::find(s, a[0].str(), st, en, name[0] == 'r');
    if (r < 0 && (name == "index" || name == "rindex")) value_error("substring not found");
    return Value(r);
  }
  if (name == "join") {
    auto a = bind_args(fname, args, {{"iterable", std::nullopt}});
    std::string out;
    auto it = in.iterate(a[0]);
    Value x;
    bool first = true;
    while (it->next(x)) {
      if (!x.is_str()) type_error("sequence item: expected str instance, " + python_type_name(x) + " found");
      if (!first) out += s;
      first = false;
      out += (mk && !x.is_markup()) ? html_escape(x.str()) : x.str();
      in.check_size(out.size());
    }
    return Value(std::move(out), mk);
  }
  if (name == "format" || name == "format_map") {
    CallArgs fa;
    if (name == "format_map") {
      if (!args.kw.empty()) type_error("format_map() takes no keyword arguments");
      if (args.pos.size() != 1) type_error("format_map() takes exactly one argument (" + std::to_string(args.pos.size()) + " given)");
      if (!args.pos[0].is_dict()) type_error("format_map() argument must be a mapping");
      for (const auto& [k, v] : args.pos[0].dict().entries)
        if (k.is_str()) fa.kw.emplace_back(k.str(), v);
    } else {
      fa = args;
    }
    if (mk) {
      for (auto& p : fa.pos) p = esc(self, p.is_str() ? p : Value(py_str(p)));
      for (auto& [k, v] : fa.kw) v = esc(self, v.is_str() ? v : Value(py_str(v)));
    }
    return Value(str_format(in, s, fa), mk);
  }
  if (name == "center" || name == "ljust" || name == "rjust") {
    auto a = bind_args(fname, args, {{"width", std::nullopt}, {"fillchar", Value(" ")}});
    if (!a[1].is_str() || uni::length(a[1].str()) != 1) type_error("The fill character must be exactly one character long");
    const std::int64_t w = to_int(a[0], "width");
    if (w > static_cast<std::int64_t>(in.limits().max_output_bytes)) throw TemplateError(TemplateError::Kind::Limit, "width exceeds the size limit");
    return Value(pystr::center(s, w, a[1].str(), name == "center" ? '^' : name == "ljust" ? '<' : '>'), mk);
  }
  if (name == "zfill") {
    auto a = bind_args(fname, args, {{"width", std::nullopt}});
    const std::int64_t w = to_int(a[0], "width");
    if (w > static_cast<std::int64_t>(in.limits().max_output_bytes)) throw TemplateError(TemplateError::Kind::Limit, "width exceeds the size limit");
    return Value(pystr::zfill(s, w), mk);
  }
  if (name == "expandtabs") {
    auto a = bind_args(fname, args, {{"tabsize", Value(8)}});
    const std::int64_t t = to_int(a[0], "tabsize");
    if (t > 1000) throw TemplateError(TemplateError::Kind::Limit, "tabsize too large");
    return Value(pystr::expandtabs(s, t, in.limits().max_output_bytes), mk);
  }
  if (name == "partition" || name == "rpartition") {
    auto a = bind_args(fname, args, {{"sep", std::nullopt}});
    const Value sepv = esc(self, a[0]);
    if (!sepv.is_str()) type_error("must be str, not " + python_type_name(sepv));
    const std::string& sep = sepv.str();
    if (sep.empty()) value_error("empty separator");
    const std::size_t k = name == "partition" ? s.find(sep) : s.rfind(sep);
    if (k == std::string::npos) {
      if (name == "partition") return Value::tuple({Value(s, mk), Value("", mk), Value("", mk)});
      return Value::tuple({Value("", mk), Value("", mk), Value(s, mk)});
    }
    return Value::tuple({Value(s.substr(0, k), mk), Value(sep, mk), Value(s.substr(k + sep.size()), mk)});
  }
  if (name == "removeprefix" || name == "removesuffix") {
    auto a = bind_args(fname, args, {{"affix", std::nullopt}});
    if (!a[0].is_str()) type_error(name + "() argument must be str, not " + python_type_name(a[0]));
    const std::string& p = a[0].str();
    if (name == "removeprefix" && s.compare(0, p.size(), p) == 0) return Value(s.substr(p.size()), mk);
    if (name == "removesuffix" && !p.empty() && s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0)
      return Value(s.substr(0, s.size() - p.size()), mk);
    return self;
  }
  if (name.rfind("is", 0) == 0) {
    nullary();
    const std::u32string u = uni::to_u32(s);
    auto all = [&](bool (*pred)(char32_t)) { return !u.empty() && std::all_of(u.begin(), u.end(), pred); };
    if (name == "isalnum") return Value(all(uni::is_alnum));
    if (name == "isalpha") return Value(all(uni::is_alpha));
    if (name == "isdecimal") return Value(all(uni::is_decimal));
    if (name == "isdigit") return Value(all(uni::is_digit));
    if (name == "isnumeric") return Value(all(uni::is_numeric));
    if (name == "isspace") return Value(all(uni::is_space));
    if (name == "isascii") return Value(pystr::is_ascii(s));
    if (name == "isprintable") return Value(std::all_of(u.begin(), u.end(), uni::is_printable));
    if (name == "islower") return Value(uni::str_islower(s));
    if (name == "isupper") return Value(uni::str_isupper(s));
    if (name == "istitle") return Value(uni::str_istitle(s));
    if (name == "isidentifier")
      return Value(!u.empty() && uni::is_ident_start(u[0]) && std::all_of(u.begin() + 1, u.end(), uni::is_ident_continue));
  }
  if (mk && name == "striptags") return nullary(), Value(striptags(s));
  if (mk && name == "unescape") return nullary(), Value(unescape_html(s));
  if (mk && name == "escape") {
    auto a = bind_args(fname, args, {{"s", std::nullopt}});
    return a[0].is_markup() ? a[0] : Value(html_escape(py_str(a[0])), true);
  }
  type_error("str." + name + "() is not supported in chat templates");
}

Value sequence_method(Interpreter& in, const Value& self, const std::string& name, CallArgs& args) {
  const auto& items = self.items();
  const std::string fname = python_type_name(self) + "." + name;
  in.charge(items.size() + 1);
  if (name == "count") {
    auto a = bind_args(fname, args, {{"value", std::nullopt}});
    std::int64_t n = 0;
    for (const auto& x : items) n += py_eq(x, a[0]) ? 1 : 0;
    return Value(n);
  }
  if (name == "index") {
    auto a = bind_args(fname, args, {{"value", std::nullopt}, {"start", Value(0)}, {"stop", Value(INT64_MAX)}});
    const auto n = static_cast<std::int64_t>(items.size());
    std::int64_t lo = to_int(a[1], "start"), hi = to_int(a[2], "stop");
    if (lo < 0) lo = std::max<std::int64_t>(lo + n, 0);
    if (hi < 0) hi = std::max<std::int64_t>(hi + n, 0);
    for (std::int64_t i = lo; i < std::min(hi, n); ++i)
      if (py_eq(items[static_cast<std::size_t>(i)], a[0])) return Value(i);
    value_error(py_repr(a[0]) + " is not in " + python_type_name(self));
  }
  if (name == "copy") {
    bind_args(fname, args, {});
    return Value::list(items);
  }
  if (name == "isdisjoint") {
    auto a = bind_args(fname, args, {{"other", std::nullopt}});
    const auto other = in.to_list(a[0]);
    for (const auto& x : items)
      for (const auto& y : other)
        if (py_eq(x, y)) return Value(false);
    return Value(true);
  }
  type_error(fname + "() is not supported in chat templates");
}

Value dict_method(Interpreter& in, const Value& self, const std::string& name, CallArgs& args) {
  const DictData& d = self.dict();
  const std::string fname = "dict." + name;
  if (name == "get") {
    auto a = bind_args(fname, args, {{"key", std::nullopt}, {"default", Value()}});
    const Value* v = d.find(a[0]);
    return v ? *v : a[1];
  }
  in.charge(d.size() + 1);
  if (name == "items") {
    bind_args(fname, args, {});
    std::vector<Value> v;
    v.reserve(d.size());
    for (const auto& [k, x] : d.entries) v.push_back(Value::tuple({k, x}));
    return Value::list(std::move(v), ListKind::DictItems);
  }
  if (name == "keys" || name == "values") {
    bind_args(fname, args, {});
    std::vector<Value> v;
    v.reserve(d.size());
    for (const auto& [k, x] : d.entries) v.push_back(name == "keys" ? k : x);
    return Value::list(std::move(v), name == "keys" ? ListKind::DictKeys : ListKind::DictValues);
  }
  if (name == "copy") {
    bind_args(fname, args, {});
    return make_dict(d);
  }
  if (name == "fromkeys") {
    auto a = bind_args(fname, args, {{"iterable", std::nullopt}, {"value", Value()}});
    DictData r;
    for (const auto& k : in.to_list(a[0])) r.set(k, a[1]);
    return make_dict(std::move(r));
  }
  type_error(fname + "() is not supported in chat templates");
}

Value number_method(const Value& self, const std::string& name, CallArgs& args) {
  const std::string fname = python_type_name(self) + "." + name;
  bind_args(fname, args, {});
  if (name == "conjugate") return self.is_float() ? Value(self.as_float()) : Value(self.as_int());
  if (name == "is_integer" && self.is_float()) return Value(std::isfinite(self.as_float()) && self.as_float() == std::floor(self.as_float()));
  if (name == "bit_length" && self.is_integral()) {
    std::int64_t v = self.as_int();
    std::uint64_t m = v < 0 ? 0ULL - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
    std::int64_t n = 0;
    while (m) {
      ++n;
      m >>= 1;
    }
    return Value(n);
  }
  if (name == "bit_count" && self.is_integral()) {
    std::int64_t v = self.as_int();
    std::uint64_t m = v < 0 ? 0ULL - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
    return Value(static_cast<std::int64_t>(__builtin_popcountll(m)));
  }
  type_error(fname + "() is not supported in chat templates");
}

}  // namespace

bool python_attribute(const Value& obj, std::string_view name, Value& out) {
  switch (obj.type()) {
    case Value::Type::Str:
      if (one_of(kStrMethods, name) || (obj.is_markup() && one_of(kMarkupMethods, name))) {
        out = bound(obj, name);
        return true;
      }
      return false;
    case Value::Type::List:
      switch (obj.list_kind()) {
        case ListKind::List:
          if (!one_of(kListMethods, name)) return false;
          out = one_of(kListMutators, name) ? Value::unsafe(obj, std::string(name)) : bound(obj, name);
          return true;
        case ListKind::GroupTuple:
          if (name == "grouper" || name == "list") {
            out = obj.items()[name == "grouper" ? 0 : 1];
            return true;
          }
          [[fallthrough]];
        case ListKind::Tuple:
          if (!one_of(kTupleMethods, name)) return false;
          out = bound(obj, name);
          return true;
        case ListKind::DictKeys:
        case ListKind::DictItems:
          if (name != "isdisjoint") return false;
          out = bound(obj, name);
          return true;
        case ListKind::DictValues:
        case ListKind::Range:
          if (obj.list_kind() == ListKind::Range && (name == "count" || name == "index")) {
            out = bound(obj, name);
            return true;
          }
          if (obj.list_kind() == ListKind::Range && (name == "start" || name == "stop" || name == "step")) {
            const auto& l = *obj.list_ptr();
            out = Value(name == "start" ? l.range_start : name == "stop" ? l.range_stop : l.range_step);
            return true;
          }
          return false;
      }
      return false;
    case Value::Type::Dict:
      if (!one_of(kDictMethods, name)) return false;
      out = one_of(kDictMutators, name) ? Value::unsafe(obj, std::string(name)) : bound(obj, name);
      return true;
    case Value::Type::Bool:
    case Value::Type::Int:
      if (name == "real" || name == "numerator") {
        out = Value(obj.as_int());
        return true;
      }
      if (name == "imag") {
        out = Value(0);
        return true;
      }
      if (name == "denominator") {
        out = Value(1);
        return true;
      }
      if (!one_of(kIntMethods, name)) return false;
      out = bound(obj, name);
      return true;
    case Value::Type::Float:
      if (name == "real") {
        out = obj;
        return true;
      }
      if (name == "imag") {
        out = Value(0.0);
        return true;
      }
      if (!one_of(kFloatMethods, name)) return false;
      out = bound(obj, name);
      return true;
    default:
      return false;
  }
}

Value call_method(Interpreter& in, const Value& self, const std::string& name, CallArgs& args) {
  switch (self.type()) {
    case Value::Type::Str:
      return str_method(in, self, name, args);
    case Value::Type::List:
      return sequence_method(in, self, name, args);
    case Value::Type::Dict:
      return dict_method(in, self, name, args);
    case Value::Type::Bool:
    case Value::Type::Int:
    case Value::Type::Float:
      return number_method(self, name, args);
    default:
      type_error("'" + python_type_name(self) + "' object has no method '" + name + "'");
  }
}

}  // namespace tf::jinja
