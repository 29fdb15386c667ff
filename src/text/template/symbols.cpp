#include "symbols.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "template_error.h"

namespace tf::jinja {

namespace {

[[noreturn]] void fail(const std::string& msg, int line) { throw TemplateError(TemplateError::Kind::Syntax, msg, line); }

int slot_for(FrameInfo& fi, const std::string& name) {
  for (std::size_t i = 0; i < fi.slots.size(); ++i)
    if (fi.slots[i] == name) return static_cast<int>(i);
  fi.slots.push_back(name);
  return static_cast<int>(fi.slots.size() - 1);
}

class Symbols {
 public:
  Symbols(const Symbols* parent, FrameInfo* frame, int level) : parent_(parent), frame_(frame), level_(level) {
    frame_->level = level;
  }

  int level() const { return level_; }

  std::optional<RefId> find_ref(const std::string& name) const {
    for (const Symbols* s = this; s; s = s->parent_) {
      auto it = s->refs_.find(name);
      if (it != s->refs_.end()) return it->second;
    }
    return std::nullopt;
  }

  RefId ref(const std::string& name, int line) const {
    auto r = find_ref(name);
    if (!r) fail("internal: could not resolve '" + name + "'", line);
    return *r;
  }

  RefId define_ref(const std::string& name, std::optional<LoadInstr> load) {
    const RefId r{level_, slot_for(*frame_, name)};
    refs_[name] = r;
    if (load) {
      load->slot = r.slot;
      loads_[r.slot] = *load;
    }
    return r;
  }

  void store(const std::string& name) {
    stores_.insert(name);
    if (refs_.count(name)) return;
    if (parent_) {
      if (auto outer = parent_->find_ref(name)) {
        LoadInstr l;
        l.kind = LoadKind::Alias;
        l.src = *outer;
        define_ref(name, l);
        return;
      }
    }
    LoadInstr l;
    l.kind = LoadKind::Undefined;
    define_ref(name, l);
  }

  RefId declare_parameter(const std::string& name) {
    stores_.insert(name);
    LoadInstr l;
    l.kind = LoadKind::Param;
    return define_ref(name, l);
  }

  void load(const std::string& name) {
    if (find_ref(name)) return;
    LoadInstr l;
    l.kind = LoadKind::Resolve;
    l.name = name;
    define_ref(name, l);
  }

  void branch_update(const std::vector<const Symbols*>& branches) {
    std::set<std::string> stores;
    for (const Symbols* b : branches) stores.insert(b->stores_.begin(), b->stores_.end());
    for (const auto& s : stores_) stores.erase(s);
    for (const Symbols* b : branches) {
      for (const auto& [k, v] : b->refs_) refs_[k] = v;
      for (const auto& [k, v] : b->loads_) loads_[k] = v;
      stores_.insert(b->stores_.begin(), b->stores_.end());
    }
    for (const auto& name : stores) {
      const RefId target = refs_.at(name);
      LoadInstr l;
      l.slot = target.slot;
      if (parent_) {
        if (auto outer = parent_->find_ref(name)) {
          l.kind = LoadKind::Alias;
          l.src = *outer;
          loads_[target.slot] = l;
          continue;
        }
      }
      l.kind = LoadKind::Resolve;
      l.name = name;
      loads_[target.slot] = l;
    }
  }

  void finish() {
    frame_->loads.clear();
    for (const auto& [slot, l] : loads_) frame_->loads.push_back(l);
  }

 private:
  const Symbols* parent_;
  FrameInfo* frame_;
  int level_;
  std::map<std::string, RefId> refs_;
  std::map<int, LoadInstr> loads_;
  std::set<std::string> stores_;
};

// ---- generic traversal in jinja2's field order --------------------------------------------------

struct NodeVisitor {
  virtual ~NodeVisitor() = default;
  virtual void name(NameExpr&) {}
  virtual bool enter_block() { return true; }

  void expr(Expr* e) {
    if (!e) return;
    switch (e->kind) {
      case Expr::K::Name:
        name(static_cast<NameExpr&>(*e));
        return;
      case Expr::K::Tuple:
        for (auto& i : static_cast<TupleExpr*>(e)->items) expr(i.get());
        return;
      case Expr::K::List:
        for (auto& i : static_cast<ListExpr*>(e)->items) expr(i.get());
        return;
      case Expr::K::Dict:
        for (auto& [k, v] : static_cast<DictExpr*>(e)->items) {
          expr(k.get());
          expr(v.get());
        }
        return;
      case Expr::K::Bin: {
        auto* b = static_cast<BinExpr*>(e);
        expr(b->left.get());
        expr(b->right.get());
        return;
      }
      case Expr::K::Unary:
        expr(static_cast<UnaryExpr*>(e)->node.get());
        return;
      case Expr::K::Concat:
        for (auto& i : static_cast<ConcatExpr*>(e)->nodes) expr(i.get());
        return;
      case Expr::K::Compare: {
        auto* c = static_cast<CompareExpr*>(e);
        expr(c->expr.get());
        for (auto& [op, x] : c->ops) expr(x.get());
        return;
      }
      case Expr::K::Getattr:
        expr(static_cast<GetattrExpr*>(e)->node.get());
        return;
      case Expr::K::Getitem: {
        auto* g = static_cast<GetitemExpr*>(e);
        expr(g->node.get());
        expr(g->arg.get());
        return;
      }
      case Expr::K::Slice: {
        auto* s = static_cast<SliceExpr*>(e);
        expr(s->start.get());
        expr(s->stop.get());
        expr(s->step.get());
        return;
      }
      case Expr::K::Filter: {
        auto* f = static_cast<FilterExpr*>(e);
        expr(f->node.get());
        sig(f->sig);
        return;
      }
      case Expr::K::Test: {
        auto* t = static_cast<TestExpr*>(e);
        expr(t->node.get());
        sig(t->sig);
        return;
      }
      case Expr::K::Cond: {
        auto* c = static_cast<CondExpr*>(e);
        expr(c->test.get());
        expr(c->expr1.get());
        expr(c->expr2.get());
        return;
      }
      case Expr::K::Call: {
        auto* c = static_cast<CallExpr*>(e);
        expr(c->node.get());
        sig(c->sig);
        return;
      }
      default:
        return;
    }
  }
  void sig(CallSignature& s) {
    for (auto& a : s.args) expr(a.get());
    for (auto& [k, v] : s.kwargs) expr(v.get());
    expr(s.dyn_args.get());
    expr(s.dyn_kwargs.get());
  }
  void body(Body& b) {
    for (auto& s : b) stmt(*s);
  }
  void macro_def(MacroDef& d) {
    for (auto& a : d.args) name(*a);
    for (auto& x : d.defaults) expr(x.get());
    body(d.body);
  }
  void stmt(Stmt& s) {
    switch (s.kind) {
      case Stmt::K::Output:
        for (auto& p : static_cast<OutputStmt&>(s).parts) expr(p.expr.get());
        return;
      case Stmt::K::If: {
        auto& i = static_cast<IfStmt&>(s);
        expr(i.test.get());
        body(i.body);
        for (auto& e : i.elifs) stmt(*e);
        body(i.else_);
        return;
      }
      case Stmt::K::For: {
        auto& f = static_cast<ForStmt&>(s);
        expr(f.target.get());
        expr(f.iter.get());
        body(f.body);
        body(f.else_);
        expr(f.test.get());
        return;
      }
      case Stmt::K::Macro:
        macro_def(*static_cast<MacroStmt&>(s).def);
        return;
      case Stmt::K::CallBlock: {
        auto& c = static_cast<CallBlockStmt&>(s);
        expr(c.call.get());
        macro_def(*c.def);
        return;
      }
      case Stmt::K::FilterBlock: {
        auto& f = static_cast<FilterBlockStmt&>(s);
        body(f.body);
        expr(f.filter.get());
        return;
      }
      case Stmt::K::With: {
        auto& w = static_cast<WithStmt&>(s);
        for (auto& t : w.targets) expr(t.get());
        for (auto& v : w.values) expr(v.get());
        body(w.body);
        return;
      }
      case Stmt::K::Assign: {
        auto& a = static_cast<AssignStmt&>(s);
        expr(a.target.get());
        expr(a.node.get());
        return;
      }
      case Stmt::K::AssignBlock: {
        auto& a = static_cast<AssignBlockStmt&>(s);
        expr(a.target.get());
        expr(a.filter.get());
        body(a.body);
        return;
      }
      case Stmt::K::Block:
        if (enter_block()) body(static_cast<BlockStmt&>(s).body);
        return;
      case Stmt::K::Scope: {
        auto& sc = static_cast<ScopeStmt&>(s);
        expr(sc.autoescape.get());
        body(sc.body);
        return;
      }
      case Stmt::K::Unsupported:
        expr(static_cast<UnsupportedStmt&>(s).template_expr.get());
        return;
      default:
        return;
    }
  }
};

// jinja2 find_undeclared: which of `names` are loaded before being assigned (blocks are not entered).
std::set<std::string> find_undeclared(Body& b, std::set<std::string> names) {
  struct V : NodeVisitor {
    std::set<std::string> names, undeclared;
    void name(NameExpr& n) override {
      if (n.ctx == Ctx::Load && names.count(n.name))
        undeclared.insert(n.name);
      else
        names.erase(n.name);
    }
    bool enter_block() override { return false; }
  } v;
  v.names = std::move(names);
  v.body(b);
  return v.undeclared;
}

// ---- FrameSymbolVisitor --------------------------------------------------------------------------

class FrameVisitor {
 public:
  explicit FrameVisitor(Symbols* s) : sym_(s) {}

  void expr(Expr* e, bool store_as_param = false) {
    if (!e) return;
    if (e->kind == Expr::K::Name) {
      auto& n = static_cast<NameExpr&>(*e);
      if (store_as_param || n.ctx == Ctx::Param)
        sym_->declare_parameter(n.name);
      else if (n.ctx == Ctx::Store)
        sym_->store(n.name);
      else
        sym_->load(n.name);
      return;
    }
    if (e->kind == Expr::K::NSRef) {
      sym_->load(static_cast<NSRefExpr&>(*e).name);
      return;
    }
    if (e->kind == Expr::K::Tuple) {
      for (auto& i : static_cast<TupleExpr&>(*e).items) expr(i.get(), store_as_param);
      return;
    }
    struct Loads : NodeVisitor {
      FrameVisitor* fv;
      void name(NameExpr& n) override { fv->expr(&n); }
    } loads;
    loads.fv = this;
    loads.expr(e);
  }

  void body(Body& b) {
    for (auto& s : b) stmt(*s);
  }

  void stmt(Stmt& s) {
    switch (s.kind) {
      case Stmt::K::Output:
        for (auto& p : static_cast<OutputStmt&>(s).parts) expr(p.expr.get());
        return;
      case Stmt::K::If:
        visit_if(static_cast<IfStmt&>(s));
        return;
      case Stmt::K::For:
        expr(static_cast<ForStmt&>(s).iter.get());
        return;
      case Stmt::K::Macro:
        sym_->store(static_cast<MacroStmt&>(s).def->name);
        return;
      case Stmt::K::CallBlock:
        expr(static_cast<CallBlockStmt&>(s).call.get());
        return;
      case Stmt::K::FilterBlock:
        expr(static_cast<FilterBlockStmt&>(s).filter.get());
        return;
      case Stmt::K::With:
        for (auto& v : static_cast<WithStmt&>(s).values) expr(v.get());
        return;
      case Stmt::K::Assign: {
        auto& a = static_cast<AssignStmt&>(s);
        expr(a.node.get());
        expr(a.target.get());
        return;
      }
      case Stmt::K::AssignBlock:
        expr(static_cast<AssignBlockStmt&>(s).target.get());
        return;
      case Stmt::K::Unsupported: {
        auto& u = static_cast<UnsupportedStmt&>(s);
        expr(u.template_expr.get());
        for (const auto& n : u.stores) sym_->store(n);
        return;
      }
      default:
        return;  // Block, Scope, Break, Continue
    }
  }

 private:
  Symbols* sym_;

  void visit_if(IfStmt& i) {
    expr(i.test.get());
    Symbols* original = sym_;
    auto inner = [&](auto&& visit) {
      Symbols copy = *original;
      sym_ = &copy;
      visit();
      sym_ = original;
      return copy;
    };
    Symbols body_syms = inner([&] { body(i.body); });
    Symbols elif_syms = inner([&] {
      for (auto& e : i.elifs) visit_if(*e);
    });
    Symbols else_syms = inner([&] { body(i.else_); });
    sym_->branch_update({&body_syms, &elif_syms, &else_syms});
  }
};

// ---- the compiler's walk ------------------------------------------------------------------------

struct WalkFrame {
  Symbols* sym;
  bool toplevel = false;
  bool soft = false;
  bool in_loop = false;
};

ExprPtr clone_target(const Expr& e) {
  if (e.kind == Expr::K::Name) {
    const auto& n = static_cast<const NameExpr&>(e);
    return std::make_unique<NameExpr>(n.name, n.ctx, n.line);
  }
  if (e.kind == Expr::K::NSRef) {
    const auto& n = static_cast<const NSRefExpr&>(e);
    return std::make_unique<NSRefExpr>(n.name, n.attr, n.line);
  }
  auto t = std::make_unique<TupleExpr>(e.line);
  const auto& src = static_cast<const TupleExpr&>(e);
  t->ctx = src.ctx;
  for (const auto& i : src.items) t->items.push_back(clone_target(*i));
  return t;
}

void collect_store_names(Expr* e, std::vector<NameExpr*>& out) {
  if (!e) return;
  if (e->kind == Expr::K::Name && static_cast<NameExpr*>(e)->ctx == Ctx::Store) out.push_back(static_cast<NameExpr*>(e));
  if (e->kind == Expr::K::Tuple)
    for (auto& i : static_cast<TupleExpr*>(e)->items) collect_store_names(i.get(), out);
}

void collect_nsrefs(Expr* e, std::vector<NSRefExpr*>& out) {
  if (!e) return;
  if (e->kind == Expr::K::NSRef) out.push_back(static_cast<NSRefExpr*>(e));
  if (e->kind == Expr::K::Tuple)
    for (auto& i : static_cast<TupleExpr*>(e)->items) collect_nsrefs(i.get(), out);
}

class Compiler {
 public:
  void run(TemplateAst& t) {
    Symbols root(nullptr, &t.frame, 0);
    FrameVisitor(&root).body(t.body);
    root.finish();
    WalkFrame f{&root, true, false, false};
    body(t.body, f);
  }

 private:
  void body(Body& b, const WalkFrame& f) {
    for (auto& s : b) stmt(*s, f);
  }

  void expr(Expr* e, const WalkFrame& f) {
    if (!e) return;
    switch (e->kind) {
      case Expr::K::Name: {
        auto& n = static_cast<NameExpr&>(*e);
        n.ref = f.sym->ref(n.name, n.line);
        return;
      }
      case Expr::K::NSRef: {
        auto& n = static_cast<NSRefExpr&>(*e);
        n.ref = f.sym->ref(n.name, n.line);
        return;
      }
      case Expr::K::Filter: {
        auto& fl = static_cast<FilterExpr&>(*e);
        if (!f.soft && !is_known_filter(fl.name)) fail("No filter named '" + fl.name + "'.", fl.line);
        expr(fl.node.get(), f);
        sig(fl.sig, f);
        return;
      }
      case Expr::K::Test: {
        auto& t = static_cast<TestExpr&>(*e);
        if (!f.soft && !is_known_test(t.name)) fail("No test named '" + t.name + "'.", t.line);
        expr(t.node.get(), f);
        sig(t.sig, f);
        return;
      }
      case Expr::K::Cond: {
        auto& c = static_cast<CondExpr&>(*e);
        WalkFrame soft = f;
        soft.soft = true;
        expr(c.test.get(), soft);
        expr(c.expr1.get(), soft);
        expr(c.expr2.get(), soft);
        return;
      }
      default: {
        switch (e->kind) {
          case Expr::K::Tuple:
            for (auto& i : static_cast<TupleExpr*>(e)->items) expr(i.get(), f);
            return;
          case Expr::K::List:
            for (auto& i : static_cast<ListExpr*>(e)->items) expr(i.get(), f);
            return;
          case Expr::K::Dict:
            for (auto& [k, v] : static_cast<DictExpr*>(e)->items) {
              expr(k.get(), f);
              expr(v.get(), f);
            }
            return;
          case Expr::K::Bin:
            expr(static_cast<BinExpr*>(e)->left.get(), f);
            expr(static_cast<BinExpr*>(e)->right.get(), f);
            return;
          case Expr::K::Unary:
            expr(static_cast<UnaryExpr*>(e)->node.get(), f);
            return;
          case Expr::K::Concat:
            for (auto& i : static_cast<ConcatExpr*>(e)->nodes) expr(i.get(), f);
            return;
          case Expr::K::Compare:
            expr(static_cast<CompareExpr*>(e)->expr.get(), f);
            for (auto& [op, x] : static_cast<CompareExpr*>(e)->ops) expr(x.get(), f);
            return;
          case Expr::K::Getattr:
            expr(static_cast<GetattrExpr*>(e)->node.get(), f);
            return;
          case Expr::K::Getitem:
            expr(static_cast<GetitemExpr*>(e)->node.get(), f);
            expr(static_cast<GetitemExpr*>(e)->arg.get(), f);
            return;
          case Expr::K::Slice:
            expr(static_cast<SliceExpr*>(e)->start.get(), f);
            expr(static_cast<SliceExpr*>(e)->stop.get(), f);
            expr(static_cast<SliceExpr*>(e)->step.get(), f);
            return;
          case Expr::K::Call:
            expr(static_cast<CallExpr*>(e)->node.get(), f);
            sig(static_cast<CallExpr*>(e)->sig, f);
            return;
          default:
            return;
        }
      }
    }
  }

  void sig(CallSignature& s, const WalkFrame& f) {
    for (auto& a : s.args) expr(a.get(), f);
    for (auto& [k, v] : s.kwargs) expr(v.get(), f);
    expr(s.dyn_args.get(), f);
    expr(s.dyn_kwargs.get(), f);
  }

  static WalkFrame inner(Symbols* s, bool in_loop) { return WalkFrame{s, false, false, in_loop}; }

  std::vector<Export> exports_of(Expr* target, const WalkFrame& f) {
    std::vector<Export> out;
    if (!f.toplevel) return out;
    std::vector<NameExpr*> names;
    collect_store_names(target, names);
    for (NameExpr* n : names) out.push_back({n->name, n->ref});
    return out;
  }

  std::vector<RefId> ns_checks_of(Expr* target, const WalkFrame& f) {
    std::vector<NSRefExpr*> refs;
    collect_nsrefs(target, refs);
    std::vector<RefId> out;
    std::set<std::string> seen;
    for (NSRefExpr* r : refs)
      if (seen.insert(r->name).second) out.push_back(f.sym->ref(r->name, r->line));
    return out;
  }

  void macro_body(MacroDef& d, const WalkFrame& f, int line) {
    Symbols s(f.sym, &d.frame, f.sym->level() + 1);
    FrameVisitor fv(&s);
    for (auto& a : d.args) fv.expr(a.get());
    for (auto& x : d.defaults) fv.expr(x.get());
    fv.body(d.body);
    const auto undeclared = find_undeclared(d.body, {"caller", "kwargs", "varargs"});
    std::optional<std::size_t> explicit_caller;
    bool has_kwargs_arg = false, has_varargs_arg = false;
    for (std::size_t i = 0; i < d.args.size(); ++i) {
      if (d.args[i]->name == "caller") explicit_caller = i;
      if (d.args[i]->name == "kwargs") has_kwargs_arg = true;
      if (d.args[i]->name == "varargs") has_varargs_arg = true;
    }
    if (undeclared.count("caller")) {
      if (explicit_caller) {
        const std::size_t first_default = d.args.size() - d.defaults.size();
        if (*explicit_caller < first_default)
          fail("When defining macros or call blocks the special \"caller\" argument must be omitted or be given a default.", line);
      } else {
        d.caller_ref = s.declare_parameter("caller");
      }
      d.caller = true;
    }
    if (undeclared.count("kwargs") && !has_kwargs_arg) {
      d.kwargs_ref = s.declare_parameter("kwargs");
      d.catch_kwargs = true;
    }
    if (undeclared.count("varargs") && !has_varargs_arg) {
      d.varargs_ref = s.declare_parameter("varargs");
      d.catch_varargs = true;
    }
    s.finish();
    const WalkFrame mf = inner(&s, false);
    for (auto& a : d.args) a->ref = s.ref(a->name, a->line);
    for (auto& x : d.defaults) expr(x.get(), mf);
    body(d.body, mf);
  }

  void check_no_loop_store(Stmt& s) {
    struct V : NodeVisitor {
      void name(NameExpr& n) override {
        if (n.ctx == Ctx::Store && n.name == "loop") fail("Can't assign to special loop variable in for-loop target", n.line);
      }
    } v;
    v.stmt(s);
  }

  void stmt(Stmt& s, const WalkFrame& f) {
    switch (s.kind) {
      case Stmt::K::Output:
        for (auto& p : static_cast<OutputStmt&>(s).parts) expr(p.expr.get(), f);
        return;
      case Stmt::K::If: {
        auto& i = static_cast<IfStmt&>(s);
        WalkFrame soft = f;
        soft.soft = true;
        expr(i.test.get(), soft);
        body(i.body, soft);
        for (auto& e : i.elifs) {
          expr(e->test.get(), soft);
          body(e->body, soft);
        }
        body(i.else_, soft);
        return;
      }
      case Stmt::K::For: {
        auto& fo = static_cast<ForStmt&>(s);
        const int level = f.sym->level() + 1;
        Symbols loop_sym(f.sym, &fo.body_frame, level);
        fo.extended = fo.recursive || find_undeclared(fo.body, {"loop"}).count("loop");
        if (fo.extended) fo.loop_ref = loop_sym.declare_parameter("loop");
        {
          FrameVisitor fv(&loop_sym);
          fv.expr(fo.target.get(), true);
          fv.body(fo.body);
        }
        loop_sym.finish();
        Symbols else_sym(f.sym, &fo.else_frame, level);
        FrameVisitor(&else_sym).body(fo.else_);
        else_sym.finish();
        Symbols test_sym(f.sym, &fo.test_frame, level);
        if (fo.test) {
          fo.test_target = clone_target(*fo.target);
          FrameVisitor fv(&test_sym);
          fv.expr(fo.test_target.get(), true);
          fv.expr(fo.test.get());
          test_sym.finish();
          const WalkFrame tf = inner(&test_sym, false);
          expr(fo.test_target.get(), tf);
          expr(fo.test.get(), tf);
        }
        check_no_loop_store(s);
        expr(fo.iter.get(), f);
        const WalkFrame lf = inner(&loop_sym, true);
        expr(fo.target.get(), lf);
        body(fo.body, lf);
        body(fo.else_, inner(&else_sym, f.in_loop && !fo.recursive));
        return;
      }
      case Stmt::K::Macro: {
        auto& m = static_cast<MacroStmt&>(s);
        macro_body(*m.def, f, m.line);
        m.name_ref = f.sym->ref(m.def->name, m.line);
        m.export_to_context = f.toplevel;
        return;
      }
      case Stmt::K::CallBlock: {
        auto& c = static_cast<CallBlockStmt&>(s);
        macro_body(*c.def, f, c.line);
        expr(c.call.get(), f);
        return;
      }
      case Stmt::K::FilterBlock: {
        auto& fb = static_cast<FilterBlockStmt&>(s);
        Symbols fs(f.sym, &fb.frame, f.sym->level() + 1);
        FrameVisitor fv(&fs);
        fv.body(fb.body);
        fv.expr(fb.filter.get());
        fs.finish();
        const WalkFrame ff = inner(&fs, f.in_loop);
        body(fb.body, ff);
        expr(fb.filter.get(), ff);
        return;
      }
      case Stmt::K::With: {
        auto& w = static_cast<WithStmt&>(s);
        Symbols ws(f.sym, &w.frame, f.sym->level() + 1);
        FrameVisitor fv(&ws);
        for (auto& t : w.targets) fv.expr(t.get());
        fv.body(w.body);
        ws.finish();
        const WalkFrame wf = inner(&ws, f.in_loop);
        for (auto& t : w.targets) expr(t.get(), wf);
        for (auto& v : w.values) expr(v.get(), f);
        body(w.body, wf);
        return;
      }
      case Stmt::K::Assign: {
        auto& a = static_cast<AssignStmt&>(s);
        a.ns_checks = ns_checks_of(a.target.get(), f);
        expr(a.target.get(), f);
        expr(a.node.get(), f);
        a.exports = exports_of(a.target.get(), f);
        return;
      }
      case Stmt::K::AssignBlock: {
        auto& a = static_cast<AssignBlockStmt&>(s);
        Symbols bs(f.sym, &a.frame, f.sym->level() + 1);
        FrameVisitor(&bs).body(a.body);
        bs.finish();
        const WalkFrame bf = inner(&bs, f.in_loop);
        body(a.body, bf);
        a.ns_checks = ns_checks_of(a.target.get(), f);
        expr(a.target.get(), f);
        a.exports = exports_of(a.target.get(), f);
        expr(a.filter.get(), bf);
        return;
      }
      case Stmt::K::Break:
      case Stmt::K::Continue:
        if (!f.in_loop) fail(std::string("'") + (s.kind == Stmt::K::Break ? "break" : "continue") + "' outside loop", s.line);
        return;
      case Stmt::K::Block: {
        auto& b = static_cast<BlockStmt&>(s);
        Symbols bs(nullptr, &b.frame, 0);
        FrameVisitor(&bs).body(b.body);
        bs.finish();
        body(b.body, inner(&bs, false));
        return;
      }
      case Stmt::K::Scope: {
        auto& sc = static_cast<ScopeStmt&>(s);
        Symbols ss(f.sym, &sc.frame, f.sym->level() + 1);
        FrameVisitor fv(&ss);
        fv.expr(sc.autoescape.get());
        fv.body(sc.body);
        ss.finish();
        const WalkFrame sf = inner(&ss, f.in_loop);
        expr(sc.autoescape.get(), sf);
        body(sc.body, sf);
        return;
      }
      case Stmt::K::Unsupported: {
        auto& u = static_cast<UnsupportedStmt&>(s);
        expr(u.template_expr.get(), f);
        for (const auto& n : u.stores) u.store_refs.push_back(f.sym->ref(n, u.line));
        return;
      }
    }
  }
};

}  // namespace

void resolve_symbols(TemplateAst& ast) { Compiler().run(ast); }

}  // namespace tf::jinja
