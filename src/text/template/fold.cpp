#include "fold.h"

#include "interpreter.h"

namespace tf::jinja {

namespace {

bool safe_repr(const Value& v) {
  switch (v.type()) {
    case Value::Type::None:
    case Value::Type::Bool:
    case Value::Type::Int:
    case Value::Type::Float:
    case Value::Type::Str:
      return true;
    case Value::Type::List:
      if (v.list_kind() == ListKind::Range) return true;
      if (v.list_kind() != ListKind::List && v.list_kind() != ListKind::Tuple) return false;
      for (const auto& i : v.items())
        if (!safe_repr(i)) return false;
      return true;
    case Value::Type::Dict:
      for (const auto& [k, x] : v.dict().entries)
        if (!safe_repr(k) || !safe_repr(x)) return false;
      return true;
    default:
      return false;
  }
}

// Expression kinds whose compiler visitor is decorated with @optimizeconst.
bool optimized_kind(Expr::K k) {
  switch (k) {
    case Expr::K::Bin:
    case Expr::K::Unary:
    case Expr::K::Concat:
    case Expr::K::Compare:
    case Expr::K::Getattr:
    case Expr::K::Getitem:
    case Expr::K::Filter:
    case Expr::K::Test:
    case Expr::K::Cond:
    case Expr::K::Call:
      return true;
    default:
      return false;
  }
}

class Folder {
 public:
  void body(Body& b) {
    for (auto& s : b) stmt(*s);
  }

 private:
  void replace(ExprPtr& slot, const Value& v) {
    const int line = slot->line;
    slot = std::make_unique<ConstExpr>(v, line);
  }

  // in_optimizer: inside jinja2's Optimizer, which tries every expression node
  void expr(ExprPtr& slot, bool in_optimizer) {
    if (!slot) return;
    Expr& e = *slot;
    if (e.kind == Expr::K::Const || e.kind == Expr::K::Name || e.kind == Expr::K::NSRef) return;
    const bool optimized = optimized_kind(e.kind);
    if (optimized || in_optimizer) {
      if (auto v = Interpreter::try_const(e); v && safe_repr(*v)) {
        replace(slot, *v);
        return;
      }
    }
    children(e, optimized || in_optimizer);
  }

  void sig(CallSignature& s, bool opt) {
    for (auto& a : s.args) expr(a, opt);
    for (auto& [k, v] : s.kwargs) expr(v, opt);
    expr(s.dyn_args, opt);
    expr(s.dyn_kwargs, opt);
  }

  void children(Expr& e, bool opt) {
    switch (e.kind) {
      case Expr::K::Tuple:
        for (auto& i : static_cast<TupleExpr&>(e).items) expr(i, opt);
        return;
      case Expr::K::List:
        for (auto& i : static_cast<ListExpr&>(e).items) expr(i, opt);
        return;
      case Expr::K::Dict:
        for (auto& [k, v] : static_cast<DictExpr&>(e).items) {
          expr(k, opt);
          expr(v, opt);
        }
        return;
      case Expr::K::Bin:
        expr(static_cast<BinExpr&>(e).left, opt);
        expr(static_cast<BinExpr&>(e).right, opt);
        return;
      case Expr::K::Unary:
        expr(static_cast<UnaryExpr&>(e).node, opt);
        return;
      case Expr::K::Concat:
        for (auto& i : static_cast<ConcatExpr&>(e).nodes) expr(i, opt);
        return;
      case Expr::K::Compare:
        expr(static_cast<CompareExpr&>(e).expr, opt);
        for (auto& [op, x] : static_cast<CompareExpr&>(e).ops) expr(x, opt);
        return;
      case Expr::K::Getattr:
        expr(static_cast<GetattrExpr&>(e).node, opt);
        return;
      case Expr::K::Getitem: {
        auto& g = static_cast<GetitemExpr&>(e);
        expr(g.node, opt);
        if (g.arg->kind == Expr::K::Slice) {
          auto& sl = static_cast<SliceExpr&>(*g.arg);
          expr(sl.start, opt);
          expr(sl.stop, opt);
          expr(sl.step, opt);
        } else {
          expr(g.arg, opt);
        }
        return;
      }
      case Expr::K::Filter:
        expr(static_cast<FilterExpr&>(e).node, opt);
        sig(static_cast<FilterExpr&>(e).sig, opt);
        return;
      case Expr::K::Test:
        expr(static_cast<TestExpr&>(e).node, opt);
        sig(static_cast<TestExpr&>(e).sig, opt);
        return;
      case Expr::K::Cond:
        expr(static_cast<CondExpr&>(e).test, opt);
        expr(static_cast<CondExpr&>(e).expr1, opt);
        expr(static_cast<CondExpr&>(e).expr2, opt);
        return;
      case Expr::K::Call:
        expr(static_cast<CallExpr&>(e).node, opt);
        sig(static_cast<CallExpr&>(e).sig, opt);
        return;
      default:
        return;
    }
  }

  void macro(MacroDef& d) {
    for (auto& x : d.defaults) expr(x, false);
    body(d.body);
  }

  void stmt(Stmt& s) {
    switch (s.kind) {
      case Stmt::K::Output:
        for (auto& p : static_cast<OutputStmt&>(s).parts) {
          if (!p.expr || p.expr->kind == Expr::K::Const) continue;
          if (auto v = Interpreter::try_const(*p.expr)) {  // {{ }} children fold whatever their value
            replace(p.expr, Value(v->is_str() ? v->str() : py_str(*v)));
            continue;
          }
          expr(p.expr, false);
        }
        return;
      case Stmt::K::If: {
        auto& i = static_cast<IfStmt&>(s);
        expr(i.test, false);
        body(i.body);
        for (auto& e : i.elifs) {
          expr(e->test, false);
          body(e->body);
        }
        body(i.else_);
        return;
      }
      case Stmt::K::For: {
        auto& f = static_cast<ForStmt&>(s);
        expr(f.iter, false);
        expr(f.test, false);
        body(f.body);
        body(f.else_);
        return;
      }
      case Stmt::K::Macro:
        macro(*static_cast<MacroStmt&>(s).def);
        return;
      case Stmt::K::CallBlock: {
        auto& c = static_cast<CallBlockStmt&>(s);
        macro(*c.def);
        if (c.call) sig(c.call->sig, true);  // the call itself is an optimized (never constant) node
        if (c.call) expr(c.call->node, true);
        return;
      }
      case Stmt::K::FilterBlock: {
        auto& fb = static_cast<FilterBlockStmt&>(s);
        body(fb.body);
        sig(fb.filter->sig, true);
        return;
      }
      case Stmt::K::With: {
        auto& w = static_cast<WithStmt&>(s);
        for (auto& v : w.values) expr(v, false);
        body(w.body);
        return;
      }
      case Stmt::K::Assign:
        expr(static_cast<AssignStmt&>(s).node, false);
        return;
      case Stmt::K::AssignBlock: {
        auto& a = static_cast<AssignBlockStmt&>(s);
        body(a.body);
        if (a.filter) sig(a.filter->sig, true);
        return;
      }
      case Stmt::K::Block:
        body(static_cast<BlockStmt&>(s).body);
        return;
      case Stmt::K::Scope:
        return;  // {% autoescape %} makes the evaluation context volatile: jinja2 folds nothing there
      case Stmt::K::Unsupported:
        expr(static_cast<UnsupportedStmt&>(s).template_expr, false);
        return;
      default:
        return;
    }
  }
};

}  // namespace

void fold_constants(TemplateAst& ast) { Folder().body(ast.body); }

}  // namespace tf::jinja
