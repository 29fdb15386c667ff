#include "interpreter.h"

#include <cmath>
#include <limits>

#include "objects.h"
#include "symbols.h"
#include "template_error.h"
#include "unicode.h"

namespace tf::jinja {

namespace {

[[noreturn]] void runtime_error(const std::string& msg) { throw TemplateError(TemplateError::Kind::Runtime, msg); }

[[noreturn]] void overflow() { runtime_error("OverflowError: integer result is too large for this implementation (64-bit)"); }

class FilterIter : public Iter {
 public:
  FilterIter(std::unique_ptr<Iter> src, std::function<bool(const Value&)> pred) : src_(std::move(src)), pred_(std::move(pred)) {}
  bool next(Value& out) override {
    while (src_->next(out))
      if (pred_(out)) return true;
    return false;
  }

 private:
  std::unique_ptr<Iter> src_;
  std::function<bool(const Value&)> pred_;
};

}  // namespace

namespace {
struct NotConstant {};
}  // namespace

std::optional<Value> Interpreter::try_const(const Expr& e) {
  static const TemplateAst empty_ast;
  static const DictData no_vars;
  RenderLimits limits;
  limits.max_work = 1'000'000;
  limits.max_output_bytes = std::size_t{1} << 20;
  Interpreter in(empty_ast, no_vars, limits, std::tm{});
  in.const_mode_ = true;
  try {
    return in.eval(e, nullptr);
  } catch (...) {
    return std::nullopt;
  }
}

// ---- setup ---------------------------------------------------------------------------------------

Interpreter::DepthGuard::DepthGuard(Interpreter& i) : in(i) {
  if (++in.depth_ > in.limits_.max_depth) {
    --in.depth_;
    throw TemplateError(TemplateError::Kind::Limit, "template recursion/nesting exceeds the depth limit (" +
                                                        std::to_string(in.limits_.max_depth) + ")");
  }
}

Interpreter::Interpreter(const TemplateAst& ast, const DictData& vars, const RenderLimits& limits, std::tm now)
    : ast_(ast), vars_(vars), limits_(limits), now_(now) {}

Interpreter::~Interpreter() {
  // Break reference cycles (a frame holding a macro that closes over the frame, namespaces holding
  // themselves, ...) so that everything created by this render is freed.
  for (auto& o : tracked_) {
    if (auto* ns = dynamic_cast<Namespace*>(o.get())) ns->attrs = DictData();
    if (auto* m = dynamic_cast<MacroObject*>(o.get())) m->clear();
    if (auto* l = dynamic_cast<LoopObject*>(o.get())) l->clear();
  }
  for (auto& f : frames_) {
    f->slots.clear();
    f->parent.reset();
  }
}

Value Interpreter::track(std::shared_ptr<Object> o) {
  tracked_.push_back(o);
  return Value(std::move(o));
}

void Interpreter::charge(std::uint64_t units) {
  work_ += units;
  if (work_ > limits_.max_work) throw TemplateError(TemplateError::Kind::Limit, "template exceeds the work limit");
}

void Interpreter::check_size(std::size_t bytes) const {
  if (bytes > limits_.max_output_bytes)
    throw TemplateError(TemplateError::Kind::Limit, "template output or a value exceeds the size limit (" +
                                                        std::to_string(limits_.max_output_bytes) + " bytes)");
}

void Interpreter::write(std::string_view s) {
  out_->append(s);
  check_size(out_->size());
  charge(s.size() / 64);
}

std::string Interpreter::render() {
  std::string out;
  out_ = &out;
  FramePtr root = enter(ast_.frame, nullptr);
  exec_body(ast_.body, root);
  out_ = nullptr;
  return out;
}

FramePtr Interpreter::enter(const FrameInfo& fi, const FramePtr& parent) {
  auto f = std::make_shared<Frame>();
  f->parent = parent;
  f->level = fi.level;
  f->slots.assign(fi.slots.size(), Value::missing());
  for (const auto& l : fi.loads) {
    switch (l.kind) {
      case LoadKind::Alias:
        f->slots[static_cast<std::size_t>(l.slot)] = slot(parent.get(), l.src);
        break;
      case LoadKind::Resolve:
        f->slots[static_cast<std::size_t>(l.slot)] = resolve(l.name);
        break;
      default:
        break;
    }
  }
  frames_.push_back(f);
  charge(1);
  return f;
}

Value& Interpreter::slot(Frame* f, RefId r) {
  while (f && f->level > r.level) f = f->parent.get();
  if (!f || f->level != r.level || r.slot < 0 || static_cast<std::size_t>(r.slot) >= f->slots.size())
    runtime_error("internal error: unresolved variable reference");
  return f->slots[static_cast<std::size_t>(r.slot)];
}

Value Interpreter::resolve(const std::string& name) {
  if (const Value* v = context_vars_.find(std::string_view(name))) return *v;
  if (const Value* v = vars_.find(std::string_view(name))) return *v;
  Value g;
  if (lookup_global(name, g)) return g;
  return Value::missing();
}

// ---- statements ----------------------------------------------------------------------------------

Interpreter::Flow Interpreter::exec_body(const Body& body, const FramePtr& f) {
  for (const auto& s : body) {
    const Flow fl = exec(*s, f);
    if (fl != Flow::Normal) return fl;
  }
  return Flow::Normal;
}

void Interpreter::check_namespaces(const std::vector<RefId>& refs, const FramePtr& f) {
  for (const RefId r : refs)
    if (!slot(f.get(), r).object_as<Namespace>())
      runtime_error("TemplateRuntimeError: cannot assign attribute on non-namespace object");
}

Interpreter::Flow Interpreter::exec(const Stmt& s, const FramePtr& f) {
  DepthGuard guard(*this);
  switch (s.kind) {
    case Stmt::K::Output: {
      for (const auto& p : static_cast<const OutputStmt&>(s).parts) {
        if (!p.expr) {
          write(p.data);
          continue;
        }
        const Value v = eval(*p.expr, f);
        if (autoescape_ && !v.is_markup())
          write(html_escape(py_str(v)));
        else if (v.is_str())
          write(v.str());
        else
          write(py_str(v));
      }
      return Flow::Normal;
    }
    case Stmt::K::If: {
      const auto& i = static_cast<const IfStmt&>(s);
      if (truthy(eval(*i.test, f))) return exec_body(i.body, f);
      for (const auto& e : i.elifs)
        if (truthy(eval(*e->test, f))) return exec_body(e->body, f);
      return exec_body(i.else_, f);
    }
    case Stmt::K::For:
      return exec_for(static_cast<const ForStmt&>(s), f);
    case Stmt::K::Macro: {
      const auto& m = static_cast<const MacroStmt&>(s);
      Value macro = track(std::make_shared<MacroObject>(m.def, f));
      slot(f.get(), m.name_ref) = macro;
      if (m.export_to_context) context_vars_.set(Value(m.def->name), macro);
      return Flow::Normal;
    }
    case Stmt::K::CallBlock:
      exec_call_block(static_cast<const CallBlockStmt&>(s), f);
      return Flow::Normal;
    case Stmt::K::FilterBlock: {
      const auto& fb = static_cast<const FilterBlockStmt&>(s);
      FramePtr inner = enter(fb.frame, f);
      Value text;
      {
        Capture cap(*this);
        exec_body(fb.body, inner);
        text = Value(std::move(cap.buf), autoescape_);
      }
      const Value r = eval_filter(*fb.filter, inner, &text);
      if (!r.is_str()) type_error("sequence item 0: expected str instance, " + python_type_name(r) + " found");
      write(r.str());
      return Flow::Normal;
    }
    case Stmt::K::With: {
      const auto& w = static_cast<const WithStmt&>(s);
      FramePtr inner = enter(w.frame, f);
      for (std::size_t i = 0; i < w.targets.size(); ++i) assign(*w.targets[i], eval(*w.values[i], f), inner);
      return exec_body(w.body, inner);
    }
    case Stmt::K::Assign: {
      const auto& a = static_cast<const AssignStmt&>(s);
      check_namespaces(a.ns_checks, f);
      assign(*a.target, eval(*a.node, f), f);
      for (const auto& e : a.exports) context_vars_.set(Value(e.name), slot(f.get(), e.ref));
      return Flow::Normal;
    }
    case Stmt::K::AssignBlock:
      exec_assign_block(static_cast<const AssignBlockStmt&>(s), f);
      return Flow::Normal;
    case Stmt::K::Break:
      return Flow::Break;
    case Stmt::K::Continue:
      return Flow::Continue;
    case Stmt::K::Block: {
      const auto& b = static_cast<const BlockStmt&>(s);
      if (b.required) runtime_error("TemplateRuntimeError: Required block '" + b.name + "' not found");
      FramePtr inner = enter(b.frame, nullptr);
      exec_body(b.body, inner);
      return Flow::Normal;
    }
    case Stmt::K::Scope: {
      const auto& sc = static_cast<const ScopeStmt&>(s);
      FramePtr inner = enter(sc.frame, f);
      const bool saved = autoescape_;
      autoescape_ = truthy(eval(*sc.autoescape, inner));
      struct Restore {
        bool& flag;
        bool value;
        ~Restore() { flag = value; }
      } restore{autoescape_, saved};
      return exec_body(sc.body, inner);
    }
    case Stmt::K::Unsupported: {
      const auto& u = static_cast<const UnsupportedStmt&>(s);
      eval(*u.template_expr, f);
      type_error("no loader for this environment specified ({% " + u.what + " %} is not available in chat templates)");
    }
  }
  return Flow::Normal;
}

void Interpreter::exec_assign_block(const AssignBlockStmt& s, const FramePtr& f) {
  FramePtr inner = enter(s.frame, f);
  Value text;
  {
    Capture cap(*this);
    exec_body(s.body, inner);
    text = Value(std::move(cap.buf), autoescape_);
  }
  Value v = s.filter ? eval_filter(*s.filter, inner, &text) : text;
  check_namespaces(s.ns_checks, f);
  assign(*s.target, v, f);
  for (const auto& e : s.exports) context_vars_.set(Value(e.name), slot(f.get(), e.ref));
}

void Interpreter::exec_call_block(const CallBlockStmt& s, const FramePtr& f) {
  Value caller = track(std::make_shared<MacroObject>(s.def, f));
  if (!s.call) {  // {% generation %}: renders its body
    CallArgs none;
    const Value r = call(caller, none);
    write(r.str());
    return;
  }
  const Value callee = eval(*s.call->node, f);
  CallArgs args;
  eval_args(s.call->sig, f, args);
  for (const auto& [k, v] : args.kw)
    if (k == "caller") type_error("got multiple values for keyword argument 'caller'");
  args.kw.emplace_back("caller", caller);
  const Value r = call(callee, args);
  if (!r.is_str()) type_error("sequence item 0: expected str instance, " + python_type_name(r) + " found");
  write(r.str());
}

void Interpreter::assign(const Expr& target, const Value& v, const FramePtr& f) {
  switch (target.kind) {
    case Expr::K::Name:
      slot(f.get(), static_cast<const NameExpr&>(target).ref) = v;
      return;
    case Expr::K::NSRef: {
      const auto& n = static_cast<const NSRefExpr&>(target);
      auto* ns = slot(f.get(), n.ref).object_as<Namespace>();
      if (!ns) runtime_error("TemplateRuntimeError: cannot assign attribute on non-namespace object");
      ns->attrs.set(Value(n.attr), v);
      return;
    }
    case Expr::K::Tuple: {
      const auto& t = static_cast<const TupleExpr&>(target);
      std::vector<Value> items;
      auto it = iterate(v);
      Value x;
      while (it->next(x)) {
        items.push_back(x);
        if (items.size() > t.items.size())
          value_error("too many values to unpack (expected " + std::to_string(t.items.size()) + ")");
      }
      if (items.size() < t.items.size())
        value_error("not enough values to unpack (expected " + std::to_string(t.items.size()) + ", got " +
                    std::to_string(items.size()) + ")");
      for (std::size_t i = 0; i < items.size(); ++i) assign(*t.items[i], items[i], f);
      return;
    }
    default:
      runtime_error("cannot assign to this expression");
  }
}

Interpreter::Flow Interpreter::exec_for(const ForStmt& s, const FramePtr& f) {
  const Value iterable = eval(*s.iter, f);
  if (s.recursive) {
    write(render_loop(s, f, iterable, 0));
    return Flow::Normal;
  }
  return run_loop(s, f, iterable, 0);
}

std::string Interpreter::render_loop(const ForStmt& s, const FramePtr& outer, const Value& iterable, int depth0) {
  DepthGuard guard(*this);
  Capture cap(*this);
  run_loop(s, outer, iterable, depth0);
  return std::move(cap.buf);
}

Interpreter::Flow Interpreter::run_loop(const ForStmt& s, const FramePtr& outer, const Value& iterable, int depth0) {
  std::unique_ptr<Iter> src = iterate(iterable);
  std::optional<std::size_t> known_length;
  if (!s.test && (iterable.is_list() || iterable.is_str() || iterable.is_dict() || iterable.is_undefined()))
    known_length = length(iterable);
  if (s.test) {
    src = std::make_unique<FilterIter>(std::move(src), [this, &s, outer](const Value& item) {
      FramePtr tf = enter(s.test_frame, outer);
      assign(*s.test_target, item, tf);
      return truthy(eval(*s.test, tf));
    });
  }
  std::shared_ptr<LoopObject> loop;
  Value loop_value;
  if (s.extended) {
    loop = std::make_shared<LoopObject>(std::move(src), known_length, s.recursive ? &s : nullptr, outer, depth0);
    loop_value = track(loop);
  }
  bool no_iteration = true;
  Value item;
  while (loop ? loop->advance(item) : src->next(item)) {
    charge(1);
    FramePtr body = enter(s.body_frame, outer);
    if (loop) slot(body.get(), s.loop_ref) = loop_value;
    assign(*s.target, item, body);
    const Flow fl = exec_body(s.body, body);
    if (fl == Flow::Break) break;
    if (fl == Flow::Normal) no_iteration = false;
  }
  if (no_iteration && !s.else_.empty()) {
    FramePtr ef = enter(s.else_frame, outer);
    return exec_body(s.else_, ef);
  }
  return Flow::Normal;
}

Value Interpreter::call_macro(const MacroDef& def, const FramePtr& closure, CallArgs& args) {
  DepthGuard guard(*this);
  charge(1);
  const std::size_t nargs = def.args.size();
  std::vector<Value> arguments(args.pos.begin(), args.pos.begin() + static_cast<std::ptrdiff_t>(std::min(nargs, args.pos.size())));
  bool found_caller = false;
  bool explicit_caller = false;
  for (const auto& a : def.args) explicit_caller |= a->name == "caller";
  const std::string macro_name = def.name.empty() ? "None" : "'" + def.name + "'";
  if (arguments.size() != nargs) {
    for (std::size_t i = arguments.size(); i < nargs; ++i) {
      Value v = Value::missing();
      args.take_kw(def.args[i]->name, v);
      if (def.args[i]->name == "caller") found_caller = true;
      arguments.push_back(std::move(v));
    }
  } else {
    found_caller = explicit_caller;
  }
  Value caller;
  bool have_caller = false;
  if (def.caller && !found_caller) {
    if (!args.take_kw("caller", caller) || caller.is_none()) caller = Value::undefined_hint("No caller defined");
    have_caller = true;
  }
  Value kwargs;
  if (def.catch_kwargs) {
    DictData d;
    for (auto& [k, v] : args.kw) d.set(Value(k), v);
    kwargs = make_dict(std::move(d));
  } else if (!args.kw.empty()) {
    if (args.find_kw("caller"))
      type_error("macro " + macro_name + " was invoked with two values for the special caller argument. This is most likely a bug.");
    type_error("macro " + macro_name + " takes no keyword argument '" + args.kw.front().first + "'");
  }
  Value varargs;
  if (def.catch_varargs) {
    std::vector<Value> extra;
    for (std::size_t i = nargs; i < args.pos.size(); ++i) extra.push_back(args.pos[i]);
    varargs = Value::tuple(std::move(extra));
  } else if (args.pos.size() > nargs) {
    type_error("macro " + macro_name + " takes not more than " + std::to_string(nargs) + " argument(s)");
  }

  FramePtr f = enter(def.frame, closure);
  for (std::size_t i = 0; i < nargs; ++i) slot(f.get(), def.args[i]->ref) = arguments[i];
  if (have_caller) slot(f.get(), def.caller_ref) = caller;
  if (def.catch_kwargs) slot(f.get(), def.kwargs_ref) = kwargs;
  if (def.catch_varargs) slot(f.get(), def.varargs_ref) = varargs;
  const std::size_t first_default = nargs - def.defaults.size();
  for (std::size_t i = 0; i < nargs; ++i) {
    Value& v = slot(f.get(), def.args[i]->ref);
    if (!v.is_missing()) continue;
    if (i >= first_default)
      v = eval(*def.defaults[i - first_default], f);
    else
      v = Value::undefined_hint("parameter '" + def.args[i]->name + "' was not provided");
  }
  Capture cap(*this);
  const bool saved = autoescape_;
  exec_body(def.body, f);
  autoescape_ = saved;
  return Value(std::move(cap.buf));
}

// ---- expressions -----------------------------------------------------------------------------------

void Interpreter::eval_args(const CallSignature& sig, const FramePtr& f, CallArgs& out) {
  for (const auto& a : sig.args) out.pos.push_back(eval(*a, f));
  for (const auto& [k, v] : sig.kwargs) {
    Value x = eval(*v, f);
    for (const auto& [k2, v2] : out.kw)
      if (k2 == k) type_error("keyword argument repeated: " + k);
    out.kw.emplace_back(k, std::move(x));
  }
  if (sig.dyn_args) {
    const Value d = eval(*sig.dyn_args, f);
    auto it = iterate(d);
    Value x;
    while (it->next(x)) out.pos.push_back(x);
  }
  if (sig.dyn_kwargs) {
    const Value d = eval(*sig.dyn_kwargs, f);
    if (!d.is_dict()) type_error("argument after ** must be a mapping, not " + python_type_name(d));
    for (const auto& [k, v] : d.dict().entries) {
      if (!k.is_str()) type_error("keywords must be strings");
      for (const auto& [k2, v2] : out.kw)
        if (k2 == k.str()) type_error("got multiple values for keyword argument '" + k.str() + "'");
      out.kw.emplace_back(k.str(), v);
    }
  }
}

Value Interpreter::eval_filter(const FilterExpr& e, const FramePtr& f, const Value* block_value) {
  Value v;
  if (!e.node) {
    if (!block_value) runtime_error("internal error: filter without a value");
    v = *block_value;
  } else if (block_value && e.node->kind == Expr::K::Filter) {  // {% set x | f | g %}: the chain's innermost gets the block
    v = eval_filter(static_cast<const FilterExpr&>(*e.node), f, block_value);
  } else {
    v = eval(*e.node, f);
  }
  CallArgs args;
  eval_args(e.sig, f, args);
  return call_filter(e.name, std::move(v), args);
}

Value Interpreter::concat(const std::vector<Value>& parts) {
  std::string out;
  for (const auto& p : parts) {
    if (autoescape_ && !p.is_markup())
      out += html_escape(py_str(p));
    else
      out += p.is_str() ? p.str() : py_str(p);
    check_size(out.size());
  }
  charge(out.size() / 16);
  return Value(std::move(out), autoescape_);
}

Value Interpreter::compare(CmpOp op, const Value& a, const Value& b) {
  switch (op) {
    case CmpOp::Eq:
      return Value(py_eq(a, b));
    case CmpOp::Ne:
      return Value(!py_eq(a, b));
    case CmpOp::Lt:
      return Value(py_compare(a, b, "lt"));
    case CmpOp::Le:
      return Value(py_compare(a, b, "le"));
    case CmpOp::Gt:
      return Value(py_compare(a, b, "gt"));
    case CmpOp::Ge:
      return Value(py_compare(a, b, "ge"));
    case CmpOp::In:
      return Value(contains(b, a));
    case CmpOp::NotIn:
      return Value(!contains(b, a));
  }
  return Value(false);
}

Value Interpreter::eval(const Expr& e, const FramePtr& f) {
  DepthGuard guard(*this);
  switch (e.kind) {
    case Expr::K::Const:
      return static_cast<const ConstExpr&>(e).value;
    case Expr::K::Name: {
      if (const_mode_) throw NotConstant{};
      const auto& n = static_cast<const NameExpr&>(e);
      const Value& v = slot(f.get(), n.ref);
      if (v.is_missing()) return Value::undefined(n.name);
      return v;
    }
    case Expr::K::NSRef:
      runtime_error("internal error: namespace reference evaluated");
    case Expr::K::Tuple: {
      std::vector<Value> items;
      for (const auto& i : static_cast<const TupleExpr&>(e).items) items.push_back(eval(*i, f));
      return Value::tuple(std::move(items));
    }
    case Expr::K::List: {
      std::vector<Value> items;
      for (const auto& i : static_cast<const ListExpr&>(e).items) items.push_back(eval(*i, f));
      return Value::list(std::move(items));
    }
    case Expr::K::Dict: {
      DictData d;
      for (const auto& [k, v] : static_cast<const DictExpr&>(e).items) {
        Value key = eval(*k, f);
        Value value = eval(*v, f);
        d.set(std::move(key), std::move(value));
      }
      return make_dict(std::move(d));
    }
    case Expr::K::Bin: {
      const auto& b = static_cast<const BinExpr&>(e);
      Value l = eval(*b.left, f);
      if (b.op == BinOp::And) return truthy(l) ? eval(*b.right, f) : l;
      if (b.op == BinOp::Or) return truthy(l) ? l : eval(*b.right, f);
      const Value r = eval(*b.right, f);
      return binop(b.op, l, r);
    }
    case Expr::K::Unary: {
      const auto& u = static_cast<const UnaryExpr&>(e);
      const Value v = eval(*u.node, f);
      if (u.op == UnOp::Not) return Value(!truthy(v));
      if (v.is_undefined()) raise_undefined(v);
      if (v.is_float()) return Value(u.op == UnOp::Neg ? -v.as_float() : v.as_float());
      if (v.is_integral()) {
        if (u.op == UnOp::Pos) return Value(v.as_int());
        std::int64_t r;
        if (__builtin_sub_overflow(std::int64_t{0}, v.as_int(), &r)) overflow();
        return Value(r);
      }
      type_error(std::string("bad operand type for unary ") + (u.op == UnOp::Neg ? "-" : "+") + ": '" + python_type_name(v) + "'");
    }
    case Expr::K::Concat: {
      std::vector<Value> parts;
      for (const auto& n : static_cast<const ConcatExpr&>(e).nodes) parts.push_back(eval(*n, f));
      return concat(parts);
    }
    case Expr::K::Compare: {
      const auto& c = static_cast<const CompareExpr&>(e);
      Value left = eval(*c.expr, f);
      Value result(true);
      for (const auto& [op, x] : c.ops) {
        Value right = eval(*x, f);
        result = compare(op, left, right);
        if (!truthy(result)) return result;
        left = std::move(right);
      }
      return result;
    }
    case Expr::K::Getattr: {
      const auto& g = static_cast<const GetattrExpr&>(e);
      return getattr(eval(*g.node, f), g.attr);
    }
    case Expr::K::Getitem: {
      const auto& g = static_cast<const GetitemExpr&>(e);
      const Value obj = eval(*g.node, f);
      if (g.arg->kind == Expr::K::Slice) {
        const auto& s = static_cast<const SliceExpr&>(*g.arg);
        const Value start = s.start ? eval(*s.start, f) : Value();
        const Value stop = s.stop ? eval(*s.stop, f) : Value();
        const Value step = s.step ? eval(*s.step, f) : Value();
        // Compile-time folding goes through environment.getitem, which turns the TypeError of slicing a
        // non-sequence into an Undefined; at run time the slice is plain Python and raises.
        if (const_mode_ && !obj.is_undefined() && !obj.is_str() && !obj.is_sequence_list() &&
            !(obj.is_list() && obj.list_kind() == ListKind::Range))
          return Value::undefined_hint(python_type_name(obj) + " object has no element slice");
        return slice(obj, start, stop, step);
      }
      return getitem(obj, eval(*g.arg, f));
    }
    case Expr::K::Slice:
      runtime_error("internal error: slice evaluated outside a subscript");
    case Expr::K::Filter: {
      const auto& fl = static_cast<const FilterExpr&>(e);
      if (const_mode_ && (!fl.node || !is_known_filter(fl.name) || fl.name == "map" || fl.name == "select" ||
                          fl.name == "reject" || fl.name == "selectattr" || fl.name == "rejectattr" || fl.name == "random"))
        throw NotConstant{};  // jinja2 never folds context filters
      return eval_filter(fl, f, nullptr);
    }
    case Expr::K::Test: {
      const auto& t = static_cast<const TestExpr&>(e);
      if (const_mode_ && !is_known_test(t.name)) throw NotConstant{};
      const Value v = eval(*t.node, f);
      CallArgs args;
      eval_args(t.sig, f, args);
      return Value(call_test(t.name, v, args));
    }
    case Expr::K::Cond: {
      const auto& c = static_cast<const CondExpr&>(e);
      if (truthy(eval(*c.test, f))) return eval(*c.expr1, f);
      if (c.expr2) return eval(*c.expr2, f);
      if (const_mode_) throw NotConstant{};
      return Value::undefined_hint("the inline if-expression on line " + std::to_string(c.line) +
                                   " evaluated to false and no else section was defined.");
    }
    case Expr::K::Call: {
      if (const_mode_) throw NotConstant{};
      const auto& c = static_cast<const CallExpr&>(e);
      const Value callee = eval(*c.node, f);
      CallArgs args;
      eval_args(c.sig, f, args);
      return call(callee, args);
    }
  }
  return Value();
}

}  // namespace tf::jinja
