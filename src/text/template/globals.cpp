// jinja2's builtin globals as transformers configures them (range, dict, namespace, cycler, joiner,
// lipsum; raise_exception and strftime_now added), following jinja2 3.1.
#include <cstdio>
#include <random>
#include <unordered_map>

#include "objects.h"
#include "symbols.h"
#include "template_error.h"

namespace tf::jinja {

namespace {

// ---- globals -------------------------------------------------------------------------------------

std::int64_t as_index(const Value& v) {
  if (!v.is_integral()) type_error("'" + python_type_name(v) + "' object cannot be interpreted as an integer");
  return v.as_int();
}

Value g_range(Interpreter& in, CallArgs& args) {
  if (!args.kw.empty()) type_error("range() takes no keyword arguments");
  std::int64_t start = 0, stop, step = 1;
  if (args.pos.size() == 1) {
    stop = as_index(args.pos[0]);
  } else if (args.pos.size() == 2 || args.pos.size() == 3) {
    start = as_index(args.pos[0]);
    stop = as_index(args.pos[1]);
    if (args.pos.size() == 3) step = as_index(args.pos[2]);
  } else {
    type_error("range expected at most 3 arguments, got " + std::to_string(args.pos.size()));
  }
  if (step == 0) value_error("range() arg 3 must not be zero");
  i128 n = 0;
  if (step > 0 && stop > start) n = (static_cast<i128>(stop) - start + step - 1) / step;
  if (step < 0 && stop < start) n = (static_cast<i128>(start) - stop - step - 1) / -step;
  if (n > 100000)
    throw TemplateError(TemplateError::Kind::Runtime,
                        "OverflowError: Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  in.charge(static_cast<std::uint64_t>(n));
  auto l = std::make_shared<ListData>();
  l->kind = ListKind::Range;
  l->range_start = start;
  l->range_stop = stop;
  l->range_step = step;
  for (i128 i = 0; i < n; ++i) l->items.emplace_back(static_cast<std::int64_t>(start + i * step));
  return Value(std::shared_ptr<const ListData>(std::move(l)));
}

void dict_update(Interpreter& in, DictData& d, CallArgs& args, const char* fname) {
  if (args.pos.size() > 1) type_error(std::string(fname) + " expected at most 1 argument, got " + std::to_string(args.pos.size()));
  if (!args.pos.empty()) {
    const Value& src = args.pos[0];
    if (src.is_dict()) {
      for (const auto& [k, v] : src.dict().entries) d.set(k, v);
    } else {
      for (const auto& pair : in.to_list(src)) {
        const auto kv = in.to_list(pair);
        if (kv.size() != 2) value_error("dictionary update sequence element has length " + std::to_string(kv.size()) + "; 2 is required");
        d.set(kv[0], kv[1]);
      }
    }
  }
  for (auto& [k, v] : args.kw) d.set(Value(k), v);
}

Value g_dict(Interpreter& in, CallArgs& args) {
  DictData d;
  dict_update(in, d, args, "dict");
  return make_dict(std::move(d));
}

Value g_namespace(Interpreter& in, CallArgs& args) {
  auto ns = std::make_shared<Namespace>();
  dict_update(in, ns->attrs, args, "dict");
  return in.track(ns);
}

Value g_cycler(Interpreter& in, CallArgs& args) {
  if (!args.kw.empty()) type_error("Cycler() got an unexpected keyword argument '" + args.kw.front().first + "'");
  if (args.pos.empty()) throw TemplateError(TemplateError::Kind::Runtime, "RuntimeError: at least one item has to be provided");
  return in.track(std::make_shared<Cycler>(args.pos));
}

Value g_joiner(Interpreter& in, CallArgs& args) {
  auto a = bind_args("Joiner", args, {{"sep", Value(", ")}});
  return in.track(std::make_shared<Joiner>(py_str(a[0])));
}

Value g_lipsum(Interpreter&, CallArgs&) { type_error("lipsum() is not supported in chat templates"); }

Value g_raise_exception(Interpreter&, CallArgs& args) {
  auto a = bind_args("raise_exception", args, {{"message", std::nullopt}});
  throw TemplateError(TemplateError::Kind::Raised, py_str(a[0]));
}

Value g_strftime_now(Interpreter& in, CallArgs& args) {
  auto a = bind_args("strftime_now", args, {{"format", std::nullopt}});
  if (!a[0].is_str()) type_error("strftime() argument 1 must be str, not " + python_type_name(a[0]));
  // datetime.strftime: %f (microseconds), %z and %Z (naive datetime: empty) are handled before C strftime
  const std::string& f = a[0].str();
  std::string fmt;
  for (std::size_t i = 0; i < f.size(); ++i) {
    if (f[i] == '%' && i + 1 < f.size()) {
      const char c = f[i + 1];
      if (c == 'f') fmt += "000000";
      else if (c == 'z' || c == 'Z') {
      } else {
        fmt.push_back('%');
        fmt.push_back(c);
      }
      ++i;
      continue;
    }
    fmt.push_back(f[i]);
  }
  if (fmt.empty()) return Value("");
  const std::tm tm = in.now();
  for (std::size_t size = 1024;; size *= 2) {
    std::string buf(size, '\0');
    const std::size_t n = std::strftime(buf.data(), size, fmt.c_str(), &tm);
    if (n > 0 || size >= 256 * fmt.size()) {
      buf.resize(n);
      return Value(std::move(buf));
    }
  }
}

}  // namespace

bool lookup_global(const std::string& name, Value& out) {
  static const std::unordered_map<std::string, BuiltinFunction::Fn> fns = {
      {"range", g_range},   {"dict", g_dict},       {"namespace", g_namespace},
      {"cycler", g_cycler}, {"joiner", g_joiner},   {"lipsum", g_lipsum},
      {"raise_exception", g_raise_exception},       {"strftime_now", g_strftime_now},
  };
  auto it = fns.find(name);
  if (it == fns.end()) return false;
  out = Value(std::shared_ptr<Object>(std::make_shared<BuiltinFunction>(name, it->second)));
  return true;
}

}  // namespace tf::jinja
