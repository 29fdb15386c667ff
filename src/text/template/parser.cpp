#include "parser.h"

#include <algorithm>
#include <initializer_list>

#include "lexer.h"
#include "template_error.h"

namespace tf::jinja {

namespace {

int height(const ExprPtr& e) { return e ? e->depth : 0; }
int height(const CallSignature& s) {
  int h = std::max(height(s.dyn_args), height(s.dyn_kwargs));
  for (const auto& a : s.args) h = std::max(h, height(a));
  for (const auto& [k, v] : s.kwargs) h = std::max(h, height(v));
  return h;
}

int child_height(const Expr& e) {
  switch (e.kind) {
    case Expr::K::Tuple: {
      int h = 0;
      for (const auto& i : static_cast<const TupleExpr&>(e).items) h = std::max(h, height(i));
      return h;
    }
    case Expr::K::List: {
      int h = 0;
      for (const auto& i : static_cast<const ListExpr&>(e).items) h = std::max(h, height(i));
      return h;
    }
    case Expr::K::Dict: {
      int h = 0;
      for (const auto& [k, v] : static_cast<const DictExpr&>(e).items) h = std::max({h, height(k), height(v)});
      return h;
    }
    case Expr::K::Bin: {
      const auto& b = static_cast<const BinExpr&>(e);
      return std::max(height(b.left), height(b.right));
    }
    case Expr::K::Unary:
      return height(static_cast<const UnaryExpr&>(e).node);
    case Expr::K::Concat: {
      int h = 0;
      for (const auto& i : static_cast<const ConcatExpr&>(e).nodes) h = std::max(h, height(i));
      return h;
    }
    case Expr::K::Compare: {
      const auto& c = static_cast<const CompareExpr&>(e);
      int h = height(c.expr);
      for (const auto& [op, x] : c.ops) h = std::max(h, height(x));
      return h;
    }
    case Expr::K::Getattr:
      return height(static_cast<const GetattrExpr&>(e).node);
    case Expr::K::Getitem: {
      const auto& g = static_cast<const GetitemExpr&>(e);
      return std::max(height(g.node), height(g.arg));
    }
    case Expr::K::Slice: {
      const auto& s = static_cast<const SliceExpr&>(e);
      return std::max({height(s.start), height(s.stop), height(s.step)});
    }
    case Expr::K::Filter: {
      const auto& f = static_cast<const FilterExpr&>(e);
      return std::max(height(f.node), height(f.sig));
    }
    case Expr::K::Test: {
      const auto& t = static_cast<const TestExpr&>(e);
      return std::max(height(t.node), height(t.sig));
    }
    case Expr::K::Cond: {
      const auto& c = static_cast<const CondExpr&>(e);
      return std::max({height(c.test), height(c.expr1), height(c.expr2)});
    }
    case Expr::K::Call: {
      const auto& c = static_cast<const CallExpr&>(e);
      return std::max(height(c.node), height(c.sig));
    }
    default:
      return 0;
  }
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  TemplateAst parse() {
    TemplateAst t;
    t.body = subparse(nullptr);
    return t;
  }

 private:
  std::vector<Token> toks_;
  std::size_t i_ = 0;
  int nesting_ = 0;
  std::vector<std::string> tag_stack_;

  struct Guard {
    Parser& p;
    explicit Guard(Parser& parser) : p(parser) {
      if (++p.nesting_ > kMaxParseNesting) p.fail("template nesting too deep");
    }
    ~Guard() { --p.nesting_; }
  };

  const Token& cur() const { return toks_[i_]; }
  const Token& look() const { return toks_[std::min(i_ + 1, toks_.size() - 1)]; }
  Token next() {
    Token t = toks_[i_];
    if (i_ + 1 < toks_.size()) ++i_;
    return t;
  }
  bool is(Tok t) const { return cur().type == t; }
  bool is_name(std::string_view n) const { return cur().type == Tok::Name && cur().value == n; }
  bool skip_if(Tok t) {
    if (!is(t)) return false;
    next();
    return true;
  }
  bool skip_if_name(std::string_view n) {
    if (!is_name(n)) return false;
    next();
    return true;
  }
  [[noreturn]] void fail(const std::string& msg, int line = 0) const {
    throw TemplateError(TemplateError::Kind::Syntax, msg, line ? line : cur().line);
  }
  Token expect(Tok t) {
    if (!is(t)) {
      if (is(Tok::Eof)) fail(std::string("unexpected end of template, expected '") + describe(t) + "'.");
      fail(std::string("expected token '") + describe(t) + "', got '" + describe(cur()) + "'");
    }
    return next();
  }
  Token expect_name(std::string_view n) {
    if (!is_name(n)) {
      if (is(Tok::Eof)) fail("unexpected end of template, expected '" + std::string(n) + "'.");
      fail("expected token '" + std::string(n) + "', got '" + describe(cur()) + "'");
    }
    return next();
  }

  template <class T>
  ExprPtr finish(std::unique_ptr<T> e) {
    e->depth = 1 + child_height(*e);
    if (e->depth > kMaxExprHeight) fail("expression nesting too deep");
    return e;
  }

  // ---- statements ----------------------------------------------------------------------------

  // end_tokens: names that end the current body (current token is left on it)
  Body subparse(const std::vector<std::string>* end_tokens) {
    Body body;
    std::unique_ptr<OutputStmt> out;
    auto flush = [&] {
      if (out) body.push_back(std::move(out));
      out.reset();
    };
    while (!is(Tok::Eof)) {
      const Token& t = cur();
      if (t.type == Tok::Data) {
        if (!out) out = std::make_unique<OutputStmt>(t.line);
        out->parts.push_back({t.value, nullptr});
        next();
      } else if (t.type == Tok::VariableBegin) {
        const int line = t.line;
        next();
        if (!out) out = std::make_unique<OutputStmt>(line);
        out->parts.push_back({"", parse_tuple(false, true, {}, false, false)});
        expect(Tok::VariableEnd);
      } else if (t.type == Tok::BlockBegin) {
        flush();
        next();
        if (end_tokens && is(Tok::Name) &&
            std::find(end_tokens->begin(), end_tokens->end(), cur().value) != end_tokens->end())
          return body;
        parse_statement(body);
        expect(Tok::BlockEnd);
      } else {
        fail("unexpected '" + describe(t) + "'");
      }
    }
    flush();
    return body;
  }

  [[noreturn]] void fail_eof(const std::vector<std::string>& end_tokens) const {
    std::string msg = "Unexpected end of template.";
    if (!end_tokens.empty()) {
      msg += " Jinja was looking for the following tags: ";
      for (std::size_t k = 0; k < end_tokens.size(); ++k) msg += (k ? " or '" : "'") + end_tokens[k] + "'";
      msg += ".";
    }
    if (!tag_stack_.empty()) msg += " The innermost block that needs to be closed is '" + tag_stack_.back() + "'.";
    fail(msg);
  }

  Body parse_statements(const std::vector<std::string>& end_tokens, bool drop_needle) {
    skip_if(Tok::Colon);
    expect(Tok::BlockEnd);
    Body body = subparse(&end_tokens);
    if (is(Tok::Eof)) fail_eof(end_tokens);
    if (drop_needle) next();
    return body;
  }

  void parse_statement(Body& out) {
    Guard guard(*this);
    const Token tok = cur();
    if (tok.type != Tok::Name) fail("tag name expected", tok.line);
    const std::string& n = tok.value;
    tag_stack_.push_back(n);
    StmtPtr s;
    if (n == "for") s = parse_for();
    else if (n == "if") s = parse_if();
    else if (n == "block") s = parse_block();
    else if (n == "extends") s = parse_unsupported("extends");
    else if (n == "print") s = parse_print();
    else if (n == "macro") s = parse_macro();
    else if (n == "include") s = parse_unsupported("include");
    else if (n == "from") s = parse_unsupported("from");
    else if (n == "import") s = parse_unsupported("import");
    else if (n == "set") s = parse_set();
    else if (n == "with") s = parse_with();
    else if (n == "autoescape") s = parse_autoescape();
    else if (n == "call") s = parse_call_block();
    else if (n == "filter") s = parse_filter_block();
    else if (n == "break" || n == "continue") {
      next();
      s = std::make_unique<SimpleStmt>(n == "break" ? Stmt::K::Break : Stmt::K::Continue, tok.line);
    } else if (n == "generation") {
      next();
      auto cb = std::make_unique<CallBlockStmt>(tok.line);
      cb->def = std::make_shared<MacroDef>();
      cb->def->body = parse_statements({"endgeneration"}, true);
      s = std::move(cb);
    } else {
      tag_stack_.pop_back();
      fail("Encountered unknown tag '" + n + "'.", tok.line);
    }
    tag_stack_.pop_back();
    out.push_back(std::move(s));
  }

  StmtPtr parse_for() {
    auto f = std::make_unique<ForStmt>(expect_name("for").line);
    f->target = parse_assign_target(true, false, {"in"}, false);
    expect_name("in");
    f->iter = parse_tuple(false, false, {"recursive"}, false, false);
    if (skip_if_name("if")) f->test = parse_expression(true);
    f->recursive = skip_if_name("recursive");
    f->body = parse_statements({"endfor", "else"}, false);
    if (next().value != "endfor") f->else_ = parse_statements({"endfor"}, true);
    return f;
  }

  StmtPtr parse_if() {
    auto result = std::make_unique<IfStmt>(expect_name("if").line);
    IfStmt* node = result.get();
    while (true) {
      node->test = parse_tuple(false, false, {}, false, false);
      node->body = parse_statements({"elif", "else", "endif"}, false);
      const Token tok = next();
      if (tok.value == "elif") {
        auto e = std::make_unique<IfStmt>(cur().line);
        node = e.get();
        result->elifs.push_back(std::move(e));
        continue;
      }
      if (tok.value == "else") result->else_ = parse_statements({"endif"}, true);
      break;
    }
    return result;
  }

  StmtPtr parse_block() {
    auto b = std::make_unique<BlockStmt>(next().line);
    b->name = expect(Tok::Name).value;
    b->scoped = skip_if_name("scoped");
    b->required = skip_if_name("required");
    if (is(Tok::Sub))
      fail("Block names in Jinja have to be valid Python identifiers and may not contain hyphens, use an underscore instead.");
    b->body = parse_statements({"endblock"}, true);
    if (b->required) {
      for (const auto& st : b->body) {
        bool ok = st->kind == Stmt::K::Output;
        if (ok)
          for (const auto& p : static_cast<const OutputStmt&>(*st).parts)
            if (p.expr || p.data.find_first_not_of(" \t\n\r\f\v") != std::string::npos) ok = false;
        if (!ok) fail("Required blocks can only contain comments or whitespace");
      }
    }
    skip_if_name(b->name);
    return b;
  }

  StmtPtr parse_unsupported(const std::string& what) {
    auto u = std::make_unique<UnsupportedStmt>(next().line);
    u->what = what;
    u->template_expr = parse_expression(true);
    auto parse_context = [&] {
      if ((is_name("with") || is_name("without")) && look().type == Tok::Name && look().value == "context") {
        next();
        next();
        return true;
      }
      return false;
    };
    if (what == "include") {
      if (is_name("ignore") && look().type == Tok::Name && look().value == "missing") {
        next();
        next();
      }
      parse_context();
    } else if (what == "import") {
      expect_name("as");
      u->stores.push_back(expect(Tok::Name).value);
      parse_context();
    } else if (what == "from") {
      expect_name("import");
      bool first = true;
      while (true) {
        if (!first) expect(Tok::Comma);
        first = false;
        if (is(Tok::Name)) {
          if (parse_context()) break;
          std::string target = expect(Tok::Name).value;
          if (!target.empty() && target[0] == '_') fail("names starting with an underline can not be imported");
          if (skip_if_name("as")) target = expect(Tok::Name).value;
          u->stores.push_back(target);
          if (parse_context() || !is(Tok::Comma)) break;
        } else {
          expect(Tok::Name);
        }
      }
    }
    return u;
  }

  void parse_signature(MacroDef& def) {
    expect(Tok::LParen);
    while (!is(Tok::RParen)) {
      if (!def.args.empty()) expect(Tok::Comma);
      const Token t = expect(Tok::Name);
      auto arg = std::make_unique<NameExpr>(t.value, Ctx::Param, t.line);
      if (!can_assign_name(t.value)) fail("can't assign to 'const'", t.line);
      if (skip_if(Tok::Assign))
        def.defaults.push_back(parse_expression(true));
      else if (!def.defaults.empty())
        fail("non-default argument follows default argument");
      def.args.push_back(std::move(arg));
    }
    expect(Tok::RParen);
  }

  StmtPtr parse_call_block() {
    auto cb = std::make_unique<CallBlockStmt>(next().line);
    cb->def = std::make_shared<MacroDef>();
    if (is(Tok::LParen)) parse_signature(*cb->def);
    ExprPtr call = parse_expression(true);
    if (call->kind != Expr::K::Call) fail("expected call", cb->line);
    cb->call.reset(static_cast<CallExpr*>(call.release()));
    cb->def->body = parse_statements({"endcall"}, true);
    return cb;
  }

  StmtPtr parse_filter_block() {
    auto fb = std::make_unique<FilterBlockStmt>(next().line);
    ExprPtr f = parse_filter(nullptr, true);
    fb->filter.reset(static_cast<FilterExpr*>(f.release()));
    fb->body = parse_statements({"endfilter"}, true);
    return fb;
  }

  StmtPtr parse_macro() {
    auto m = std::make_unique<MacroStmt>(next().line);
    m->def = std::make_shared<MacroDef>();
    const Token t = expect(Tok::Name);
    if (!can_assign_name(t.value)) fail("can't assign to 'const'", t.line);
    m->def->name = t.value;
    parse_signature(*m->def);
    m->def->body = parse_statements({"endmacro"}, true);
    return m;
  }

  StmtPtr parse_print() {
    auto o = std::make_unique<OutputStmt>(next().line);
    while (!is(Tok::BlockEnd)) {
      if (!o->parts.empty()) expect(Tok::Comma);
      o->parts.push_back({"", parse_expression(true)});
    }
    return o;
  }

  StmtPtr parse_set() {
    const int line = next().line;
    ExprPtr target = parse_assign_target(true, false, {}, true);
    if (skip_if(Tok::Assign)) {
      auto a = std::make_unique<AssignStmt>(line);
      a->target = std::move(target);
      a->node = parse_tuple(false, true, {}, false, false);
      return a;
    }
    auto ab = std::make_unique<AssignBlockStmt>(line);
    ab->target = std::move(target);
    if (is(Tok::Pipe)) {
      ExprPtr f = parse_filter(nullptr, false);
      ab->filter.reset(static_cast<FilterExpr*>(f.release()));
    }
    ab->body = parse_statements({"endset"}, true);
    return ab;
  }

  StmtPtr parse_with() {
    auto w = std::make_unique<WithStmt>(next().line);
    while (!is(Tok::BlockEnd)) {
      if (!w->targets.empty()) expect(Tok::Comma);
      ExprPtr target = parse_assign_target(true, false, {}, false);
      set_ctx(*target, Ctx::Param);
      w->targets.push_back(std::move(target));
      expect(Tok::Assign);
      w->values.push_back(parse_expression(true));
    }
    w->body = parse_statements({"endwith"}, true);
    return w;
  }

  StmtPtr parse_autoescape() {
    auto s = std::make_unique<ScopeStmt>(next().line);
    s->autoescape = parse_expression(true);
    s->body = parse_statements({"endautoescape"}, true);
    return s;
  }

  // ---- assignment targets ----------------------------------------------------------------------

  static bool can_assign_name(const std::string& n) {
    return n != "true" && n != "false" && n != "none" && n != "True" && n != "False" && n != "None";
  }

  void set_ctx(Expr& e, Ctx c) {
    if (e.kind == Expr::K::Name) static_cast<NameExpr&>(e).ctx = c;
    if (e.kind == Expr::K::Tuple) {
      auto& t = static_cast<TupleExpr&>(e);
      t.ctx = c;
      for (auto& i : t.items) set_ctx(*i, c);
    }
  }

  bool can_assign(const Expr& e) const {
    if (e.kind == Expr::K::Name) return can_assign_name(static_cast<const NameExpr&>(e).name);
    if (e.kind == Expr::K::NSRef) return true;
    if (e.kind == Expr::K::Tuple) {
      for (const auto& i : static_cast<const TupleExpr&>(e).items)
        if (!can_assign(*i)) return false;
      return true;
    }
    return false;
  }

  static const char* node_type_name(const Expr& e) {
    switch (e.kind) {
      case Expr::K::Const: return "const";
      case Expr::K::List: return "list";
      case Expr::K::Dict: return "dict";
      case Expr::K::Name: return "name";
      case Expr::K::Tuple: return "tuple";
      default: return "expr";
    }
  }

  ExprPtr parse_assign_target(bool with_tuple, bool name_only, std::initializer_list<const char*> extra_end,
                              bool with_namespace) {
    ExprPtr target;
    if (name_only) {
      const Token t = expect(Tok::Name);
      target = std::make_unique<NameExpr>(t.value, Ctx::Store, t.line);
    } else {
      if (with_tuple)
        target = parse_tuple(true, true, extra_end, false, with_namespace);
      else
        target = parse_primary(with_namespace);
      set_ctx(*target, Ctx::Store);
    }
    if (!can_assign(*target)) fail(std::string("can't assign to '") + node_type_name(*target) + "'", target->line);
    return target;
  }

  // ---- expressions -------------------------------------------------------------------------------

  ExprPtr parse_expression(bool with_condexpr) { return with_condexpr ? parse_condexpr() : parse_or(); }

  ExprPtr parse_condexpr() {
    Guard guard(*this);
    int line = cur().line;
    ExprPtr expr1 = parse_or();
    while (skip_if_name("if")) {
      auto c = std::make_unique<CondExpr>(line);
      c->test = parse_or();
      if (skip_if_name("else")) c->expr2 = parse_condexpr();
      c->expr1 = std::move(expr1);
      expr1 = finish(std::move(c));
      line = cur().line;
    }
    return expr1;
  }

  ExprPtr parse_or() {
    int line = cur().line;
    ExprPtr left = parse_and();
    while (skip_if_name("or")) {
      ExprPtr right = parse_and();
      left = finish(std::make_unique<BinExpr>(BinOp::Or, std::move(left), std::move(right), line));
      line = cur().line;
    }
    return left;
  }

  ExprPtr parse_and() {
    int line = cur().line;
    ExprPtr left = parse_not();
    while (skip_if_name("and")) {
      ExprPtr right = parse_not();
      left = finish(std::make_unique<BinExpr>(BinOp::And, std::move(left), std::move(right), line));
      line = cur().line;
    }
    return left;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      Guard guard(*this);
      const int line = next().line;
      return finish(std::make_unique<UnaryExpr>(UnOp::Not, parse_not(), line));
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const int line = cur().line;
    ExprPtr expr = parse_math1();
    auto cmp = std::make_unique<CompareExpr>(line);
    while (true) {
      CmpOp op;
      const Tok t = cur().type;
      if (t == Tok::Eq) op = CmpOp::Eq;
      else if (t == Tok::Ne) op = CmpOp::Ne;
      else if (t == Tok::Lt) op = CmpOp::Lt;
      else if (t == Tok::Lteq) op = CmpOp::Le;
      else if (t == Tok::Gt) op = CmpOp::Gt;
      else if (t == Tok::Gteq) op = CmpOp::Ge;
      else if (is_name("in")) op = CmpOp::In;
      else if (is_name("not") && look().type == Tok::Name && look().value == "in") {
        next();
        op = CmpOp::NotIn;
      } else {
        break;
      }
      next();
      cmp->ops.emplace_back(op, parse_math1());
    }
    if (cmp->ops.empty()) return expr;
    cmp->expr = std::move(expr);
    return finish(std::move(cmp));
  }

  ExprPtr parse_math1() {
    int line = cur().line;
    ExprPtr left = parse_concat();
    while (is(Tok::Add) || is(Tok::Sub)) {
      const BinOp op = is(Tok::Add) ? BinOp::Add : BinOp::Sub;
      next();
      ExprPtr right = parse_concat();
      left = finish(std::make_unique<BinExpr>(op, std::move(left), std::move(right), line));
      line = cur().line;
    }
    return left;
  }

  ExprPtr parse_concat() {
    const int line = cur().line;
    ExprPtr first = parse_math2();
    if (!is(Tok::Tilde)) return first;
    auto c = std::make_unique<ConcatExpr>(line);
    c->nodes.push_back(std::move(first));
    while (skip_if(Tok::Tilde)) c->nodes.push_back(parse_math2());
    return finish(std::move(c));
  }

  ExprPtr parse_math2() {
    int line = cur().line;
    ExprPtr left = parse_pow();
    while (is(Tok::Mul) || is(Tok::Div) || is(Tok::FloorDiv) || is(Tok::Mod)) {
      const Tok t = next().type;
      const BinOp op = t == Tok::Mul ? BinOp::Mul : t == Tok::Div ? BinOp::Div : t == Tok::FloorDiv ? BinOp::FloorDiv : BinOp::Mod;
      ExprPtr right = parse_pow();
      left = finish(std::make_unique<BinExpr>(op, std::move(left), std::move(right), line));
      line = cur().line;
    }
    return left;
  }

  ExprPtr parse_pow() {
    int line = cur().line;
    ExprPtr left = parse_unary(true);
    while (skip_if(Tok::Pow)) {
      ExprPtr right = parse_unary(true);
      left = finish(std::make_unique<BinExpr>(BinOp::Pow, std::move(left), std::move(right), line));
      line = cur().line;
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    Guard guard(*this);
    const int line = cur().line;
    ExprPtr node;
    if (is(Tok::Sub)) {
      next();
      node = finish(std::make_unique<UnaryExpr>(UnOp::Neg, parse_unary(false), line));
    } else if (is(Tok::Add)) {
      next();
      node = finish(std::make_unique<UnaryExpr>(UnOp::Pos, parse_unary(false), line));
    } else {
      node = parse_primary(false);
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary(bool with_namespace) {
    const Token tok = cur();
    if (tok.type == Tok::Name) {
      next();
      if (tok.value == "true" || tok.value == "True") return std::make_unique<ConstExpr>(Value(true), tok.line);
      if (tok.value == "false" || tok.value == "False") return std::make_unique<ConstExpr>(Value(false), tok.line);
      if (tok.value == "none" || tok.value == "None") return std::make_unique<ConstExpr>(Value(), tok.line);
      if (with_namespace && is(Tok::Dot)) {
        next();
        const Token attr = expect(Tok::Name);
        return std::make_unique<NSRefExpr>(tok.value, attr.value, tok.line);
      }
      return std::make_unique<NameExpr>(tok.value, Ctx::Load, tok.line);
    }
    if (tok.type == Tok::String) {
      std::string buf = next().value;
      while (is(Tok::String)) buf += next().value;
      return std::make_unique<ConstExpr>(Value(std::move(buf)), tok.line);
    }
    if (tok.type == Tok::Integer) {
      next();
      return std::make_unique<ConstExpr>(Value(tok.int_value), tok.line);
    }
    if (tok.type == Tok::Float) {
      next();
      return std::make_unique<ConstExpr>(Value(tok.float_value), tok.line);
    }
    if (tok.type == Tok::LParen) {
      next();
      ExprPtr e = parse_tuple(false, true, {}, true, false);
      expect(Tok::RParen);
      return e;
    }
    if (tok.type == Tok::LBracket) return parse_list();
    if (tok.type == Tok::LBrace) return parse_dict();
    fail("unexpected '" + describe(tok) + "'", tok.line);
  }

  bool is_tuple_end(std::initializer_list<const char*> extra_end) const {
    if (is(Tok::VariableEnd) || is(Tok::BlockEnd) || is(Tok::RParen)) return true;
    for (const char* n : extra_end)
      if (is_name(n)) return true;
    return false;
  }

  ExprPtr parse_tuple(bool simplified, bool with_condexpr, std::initializer_list<const char*> extra_end,
                      bool explicit_parentheses, bool with_namespace) {
    const int line0 = cur().line;
    int line = line0;
    std::vector<ExprPtr> args;
    bool is_tuple = false;
    while (true) {
      if (!args.empty()) expect(Tok::Comma);
      if (is_tuple_end(extra_end)) break;
      args.push_back(simplified ? parse_primary(with_namespace) : parse_expression(with_condexpr));
      if (is(Tok::Comma))
        is_tuple = true;
      else
        break;
      line = cur().line;
    }
    if (!is_tuple) {
      if (!args.empty()) return std::move(args[0]);
      if (!explicit_parentheses) fail("Expected an expression, got '" + describe(cur()) + "'");
    }
    auto t = std::make_unique<TupleExpr>(line);
    t->items = std::move(args);
    return finish(std::move(t));
  }

  ExprPtr parse_list() {
    auto l = std::make_unique<ListExpr>(expect(Tok::LBracket).line);
    while (!is(Tok::RBracket)) {
      if (!l->items.empty()) expect(Tok::Comma);
      if (is(Tok::RBracket)) break;
      l->items.push_back(parse_expression(true));
    }
    expect(Tok::RBracket);
    return finish(std::move(l));
  }

  ExprPtr parse_dict() {
    auto d = std::make_unique<DictExpr>(expect(Tok::LBrace).line);
    while (!is(Tok::RBrace)) {
      if (!d->items.empty()) expect(Tok::Comma);
      if (is(Tok::RBrace)) break;
      ExprPtr key = parse_expression(true);
      expect(Tok::Colon);
      ExprPtr value = parse_expression(true);
      d->items.emplace_back(std::move(key), std::move(value));
    }
    expect(Tok::RBrace);
    return finish(std::move(d));
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is(Tok::Dot) || is(Tok::LBracket))
        node = parse_subscript(std::move(node));
      else if (is(Tok::LParen))
        node = parse_call(std::move(node));
      else
        break;
    }
    return node;
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is(Tok::Pipe))
        node = parse_filter(std::move(node), false);
      else if (is_name("is"))
        node = parse_test(std::move(node));
      else if (is(Tok::LParen))
        node = parse_call(std::move(node));
      else
        break;
    }
    return node;
  }

  ExprPtr parse_subscript(ExprPtr node) {
    const Token tok = next();
    if (tok.type == Tok::Dot) {
      const Token attr = cur();
      next();
      if (attr.type == Tok::Name) return finish(std::make_unique<GetattrExpr>(std::move(node), attr.value, tok.line));
      if (attr.type != Tok::Integer) fail("expected name or number", attr.line);
      return finish(std::make_unique<GetitemExpr>(std::move(node), std::make_unique<ConstExpr>(Value(attr.int_value), attr.line), tok.line));
    }
    std::vector<ExprPtr> args;
    while (!is(Tok::RBracket)) {
      if (!args.empty()) expect(Tok::Comma);
      args.push_back(parse_subscribed());
    }
    expect(Tok::RBracket);
    ExprPtr arg;
    if (args.size() == 1) {
      arg = std::move(args[0]);
    } else {
      auto t = std::make_unique<TupleExpr>(tok.line);
      t->items = std::move(args);
      arg = finish(std::move(t));
    }
    auto g = std::make_unique<GetitemExpr>(std::move(node), std::move(arg), tok.line);
    if (g->arg->kind == Expr::K::Slice) {
      const auto& s = static_cast<const SliceExpr&>(*g->arg);
      g->folded_slice = is_constant(g->node.get()) && (!s.start || is_constant(s.start.get())) &&
                        (!s.stop || is_constant(s.stop.get())) && (!s.step || is_constant(s.step.get()));
    }
    return finish(std::move(g));
  }

  // Literal values jinja2's optimizer folds (constants and containers of constants).
  static bool is_constant(const Expr* e) {
    switch (e->kind) {
      case Expr::K::Const:
        return true;
      case Expr::K::Tuple:
        for (const auto& i : static_cast<const TupleExpr*>(e)->items)
          if (!is_constant(i.get())) return false;
        return true;
      case Expr::K::List:
        for (const auto& i : static_cast<const ListExpr*>(e)->items)
          if (!is_constant(i.get())) return false;
        return true;
      case Expr::K::Dict:
        for (const auto& [k, v] : static_cast<const DictExpr*>(e)->items)
          if (!is_constant(k.get()) || !is_constant(v.get())) return false;
        return true;
      default:
        return false;
    }
  }

  ExprPtr parse_subscribed() {
    const int line = cur().line;
    auto s = std::make_unique<SliceExpr>(line);
    if (is(Tok::Colon)) {
      next();
    } else {
      ExprPtr node = parse_expression(true);
      if (!is(Tok::Colon)) return node;
      next();
      s->start = std::move(node);
    }
    if (!is(Tok::Colon) && !is(Tok::RBracket) && !is(Tok::Comma)) s->stop = parse_expression(true);
    if (is(Tok::Colon)) {
      next();
      if (!is(Tok::RBracket) && !is(Tok::Comma)) s->step = parse_expression(true);
    }
    return finish(std::move(s));
  }

  void parse_call_args(CallSignature& sig) {
    const Token tok = expect(Tok::LParen);
    bool require_comma = false;
    auto ensure = [&](bool ok) {
      if (!ok) fail("invalid syntax for function call expression", tok.line);
    };
    while (!is(Tok::RParen)) {
      if (require_comma) {
        expect(Tok::Comma);
        if (is(Tok::RParen)) break;
      }
      if (is(Tok::Mul)) {
        ensure(!sig.dyn_args && !sig.dyn_kwargs);
        next();
        sig.dyn_args = parse_expression(true);
      } else if (is(Tok::Pow)) {
        ensure(!sig.dyn_kwargs);
        next();
        sig.dyn_kwargs = parse_expression(true);
      } else if (is(Tok::Name) && look().type == Tok::Assign) {
        ensure(!sig.dyn_kwargs);
        std::string key = next().value;
        next();
        sig.kwargs.emplace_back(std::move(key), parse_expression(true));
      } else {
        ensure(!sig.dyn_args && !sig.dyn_kwargs && sig.kwargs.empty());
        sig.args.push_back(parse_expression(true));
      }
      require_comma = true;
    }
    expect(Tok::RParen);
  }

  ExprPtr parse_call(ExprPtr node) {
    auto c = std::make_unique<CallExpr>(cur().line);
    parse_call_args(c->sig);
    c->node = std::move(node);
    return finish(std::move(c));
  }

  ExprPtr parse_filter(ExprPtr node, bool start_inline) {
    while (is(Tok::Pipe) || start_inline) {
      if (!start_inline) next();
      const Token tok = expect(Tok::Name);
      auto f = std::make_unique<FilterExpr>(tok.line);
      f->name = tok.value;
      while (is(Tok::Dot)) {
        next();
        f->name += "." + expect(Tok::Name).value;
      }
      if (is(Tok::LParen)) parse_call_args(f->sig);
      f->node = std::move(node);
      node = finish(std::move(f));
      start_inline = false;
    }
    return node;
  }

  ExprPtr parse_test(ExprPtr node) {
    const Token tok = next();
    const bool negated = skip_if_name("not");
    auto t = std::make_unique<TestExpr>(tok.line);
    t->name = expect(Tok::Name).value;
    while (is(Tok::Dot)) {
      next();
      t->name += "." + expect(Tok::Name).value;
    }
    const Tok ct = cur().type;
    if (ct == Tok::LParen) {
      parse_call_args(t->sig);
    } else if ((ct == Tok::Name || ct == Tok::String || ct == Tok::Integer || ct == Tok::Float ||
                ct == Tok::LBracket || ct == Tok::LBrace) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) fail("You cannot chain multiple tests with is");
      ExprPtr arg = parse_postfix(parse_primary(false));
      t->sig.args.push_back(std::move(arg));
    }
    t->node = std::move(node);
    ExprPtr result = finish(std::move(t));
    if (negated) result = finish(std::make_unique<UnaryExpr>(UnOp::Not, std::move(result), tok.line));
    return result;
  }
};

}  // namespace

TemplateAst parse_template(std::string_view source) { return Parser(tokenize(source)).parse(); }

}  // namespace tf::jinja
