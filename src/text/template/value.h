#pragma once
// Template values with Python semantics: the types a chat template meets (None, bool, int, float, str,
// list/tuple, dict, the dict views, jinja2's Undefined) plus runtime objects (namespace, macros, loop
// contexts, bound methods, lazy iterators). Containers are immutable once built, as in jinja2's
// ImmutableSandboxedEnvironment; only a namespace's attributes can change.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace tf::jinja {

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

class Value;
class Object;
class Interpreter;
struct CallArgs;

// Why a value is undefined; the message of the error raised when it is used.
struct UndefinedInfo {
  enum class Error { Undefined, Security };
  std::string hint;       // explicit message, when set
  std::string name;       // the missing name/attribute (empty: none)
  std::string obj_type;   // python type name of the object that lacked it (empty: a plain name)
  bool name_is_str = true;
  std::string name_repr;  // repr of a non-string key
  Error error = Error::Undefined;
  std::string message() const;
};

enum class ListKind : std::uint8_t { List, Tuple, DictKeys, DictValues, DictItems, GroupTuple, Range };

struct ListData {
  std::vector<Value> items;
  ListKind kind = ListKind::List;
  std::int64_t range_start = 0, range_stop = 0, range_step = 1;  // ListKind::Range: range(start, stop, step)
};

struct DictData;

// A string value. `markup` marks a markupsafe.Markup (from |safe, |escape): concatenating with + or
// formatting with % escapes the other operand, as markupsafe does.
struct StrValue {
  std::shared_ptr<const std::string> s;
  bool markup = false;
};

struct UndefValue {
  std::shared_ptr<const UndefinedInfo> info;
};

struct NoneValue {};
struct MissingValue {};  // an unassigned frame slot (jinja2's `missing`), never seen by templates

class Value {
 public:
  enum class Type : std::uint8_t { Missing, Undefined, None, Bool, Int, Float, Str, List, Dict, Object };

  Value() : v_(NoneValue{}) {}
  Value(bool b) : v_(b) {}
  Value(std::int64_t i) : v_(i) {}
  Value(int i) : v_(static_cast<std::int64_t>(i)) {}
  Value(double d) : v_(d) {}
  Value(std::string s, bool markup = false) : v_(StrValue{std::make_shared<const std::string>(std::move(s)), markup}) {}
  Value(const char* s) : Value(std::string(s)) {}
  Value(std::shared_ptr<const ListData> l) : v_(std::move(l)) {}
  Value(std::shared_ptr<const DictData> d) : v_(std::move(d)) {}
  Value(std::shared_ptr<Object> o) : v_(std::move(o)) {}

  static Value none() { return Value(); }
  static Value missing() { Value v; v.v_ = MissingValue{}; return v; }
  static Value undefined(std::string name);  // "'name' is undefined"
  static Value undefined_hint(std::string hint);
  static Value undefined_attr(const Value& obj, std::string attr);
  static Value undefined_item(const Value& obj, const Value& key);
  static Value unsafe(const Value& obj, std::string attr);  // SecurityError on use
  static Value list(std::vector<Value> items, ListKind kind = ListKind::List);
  static Value tuple(std::vector<Value> items) { return list(std::move(items), ListKind::Tuple); }
  static Value markup(std::string s) { return Value(std::move(s), true); }

  Type type() const { return static_cast<Type>(v_.index()); }
  bool is_missing() const { return type() == Type::Missing; }
  bool is_undefined() const { return type() == Type::Undefined; }
  bool is_none() const { return type() == Type::None; }
  bool is_bool() const { return type() == Type::Bool; }
  bool is_int() const { return type() == Type::Int; }      // not bool
  bool is_float() const { return type() == Type::Float; }
  bool is_number() const { auto t = type(); return t == Type::Bool || t == Type::Int || t == Type::Float; }
  bool is_integral() const { auto t = type(); return t == Type::Bool || t == Type::Int; }  // python int incl. bool
  bool is_str() const { return type() == Type::Str; }
  bool is_markup() const { return is_str() && std::get<StrValue>(v_).markup; }
  bool is_list() const { return type() == Type::List; }
  bool is_dict() const { return type() == Type::Dict; }
  bool is_object() const { return type() == Type::Object; }
  // list or tuple (not a dict view)
  bool is_sequence_list() const {
    return is_list() && (list_kind() == ListKind::List || list_kind() == ListKind::Tuple ||
                         list_kind() == ListKind::GroupTuple);
  }
  bool is_tuple() const { return is_list() && (list_kind() == ListKind::Tuple || list_kind() == ListKind::GroupTuple); }

  bool as_bool() const { return std::get<bool>(v_); }
  std::int64_t as_int() const { return is_bool() ? (as_bool() ? 1 : 0) : std::get<std::int64_t>(v_); }
  double as_float() const { return is_float() ? std::get<double>(v_) : static_cast<double>(as_int()); }
  const std::string& str() const { return *std::get<StrValue>(v_).s; }
  const std::vector<Value>& items() const { return std::get<std::shared_ptr<const ListData>>(v_)->items; }
  ListKind list_kind() const { return std::get<std::shared_ptr<const ListData>>(v_)->kind; }
  const std::shared_ptr<const ListData>& list_ptr() const { return std::get<std::shared_ptr<const ListData>>(v_); }
  const DictData& dict() const { return *std::get<std::shared_ptr<const DictData>>(v_); }
  const std::shared_ptr<const DictData>& dict_ptr() const { return std::get<std::shared_ptr<const DictData>>(v_); }
  Object& object() const { return *std::get<std::shared_ptr<Object>>(v_); }
  const std::shared_ptr<Object>& object_ptr() const { return std::get<std::shared_ptr<Object>>(v_); }
  const UndefinedInfo& undef() const { return *std::get<UndefValue>(v_).info; }
  template <class T>
  T* object_as() const {
    return is_object() ? dynamic_cast<T*>(&object()) : nullptr;
  }

  // Identity for `is sameas` and cycle checks: the same container/object/string storage.
  const void* identity() const;

 private:
  std::variant<MissingValue, UndefValue, NoneValue, bool, std::int64_t, double, StrValue,
               std::shared_ptr<const ListData>, std::shared_ptr<const DictData>, std::shared_ptr<Object>>
      v_;
};

// Insertion-ordered dict with Python key semantics (1 == 1.0 == True). String keys are indexed.
struct DictData {
  std::vector<std::pair<Value, Value>> entries;

  const Value* find(const Value& key) const;   // throws TemplateError for unhashable keys
  const Value* find(std::string_view key) const;
  void set(Value key, Value value);            // keeps the first position of an existing key
  std::size_t size() const { return entries.size(); }

 private:
  std::unordered_map<std::string_view, std::size_t> str_index_;
};

Value make_dict(DictData d);

// Runtime objects (namespace, macro, loop, bound method, iterators, ...).
class Object : public std::enable_shared_from_this<Object> {
 public:
  virtual ~Object() = default;
  virtual std::string type_name() const = 0;       // python type name, for messages
  virtual std::string repr() const;                 // default: <type_name object>
  virtual bool get_attr(std::string_view name, Value& out);  // python getattr; false: no such attribute
  virtual bool callable() const { return false; }
  virtual Value call(Interpreter& in, CallArgs& args);
  virtual bool truthy() { return true; }
  virtual bool has_length() const { return false; }
  virtual std::size_t length() { return 0; }
  virtual bool iterable() const { return false; }
  // Pulls the next item of an iterator; false at the end. Only for iterable objects.
  virtual bool next(Interpreter& in, Value& out);
};

// Arguments of a call, in order: positional then keyword (names unique).
struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  const Value* find_kw(std::string_view name) const;
  bool take_kw(std::string_view name, Value& out);  // removes it
};

// jinja2 Namespace: attributes only, assignable with {% set ns.attr = value %}.
class Namespace : public Object {
 public:
  DictData attrs;
  std::string type_name() const override { return "Namespace"; }
  std::string repr() const override;
  bool get_attr(std::string_view name, Value& out) override;
};

// Python semantics shared by the interpreter, filters and methods.
std::string python_type_name(const Value& v);
bool truthy(const Value& v);
std::string py_str(const Value& v);    // str(v)
std::string py_repr(const Value& v);   // repr(v)
bool py_eq(const Value& a, const Value& b);
// <, <=, >, >= ; op is one of "lt", "le", "gt", "ge". Throws TypeError-like TemplateError.
bool py_compare(const Value& a, const Value& b, std::string_view op);
bool py_less(const Value& a, const Value& b);
bool is_hashable(const Value& v);
std::string float_repr(double d);      // repr(float)
std::string html_escape(std::string_view s);

// int(d) for a float: truncates; raises OverflowError/ValueError where Python would need more than 64 bits
// or has no integer (inf, nan).
std::int64_t float_to_int(double d);

[[noreturn]] void raise_undefined(const Value& v);  // throws the error an Undefined carries
[[noreturn]] void type_error(const std::string& message);
[[noreturn]] void value_error(const std::string& message);

}  // namespace tf::jinja
