// Python semantics of the interpreter's values: attribute and item access as jinja2's sandbox does it,
// slicing, iteration, len(), `in`, and the arithmetic operators (with Python's int/float rules).
#include <algorithm>
#include <cmath>
#include <limits>

#include "interpreter.h"
#include "objects.h"
#include "template_error.h"
#include "unicode.h"

namespace tf::jinja {

namespace {

[[noreturn]] void runtime_error(const std::string& msg) { throw TemplateError(TemplateError::Kind::Runtime, msg); }

class VectorIter : public Iter {
 public:
  explicit VectorIter(std::shared_ptr<const ListData> l) : l_(std::move(l)) {}
  bool next(Value& out) override {
    if (i_ >= l_->items.size()) return false;
    out = l_->items[i_++];
    return true;
  }

 private:
  std::shared_ptr<const ListData> l_;
  std::size_t i_ = 0;
};

class OwnedIter : public Iter {
 public:
  explicit OwnedIter(std::vector<Value> v) : v_(std::move(v)) {}
  bool next(Value& out) override {
    if (i_ >= v_.size()) return false;
    out = std::move(v_[i_++]);
    return true;
  }

 private:
  std::vector<Value> v_;
  std::size_t i_ = 0;
};

class StrIter : public Iter {
 public:
  explicit StrIter(Value s) : s_(std::move(s)) {}
  bool next(Value& out) override {
    const std::string& str = s_.str();
    if (i_ >= str.size()) return false;
    const std::size_t start = i_;
    uni::decode(str, i_);
    out = Value(str.substr(start, i_ - start));
    return true;
  }

 private:
  Value s_;
  std::size_t i_ = 0;
};

class DictKeyIter : public Iter {
 public:
  explicit DictKeyIter(std::shared_ptr<const DictData> d) : d_(std::move(d)) {}
  bool next(Value& out) override {
    if (i_ >= d_->entries.size()) return false;
    out = d_->entries[i_++].first;
    return true;
  }

 private:
  std::shared_ptr<const DictData> d_;
  std::size_t i_ = 0;
};

class ObjectIter : public Iter {
 public:
  ObjectIter(Interpreter& in, std::shared_ptr<Object> o) : in_(in), o_(std::move(o)) {}
  bool next(Value& out) override { return o_->next(in_, out); }

 private:
  Interpreter& in_;
  std::shared_ptr<Object> o_;
};

[[noreturn]] void overflow() { runtime_error("OverflowError: integer result is too large for this implementation (64-bit)"); }


std::int64_t py_floordiv(std::int64_t a, std::int64_t b) {
  if (b == 0) runtime_error("ZeroDivisionError: integer division or modulo by zero");
  if (a == std::numeric_limits<std::int64_t>::min() && b == -1) overflow();
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

std::int64_t py_mod(std::int64_t a, std::int64_t b) {
  if (b == 0) runtime_error("ZeroDivisionError: integer division or modulo by zero");
  if (b == -1) return 0;
  std::int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

double float_mod(double vx, double wx) {
  if (wx == 0) runtime_error("ZeroDivisionError: float modulo");
  double mod = std::fmod(vx, wx);
  if (mod != 0) {
    if ((wx < 0) != (mod < 0)) mod += wx;
  } else {
    mod = std::copysign(0.0, wx);
  }
  return mod;
}

double float_floordiv(double vx, double wx) {
  if (wx == 0) runtime_error("ZeroDivisionError: float floor division by zero");
  double mod = std::fmod(vx, wx);
  double div = (vx - mod) / wx;
  if (mod != 0) {
    if ((wx < 0) != (mod < 0)) div -= 1.0;
  }
  double floordiv;
  if (div != 0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, vx / wx);
  }
  return floordiv;
}

std::string repeat(const std::string& s, std::int64_t n, Interpreter& in) {
  if (n <= 0 || s.empty()) return {};
  const auto total = static_cast<u128>(s.size()) * static_cast<u128>(n);
  if (total > in.limits().max_output_bytes) throw TemplateError(TemplateError::Kind::Limit, "string repetition exceeds the size limit");
  in.charge(static_cast<std::uint64_t>(total) / 16);
  std::string out;
  out.reserve(static_cast<std::size_t>(total));
  for (std::int64_t i = 0; i < n; ++i) out += s;
  return out;
}

const char* binop_symbol(BinOp op) {
  switch (op) {
    case BinOp::Add: return "+";
    case BinOp::Sub: return "-";
    case BinOp::Mul: return "*";
    case BinOp::Div: return "/";
    case BinOp::FloorDiv: return "//";
    case BinOp::Mod: return "%";
    case BinOp::Pow: return "** or pow()";
    default: return "?";
  }
}

[[noreturn]] void unsupported_operands(BinOp op, const Value& a, const Value& b) {
  type_error(std::string("unsupported operand type(s) for ") + binop_symbol(op) + ": '" + python_type_name(a) + "' and '" +
             python_type_name(b) + "'");
}

std::int64_t int_pow(std::int64_t base, std::int64_t exp) {
  std::int64_t result = 1;
  while (exp > 0) {
    if ((exp & 1) && __builtin_mul_overflow(result, base, &result)) overflow();
    exp >>= 1;
    if (exp && __builtin_mul_overflow(base, base, &base)) overflow();
  }
  return result;
}

}  // namespace

// Formatting of `str % args` (pyformat.cpp).
std::string percent_format(Interpreter& in, const Value& fmt, const Value& args);

// ---- Python semantics ------------------------------------------------------------------------------

Value Interpreter::getattr(const Value& obj, std::string_view name) {
  // Python attributes such as __class__ exist on every object (an Undefined too); the sandbox makes
  // them an unsafe Undefined.
  const bool dunder = name.size() > 4 && name.substr(0, 2) == "__" && name.substr(name.size() - 2) == "__";
  if (dunder) return Value::unsafe(obj, std::string(name));
  if (obj.is_undefined()) raise_undefined(obj);
  if (obj.is_object()) {
    Value out;
    if (obj.object().get_attr(name, out)) {
      if (!name.empty() && name[0] == '_') return Value::unsafe(obj, std::string(name));
      return out;
    }
    return Value::undefined_attr(obj, std::string(name));
  }
  Value out;
  if (python_attribute(obj, name, out)) return out;
  if (obj.is_dict()) {
    if (const Value* v = obj.dict().find(name)) return *v;
  }
  return Value::undefined_attr(obj, std::string(name));
}

Value Interpreter::getitem(const Value& obj, const Value& key) {
  if (obj.is_undefined()) raise_undefined(obj);
  auto attr_fallback = [&]() -> Value {
    if (key.is_str()) {
      const std::string& name = key.str();
      const bool dunder = name.size() > 4 && name.rfind("__", 0) == 0 && name.substr(name.size() - 2) == "__";
      if (dunder) return Value::unsafe(obj, name);
      Value out;
      if (obj.is_object()) {
        if (obj.object().get_attr(name, out)) {
          if (!name.empty() && name[0] == '_') return Value::unsafe(obj, name);
          return out;
        }
      } else if (python_attribute(obj, name, out)) {
        return out;
      }
    }
    return Value::undefined_item(obj, key);
  };
  switch (obj.type()) {
    case Value::Type::Dict: {
      if (!is_hashable(key)) return attr_fallback();
      if (const Value* v = obj.dict().find(key)) return *v;
      return attr_fallback();
    }
    case Value::Type::List: {
      if (!(obj.is_sequence_list() || obj.list_kind() == ListKind::Range) || !key.is_integral()) return attr_fallback();
      const auto& items = obj.items();
      std::int64_t i = key.as_int();
      const auto n = static_cast<std::int64_t>(items.size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return attr_fallback();
      return items[static_cast<std::size_t>(i)];
    }
    case Value::Type::Str: {
      if (!key.is_integral()) return attr_fallback();
      const std::string& s = obj.str();
      std::int64_t i = key.as_int();
      const bool ascii = std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
      const auto n = static_cast<std::int64_t>(ascii ? s.size() : uni::length(s));
      if (i < 0) i += n;
      if (i < 0 || i >= n) return attr_fallback();
      if (ascii) return Value(s.substr(static_cast<std::size_t>(i), 1), obj.is_markup());
      std::size_t start = uni::byte_offset(s, static_cast<std::size_t>(i));
      std::size_t end = start;
      uni::decode(s, end);
      return Value(s.substr(start, end - start), obj.is_markup());
    }
    default:
      return attr_fallback();
  }
}

Value Interpreter::slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_undefined()) raise_undefined(obj);
  const bool is_str = obj.is_str();
  if (!is_str && !obj.is_sequence_list() && !(obj.is_list() && obj.list_kind() == ListKind::Range)) {
    if (obj.is_dict()) type_error("unhashable type: 'slice'");
    type_error("'" + python_type_name(obj) + "' object is not subscriptable");
  }
  auto index = [](const Value& v) -> std::optional<std::int64_t> {
    if (v.is_none()) return std::nullopt;
    if (!v.is_integral()) type_error("slice indices must be integers or None or have an __index__ method");
    return v.as_int();
  };
  const auto a = index(start), b = index(stop), c = index(step);
  const std::int64_t st = c.value_or(1);
  if (st == 0) value_error("slice step cannot be zero");
  std::u32string u;
  if (is_str) u = uni::to_u32(obj.str());
  const auto n = static_cast<std::int64_t>(is_str ? u.size() : obj.items().size());
  std::int64_t lo, hi;
  if (st > 0) {
    lo = a ? *a : 0;
    hi = b ? *b : n;
    if (lo < 0) lo = std::max<std::int64_t>(lo + n, 0);
    if (hi < 0) hi = std::max<std::int64_t>(hi + n, 0);
    lo = std::min(lo, n);
    hi = std::min(hi, n);
  } else {
    lo = a ? *a : n - 1;
    hi = b ? *b : -1;
    if (a && lo < 0) lo = std::max<std::int64_t>(lo + n, -1);
    if (b && hi < 0) hi = std::max<std::int64_t>(hi + n, -1);
    lo = std::min(lo, n - 1);
    hi = std::min(hi, n - 1);
  }
  std::vector<std::size_t> idx;
  if (st > 0 && lo < hi) {
    const i128 count = (static_cast<i128>(hi) - lo - 1) / st + 1;
    for (i128 k = 0; k < count; ++k) idx.push_back(static_cast<std::size_t>(lo + k * st));
  } else if (st < 0 && lo > hi) {
    const i128 count = (static_cast<i128>(lo) - hi - 1) / -static_cast<i128>(st) + 1;
    for (i128 k = 0; k < count; ++k) idx.push_back(static_cast<std::size_t>(lo + k * st));
  }
  charge(idx.size());
  if (is_str) {
    std::u32string r;
    r.reserve(idx.size());
    for (auto i : idx) r.push_back(u[i]);
    return Value(uni::from_u32(r), obj.is_markup());
  }
  std::vector<Value> r;
  r.reserve(idx.size());
  for (auto i : idx) r.push_back(obj.items()[i]);
  return Value::list(std::move(r), obj.list_kind() == ListKind::List ? ListKind::List : ListKind::Tuple);
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
  if (callee.is_undefined()) raise_undefined(callee);
  if (!callee.is_object()) type_error("'" + python_type_name(callee) + "' object is not callable");
  DepthGuard guard(*this);
  return callee.object().call(*this, args);
}

std::unique_ptr<Iter> Interpreter::iterate(const Value& v) {
  switch (v.type()) {
    case Value::Type::Undefined:
    case Value::Type::Missing:
      return std::make_unique<OwnedIter>(std::vector<Value>{});
    case Value::Type::List:
      return std::make_unique<VectorIter>(v.list_ptr());
    case Value::Type::Str:
      return std::make_unique<StrIter>(v);
    case Value::Type::Dict:
      return std::make_unique<DictKeyIter>(v.dict_ptr());
    case Value::Type::Object:
      if (v.object().iterable()) return std::make_unique<ObjectIter>(*this, v.object_ptr());
      break;
    default:
      break;
  }
  type_error("'" + python_type_name(v) + "' object is not iterable");
}

std::vector<Value> Interpreter::to_list(const Value& v) {
  if (v.is_list()) {
    charge(v.items().size());
    return v.items();
  }
  std::vector<Value> out;
  auto it = iterate(v);
  Value x;
  while (it->next(x)) {
    charge(1);
    out.push_back(std::move(x));
  }
  return out;
}

std::size_t Interpreter::length(const Value& v) {
  switch (v.type()) {
    case Value::Type::Undefined:
    case Value::Type::Missing:
      return 0;
    case Value::Type::Str:
      return uni::length(v.str());
    case Value::Type::List:
      return v.items().size();
    case Value::Type::Dict:
      return v.dict().size();
    case Value::Type::Object:
      if (v.object().has_length()) return v.object().length();
      break;
    default:
      break;
  }
  type_error("object of type '" + python_type_name(v) + "' has no len()");
}

bool Interpreter::contains(const Value& container, const Value& item) {
  switch (container.type()) {
    case Value::Type::Undefined:
    case Value::Type::Missing:
      return false;
    case Value::Type::Str:
      if (!item.is_str())
        type_error("'in <string>' requires string as left operand, not " + python_type_name(item));
      charge(container.str().size() / 64);
      return container.str().find(item.str()) != std::string::npos;
    case Value::Type::Dict:
      return container.dict().find(item) != nullptr;
    case Value::Type::List:
      charge(container.items().size());
      if (container.list_kind() == ListKind::DictKeys && !is_hashable(item))
        type_error("unhashable type: '" + python_type_name(item) + "'");
      for (const auto& x : container.items())
        if ((x.identity() && x.identity() == item.identity()) || py_eq(x, item)) return true;
      return false;
    case Value::Type::Object: {
      if (!container.object().iterable()) break;
      auto it = iterate(container);
      Value x;
      while (it->next(x)) {
        charge(1);
        if (py_eq(x, item)) return true;
      }
      return false;
    }
    default:
      break;
  }
  type_error("argument of type '" + python_type_name(container) + "' is not iterable");
}

Value Interpreter::binop(BinOp op, const Value& a, const Value& b) {
  if (op == BinOp::Mod && a.is_str()) {  // str.__mod__ accepts any right operand, an Undefined too
    Value r(percent_format(*this, a, b), a.is_markup());
    check_size(r.str().size());
    return r;
  }
  if (a.is_undefined()) raise_undefined(a);
  if (b.is_undefined()) raise_undefined(b);
  const bool nums = a.is_number() && b.is_number();
  const bool ints = a.is_integral() && b.is_integral();
  switch (op) {
    case BinOp::Add:
      if (ints) {
        std::int64_t r;
        if (__builtin_add_overflow(a.as_int(), b.as_int(), &r)) overflow();
        return Value(r);
      }
      if (nums) return Value(a.as_float() + b.as_float());
      if (a.is_str() && b.is_str()) {
        std::string r;
        const bool markup = a.is_markup() || b.is_markup();
        const std::string lhs = (b.is_markup() && !a.is_markup()) ? html_escape(a.str()) : a.str();
        const std::string rhs = (a.is_markup() && !b.is_markup()) ? html_escape(b.str()) : b.str();
        check_size(lhs.size() + rhs.size());
        charge((lhs.size() + rhs.size()) / 16);
        r.reserve(lhs.size() + rhs.size());
        r += lhs;
        r += rhs;
        return Value(std::move(r), markup);
      }
      if (a.is_str()) type_error("can only concatenate str (not \"" + python_type_name(b) + "\") to str");
      if (a.is_list() && (a.list_kind() == ListKind::List || a.is_tuple())) {
        const bool a_list = a.list_kind() == ListKind::List;
        if (b.is_list() && (a_list ? b.list_kind() == ListKind::List : b.is_tuple())) {
          std::vector<Value> r = a.items();
          check_size((r.size() + b.items().size()) * 16);
          charge(r.size() + b.items().size());
          r.insert(r.end(), b.items().begin(), b.items().end());
          return Value::list(std::move(r), a_list ? ListKind::List : ListKind::Tuple);
        }
        type_error(std::string("can only concatenate ") + (a_list ? "list" : "tuple") + " (not \"" + python_type_name(b) +
                   "\") to " + (a_list ? "list" : "tuple"));
      }
      unsupported_operands(op, a, b);
    case BinOp::Sub:
      if (ints) {
        std::int64_t r;
        if (__builtin_sub_overflow(a.as_int(), b.as_int(), &r)) overflow();
        return Value(r);
      }
      if (nums) return Value(a.as_float() - b.as_float());
      unsupported_operands(op, a, b);
    case BinOp::Mul: {
      if (ints) {
        std::int64_t r;
        if (__builtin_mul_overflow(a.as_int(), b.as_int(), &r)) overflow();
        return Value(r);
      }
      if (nums) return Value(a.as_float() * b.as_float());
      const Value* seq = (a.is_str() || a.is_sequence_list()) ? &a : (b.is_str() || b.is_sequence_list()) ? &b : nullptr;
      const Value* count = seq == &a ? &b : &a;
      if (seq && !(seq == &b && (a.is_str() || a.is_sequence_list()))) {
        if (!count->is_integral())
          type_error("can't multiply sequence by non-int of type '" + python_type_name(*count) + "'");
        const std::int64_t n = count->as_int();
        if (seq->is_str()) return Value(repeat(seq->str(), n, *this), seq->is_markup());
        std::vector<Value> r;
        if (n > 0 && !seq->items().empty()) {
          const auto total = static_cast<u128>(seq->items().size()) * static_cast<u128>(n);
          if (total > limits_.max_output_bytes / 16) throw TemplateError(TemplateError::Kind::Limit, "list repetition exceeds the size limit");
          charge(static_cast<std::uint64_t>(total));
          for (std::int64_t i = 0; i < n; ++i) r.insert(r.end(), seq->items().begin(), seq->items().end());
        }
        return Value::list(std::move(r), seq->list_kind() == ListKind::List ? ListKind::List : ListKind::Tuple);
      }
      unsupported_operands(op, a, b);
    }
    case BinOp::Div:
      if (nums) {
        const double y = b.as_float();
        if (y == 0) runtime_error(ints ? "ZeroDivisionError: division by zero" : "ZeroDivisionError: float division by zero");
        return Value(a.as_float() / y);
      }
      unsupported_operands(op, a, b);
    case BinOp::FloorDiv:
      if (ints) return Value(py_floordiv(a.as_int(), b.as_int()));
      if (nums) return Value(float_floordiv(a.as_float(), b.as_float()));
      unsupported_operands(op, a, b);
    case BinOp::Mod:
      if (ints) return Value(py_mod(a.as_int(), b.as_int()));
      if (nums) return Value(float_mod(a.as_float(), b.as_float()));
      if (a.is_str()) {
        Value r(percent_format(*this, a, b), a.is_markup());
        check_size(r.str().size());
        return r;
      }
      unsupported_operands(op, a, b);
    case BinOp::Pow:
      if (ints && b.as_int() >= 0) return Value(int_pow(a.as_int(), b.as_int()));
      if (nums) {
        const double x = a.as_float(), y = b.as_float();
        if (x == 0 && y < 0) runtime_error("ZeroDivisionError: 0.0 cannot be raised to a negative power");
        if (x < 0 && y != std::floor(y)) value_error("negative number cannot be raised to a fractional power (complex result)");
        const double r = std::pow(x, y);
        if (std::isinf(r) && std::isfinite(x) && std::isfinite(y)) runtime_error("OverflowError: (34, 'Numerical result out of range')");
        return Value(r);
      }
      unsupported_operands(op, a, b);
    default:
      break;
  }
  unsupported_operands(op, a, b);
}

}  // namespace tf::jinja
