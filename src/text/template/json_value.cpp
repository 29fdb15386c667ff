#include "json_value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "interpreter.h"
#include "py_json.h"
#include "template_error.h"
#include "unicode.h"

namespace tf::jinja {

Value from_json(const nlohmann::ordered_json& j) {
  using J = nlohmann::ordered_json;
  switch (j.type()) {
    case J::value_t::null:
      return Value();
    case J::value_t::boolean:
      return Value(j.get<bool>());
    case J::value_t::number_integer:
      return Value(j.get<std::int64_t>());
    case J::value_t::number_unsigned: {
      const auto u = j.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX))
        throw TemplateError(TemplateError::Kind::Input, "integer in the input is too large (over 2^63-1)");
      return Value(static_cast<std::int64_t>(u));
    }
    case J::value_t::number_float:
      return Value(j.get<double>());
    case J::value_t::string:
      return Value(j.get<std::string>());
    case J::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json(e));
      return Value::list(std::move(items));
    }
    case J::value_t::object: {
      DictData d;
      for (const auto& [k, v] : j.items()) d.set(Value(k), from_json(v));
      return make_dict(std::move(d));
    }
    default:
      throw TemplateError(TemplateError::Kind::Input, "unsupported JSON value in the input");
  }
}

namespace {

void dump_string(std::string& out, std::string_view s, bool ensure_ascii) {
  append_py_json_string(out, s, ensure_ascii);
}

std::string float_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return float_repr(d);
}

class Dumper {
 public:
  Dumper(Interpreter& in, const JsonDumpOptions& o) : in_(in), o_(o) {}

  void dump(const Value& v, int level) {
    if (level > 200) value_error("Circular reference detected");
    switch (v.type()) {
      case Value::Type::None:
        out += "null";
        return;
      case Value::Type::Bool:
        out += v.as_bool() ? "true" : "false";
        return;
      case Value::Type::Int:
        out += std::to_string(v.as_int());
        return;
      case Value::Type::Float:
        out += float_json(v.as_float());
        return;
      case Value::Type::Str:
        dump_string(out, v.str(), o_.ensure_ascii);
        in_.check_size(out.size());
        return;
      case Value::Type::List:
        if (v.is_sequence_list()) {
          dump_list(v.items(), level);
          return;
        }
        break;
      case Value::Type::Dict:
        dump_dict(v.dict(), level);
        return;
      default:
        break;
    }
    type_error("Object of type " + python_type_name(v) + " is not JSON serializable");
  }

  std::string out;

 private:
  Interpreter& in_;
  const JsonDumpOptions& o_;

  void newline(int level) {
    out.push_back('\n');
    for (int i = 0; i < level; ++i) out += *o_.indent;
  }

  void dump_list(const std::vector<Value>& items, int level) {
    if (items.empty()) {
      out += "[]";
      return;
    }
    in_.charge(items.size());
    out.push_back('[');
    if (o_.indent) newline(level + 1);
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i) {
        out += o_.item_separator;
        if (o_.indent) newline(level + 1);
      }
      dump(items[i], level + 1);
    }
    if (o_.indent) newline(level);
    out.push_back(']');
  }

  std::string key_string(const Value& k) {
    switch (k.type()) {
      case Value::Type::Str:
        return k.str();
      case Value::Type::Float:
        return float_json(k.as_float());
      case Value::Type::Bool:
        return k.as_bool() ? "true" : "false";
      case Value::Type::Int:
        return std::to_string(k.as_int());
      case Value::Type::None:
        return "null";
      default:
        type_error("keys must be str, int, float, bool or None, not " + python_type_name(k));
    }
  }

  void dump_dict(const DictData& d, int level) {
    if (d.size() == 0) {
      out += "{}";
      return;
    }
    in_.charge(d.size());
    std::vector<const std::pair<Value, Value>*> entries;
    for (const auto& e : d.entries) entries.push_back(&e);
    if (o_.sort_keys)
      std::stable_sort(entries.begin(), entries.end(),
                       [](const auto* a, const auto* b) { return py_less(a->first, b->first); });
    out.push_back('{');
    if (o_.indent) newline(level + 1);
    bool first = true;
    for (const auto* e : entries) {
      if (!first) {
        out += o_.item_separator;
        if (o_.indent) newline(level + 1);
      }
      first = false;
      dump_string(out, key_string(e->first), o_.ensure_ascii);
      out += o_.key_separator;
      dump(e->second, level + 1);
    }
    if (o_.indent) newline(level);
    out.push_back('}');
  }
};

}  // namespace

std::string json_dumps(Interpreter& in, const Value& v, const JsonDumpOptions& opts) {
  Dumper d(in, opts);
  d.dump(v, 0);
  in.charge(d.out.size() / 16);
  return std::move(d.out);
}

}  // namespace tf::jinja
