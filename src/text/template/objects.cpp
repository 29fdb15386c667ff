// The interpreter's runtime objects: generators, macros, loop contexts, bound methods, cyclers and joiners,
// and Python-style argument binding for builtins.
#include "interpreter.h"
#include "objects.h"
#include "template_error.h"

namespace tf::jinja {

// ---- objects -------------------------------------------------------------------------------------

std::string GeneratorObject::repr() const { return "<" + type_ + " object>"; }

bool GeneratorObject::next(Interpreter& in, Value& out) {
  if (done_) return false;
  in.charge(1);
  if (next_(out)) return true;
  done_ = true;
  next_ = nullptr;
  return false;
}

std::string MacroObject::repr() const { return def_->name.empty() ? "<Macro anonymous>" : "<Macro '" + def_->name + "'>"; }

bool MacroObject::get_attr(std::string_view name, Value& out) {
  if (name == "name") {
    out = def_->name.empty() ? Value() : Value(def_->name);
  } else if (name == "arguments") {
    std::vector<Value> a;
    for (const auto& x : def_->args) a.emplace_back(x->name);
    out = Value::tuple(std::move(a));
  } else if (name == "catch_kwargs") {
    out = Value(def_->catch_kwargs);
  } else if (name == "catch_varargs") {
    out = Value(def_->catch_varargs);
  } else if (name == "caller") {
    out = Value(def_->caller);
  } else {
    return false;
  }
  return true;
}

Value MacroObject::call(Interpreter& in, CallArgs& args) {
  return in.call_macro(*def_, closure_, args);
}

bool LoopObject::pull(Value& out) {
  if (materialized_) {
    if (rest_pos_ >= rest_.size()) return false;
    out = rest_[rest_pos_++];
    return true;
  }
  return it_->next(out);
}

bool LoopObject::peek(Value& out) {
  if (after_.is_missing()) {
    Value v;
    if (!pull(v)) return false;
    after_ = v;
  }
  out = after_;
  return true;
}

bool LoopObject::advance(Value& item) {
  Value rv;
  if (!after_.is_missing()) {
    rv = after_;
    after_ = Value::missing();
  } else if (!pull(rv)) {
    return false;
  }
  ++index0_;
  before_ = current_;
  current_ = rv;
  item = rv;
  return true;
}

std::size_t LoopObject::length() {
  if (length_) return *length_;
  if (known_length_) {
    length_ = known_length_;
    return *length_;
  }
  if (!materialized_) {
    Value v;
    while (it_->next(v)) rest_.push_back(v);
    materialized_ = true;
  }
  length_ = (rest_.size() - rest_pos_) + static_cast<std::size_t>(index0_ + 1) + (after_.is_missing() ? 0 : 1);
  return *length_;
}

std::string LoopObject::repr() const {
  auto* self = const_cast<LoopObject*>(this);
  return "<LoopContext " + std::to_string(index0_ + 1) + "/" + std::to_string(self->length()) + ">";
}

bool LoopObject::get_attr(std::string_view name, Value& out) {
  const auto len = [&] { return static_cast<std::int64_t>(length()); };
  if (name == "index0") {
    out = Value(index0_);
  } else if (name == "index") {
    out = Value(index0_ + 1);
  } else if (name == "revindex") {
    out = Value(len() - index0_);
  } else if (name == "revindex0") {
    out = Value(len() - index0_ - 1);
  } else if (name == "first") {
    out = Value(index0_ == 0);
  } else if (name == "last") {
    Value v;
    out = Value(!peek(v));
  } else if (name == "length") {
    out = Value(len());
  } else if (name == "previtem") {
    out = index0_ == 0 ? Value::undefined_hint("there is no previous item") : before_;
  } else if (name == "nextitem") {
    Value v;
    out = peek(v) ? v : Value::undefined_hint("there is no next item");
  } else if (name == "depth") {
    out = Value(static_cast<std::int64_t>(depth0_) + 1);
  } else if (name == "depth0") {
    out = Value(static_cast<std::int64_t>(depth0_));
  } else if (name == "cycle" || name == "changed") {
    out = Value(std::shared_ptr<Object>(std::make_shared<BoundMethod>(Value(shared_from_this()), std::string(name))));
  } else {
    return false;
  }
  return true;
}

Value LoopObject::call(Interpreter& in, CallArgs& args) {
  if (!node_) type_error("The loop must have the 'recursive' marker to be called recursively.");
  auto bound = bind_args("loop", args, {{"iterable", std::nullopt}});
  return Value(in.render_loop(*node_, outer_, bound[0], depth0_ + 1));
}

bool LoopObject::next(Interpreter&, Value& out) {
  Value item;
  if (!advance(item)) return false;
  out = Value::tuple({item, Value(shared_from_this())});
  return true;
}

Value LoopObject::cycle(CallArgs& args) const {
  if (!args.kw.empty()) type_error("cycle() got an unexpected keyword argument '" + args.kw.front().first + "'");
  if (args.pos.empty()) type_error("no items for cycling given");
  const auto n = static_cast<std::int64_t>(args.pos.size());
  return args.pos[static_cast<std::size_t>(((index0_ % n) + n) % n)];
}

bool LoopObject::changed(CallArgs& args) {
  if (!args.kw.empty()) type_error("changed() got an unexpected keyword argument '" + args.kw.front().first + "'");
  Value v = Value::tuple(args.pos);
  if (last_changed_.is_missing() || !py_eq(last_changed_, v)) {
    last_changed_ = v;
    return true;
  }
  return false;
}

std::string BoundMethod::repr() const {
  return "<built-in method " + name_ + " of " + python_type_name(self_) + " object>";
}

Value BoundMethod::call(Interpreter& in, CallArgs& args) {
  if (auto* loop = self_.object_as<LoopObject>()) {
    if (name_ == "cycle") return loop->cycle(args);
    if (name_ == "changed") return Value(loop->changed(args));
  }
  if (auto* c = self_.object_as<Cycler>()) {
    bind_args(name_, args, {});
    if (name_ == "next" || name_ == "__next__") return c->next_item();
    if (name_ == "reset") {
      c->reset();
      return Value();
    }
  }
  return call_method(in, self_, name_, args);
}

bool Cycler::get_attr(std::string_view name, Value& out) {
  if (name == "current") {
    out = current();
    return true;
  }
  if (name == "next" || name == "reset") {
    out = Value(std::shared_ptr<Object>(std::make_shared<BoundMethod>(Value(shared_from_this()), std::string(name))));
    return true;
  }
  if (name == "items") {
    out = Value::tuple(items_);
    return true;
  }
  if (name == "pos") {
    out = Value(static_cast<std::int64_t>(pos_));
    return true;
  }
  return false;
}

Value Cycler::next_item() {
  Value rv = items_[pos_];
  pos_ = (pos_ + 1) % items_.size();
  return rv;
}

Value Joiner::call(Interpreter&, CallArgs& args) {
  bind_args("joiner", args, {});
  if (!used_) {
    used_ = true;
    return Value("");
  }
  return Value(sep_);
}

std::vector<Value> bind_args(const std::string& fname, CallArgs& args, std::initializer_list<Param> params,
                             bool allow_extra_kwargs) {
  std::vector<Value> out(params.size(), Value::missing());
  if (args.pos.size() > params.size())
    type_error(fname + "() takes at most " + std::to_string(params.size()) + " positional argument(s) (" +
               std::to_string(args.pos.size()) + " given)");
  for (std::size_t i = 0; i < args.pos.size(); ++i) out[i] = args.pos[i];
  std::vector<std::pair<std::string, Value>> extra;
  for (auto& [k, v] : args.kw) {
    std::size_t i = 0;
    bool found = false;
    for (const Param& p : params) {
      if (k == p.name) {
        if (!out[i].is_missing()) type_error(fname + "() got multiple values for argument '" + k + "'");
        out[i] = v;
        found = true;
        break;
      }
      ++i;
    }
    if (!found) {
      if (!allow_extra_kwargs) type_error(fname + "() got an unexpected keyword argument '" + k + "'");
      extra.emplace_back(k, v);
    }
  }
  std::size_t i = 0;
  for (const Param& p : params) {
    if (out[i].is_missing()) {
      if (!p.def) type_error(fname + "() missing required argument: '" + p.name + "'");
      out[i] = *p.def;
    }
    ++i;
  }
  args.kw = std::move(extra);
  return out;
}

}  // namespace tf::jinja
