#pragma once
// Runtime objects of the interpreter: macros, loop contexts, bound methods, builtin functions, cyclers
// and joiners.
#include <optional>
#include <string>
#include <vector>

#include "interpreter.h"

namespace tf::jinja {

class MacroObject : public Object {
 public:
  MacroObject(std::shared_ptr<const MacroDef> def, FramePtr closure) : def_(std::move(def)), closure_(std::move(closure)) {}
  std::string type_name() const override { return "Macro"; }
  std::string repr() const override;
  bool get_attr(std::string_view name, Value& out) override;
  bool callable() const override { return true; }
  Value call(Interpreter& in, CallArgs& args) override;
  void clear() { closure_.reset(); }

 private:
  std::shared_ptr<const MacroDef> def_;
  FramePtr closure_;
};

class LoopObject : public Object {
 public:
  LoopObject(std::unique_ptr<Iter> it, std::optional<std::size_t> known_length, const ForStmt* recursive_node,
             FramePtr outer, int depth0)
      : it_(std::move(it)), known_length_(known_length), node_(recursive_node), outer_(std::move(outer)), depth0_(depth0) {}
  std::string type_name() const override { return "LoopContext"; }
  std::string repr() const override;
  bool get_attr(std::string_view name, Value& out) override;
  bool callable() const override { return true; }
  Value call(Interpreter& in, CallArgs& args) override;
  bool truthy() override { return length() != 0; }
  bool has_length() const override { return true; }
  std::size_t length() override;
  bool iterable() const override { return true; }
  bool next(Interpreter& in, Value& out) override;  // iterating a loop yields (item, loop) pairs

  bool advance(Value& item);  // the for statement pulls the next item
  Value cycle(CallArgs& args) const;
  bool changed(CallArgs& args);
  void clear() { outer_.reset(); }

 private:
  std::unique_ptr<Iter> it_;
  std::optional<std::size_t> known_length_;
  std::vector<Value> rest_;  // materialized remainder once the length was needed
  std::size_t rest_pos_ = 0;
  bool materialized_ = false;
  const ForStmt* node_;
  FramePtr outer_;
  int depth0_;
  std::int64_t index0_ = -1;
  Value before_ = Value::missing(), current_ = Value::missing(), after_ = Value::missing();
  Value last_changed_ = Value::missing();
  std::optional<std::size_t> length_;

  bool pull(Value& out);
  bool peek(Value& out);
};

// A method bound to its object: "abc".upper, d.items, loop.cycle, ...
class BoundMethod : public Object {
 public:
  BoundMethod(Value self, std::string name) : self_(std::move(self)), name_(std::move(name)) {}
  std::string type_name() const override { return "builtin_function_or_method"; }
  std::string repr() const override;
  bool callable() const override { return true; }
  Value call(Interpreter& in, CallArgs& args) override;

 private:
  Value self_;
  std::string name_;
};

// A global function (range, dict, namespace, raise_exception, strftime_now, ...).
class BuiltinFunction : public Object {
 public:
  using Fn = Value (*)(Interpreter&, CallArgs&);
  BuiltinFunction(std::string name, Fn fn) : name_(std::move(name)), fn_(fn) {}
  std::string type_name() const override { return "function"; }
  std::string repr() const override { return "<function " + name_ + ">"; }
  bool callable() const override { return true; }
  Value call(Interpreter& in, CallArgs& args) override { return fn_(in, args); }

 private:
  std::string name_;
  Fn fn_;
};

class Cycler : public Object {
 public:
  explicit Cycler(std::vector<Value> items) : items_(std::move(items)) {}
  std::string type_name() const override { return "Cycler"; }
  bool get_attr(std::string_view name, Value& out) override;
  Value next_item();
  void reset() { pos_ = 0; }
  const Value& current() const { return items_[pos_]; }

 private:
  std::vector<Value> items_;
  std::size_t pos_ = 0;
};

class Joiner : public Object {
 public:
  explicit Joiner(std::string sep) : sep_(std::move(sep)) {}
  std::string type_name() const override { return "Joiner"; }
  bool callable() const override { return true; }
  Value call(Interpreter& in, CallArgs& args) override;

 private:
  std::string sep_;
  bool used_ = false;
};

// Builtins (filters.cpp, tests.cpp, globals.cpp, methods.cpp)
bool lookup_global(const std::string& name, Value& out);
Value call_method(Interpreter& in, const Value& self, const std::string& name, CallArgs& args);
// Python attribute of a builtin-typed value (str/list/dict/... methods and data attributes); false if none.
bool python_attribute(const Value& obj, std::string_view name, Value& out);

// Binds call arguments to a Python signature. Each parameter: name and default (nullopt: required).
struct Param {
  const char* name;
  std::optional<Value> def;
};
std::vector<Value> bind_args(const std::string& fname, CallArgs& args, std::initializer_list<Param> params,
                             bool allow_extra_kwargs = false);

}  // namespace tf::jinja
