#include "value.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "template_error.h"
#include "unicode.h"

namespace tf::jinja {

namespace {

std::string object_type_repr(const std::string& type) { return type == "NoneType" ? "None" : type + " object"; }

void repr_str(std::string& out, std::string_view s, bool markup) {
  if (markup) out += "Markup(";
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  out.push_back(quote);
  char buf[16];
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b >= 0x20 && b < 0x7F) {
      if (b == static_cast<unsigned char>(quote) || b == '\\') out.push_back('\\');
      out.push_back(static_cast<char>(b));
      ++i;
      continue;
    }
    const std::size_t start = i;
    const char32_t c = uni::decode(s, i);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x80 || (c >= 0xDC80 && c <= 0xDCFF)) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c < 0x80 ? c : c));
      out += buf;
    } else if (uni::is_printable(c)) {
      out.append(s.substr(start, i - start));
    } else if (c < 0x100) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      out += buf;
    } else if (c < 0x10000) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
      out += buf;
    }
  }
  out.push_back(quote);
  if (markup) out.push_back(')');
}

constexpr int kMaxReprDepth = 200;

void repr_into(std::string& out, const Value& v, int depth);

void repr_items(std::string& out, const std::vector<Value>& items, int depth) {
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    repr_into(out, items[i], depth + 1);
  }
}

void repr_dict(std::string& out, const DictData& d, int depth) {
  out.push_back('{');
  bool first = true;
  for (const auto& [k, v] : d.entries) {
    if (!first) out += ", ";
    first = false;
    repr_into(out, k, depth + 1);
    out += ": ";
    repr_into(out, v, depth + 1);
  }
  out.push_back('}');
}

void repr_into(std::string& out, const Value& v, int depth) {
  if (depth > kMaxReprDepth) throw TemplateError(TemplateError::Kind::Runtime, "maximum recursion depth exceeded in repr");
  switch (v.type()) {
    case Value::Type::Missing:
    case Value::Type::Undefined:
      out += "Undefined";
      return;
    case Value::Type::None:
      out += "None";
      return;
    case Value::Type::Bool:
      out += v.as_bool() ? "True" : "False";
      return;
    case Value::Type::Int:
      out += std::to_string(v.as_int());
      return;
    case Value::Type::Float:
      out += float_repr(v.as_float());
      return;
    case Value::Type::Str:
      repr_str(out, v.str(), v.is_markup());
      return;
    case Value::Type::List:
      switch (v.list_kind()) {
        case ListKind::List:
          out.push_back('[');
          repr_items(out, v.items(), depth);
          out.push_back(']');
          return;
        case ListKind::Tuple:
        case ListKind::GroupTuple:
          out.push_back('(');
          repr_items(out, v.items(), depth);
          if (v.items().size() == 1) out.push_back(',');
          out.push_back(')');
          return;
        case ListKind::DictKeys:
        case ListKind::DictValues:
        case ListKind::DictItems:
          out += v.list_kind() == ListKind::DictKeys ? "dict_keys([" : v.list_kind() == ListKind::DictValues ? "dict_values([" : "dict_items([";
          repr_items(out, v.items(), depth);
          out += "])";
          return;
        case ListKind::Range: {
          const auto& l = *v.list_ptr();
          out += "range(" + std::to_string(l.range_start) + ", " + std::to_string(l.range_stop);
          if (l.range_step != 1) out += ", " + std::to_string(l.range_step);
          out += ")";
          return;
        }
      }
      return;
    case Value::Type::Dict:
      repr_dict(out, v.dict(), depth);
      return;
    case Value::Type::Object:
      out += v.object().repr();
      return;
  }
}

// -1, 0, 1, or 2 when unordered (NaN)
int num_cmp(const Value& a, const Value& b) {
  if (!a.is_float() && !b.is_float()) {
    const auto x = a.as_int(), y = b.as_int();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_float() && b.is_float()) {
    const double x = a.as_float(), y = b.as_float();
    if (std::isnan(x) || std::isnan(y)) return 2;
    return x < y ? -1 : x > y ? 1 : 0;
  }
  // exact int <-> float comparison, as Python does
  const bool a_int = !a.is_float();
  const std::int64_t i = a_int ? a.as_int() : b.as_int();
  const double d = a_int ? b.as_float() : a.as_float();
  int r;  // sign of (i - d)
  if (std::isnan(d)) return 2;
  if (d >= 9223372036854775808.0) {
    r = -1;
  } else if (d < -9223372036854775808.0) {
    r = 1;
  } else {
    const double t = std::trunc(d);
    const auto ti = static_cast<std::int64_t>(t);
    if (i < ti)
      r = -1;
    else if (i > ti)
      r = 1;
    else
      r = (d - t) > 0 ? -1 : (d - t) < 0 ? 1 : 0;
  }
  return a_int ? r : -r;
}

bool op_holds(int c, std::string_view op) {
  if (c == 2) return false;
  if (op == "lt") return c < 0;
  if (op == "le") return c <= 0;
  if (op == "gt") return c > 0;
  return c >= 0;
}

const char* op_symbol(std::string_view op) {
  if (op == "lt") return "<";
  if (op == "le") return "<=";
  if (op == "gt") return ">";
  return ">=";
}

}  // namespace

std::string UndefinedInfo::message() const {
  if (!hint.empty()) return hint;
  if (obj_type.empty()) return "'" + name + "' is undefined";
  if (!name_is_str) return object_type_repr(obj_type) + " has no element " + name_repr;
  return "'" + object_type_repr(obj_type) + "' has no attribute '" + name + "'";
}

Value Value::undefined(std::string name) {
  auto info = std::make_shared<UndefinedInfo>();
  info->name = std::move(name);
  Value v;
  v.v_ = UndefValue{std::move(info)};
  return v;
}

Value Value::undefined_hint(std::string hint) {
  auto info = std::make_shared<UndefinedInfo>();
  info->hint = std::move(hint);
  Value v;
  v.v_ = UndefValue{std::move(info)};
  return v;
}

Value Value::undefined_attr(const Value& obj, std::string attr) {
  auto info = std::make_shared<UndefinedInfo>();
  info->name = std::move(attr);
  info->obj_type = python_type_name(obj);
  Value v;
  v.v_ = UndefValue{std::move(info)};
  return v;
}

Value Value::undefined_item(const Value& obj, const Value& key) {
  if (key.is_str()) return undefined_attr(obj, key.str());
  auto info = std::make_shared<UndefinedInfo>();
  info->name_is_str = false;
  info->name_repr = py_repr(key);
  info->obj_type = python_type_name(obj);
  Value v;
  v.v_ = UndefValue{std::move(info)};
  return v;
}

Value Value::unsafe(const Value& obj, std::string attr) {
  auto info = std::make_shared<UndefinedInfo>();
  info->hint = "access to attribute '" + attr + "' of '" + python_type_name(obj) + "' object is unsafe.";
  info->name = std::move(attr);
  info->obj_type = python_type_name(obj);
  info->error = UndefinedInfo::Error::Security;
  Value v;
  v.v_ = UndefValue{std::move(info)};
  return v;
}

Value Value::list(std::vector<Value> items, ListKind kind) {
  auto l = std::make_shared<ListData>();
  l->items = std::move(items);
  l->kind = kind;
  return Value(std::shared_ptr<const ListData>(std::move(l)));
}

const void* Value::identity() const {
  switch (type()) {
    case Type::Str:
      return std::get<StrValue>(v_).s.get();
    case Type::List:
      return list_ptr().get();
    case Type::Dict:
      return dict_ptr().get();
    case Type::Object:
      return object_ptr().get();
    default:
      return nullptr;
  }
}

Value make_dict(DictData d) { return Value(std::make_shared<const DictData>(std::move(d))); }

const Value* DictData::find(std::string_view key) const {
  auto it = str_index_.find(key);
  return it == str_index_.end() ? nullptr : &entries[it->second].second;
}

const Value* DictData::find(const Value& key) const {
  if (key.is_str()) return find(std::string_view(key.str()));
  if (!is_hashable(key)) type_error("unhashable type: '" + python_type_name(key) + "'");
  for (const auto& [k, v] : entries)
    if (!k.is_str() && py_eq(k, key)) return &v;
  return nullptr;
}

void DictData::set(Value key, Value value) {
  if (key.is_str()) {
    auto it = str_index_.find(std::string_view(key.str()));
    if (it != str_index_.end()) {
      entries[it->second].second = std::move(value);
      return;
    }
    entries.emplace_back(std::move(key), std::move(value));
    str_index_.emplace(std::string_view(entries.back().first.str()), entries.size() - 1);
    return;
  }
  if (!is_hashable(key)) type_error("unhashable type: '" + python_type_name(key) + "'");
  for (auto& [k, v] : entries)
    if (!k.is_str() && py_eq(k, key)) {
      v = std::move(value);
      return;
    }
  entries.emplace_back(std::move(key), std::move(value));
}

std::string Object::repr() const { return "<" + type_name() + " object>"; }
bool Object::get_attr(std::string_view, Value&) { return false; }
Value Object::call(Interpreter&, CallArgs&) { type_error("'" + type_name() + "' object is not callable"); }
bool Object::next(Interpreter&, Value&) { type_error("'" + type_name() + "' object is not an iterator"); }

const Value* CallArgs::find_kw(std::string_view name) const {
  for (const auto& [k, v] : kw)
    if (k == name) return &v;
  return nullptr;
}

bool CallArgs::take_kw(std::string_view name, Value& out) {
  for (auto it = kw.begin(); it != kw.end(); ++it)
    if (it->first == name) {
      out = std::move(it->second);
      kw.erase(it);
      return true;
    }
  return false;
}

std::string Namespace::repr() const {
  std::string out = "<Namespace ";
  repr_dict(out, attrs, 0);
  out += ">";
  return out;
}

bool Namespace::get_attr(std::string_view name, Value& out) {
  if (const Value* v = attrs.find(name)) {
    out = *v;
    return true;
  }
  return false;
}

std::string python_type_name(const Value& v) {
  switch (v.type()) {
    case Value::Type::Missing:
    case Value::Type::Undefined:
      return "Undefined";
    case Value::Type::None:
      return "NoneType";
    case Value::Type::Bool:
      return "bool";
    case Value::Type::Int:
      return "int";
    case Value::Type::Float:
      return "float";
    case Value::Type::Str:
      return v.is_markup() ? "Markup" : "str";
    case Value::Type::List:
      switch (v.list_kind()) {
        case ListKind::List:
          return "list";
        case ListKind::Tuple:
          return "tuple";
        case ListKind::GroupTuple:
          return "_GroupTuple";
        case ListKind::DictKeys:
          return "dict_keys";
        case ListKind::DictValues:
          return "dict_values";
        case ListKind::DictItems:
          return "dict_items";
        case ListKind::Range:
          return "range";
      }
      return "list";
    case Value::Type::Dict:
      return "dict";
    case Value::Type::Object:
      return v.object().type_name();
  }
  return "object";
}

bool truthy(const Value& v) {
  switch (v.type()) {
    case Value::Type::Missing:
    case Value::Type::Undefined:
    case Value::Type::None:
      return false;
    case Value::Type::Bool:
      return v.as_bool();
    case Value::Type::Int:
      return v.as_int() != 0;
    case Value::Type::Float:
      return v.as_float() != 0.0;
    case Value::Type::Str:
      return !v.str().empty();
    case Value::Type::List:
      return !v.items().empty();
    case Value::Type::Dict:
      return v.dict().size() != 0;
    case Value::Type::Object:
      return v.object().truthy();
  }
  return false;
}

std::string py_str(const Value& v) {
  switch (v.type()) {
    case Value::Type::Missing:
    case Value::Type::Undefined:
      return "";
    case Value::Type::Str:
      return v.str();
    default: {
      std::string out;
      repr_into(out, v, 0);
      return out;
    }
  }
}

std::string py_repr(const Value& v) {
  std::string out;
  repr_into(out, v, 0);
  return out;
}

bool py_eq(const Value& a, const Value& b) {
  const auto ta = a.type(), tb = b.type();
  if (a.is_undefined() || b.is_undefined()) return a.is_undefined() && b.is_undefined();
  if (a.is_number() && b.is_number()) return num_cmp(a, b) == 0;
  if (ta != tb) return false;
  switch (ta) {
    case Value::Type::None:
      return true;
    case Value::Type::Str:
      return a.str() == b.str();
    case Value::Type::List: {
      const ListKind ka = a.list_kind(), kb = b.list_kind();
      const bool a_tuple = ka == ListKind::Tuple || ka == ListKind::GroupTuple;
      const bool b_tuple = kb == ListKind::Tuple || kb == ListKind::GroupTuple;
      if (a.identity() == b.identity()) return true;
      if (ka == ListKind::List || a_tuple) {
        if (!(kb == ListKind::List || b_tuple) || (ka == ListKind::List) != (kb == ListKind::List)) return false;
        const auto& x = a.items();
        const auto& y = b.items();
        if (x.size() != y.size()) return false;
        for (std::size_t i = 0; i < x.size(); ++i)
          if (x[i].identity() != y[i].identity() || !x[i].identity())
            if (!py_eq(x[i], y[i])) return false;
        return true;
      }
      if (ka == ListKind::DictValues || kb == ListKind::DictValues) return false;
      if (ka != kb) return false;
      // set-like views
      const auto& x = a.items();
      const auto& y = b.items();
      if (x.size() != y.size()) return false;
      for (const auto& e : x) {
        bool found = false;
        for (const auto& f : y)
          if (py_eq(e, f)) {
            found = true;
            break;
          }
        if (!found) return false;
      }
      return true;
    }
    case Value::Type::Dict: {
      const auto& x = a.dict();
      const auto& y = b.dict();
      if (&x == &y) return true;
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.entries) {
        const Value* o = y.find(k);
        if (!o || !py_eq(v, *o)) return false;
      }
      return true;
    }
    case Value::Type::Object:
      return a.identity() == b.identity();
    default:
      return false;
  }
}

bool py_compare(const Value& a, const Value& b, std::string_view op) {
  if (a.is_undefined()) raise_undefined(a);
  if (b.is_undefined()) raise_undefined(b);
  if (a.is_number() && b.is_number()) return op_holds(num_cmp(a, b), op);
  if (a.is_str() && b.is_str()) {
    const int c = a.str().compare(b.str());
    return op_holds(c < 0 ? -1 : c > 0 ? 1 : 0, op);
  }
  if (a.is_list() && b.is_list()) {
    const bool a_list = a.list_kind() == ListKind::List, b_list = b.list_kind() == ListKind::List;
    if (a_list == b_list && (a.is_sequence_list() && b.is_sequence_list())) {
      const auto& x = a.items();
      const auto& y = b.items();
      std::size_t i = 0;
      for (; i < x.size() && i < y.size(); ++i)
        if (!py_eq(x[i], y[i])) break;
      if (i >= x.size() || i >= y.size()) {
        const int c = x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
        return op_holds(c, op);
      }
      return py_compare(x[i], y[i], op);
    }
  }
  type_error(std::string("'") + op_symbol(op) + "' not supported between instances of '" + python_type_name(a) +
             "' and '" + python_type_name(b) + "'");
}

bool py_less(const Value& a, const Value& b) { return py_compare(a, b, "lt"); }

bool is_hashable(const Value& v) {
  switch (v.type()) {
    case Value::Type::List:
      if (v.list_kind() == ListKind::Tuple || v.list_kind() == ListKind::GroupTuple) {
        for (const auto& e : v.items())
          if (!is_hashable(e)) return false;
        return true;
      }
      return v.list_kind() == ListKind::DictValues || v.list_kind() == ListKind::Range;
    case Value::Type::Dict:
      return false;
    default:
      return true;
  }
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string_view s(buf, static_cast<std::size_t>(r.ptr - buf));
  std::string out;
  if (!s.empty() && s[0] == '-') {
    out.push_back('-');
    s.remove_prefix(1);
  }
  const std::size_t e = s.find('e');
  std::string digits;
  for (char c : s.substr(0, e))
    if (c != '.') digits.push_back(c);
  int exp = 0;
  std::from_chars(s.data() + e + 1 + (s[e + 1] == '+' ? 1 : 0), s.data() + s.size(), exp);
  const int decpt = exp + 1;
  const int n = static_cast<int>(digits.size());
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0.";
      out.append(static_cast<std::size_t>(-decpt), '0');
      out += digits;
    } else if (decpt >= n) {
      out += digits;
      out.append(static_cast<std::size_t>(decpt - n), '0');
      out += ".0";
    } else {
      out += digits.substr(0, static_cast<std::size_t>(decpt));
      out.push_back('.');
      out += digits.substr(static_cast<std::size_t>(decpt));
    }
    return out;
  }
  out.push_back(digits[0]);
  if (n > 1) {
    out.push_back('.');
    out += digits.substr(1);
  }
  const int x = decpt - 1;
  char eb[16];
  std::snprintf(eb, sizeof eb, "e%c%02d", x < 0 ? '-' : '+', x < 0 ? -x : x);
  out += eb;
  return out;
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '\'':
        out += "&#39;";
        break;
      case '"':
        out += "&#34;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::int64_t float_to_int(double d) {
  if (std::isnan(d)) value_error("cannot convert float NaN to integer");
  if (std::isinf(d)) throw TemplateError(TemplateError::Kind::Runtime, "OverflowError: cannot convert float infinity to integer");
  const double t = std::trunc(d);
  if (t >= 9223372036854775808.0 || t < -9223372036854775808.0)
    throw TemplateError(TemplateError::Kind::Runtime, "OverflowError: integer too large for this implementation (64-bit)");
  return static_cast<std::int64_t>(t);
}

void raise_undefined(const Value& v) {
  if (v.is_missing()) throw TemplateError(TemplateError::Kind::Runtime, "UndefinedError: value is undefined");
  const auto& info = v.undef();
  const char* prefix = info.error == UndefinedInfo::Error::Security ? "SecurityError: " : "UndefinedError: ";
  throw TemplateError(TemplateError::Kind::Runtime, prefix + info.message());
}

void type_error(const std::string& message) {
  throw TemplateError(TemplateError::Kind::Runtime, "TypeError: " + message);
}

void value_error(const std::string& message) {
  throw TemplateError(TemplateError::Kind::Runtime, "ValueError: " + message);
}

}  // namespace tf::jinja
