// jinja2's builtin filters as transformers configures them (tojson replaced by json.dumps with
// ensure_ascii=False), following jinja2 3.1. Tests are in tests.cpp, globals in globals.cpp.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <unordered_map>

#include "builtin_kinds.h"
#include "json_value.h"
#include "objects.h"
#include "pyformat.h"
#include "pystr.h"
#include "symbols.h"
#include "template_error.h"
#include "unicode.h"

namespace tf::jinja {

namespace {

using FilterFn = Value (*)(Interpreter&, Value, CallArgs&);

[[noreturn]] void filter_arg_error(const std::string& msg) {
  throw TemplateError(TemplateError::Kind::Runtime, "FilterArgumentError: " + msg);
}

Value gen(Interpreter& in, std::string type, std::function<bool(Value&)> fn) {
  (void)in;
  return Value(std::shared_ptr<Object>(std::make_shared<GeneratorObject>(std::move(type), std::move(fn))));
}

// soft_str: Markup stays Markup, everything else str()
Value soft_str(const Value& v) { return v.is_str() ? v : Value(py_str(v)); }

Value ignore_case(const Value& v) { return v.is_str() ? Value(uni::lower(v.str()), v.is_markup()) : v; }

std::vector<Value> attribute_parts(const Value& attr) {
  std::vector<Value> parts;
  if (attr.is_none()) return parts;
  if (attr.is_str()) {
    for (const auto& p : pystr::split(attr.str(), std::string("."), -1)) {
      const std::u32string u = uni::to_u32(p);
      const bool digits = !u.empty() && std::all_of(u.begin(), u.end(), uni::is_digit);
      if (digits) {
        auto v = parse_py_int(p, 10);
        if (!v) value_error("invalid literal for int() with base 10: '" + p + "'");
        parts.emplace_back(*v);
      } else {
        parts.emplace_back(p);
      }
    }
    return parts;
  }
  parts.push_back(attr);
  return parts;
}

struct AttrGetter {
  std::vector<Value> parts;
  bool lower = false;
  Value def = Value();  // None: no default
  Value operator()(Interpreter& in, Value item) const {
    for (const auto& p : parts) {
      item = in.getitem(item, p);
      if (!def.is_none() && item.is_undefined()) item = def;
    }
    return lower ? ignore_case(item) : item;
  }
};

AttrGetter make_attrgetter(const Value& attribute, bool lower, Value def = Value()) {
  return AttrGetter{attribute_parts(attribute), lower, std::move(def)};
}

// make_multi_attrgetter: attribute "a,b" gives a list key [a, b]
std::vector<AttrGetter> make_multi_attrgetter(const Value& attribute, bool lower) {
  std::vector<AttrGetter> out;
  if (attribute.is_str()) {
    for (const auto& p : pystr::split(attribute.str(), std::string(","), -1)) out.push_back(make_attrgetter(Value(p), lower));
  } else {
    out.push_back(make_attrgetter(attribute, lower));
  }
  return out;
}

Value multi_key(Interpreter& in, const std::vector<AttrGetter>& getters, const Value& item) {
  std::vector<Value> k;
  for (const auto& g : getters) k.push_back(g(in, item));
  return Value::list(std::move(k));
}


// reversed(value) for sequences; nullopt when the value is not reversible
std::optional<std::vector<Value>> reversed_items(Interpreter& in, const Value& v) {
  if (v.is_undefined()) return std::vector<Value>{};
  if (v.is_str()) {
    std::vector<Value> out;
    auto it = in.iterate(v);
    Value x;
    while (it->next(x)) out.push_back(x);
    std::reverse(out.begin(), out.end());
    return out;
  }
  if (v.is_list() || v.is_dict()) {
    auto items = in.to_list(v);
    std::reverse(items.begin(), items.end());
    return items;
  }
  return std::nullopt;
}

// ---- filters -------------------------------------------------------------------------------------

Value f_abs(Interpreter&, Value v, CallArgs& args) {
  bind_args("abs", args, {});
  if (v.is_float()) return Value(std::fabs(v.as_float()));
  if (v.is_integral()) {
    if (v.as_int() == INT64_MIN) throw TemplateError(TemplateError::Kind::Runtime, "OverflowError: integer overflow");
    return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  if (v.is_undefined()) raise_undefined(v);
  type_error("bad operand type for abs(): '" + python_type_name(v) + "'");
}

Value f_attr(Interpreter& in, Value v, CallArgs& args) {
  auto a = bind_args("attr", args, {{"name", std::nullopt}});
  if (!a[0].is_str()) type_error("attribute name must be string");
  const std::string& name = a[0].str();
  Value out;
  bool has = v.is_object() ? v.object().get_attr(name, out) : python_attribute(v, name, out);
  if (!has && !(name.size() > 4 && name.rfind("__", 0) == 0)) return Value::undefined_attr(v, name);
  return in.getattr(v, name);
}

Value f_batch(Interpreter& in, Value v, CallArgs& args) {
  auto a = bind_args("batch", args, {{"linecount", std::nullopt}, {"fill_with", Value()}});
  struct State {
    bool started = false;
    std::unique_ptr<Iter> it;
    std::vector<Value> tmp;
    bool done = false;
  };
  auto st = std::make_shared<State>();
  const Value linecount = a[0], fill = a[1];
  return gen(in, "generator", [&in, v, linecount, fill, st](Value& out) {
    if (st->done) return false;
    if (!st->started) {
      st->started = true;
      st->it = in.iterate(v);
    }
    Value item;
    while (st->it->next(item)) {
      if (py_eq(Value(static_cast<std::int64_t>(st->tmp.size())), linecount)) {
        out = Value::list(std::move(st->tmp));
        st->tmp.clear();
        st->tmp.push_back(item);
        return true;
      }
      st->tmp.push_back(item);
    }
    st->done = true;
    if (st->tmp.empty()) return false;
    if (!fill.is_none() && py_compare(Value(static_cast<std::int64_t>(st->tmp.size())), linecount, "lt")) {
      if (!linecount.is_integral()) type_error("can't multiply sequence by non-int of type '" + python_type_name(linecount) + "'");
      const std::int64_t n = linecount.as_int() - static_cast<std::int64_t>(st->tmp.size());
      for (std::int64_t i = 0; i < n; ++i) st->tmp.push_back(fill);
    }
    out = Value::list(std::move(st->tmp));
    return true;
  });
}

Value f_capitalize(Interpreter&, Value v, CallArgs& args) {
  bind_args("capitalize", args, {});
  const Value s = soft_str(v);
  return Value(uni::capitalize(s.str()), s.is_markup());
}

Value f_center(Interpreter& in, Value v, CallArgs& args) {
  auto a = bind_args("center", args, {{"width", Value(80)}});
  const Value s = soft_str(v);
  if (!a[0].is_integral()) type_error("'" + python_type_name(a[0]) + "' object cannot be interpreted as an integer");
  in.check_size(static_cast<std::size_t>(std::max<std::int64_t>(0, a[0].as_int())));
  return Value(pystr::center(s.str(), a[0].as_int(), " ", '^'), s.is_markup());
}

Value f_length(Interpreter& in, Value v, CallArgs& args) {
  bind_args("length", args, {});
  return Value(static_cast<std::int64_t>(in.length(v)));
}

Value f_default(Interpreter&, Value v, CallArgs& args) {
  auto a = bind_args("default", args, {{"default_value", Value("")}, {"boolean", Value(false)}});
  if (v.is_undefined() || (truthy(a[1]) && !truthy(v))) return a[0];
  return v;
}

Value f_dictsort(Interpreter& in, Value v, CallArgs& args) {
  auto a = bind_args("dictsort", args,
                     {{"case_sensitive", Value(false)}, {"by", Value("key")}, {"reverse", Value(false)}});
  int pos;
  if (a[1].is_str() && a[1].str() == "key") pos = 0;
  else if (a[1].is_str() && a[1].str() == "value") pos = 1;
  else filter_arg_error("You can only sort by either \"key\" or \"value\"");
  const Value items_fn = in.getattr(v, "items");
  CallArgs none;
  const Value items = in.call(items_fn, none);
  std::vector<Value> list = in.to_list(items);
  const bool cs = truthy(a[0]);
  std::vector<std::pair<Value, Value>> keyed;
  for (const auto& it : list) {
    const Value item = it.is_list() ? it : it;
    const auto pair = in.to_list(item);
    if (pair.size() <= static_cast<std::size_t>(pos)) type_error("tuple index out of range");
    keyed.emplace_back(cs ? pair[static_cast<std::size_t>(pos)] : ignore_case(pair[static_cast<std::size_t>(pos)]), item);
  }
  const bool rev = truthy(a[2]);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return rev ? py_less(y.first, x.first) : py_less(x.first, y.first);
  });
  std::vector<Value> out;
  for (auto& [k, item] : keyed) out.push_back(Value::tuple(in.to_list(item)));
  return Value::list(std::move(out));
}

Value f_escape(Interpreter&, Value v, CallArgs& args) {
  bind_args("escape", args, {});
  if (v.is_markup()) return v;
  return Value(html_escape(py_str(v)), true);
}

Value f_forceescape(Interpreter&, Value v, CallArgs& args) {
  bind_args("forceescape", args, {});
  return Value(html_escape(py_str(v)), true);
}

Value f_filesizeformat(Interpreter&, Value v, CallArgs& args) {
  auto a = bind_args("filesizeformat", args, {{"binary", Value(false)}});
  double bytes;
  if (v.is_number()) bytes = v.as_float();
  else if (v.is_str()) {
    auto f = parse_py_float(v.str());
    if (!f) value_error("could not convert string to float: " + py_repr(v));
    bytes = *f;
  } else {
    type_error("float() argument must be a string or a real number, not '" + python_type_name(v) + "'");
  }
  const bool binary = truthy(a[0]);
  const double base = binary ? 1024 : 1000;
  const char* prefixes[] = {binary ? "KiB" : "kB", binary ? "MiB" : "MB", binary ? "GiB" : "GB", binary ? "TiB" : "TB",
                            binary ? "PiB" : "PB", binary ? "EiB" : "EB", binary ? "ZiB" : "ZB", binary ? "YiB" : "YB"};
  char buf[64];
  if (bytes == 1) return Value("1 Byte");
  if (bytes < base) {
    return Value(std::to_string(float_to_int(bytes)) + " Bytes");
  }
  double unit = base;
  for (int i = 0; i < 8; ++i) {
    unit = std::pow(base, i + 2);
    if (bytes < unit || i == 7) {
      std::snprintf(buf, sizeof buf, "%.1f %s", base * bytes / unit, prefixes[i]);
      return Value(std::string(buf));
    }
  }
  return Value();
}

Value f_first(Interpreter& in, Value v, CallArgs& args) {
  bind_args("first", args, {});
  auto it = in.iterate(v);
  Value x;
  if (it->next(x)) return x;
  return Value::undefined_hint("No first item, sequence was empty.");
}

Value f_last(Interpreter& in, Value v, CallArgs& args) {
  bind_args("last", args, {});
  auto r = reversed_items(in, v);
  if (!r) type_error("'" + python_type_name(v) + "' object is not reversible");
  if (r->empty()) return Value::undefined_hint("No last item, sequence was empty.");
  return r->front();
}

Value f_float(Interpreter&, Value v, CallArgs& args) {
  auto a = bind_args("float", args, {{"default", Value(0.0)}});
  if (v.is_number()) return Value(v.as_float());
  if (v.is_str()) {
    auto f = parse_py_float(v.str());
    return f ? Value(*f) : a[0];
  }
  if (v.is_undefined()) raise_undefined(v);
  return a[0];
}

Value f_format(Interpreter& in, Value v, CallArgs& args) {
  if (!args.pos.empty() && !args.kw.empty()) filter_arg_error("can't handle positional and keyword arguments at the same time");
  const Value fmt = soft_str(v);
  Value a;
  if (!args.kw.empty()) {
    DictData d;
    for (auto& [k, x] : args.kw) d.set(Value(k), x);
    a = make_dict(std::move(d));
  } else {
    a = Value::tuple(args.pos);
  }
  return Value(percent_format(in, fmt, a), fmt.is_markup());
}

Value f_groupby(Interpreter& in, Value v, CallArgs& args) {
  auto a = bind_args("groupby", args, {{"attribute", std::nullopt}, {"default", Value()}, {"case_sensitive", Value(false)}});
  const bool cs = truthy(a[2]);
  const AttrGetter key = make_attrgetter(a[0], !cs, a[1]);
  std::vector<std::pair<Value, Value>> keyed;
  for (const auto& item : in.to_list(v)) keyed.emplace_back(key(in, item), item);
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& x, const auto& y) { return py_less(x.first, y.first); });
  const AttrGetter out_key = make_attrgetter(a[0], false, a[1]);
  std::vector<Value> groups;
  for (std::size_t i = 0; i < keyed.size();) {
    std::size_t j = i;
    std::vector<Value> members;
    while (j < keyed.size() && py_eq(keyed[j].first, keyed[i].first)) members.push_back(keyed[j++].second);
    const Value grouper = cs ? keyed[i].first : out_key(in, members.front());
    groups.push_back(Value::list({grouper, Value::list(std::move(members))}, ListKind::GroupTuple));
    i = j;
  }
  return Value::list(std::move(groups));
}

Value f_indent(Interpreter& in, Value v, CallArgs& args) {
  auto a = bind_args("indent", args, {{"width", Value(4)}, {"first", Value(false)}, {"blank", Value(false)}});
  std::string indention;
  if (a[0].is_str()) {
    indention = a[0].str();
  } else {
    const Value sp = in.binop(BinOp::Mul, Value(" "), a[0]);
    indention = sp.str();
  }
  if (v.is_undefined()) raise_undefined(v);
  if (!v.is_str()) type_error("unsupported operand type(s) for +=: '" + python_type_name(v) + "' and 'str'");
  const bool markup = v.is_markup();
  if (markup && !a[0].is_markup()) indention = html_escape(indention);
  const std::string s = v.str() + "\n";
  std::vector<std::string> lines = pystr::splitlines(s, false);
  std::string rv;
  if (truthy(a[2])) {
    for (std::size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + indention : "") + lines[i];
  } else {
    rv = lines.empty() ? "" : lines[0];
    if (lines.size() > 1) {
      rv += "\n";
      for (std::size_t i = 1; i < lines.size(); ++i) {
        if (i > 1) rv += "\n";
        rv += lines[i].empty() ? lines[i] : indention + lines[i];
      }
    }
  }
  if (truthy(a[1])) rv = indention + rv;
  in.check_size(rv.size());
  return Value(std::move(rv), markup);
}

Value f_int(Interpreter&, Value v, CallArgs& args) {
  auto a = bind_args("int", args, {{"default", Value(0)}, {"base", Value(10)}});
  if (v.is_str()) {
    if (!a[1].is_integral()) return a[0];
    const std::int64_t base = a[1].as_int();
    if (base != 0 && (base < 2 || base > 36)) return a[0];
    if (auto r = parse_py_int(v.str(), static_cast<int>(base))) return Value(*r);
    auto f = parse_py_float(v.str());
    if (!f || !std::isfinite(*f)) return a[0];
    return Value(float_to_int(*f));
  }
  if (v.is_integral()) return Value(v.as_int());
  if (v.is_float()) {
    const double f = v.as_float();
    if (!std::isfinite(f)) return a[0];
    return Value(float_to_int(f));
  }
  if (v.is_undefined()) raise_undefined(v);
  return a[0];
}

Value f_join(Interpreter& in, Value v, CallArgs& args) {
  auto a = bind_args("join", args, {{"d", Value("")}, {"attribute", Value()}});
  const std::string d = py_str(a[0]);
  std::optional<AttrGetter> getter;
  if (!a[1].is_none()) getter = make_attrgetter(a[1], false);
  std::string out;
  auto it = in.iterate(v);
  Value x;
  bool first = true;
  while (it->next(x)) {
    if (getter) x = (*getter)(in, x);
    if (!first) out += d;
    first = false;
    out += py_str(x);
    in.check_size(out.size());
  }
  in.charge(out.size() / 16);
  return Value(std::move(out));
}

Value f_list(Interpreter& in, Value v, CallArgs& args) {
  bind_args("list", args, {});
  return Value::list(in.to_list(v));
}

Value f_lower(Interpreter&, Value v, CallArgs& args) {
  bind_args("lower", args, {});
  const Value s = soft_str(v);
  return Value(uni::lower(s.str()), s.is_markup());
}

Value f_upper(Interpreter&, Value v, CallArgs& args) {
  bind_args("upper", args, {});
  const Value s = soft_str(v);
  return Value(uni::upper(s.str()), s.is_markup());
}

Value f_items(Interpreter& in, Value v, CallArgs& args) {
  bind_args("items", args, {});
  auto st = std::make_shared<std::pair<bool, std::size_t>>(false, 0);
  return gen(in, "generator", [v, st](Value& out) {
    if (v.is_undefined()) return false;
    if (!st->first) {
      st->first = true;
      if (!v.is_dict()) type_error("Can only get item pairs from a mapping.");
    }
    const auto& entries = v.dict().entries;
    if (st->second >= entries.size()) return false;
    const auto& e = entries[st->second++];
    out = Value::tuple({e.first, e.second});
    return true;
  });
}

std::function<Value(const Value&)> prepare_map(Interpreter& in, CallArgs args) {
  Value attribute;
  if (args.pos.empty() && args.take_kw("attribute", attribute)) {
    Value def;
    args.take_kw("default", def);
    if (!args.kw.empty()) filter_arg_error("Unexpected keyword argument '" + args.kw.front().first + "'");
    AttrGetter g = make_attrgetter(attribute, false, def);
    return [&in, g](const Value& item) { return g(in, item); };
  }
  if (args.pos.empty()) filter_arg_error("map requires a filter argument");
  const Value name = args.pos.front();
  args.pos.erase(args.pos.begin());
  return [&in, name, args](const Value& item) {
    CallArgs a = args;
    if (!name.is_str()) throw TemplateError(TemplateError::Kind::Runtime, "TemplateRuntimeError: No filter named " + py_repr(name) + ".");
    return in.call_filter(name.str(), item, a);
  };
}

Value f_map(Interpreter& in, Value v, CallArgs& args) {
  struct State {
    bool started = false;
    std::unique_ptr<Iter> it;
    std::function<Value(const Value&)> func;
  };
  auto st = std::make_shared<State>();
  CallArgs a = args;
  args = CallArgs();
  return gen(in, "generator", [&in, v, a, st](Value& out) {
    if (!st->started) {
      st->started = true;
      if (!truthy(v)) return false;
      st->func = prepare_map(in, a);
      st->it = in.iterate(v);
    }
    if (!st->it) return false;
    Value item;
    if (!st->it->next(item)) return false;
    out = st->func(item);
    return true;
  });
}

Value select_or_reject(Interpreter& in, Value v, CallArgs& args, bool reject, bool lookup_attr) {
  struct State {
    bool started = false;
    std::unique_ptr<Iter> it;
    std::function<bool(const Value&)> func;
  };
  auto st = std::make_shared<State>();
  CallArgs a = args;
  args = CallArgs();
  return gen(in, "generator", [&in, v, a, st, reject, lookup_attr](Value& out) {
    if (!st->started) {
      st->started = true;
      if (!truthy(v)) return false;
      std::optional<AttrGetter> trans;
      std::size_t off = 0;
      if (lookup_attr) {
        if (a.pos.empty()) filter_arg_error("Missing parameter for attribute name");
        trans = make_attrgetter(a.pos[0], false);
        off = 1;
      }
      std::function<bool(const Value&)> test;
      if (a.pos.size() > off) {
        const Value name = a.pos[off];
        CallArgs rest;
        rest.pos.assign(a.pos.begin() + static_cast<std::ptrdiff_t>(off) + 1, a.pos.end());
        rest.kw = a.kw;
        test = [&in, name, rest](const Value& x) {
          CallArgs r = rest;
          if (!name.is_str()) throw TemplateError(TemplateError::Kind::Runtime, "TemplateRuntimeError: No test named " + py_repr(name) + ".");
          return in.call_test(name.str(), x, r);
        };
      } else {
        test = [](const Value& x) { return truthy(x); };
      }
      st->func = [&in, trans, test, reject](const Value& item) {
        const bool r = test(trans ? (*trans)(in, item) : item);
        return reject ? !r : r;
      };
      st->it = in.iterate(v);
    }
    if (!st->it) return false;
    Value item;
    while (st->it->next(item)) {
      if (st->func(item)) {
        out = item;
        return true;
      }
    }
    return false;
  });
}

Value f_select(Interpreter& in, Value v, CallArgs& args) { return select_or_reject(in, std::move(v), args, false, false); }
Value f_reject(Interpreter& in, Value v, CallArgs& args) { return select_or_reject(in, std::move(v), args, true, false); }
Value f_selectattr(Interpreter& in, Value v, CallArgs& args) { return select_or_reject(in, std::move(v), args, false, true); }
Value f_rejectattr(Interpreter& in, Value v, CallArgs& args) { return select_or_reject(in, std::move(v), args, true, true); }

Value min_or_max(Interpreter& in, Value v, CallArgs& args, bool is_max) {
  auto a = bind_args(is_max ? "max" : "min", args, {{"case_sensitive", Value(false)}, {"attribute", Value()}});
  const auto items = in.to_list(v);
  if (items.empty()) return Value::undefined_hint("No aggregated item, sequence was empty.");
  const AttrGetter key = make_attrgetter(a[1], !truthy(a[0]));
  std::size_t best = 0;
  Value best_key = key(in, items[0]);
  for (std::size_t i = 1; i < items.size(); ++i) {
    Value k = key(in, items[i]);
    if (is_max ? py_compare(k, best_key, "gt") : py_compare(k, best_key, "lt")) {
      best = i;
      best_key = k;
    }
  }
  return items[best];
}

Value f_max(Interpreter& in, Value v, CallArgs& args) { return min_or_max(in, std::move(v), args, true); }
Value f_min(Interpreter& in, Value v, CallArgs& args) { return min_or_max(in, std::move(v), args, false); }

Value f_pprint(Interpreter&, Value v, CallArgs& args) {
  bind_args("pprint", args, {});
  return Value(py_repr(v));
}

Value f_random(Interpreter& in, Value v, CallArgs& args) {
  bind_args("random", args, {});
  if (!is_sequence(v) || v.is_dict()) type_error("object of type '" + python_type_name(v) + "' has no len()");
  const auto items = in.to_list(v);
  if (items.empty()) return Value::undefined_hint("No random item, sequence was empty.");
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return items[std::uniform_int_distribution<std::size_t>(0, items.size() - 1)(rng)];
}

Value f_replace(Interpreter& in, Value v, CallArgs& args) {
  auto a = bind_args("replace", args, {{"old", std::nullopt}, {"new", std::nullopt}, {"count", Value()}});
  std::int64_t count = -1;
  if (!a[2].is_none()) {
    if (!a[2].is_integral()) type_error("'" + python_type_name(a[2]) + "' object cannot be interpreted as an integer");
    count = a[2].as_int();
  }
  std::string r = pystr::replace(py_str(v), py_str(a[0]), py_str(a[1]), count);
  in.check_size(r.size());
  in.charge(r.size() / 16);
  return Value(std::move(r));
}

Value f_reverse(Interpreter& in, Value v, CallArgs& args) {
  bind_args("reverse", args, {});
  if (v.is_str()) {
    std::u32string u = uni::to_u32(v.str());
    std::reverse(u.begin(), u.end());
    return Value(uni::from_u32(u), v.is_markup());
  }
  if (auto r = reversed_items(in, v)) {
    auto items = std::make_shared<std::vector<Value>>(std::move(*r));
    auto pos = std::make_shared<std::size_t>(0);
    const std::string type = v.is_dict() ? "dict_reversekeyiterator" : v.is_list() && v.list_kind() == ListKind::List ? "list_reverseiterator" : "reversed";
    return gen(in, type, [items, pos](Value& out) {
      if (*pos >= items->size()) return false;
      out = (*items)[(*pos)++];
      return true;
    });
  }
  if (!is_iterable(v)) filter_arg_error("argument must be iterable");
  auto items = in.to_list(v);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

// Python's round(x, n) for floats: correctly rounded through the shortest decimal string.
double py_round(double x, std::int64_t ndigits) {
  if (!std::isfinite(x) || ndigits > 308) return x;
  if (ndigits < -308) return 0.0 * x;
  char buf[512];
  if (ndigits >= 0) {
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(ndigits), x);
    return std::strtod(buf, nullptr);
  }
  const double p = std::pow(10.0, static_cast<double>(-ndigits));
  double y = x / p;
  double z = std::nearbyint(y);  // round half to even
  if (std::fabs(y - std::trunc(y)) == 0.5) z = 2.0 * std::nearbyint(y / 2.0);
  return z * p;
}

Value f_round(Interpreter&, Value v, CallArgs& args) {
  auto a = bind_args("round", args, {{"precision", Value(0)}, {"method", Value("common")}});
  const std::string method = a[1].is_str() ? a[1].str() : "";
  if (method != "common" && method != "ceil" && method != "floor") filter_arg_error("method must be common, ceil or floor");
  if (v.is_undefined()) raise_undefined(v);
  if (!v.is_number()) type_error("type " + python_type_name(v) + " doesn't define __round__ method");
  if (!a[0].is_integral()) type_error("'" + python_type_name(a[0]) + "' object cannot be interpreted as an integer");
  const std::int64_t prec = a[0].as_int();
  if (method == "common") {
    if (v.is_integral()) {
      if (prec >= 0) return Value(v.as_int());
      return Value(float_to_int(py_round(static_cast<double>(v.as_int()), prec)));
    }
    return Value(py_round(v.as_float(), prec));
  }
  const double p = std::pow(10.0, static_cast<double>(prec));
  const double x = v.as_float() * p;
  const double r = method == "ceil" ? std::ceil(x) : std::floor(x);
  return Value(r / p);
}

Value f_safe(Interpreter&, Value v, CallArgs& args) {
  bind_args("safe", args, {});
  return Value(py_str(v), true);
}

Value f_slice(Interpreter& in, Value v, CallArgs& args) {
  auto a = bind_args("slice", args, {{"slices", std::nullopt}, {"fill_with", Value()}});
  struct State {
    bool started = false;
    std::vector<Value> seq;
    std::int64_t slices = 0, per = 0, extra = 0, offset = 0, n = 0;
  };
  auto st = std::make_shared<State>();
  const Value slices = a[0], fill = a[1];
  return gen(in, "generator", [&in, v, slices, fill, st](Value& out) {
    if (!st->started) {
      st->started = true;
      st->seq = in.to_list(v);
      if (!slices.is_integral()) type_error("unsupported operand type(s) for //: 'int' and '" + python_type_name(slices) + "'");
      st->slices = slices.as_int();
      if (st->slices == 0) throw TemplateError(TemplateError::Kind::Runtime, "ZeroDivisionError: integer division or modulo by zero");
      const auto len = static_cast<std::int64_t>(st->seq.size());
      st->per = len / st->slices;
      st->extra = len % st->slices;
      if (st->per * st->slices > len) { --st->per; st->extra = len - st->per * st->slices; }
    }
    if (st->n >= st->slices) return false;
    const std::int64_t k = st->n++;
    const std::int64_t start = st->offset + k * st->per;
    if (k < st->extra) ++st->offset;
    const std::int64_t end = st->offset + (k + 1) * st->per;
    std::vector<Value> tmp;
    for (std::int64_t i = std::max<std::int64_t>(start, 0); i < end && i < static_cast<std::int64_t>(st->seq.size()); ++i)
      tmp.push_back(st->seq[static_cast<std::size_t>(i)]);
    if (!fill.is_none() && k >= st->extra) tmp.push_back(fill);
    out = Value::list(std::move(tmp));
    return true;
  });
}

Value f_sort(Interpreter& in, Value v, CallArgs& args) {
  auto a = bind_args("sort", args, {{"reverse", Value(false)}, {"case_sensitive", Value(false)}, {"attribute", Value()}});
  const auto getters = make_multi_attrgetter(a[2], !truthy(a[1]));
  std::vector<std::pair<Value, Value>> keyed;
  for (const auto& item : in.to_list(v)) keyed.emplace_back(multi_key(in, getters, item), item);
  const bool rev = truthy(a[0]);
  in.charge(keyed.size() * 4);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return rev ? py_less(y.first, x.first) : py_less(x.first, y.first);
  });
  std::vector<Value> out;
  for (auto& [k, item] : keyed) out.push_back(item);
  return Value::list(std::move(out));
}

Value f_string(Interpreter&, Value v, CallArgs& args) {
  bind_args("string", args, {});
  return soft_str(v);
}

Value f_striptags(Interpreter& in, Value v, CallArgs& args) {
  bind_args("striptags", args, {});
  CallArgs none;
  return call_method(in, Value(py_str(v), true), "striptags", none);
}

Value f_sum(Interpreter& in, Value v, CallArgs& args) {
  auto a = bind_args("sum", args, {{"attribute", Value()}, {"start", Value(0)}});
  if (a[1].is_str()) type_error("sum() can't sum strings [use ''.join(seq) instead]");
  std::optional<AttrGetter> getter;
  if (!a[0].is_none()) getter = make_attrgetter(a[0], false);
  Value rv = a[1];
  auto it = in.iterate(v);
  Value x;
  while (it->next(x)) rv = in.binop(BinOp::Add, rv, getter ? (*getter)(in, x) : x);
  return rv;
}

Value f_title(Interpreter&, Value v, CallArgs& args) {
  bind_args("title", args, {});
  const Value s = soft_str(v);
  return Value(pystr::jinja_title(s.str()), s.is_markup());
}

Value f_tojson(Interpreter& in, Value v, CallArgs& args) {
  auto a = bind_args("tojson", args,
                     {{"ensure_ascii", Value(false)}, {"indent", Value()}, {"separators", Value()}, {"sort_keys", Value(false)}});
  JsonDumpOptions o;
  o.ensure_ascii = truthy(a[0]);
  if (a[1].is_str()) {
    o.indent = a[1].str();
  } else if (a[1].is_integral()) {
    o.indent = std::string(static_cast<std::size_t>(std::clamp<std::int64_t>(a[1].as_int(), 0, 1 << 20)), ' ');
  } else if (!a[1].is_none()) {
    type_error("can't multiply sequence by non-int of type '" + python_type_name(a[1]) + "'");
  }
  if (o.indent) o.item_separator = ",";
  if (!a[2].is_none()) {
    const auto seps = in.to_list(a[2]);
    if (seps.size() != 2)
      value_error(seps.size() < 2 ? "not enough values to unpack (expected 2, got " + std::to_string(seps.size()) + ")"
                                  : "too many values to unpack (expected 2)");
    for (const auto& s : seps)
      if (!s.is_str()) type_error("make_encoder() argument must be str, not " + python_type_name(s));
    o.item_separator = seps[0].str();
    o.key_separator = seps[1].str();
  }
  o.sort_keys = truthy(a[3]);
  return Value(json_dumps(in, v, o));
}

Value f_trim(Interpreter&, Value v, CallArgs& args) {
  auto a = bind_args("trim", args, {{"chars", Value()}});
  const Value s = soft_str(v);
  std::optional<std::string> chars;
  if (!a[0].is_none()) {
    if (!a[0].is_str()) type_error("strip arg must be None or str");
    chars = s.is_markup() && !a[0].is_markup() ? html_escape(a[0].str()) : a[0].str();
  }
  return Value(pystr::strip(s.str(), chars, true, true), s.is_markup());
}

Value f_truncate(Interpreter&, Value v, CallArgs& args) {
  auto a = bind_args("truncate", args,
                     {{"length", Value(255)}, {"killwords", Value(false)}, {"end", Value("...")}, {"leeway", Value()}});
  if (!v.is_str()) type_error("object of type '" + python_type_name(v) + "' has no len()");
  if (!a[0].is_integral() || !(a[3].is_none() || a[3].is_integral()))
    type_error("truncate() length and leeway must be integers");
  const std::int64_t length = a[0].as_int();
  const std::int64_t leeway = a[3].is_none() ? 5 : a[3].as_int();
  const std::string end = py_str(a[2]);
  const auto end_len = static_cast<std::int64_t>(uni::length(end));
  if (length < end_len) throw TemplateError(TemplateError::Kind::Runtime, "AssertionError: expected length >= " + std::to_string(end_len) + ", got " + std::to_string(length));
  if (leeway < 0) throw TemplateError(TemplateError::Kind::Runtime, "AssertionError: expected leeway >= 0, got " + std::to_string(leeway));
  const std::string& s = v.str();
  if (static_cast<std::int64_t>(uni::length(s)) <= length + leeway) return v;
  const std::string head = s.substr(0, uni::byte_offset(s, static_cast<std::size_t>(length - end_len)));
  if (truthy(a[1])) return Value(head + end);
  const auto parts = pystr::rsplit(head, std::string(" "), 1);
  return Value(parts[0] + end);
}

Value f_unique(Interpreter& in, Value v, CallArgs& args) {
  auto a = bind_args("unique", args, {{"case_sensitive", Value(false)}, {"attribute", Value()}});
  struct State {
    bool started = false;
    std::unique_ptr<Iter> it;
    std::vector<Value> seen;
  };
  auto st = std::make_shared<State>();
  const AttrGetter getter = make_attrgetter(a[1], !truthy(a[0]));
  return gen(in, "generator", [&in, v, getter, st](Value& out) {
    if (!st->started) {
      st->started = true;
      st->it = in.iterate(v);
    }
    Value item;
    while (st->it->next(item)) {
      const Value key = getter(in, item);
      if (!is_hashable(key)) type_error("unhashable type: '" + python_type_name(key) + "'");
      bool found = false;
      in.charge(st->seen.size());
      for (const auto& s : st->seen)
        if (py_eq(s, key)) {
          found = true;
          break;
        }
      if (!found) {
        st->seen.push_back(key);
        out = item;
        return true;
      }
    }
    return false;
  });
}

std::string url_quote(const Value& v, bool for_qs) {
  const std::string s = py_str(v);
  std::string out;
  static const char* hex = "0123456789ABCDEF";
  for (unsigned char c : s) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
                      c == '-' || c == '~' || (!for_qs && c == '/');
    if (safe) {
      out.push_back(static_cast<char>(c));
    } else if (for_qs && c == ' ') {
      out.push_back('+');
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

Value f_urlencode(Interpreter& in, Value v, CallArgs& args) {
  bind_args("urlencode", args, {});
  if (v.is_str() || !is_iterable(v)) return Value(url_quote(v, false));
  std::vector<Value> pairs;
  if (v.is_dict()) {
    for (const auto& [k, x] : v.dict().entries) pairs.push_back(Value::tuple({k, x}));
  } else {
    pairs = in.to_list(v);
  }
  std::string out;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const auto kv = in.to_list(pairs[i]);
    if (kv.size() != 2) value_error("expected (key, value) pairs");
    if (i) out += "&";
    out += url_quote(kv[0], true) + "=" + url_quote(kv[1], true);
  }
  return Value(out);
}

Value f_wordcount(Interpreter&, Value v, CallArgs& args) {
  bind_args("wordcount", args, {});
  return Value(static_cast<std::int64_t>(pystr::word_count(soft_str(v).str())));
}

Value f_xmlattr(Interpreter&, Value v, CallArgs& args) {
  auto a = bind_args("xmlattr", args, {{"autospace", Value(true)}});
  if (!v.is_dict()) type_error("'" + python_type_name(v) + "' object has no attribute 'items'");
  std::string rv;
  for (const auto& [k, x] : v.dict().entries) {
    if (x.is_none() || x.is_undefined()) continue;
    const std::string key = py_str(k);
    if (key.find_first_of(" \t\n\r\f\v/>=") != std::string::npos) value_error("Invalid character in attribute name: " + py_repr(k));
    if (!rv.empty()) rv += " ";
    rv += html_escape(key) + "=\"" + (x.is_markup() ? x.str() : html_escape(py_str(x))) + "\"";
  }
  if (truthy(a[0]) && !rv.empty()) rv = " " + rv;
  return Value(rv);
}

Value f_unsupported(Interpreter&, Value, CallArgs&) {
  type_error("this filter (urlize/wordwrap) is not supported in chat templates");
}

const std::unordered_map<std::string, FilterFn>& filters() {
  static const std::unordered_map<std::string, FilterFn> m = {
      {"abs", f_abs}, {"attr", f_attr}, {"batch", f_batch}, {"capitalize", f_capitalize}, {"center", f_center},
      {"count", f_length}, {"d", f_default}, {"default", f_default}, {"dictsort", f_dictsort}, {"e", f_escape},
      {"escape", f_escape}, {"filesizeformat", f_filesizeformat}, {"first", f_first}, {"float", f_float},
      {"forceescape", f_forceescape}, {"format", f_format}, {"groupby", f_groupby}, {"indent", f_indent},
      {"int", f_int}, {"join", f_join}, {"last", f_last}, {"length", f_length}, {"list", f_list}, {"lower", f_lower},
      {"items", f_items}, {"map", f_map}, {"min", f_min}, {"max", f_max}, {"pprint", f_pprint}, {"random", f_random},
      {"reject", f_reject}, {"rejectattr", f_rejectattr}, {"replace", f_replace}, {"reverse", f_reverse},
      {"round", f_round}, {"safe", f_safe}, {"select", f_select}, {"selectattr", f_selectattr}, {"slice", f_slice},
      {"sort", f_sort}, {"string", f_string}, {"striptags", f_striptags}, {"sum", f_sum}, {"title", f_title},
      {"trim", f_trim}, {"truncate", f_truncate}, {"unique", f_unique}, {"upper", f_upper}, {"urlencode", f_urlencode},
      {"urlize", f_unsupported}, {"wordcount", f_wordcount}, {"wordwrap", f_unsupported}, {"xmlattr", f_xmlattr},
      {"tojson", f_tojson},
  };
  return m;
}

}  // namespace

bool is_known_filter(std::string_view name) { return filters().count(std::string(name)) != 0; }

Value Interpreter::call_filter(const std::string& name, Value value, CallArgs& args) {
  auto it = filters().find(name);
  if (it == filters().end()) throw TemplateError(TemplateError::Kind::Runtime, "TemplateRuntimeError: No filter named '" + name + "' found.");
  charge(1);
  return it->second(*this, std::move(value), args);
}

}  // namespace tf::jinja
