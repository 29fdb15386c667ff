// jinja2's builtin tests (`is odd`, `is defined`, ...), following jinja2 3.1; the Python-kind predicates
// they share with the filters (builtin_kinds.h).
#include "builtin_kinds.h"
#include "objects.h"
#include "symbols.h"
#include "template_error.h"
#include "unicode.h"

namespace tf::jinja {

bool is_sequence(const Value& v) {
  switch (v.type()) {
    case Value::Type::Str:
    case Value::Type::Dict:
    case Value::Type::Undefined:
      return true;
    case Value::Type::List:
      return v.list_kind() == ListKind::List || v.list_kind() == ListKind::Tuple ||
             v.list_kind() == ListKind::GroupTuple || v.list_kind() == ListKind::Range;
    default:
      return false;
  }
}

bool is_iterable(const Value& v) {
  switch (v.type()) {
    case Value::Type::Str:
    case Value::Type::Dict:
    case Value::Type::Undefined:
    case Value::Type::List:
      return true;
    case Value::Type::Object:
      return v.object().iterable();
    default:
      return false;
  }
}

bool is_callable(const Value& v) { return v.is_undefined() || (v.is_object() && v.object().callable()); }

namespace {

using TestFn = bool (*)(Interpreter&, const Value&, CallArgs&);

// ---- tests ---------------------------------------------------------------------------------------

Value one_arg(const char* name, CallArgs& args, const char* param) {
  return bind_args(name, args, {{param, std::nullopt}})[0];
}

bool t_odd(Interpreter& in, const Value& v, CallArgs& args) {
  bind_args("odd", args, {});
  return py_eq(in.binop(BinOp::Mod, v, Value(2)), Value(1));
}
bool t_even(Interpreter& in, const Value& v, CallArgs& args) {
  bind_args("even", args, {});
  return py_eq(in.binop(BinOp::Mod, v, Value(2)), Value(0));
}
bool t_divisibleby(Interpreter& in, const Value& v, CallArgs& args) {
  const Value num = one_arg("divisibleby", args, "num");
  return py_eq(in.binop(BinOp::Mod, v, num), Value(0));
}
bool t_defined(Interpreter&, const Value& v, CallArgs& args) {
  bind_args("defined", args, {});
  return !v.is_undefined();
}
bool t_undefined(Interpreter&, const Value& v, CallArgs& args) {
  bind_args("undefined", args, {});
  return v.is_undefined();
}
bool t_filter(Interpreter&, const Value& v, CallArgs& args) {
  bind_args("filter", args, {});
  return v.is_str() && is_known_filter(v.str());
}
bool t_test(Interpreter&, const Value& v, CallArgs& args);
bool t_none(Interpreter&, const Value& v, CallArgs& args) {
  bind_args("none", args, {});
  return v.is_none();
}
bool t_boolean(Interpreter&, const Value& v, CallArgs& args) {
  bind_args("boolean", args, {});
  return v.is_bool();
}
bool t_false(Interpreter&, const Value& v, CallArgs& args) {
  bind_args("false", args, {});
  return v.is_bool() && !v.as_bool();
}
bool t_true(Interpreter&, const Value& v, CallArgs& args) {
  bind_args("true", args, {});
  return v.is_bool() && v.as_bool();
}
bool t_integer(Interpreter&, const Value& v, CallArgs& args) {
  bind_args("integer", args, {});
  return v.is_int();
}
bool t_float(Interpreter&, const Value& v, CallArgs& args) {
  bind_args("float", args, {});
  return v.is_float();
}
bool t_lower(Interpreter&, const Value& v, CallArgs& args) {
  bind_args("lower", args, {});
  return uni::str_islower(py_str(v));
}
bool t_upper(Interpreter&, const Value& v, CallArgs& args) {
  bind_args("upper", args, {});
  return uni::str_isupper(py_str(v));
}
bool t_string(Interpreter&, const Value& v, CallArgs& args) {
  bind_args("string", args, {});
  return v.is_str();
}
bool t_mapping(Interpreter&, const Value& v, CallArgs& args) {
  bind_args("mapping", args, {});
  return v.is_dict();
}
bool t_number(Interpreter&, const Value& v, CallArgs& args) {
  bind_args("number", args, {});
  return v.is_number();
}
bool t_sequence(Interpreter&, const Value& v, CallArgs& args) {
  bind_args("sequence", args, {});
  return is_sequence(v);
}
bool t_iterable(Interpreter&, const Value& v, CallArgs& args) {
  bind_args("iterable", args, {});
  return is_iterable(v);
}
bool t_callable(Interpreter&, const Value& v, CallArgs& args) {
  bind_args("callable", args, {});
  return is_callable(v);
}
bool t_sameas(Interpreter&, const Value& v, CallArgs& args) {
  const Value other = one_arg("sameas", args, "other");
  if (v.is_none() || other.is_none()) return v.is_none() && other.is_none();
  if (v.is_bool() || other.is_bool()) return v.is_bool() && other.is_bool() && v.as_bool() == other.as_bool();
  if (v.is_int() && other.is_int()) return v.as_int() == other.as_int() && v.as_int() >= -5 && v.as_int() <= 256;
  if (v.is_undefined() || other.is_undefined() || v.is_number() || other.is_number()) return false;
  return v.identity() && v.identity() == other.identity();
}
bool t_escaped(Interpreter&, const Value& v, CallArgs& args) {
  bind_args("escaped", args, {});
  return v.is_markup();
}
bool t_in(Interpreter& in, const Value& v, CallArgs& args) {
  const Value seq = one_arg("in", args, "seq");
  return in.contains(seq, v);
}
bool t_eq(Interpreter&, const Value& v, CallArgs& args) { return py_eq(v, one_arg("eq", args, "b")); }
bool t_ne(Interpreter&, const Value& v, CallArgs& args) { return !py_eq(v, one_arg("ne", args, "b")); }
bool t_gt(Interpreter&, const Value& v, CallArgs& args) { return py_compare(v, one_arg("gt", args, "b"), "gt"); }
bool t_ge(Interpreter&, const Value& v, CallArgs& args) { return py_compare(v, one_arg("ge", args, "b"), "ge"); }
bool t_lt(Interpreter&, const Value& v, CallArgs& args) { return py_compare(v, one_arg("lt", args, "b"), "lt"); }
bool t_le(Interpreter&, const Value& v, CallArgs& args) { return py_compare(v, one_arg("le", args, "b"), "le"); }

const std::unordered_map<std::string, TestFn>& tests() {
  static const std::unordered_map<std::string, TestFn> m = {
      {"odd", t_odd}, {"even", t_even}, {"divisibleby", t_divisibleby}, {"defined", t_defined},
      {"undefined", t_undefined}, {"filter", t_filter}, {"test", t_test}, {"none", t_none}, {"boolean", t_boolean},
      {"false", t_false}, {"true", t_true}, {"integer", t_integer}, {"float", t_float}, {"lower", t_lower},
      {"upper", t_upper}, {"string", t_string}, {"mapping", t_mapping}, {"number", t_number},
      {"sequence", t_sequence}, {"iterable", t_iterable}, {"callable", t_callable}, {"sameas", t_sameas},
      {"escaped", t_escaped}, {"in", t_in}, {"==", t_eq}, {"eq", t_eq}, {"equalto", t_eq}, {"!=", t_ne},
      {"ne", t_ne}, {">", t_gt}, {"gt", t_gt}, {"greaterthan", t_gt}, {"ge", t_ge}, {">=", t_ge}, {"<", t_lt},
      {"lt", t_lt}, {"lessthan", t_lt}, {"<=", t_le}, {"le", t_le},
  };
  return m;
}

bool t_test(Interpreter&, const Value& v, CallArgs& args) {
  bind_args("test", args, {});
  return v.is_str() && tests().count(v.str());
}

}  // namespace

bool is_known_test(std::string_view name) { return tests().count(std::string(name)) != 0; }

bool Interpreter::call_test(const std::string& name, const Value& value, CallArgs& args) {
  auto it = tests().find(name);
  if (it == tests().end()) throw TemplateError(TemplateError::Kind::Runtime, "TemplateRuntimeError: No test named '" + name + "' found.");
  charge(1);
  return it->second(*this, value, args);
}


}  // namespace tf::jinja
