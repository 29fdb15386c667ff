#pragma once
// The parsed template: jinja2's node types, plus what the compiler's symbol analysis (symbols.cpp) adds
// to them: every variable reference resolved to a slot of a frame, and each frame's load instructions.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "value.h"

namespace tf::jinja {

// A frame-local variable: frame nesting level and slot index (jinja2's l_<level>_<name>).
struct RefId {
  int level = -1;
  int slot = -1;
};

// How a frame initializes a variable when it is entered (jinja2 idtracking VAR_LOAD_*).
enum class LoadKind { Param, Resolve, Alias, Undefined };
struct LoadInstr {
  int slot = 0;
  LoadKind kind = LoadKind::Undefined;
  RefId src;         // Alias: the outer variable copied
  std::string name;  // Resolve: the context name
};

struct FrameInfo {
  int level = 0;
  std::vector<std::string> slots;  // variable name of each slot
  std::vector<LoadInstr> loads;
};

enum class Ctx { Load, Store, Param };

struct Expr {
  enum class K {
    Const, Name, NSRef, Tuple, List, Dict, Bin, Unary, Concat, Compare, Getattr, Getitem, Slice,
    Filter, Test, Cond, Call,
  };
  explicit Expr(K k, int l) : kind(k), line(l) {}
  virtual ~Expr() = default;
  K kind;
  int line;
  int depth = 1;  // height of this subtree; the parser bounds it so evaluation cannot overflow the stack
};
using ExprPtr = std::unique_ptr<Expr>;

struct ConstExpr : Expr {
  ConstExpr(const Value& v, int l) : Expr(K::Const, l), value(v) {}
  Value value;
};
struct NameExpr : Expr {
  NameExpr(std::string n, Ctx c, int l) : Expr(K::Name, l), name(std::move(n)), ctx(c) {}
  std::string name;
  Ctx ctx;
  RefId ref;
};
struct NSRefExpr : Expr {
  NSRefExpr(std::string n, std::string a, int l) : Expr(K::NSRef, l), name(std::move(n)), attr(std::move(a)) {}
  std::string name, attr;
  RefId ref;
};
struct TupleExpr : Expr {
  explicit TupleExpr(int l) : Expr(K::Tuple, l) {}
  std::vector<ExprPtr> items;
  Ctx ctx = Ctx::Load;
};
struct ListExpr : Expr {
  explicit ListExpr(int l) : Expr(K::List, l) {}
  std::vector<ExprPtr> items;
};
struct DictExpr : Expr {
  explicit DictExpr(int l) : Expr(K::Dict, l) {}
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
};
enum class BinOp { Add, Sub, Mul, Div, FloorDiv, Mod, Pow, And, Or };
struct BinExpr : Expr {
  BinExpr(BinOp o, ExprPtr a, ExprPtr b, int l) : Expr(K::Bin, l), op(o), left(std::move(a)), right(std::move(b)) {}
  BinOp op;
  ExprPtr left, right;
};
enum class UnOp { Not, Neg, Pos };
struct UnaryExpr : Expr {
  UnaryExpr(UnOp o, ExprPtr n, int l) : Expr(K::Unary, l), op(o), node(std::move(n)) {}
  UnOp op;
  ExprPtr node;
};
struct ConcatExpr : Expr {
  explicit ConcatExpr(int l) : Expr(K::Concat, l) {}
  std::vector<ExprPtr> nodes;
};
enum class CmpOp { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };
struct CompareExpr : Expr {
  explicit CompareExpr(int l) : Expr(K::Compare, l) {}
  ExprPtr expr;
  std::vector<std::pair<CmpOp, ExprPtr>> ops;
};
struct GetattrExpr : Expr {
  GetattrExpr(ExprPtr n, std::string a, int l) : Expr(K::Getattr, l), node(std::move(n)), attr(std::move(a)) {}
  ExprPtr node;
  std::string attr;
};
struct GetitemExpr : Expr {
  GetitemExpr(ExprPtr n, ExprPtr a, int l) : Expr(K::Getitem, l), node(std::move(n)), arg(std::move(a)) {}
  ExprPtr node, arg;
  bool folded_slice = false;  // a slice of constants: jinja2's optimizer evaluates it via getitem
};
struct SliceExpr : Expr {
  explicit SliceExpr(int l) : Expr(K::Slice, l) {}
  ExprPtr start, stop, step;
};
struct CallSignature {
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  ExprPtr dyn_args, dyn_kwargs;
};
struct FilterExpr : Expr {
  explicit FilterExpr(int l) : Expr(K::Filter, l) {}
  ExprPtr node;  // null inside {% filter %} and {% set x | f %}: applies to the block's output
  std::string name;
  CallSignature sig;
};
struct TestExpr : Expr {
  explicit TestExpr(int l) : Expr(K::Test, l) {}
  ExprPtr node;
  std::string name;
  CallSignature sig;
};
struct CondExpr : Expr {
  explicit CondExpr(int l) : Expr(K::Cond, l) {}
  ExprPtr test, expr1, expr2;  // expr1 if test else expr2 (expr2 may be null)
};
struct CallExpr : Expr {
  explicit CallExpr(int l) : Expr(K::Call, l) {}
  ExprPtr node;
  CallSignature sig;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class K {
    Output, If, For, Macro, CallBlock, FilterBlock, With, Assign, AssignBlock, Break, Continue, Block,
    Scope, Unsupported,
  };
  explicit Stmt(K k, int l) : kind(k), line(l) {}
  virtual ~Stmt() = default;
  K kind;
  int line;
};

struct OutputStmt : Stmt {
  explicit OutputStmt(int l) : Stmt(K::Output, l) {}
  struct Part {
    std::string data;  // template text, when expr is null
    ExprPtr expr;
  };
  std::vector<Part> parts;
};

struct IfStmt : Stmt {
  explicit IfStmt(int l) : Stmt(K::If, l) {}
  ExprPtr test;
  Body body;
  std::vector<std::unique_ptr<IfStmt>> elifs;  // jinja2 keeps elif branches as If nodes
  Body else_;
};

struct ForStmt : Stmt {
  explicit ForStmt(int l) : Stmt(K::For, l) {}
  ExprPtr target, iter, test;
  ExprPtr test_target;  // a copy of target bound in the filter test's frame
  Body body, else_;
  bool recursive = false;
  bool extended = false;  // the body uses `loop`
  RefId loop_ref;
  FrameInfo body_frame, else_frame, test_frame;
};

// A macro, a {% call %} block's caller, or a {% generation %} block's body.
struct MacroDef {
  std::string name;  // empty for call blocks
  std::vector<std::unique_ptr<NameExpr>> args;
  std::vector<ExprPtr> defaults;  // for the last defaults.size() args
  Body body;
  FrameInfo frame;
  bool catch_kwargs = false, catch_varargs = false, caller = false;
  RefId caller_ref, kwargs_ref, varargs_ref;
};

struct MacroStmt : Stmt {
  explicit MacroStmt(int l) : Stmt(K::Macro, l) {}
  std::shared_ptr<MacroDef> def;
  RefId name_ref;
  bool export_to_context = false;
};

struct CallBlockStmt : Stmt {
  explicit CallBlockStmt(int l) : Stmt(K::CallBlock, l) {}
  std::unique_ptr<CallExpr> call;  // null for {% generation %}: the body is rendered in place
  std::shared_ptr<MacroDef> def;
};

struct FilterBlockStmt : Stmt {
  explicit FilterBlockStmt(int l) : Stmt(K::FilterBlock, l) {}
  std::unique_ptr<FilterExpr> filter;
  Body body;
  FrameInfo frame;
};

struct WithStmt : Stmt {
  explicit WithStmt(int l) : Stmt(K::With, l) {}
  std::vector<ExprPtr> targets, values;
  Body body;
  FrameInfo frame;
};

struct Export {
  std::string name;
  RefId ref;
};

struct AssignStmt : Stmt {
  explicit AssignStmt(int l) : Stmt(K::Assign, l) {}
  ExprPtr target, node;
  std::vector<Export> exports;     // names also written to the context (top-level assignments)
  std::vector<RefId> ns_checks;    // namespace targets to check before assigning
};

struct AssignBlockStmt : Stmt {
  explicit AssignBlockStmt(int l) : Stmt(K::AssignBlock, l) {}
  ExprPtr target;
  std::unique_ptr<FilterExpr> filter;  // may be null
  Body body;
  FrameInfo frame;
  std::vector<Export> exports;
  std::vector<RefId> ns_checks;
};

struct SimpleStmt : Stmt {  // break, continue
  using Stmt::Stmt;
};

struct BlockStmt : Stmt {
  explicit BlockStmt(int l) : Stmt(K::Block, l) {}
  std::string name;
  bool scoped = false, required = false;
  Body body;
  FrameInfo frame;
};

struct ScopeStmt : Stmt {  // {% autoescape expr %}
  explicit ScopeStmt(int l) : Stmt(K::Scope, l) {}
  ExprPtr autoescape;
  Body body;
  FrameInfo frame;
};

struct UnsupportedStmt : Stmt {  // extends/include/import/from: no loader in a chat template
  explicit UnsupportedStmt(int l) : Stmt(K::Unsupported, l) {}
  std::string what;
  ExprPtr template_expr;
  std::vector<std::string> stores;  // names an import would bind
  std::vector<RefId> store_refs;
};

struct TemplateAst {
  Body body;
  FrameInfo frame;
};

}  // namespace tf::jinja
