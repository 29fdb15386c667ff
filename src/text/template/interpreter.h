#pragma once
// Renders a compiled template (parser.h + symbols.h) with jinja2's runtime semantics as configured by
// transformers: ImmutableSandboxedEnvironment, default Undefined, autoescape off. One Interpreter renders
// once; create one per render (the compiled AST is shared and never modified).
#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ast.h"
#include "value.h"

namespace tf::jinja {

struct RenderLimits {
  std::size_t max_output_bytes = std::size_t{64} << 20;  // rendered text, and any one string or capture
  std::uint64_t max_work = 100'000'000;                   // loop iterations + bytes/items processed
  int max_depth = 400;                                     // nested evaluation (expressions, macro calls)
};

struct Frame {
  std::shared_ptr<Frame> parent;
  int level = 0;
  std::vector<Value> slots;
};
using FramePtr = std::shared_ptr<Frame>;

// A pull iterator over a Python iterable.
class Iter {
 public:
  virtual ~Iter() = default;
  virtual bool next(Value& out) = 0;
};

// A lazy Python iterator object (generators from |map, |select, ..., reversed(), ...).
class GeneratorObject : public Object {
 public:
  GeneratorObject(std::string type_name, std::function<bool(Value&)> next_fn)
      : type_(std::move(type_name)), next_(std::move(next_fn)) {}
  std::string type_name() const override { return type_; }
  std::string repr() const override;
  bool iterable() const override { return true; }
  bool next(Interpreter& in, Value& out) override;

 private:
  std::string type_;
  std::function<bool(Value&)> next_;
  bool done_ = false;
};

class Interpreter {
 public:
  Interpreter(const TemplateAst& ast, const DictData& vars, const RenderLimits& limits, std::tm now);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  std::string render();

  // jinja2's compile-time constant folding (its Optimizer and Output folding): evaluates an expression
  // without any variables; nullopt when jinja2 would not fold it (Impossible or any error).
  static std::optional<Value> try_const(const Expr& e);

  // ---- jinja2/Python semantics shared with the builtins ----
  Value getattr(const Value& obj, std::string_view name);
  Value getitem(const Value& obj, const Value& key);
  Value call(const Value& callee, CallArgs& args);
  Value call_filter(const std::string& name, Value value, CallArgs& args);
  bool call_test(const std::string& name, const Value& value, CallArgs& args);
  std::unique_ptr<Iter> iterate(const Value& iterable);
  std::vector<Value> to_list(const Value& iterable);
  std::size_t length(const Value& v);
  bool contains(const Value& container, const Value& item);
  Value binop(BinOp op, const Value& a, const Value& b);
  Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

  // resource accounting
  void charge(std::uint64_t units);
  void check_size(std::size_t bytes) const;
  Value track(std::shared_ptr<Object> o);  // objects that may form reference cycles
  const std::tm& now() const { return now_; }
  const RenderLimits& limits() const { return limits_; }

  // macros and loops (used by their objects)
  Value call_macro(const MacroDef& def, const FramePtr& closure, CallArgs& args);
  std::string render_loop(const ForStmt& s, const FramePtr& outer, const Value& iterable, int depth0);

 private:
  enum class Flow { Normal, Break, Continue };

  const TemplateAst& ast_;
  const DictData& vars_;
  DictData context_vars_;  // top-level assignments (jinja2 context.vars)
  RenderLimits limits_;
  std::tm now_;
  std::string* out_ = nullptr;
  bool autoescape_ = false;
  bool const_mode_ = false;  // try_const: names and calls are not constant; slices go through getitem
  std::uint64_t work_ = 0;
  int depth_ = 0;
  std::vector<FramePtr> frames_;
  std::vector<std::shared_ptr<Object>> tracked_;

  struct DepthGuard {
    Interpreter& in;
    explicit DepthGuard(Interpreter& i);
    ~DepthGuard() { --in.depth_; }
  };
  struct Capture {  // redirects output into a buffer for the scope's lifetime
    Interpreter& in;
    std::string* saved;
    std::string buf;
    explicit Capture(Interpreter& i) : in(i), saved(i.out_) { in.out_ = &buf; }
    ~Capture() { in.out_ = saved; }
  };

  FramePtr enter(const FrameInfo& fi, const FramePtr& parent);
  Value& slot(Frame* f, RefId r);
  Value resolve(const std::string& name);
  void write(std::string_view s);

  Flow exec_body(const Body& body, const FramePtr& f);
  Flow exec(const Stmt& s, const FramePtr& f);
  Flow exec_for(const ForStmt& s, const FramePtr& f);
  Flow run_loop(const ForStmt& s, const FramePtr& outer, const Value& iterable, int depth0);
  void exec_assign_block(const AssignBlockStmt& s, const FramePtr& f);
  void exec_call_block(const CallBlockStmt& s, const FramePtr& f);
  void assign(const Expr& target, const Value& v, const FramePtr& f);
  void check_namespaces(const std::vector<RefId>& refs, const FramePtr& f);

  Value eval(const Expr& e, const FramePtr& f);
  void eval_args(const CallSignature& sig, const FramePtr& f, CallArgs& out);
  Value eval_filter(const FilterExpr& e, const FramePtr& f, const Value* block_value);
  Value compare(CmpOp op, const Value& a, const Value& b);
  Value concat(const std::vector<Value>& parts);
};

}  // namespace tf::jinja
