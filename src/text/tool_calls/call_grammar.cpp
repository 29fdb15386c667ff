#include "text/tool_calls/call_grammar.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include "text/grammar/json_schema.h"
#include "text/tool_calls/argument_types.h"

namespace tf::tools {

namespace {

using grammar::GrammarBuilder;
using json = nlohmann::ordered_json;
using Expr = GrammarBuilder::Expr;

const std::string kDsCallsBegin = "<｜tool▁calls▁begin｜>";
const std::string kDsCallsEnd = "<｜tool▁calls▁end｜>";
const std::string kDsCallBegin = "<｜tool▁call▁begin｜>";
const std::string kDsCallEnd = "<｜tool▁call▁end｜>";
const std::string kDsSep = "<｜tool▁sep｜>";
const std::string kGemmaQuote = "<|\"|>";
const std::string kDsmlBlock = "<｜DSML｜tool_calls>";
const std::string kDsmlBlockEnd = "</｜DSML｜tool_calls>";
const std::string kDsmlInvoke = "<｜DSML｜invoke name=\"";
const std::string kDsmlInvokeEnd = "</｜DSML｜invoke>";
const std::string kDsmlParameter = "<｜DSML｜parameter name=\"";
const std::string kDsmlParameterEnd = "</｜DSML｜parameter>";

// One property of a text-valued format: its text, and whether the schema requires it.
struct Property {
  Expr expr;
  bool required = false;
};

class CallGrammarBuilder {
 public:
  CallGrammarBuilder(ToolFormat format, bool parallel) : format_(format), parallel_(parallel) {
    gap_ = b_.alt({{}, b_.bytes(" "), b_.bytes("\n")});
  }

  grammar::Grammar build(const std::vector<ToolSpec>& tools) {
    std::vector<Expr> calls;  // per tool: its call after the part every call shares
    for (const auto& t : tools) calls.push_back(call(t));
    const auto one = b_.alt(std::move(calls));
    const auto root = b_.rule("root");
    // A little whitespace before the calls (bounded, so a model cannot spend its budget on blank lines) and
    // after them: a newline after a call must not commit the model to another call (the end may follow it).
    const auto blanks = b_.repeat(b_.set(blank()), 0, 4);
    b_.add(root, GrammarBuilder::cat({blanks, frame(one), blanks}));
    return b_.build(root);
  }

 private:
  static grammar::ByteSet blank() {
    grammar::ByteSet s;
    for (const char c : std::string(" \n\r\t")) s.set(static_cast<std::uint8_t>(c));
    return s;
  }
  Expr lit(std::string_view s) { return b_.bytes(s); }
  Expr quoted(const std::string& s) { return lit(json(s).dump()); }
  Expr cat(std::initializer_list<Expr> parts) { return GrammarBuilder::cat(parts); }
  // `item` once, or (parallel) one or more times with `between` in between.
  Expr some(const Expr& item, const Expr& between) {
    const auto wrapped = b_.wrap(item);
    return parallel_ ? cat({wrapped, b_.star(cat({between, wrapped}))}) : wrapped;
  }

  // The calls around one call (`one` is a call from where the formats' calls differ: the function's name).
  Expr frame(const Expr& one) {
    const auto newlines = b_.alt({{}, lit("\n"), lit("\n\n")});
    switch (format_) {
      case ToolFormat::Hermes:
        return some(cat({lit("<tool_call>"), gap_, one}), newlines);
      case ToolFormat::XmlFunction:
        return some(cat({b_.opt(lit("<tool_call>\n")), lit("<function="), one}), newlines);
      case ToolFormat::Llama3Json:
        return cat({b_.opt(lit("<|python_tag|>")), some(one, cat({gap_, lit(";"), gap_}))});
      case ToolFormat::Glm:
        return some(cat({lit("<tool_call>"), one}), newlines);
      case ToolFormat::Gemma4:
        return some(cat({lit("<|tool_call>call:"), one}), newlines);
      case ToolFormat::DeepSeek:
        return cat({lit(kDsCallsBegin), some(cat({lit(kDsCallBegin), one}), newlines), lit(kDsCallsEnd)});
      case ToolFormat::Nemotron:
        return cat({lit("<TOOLCALL>["), gap_, some(one, cat({gap_, lit(","), gap_})), gap_, lit("]</TOOLCALL>")});
      case ToolFormat::Dsml:
        return cat({lit(kDsmlBlock + "\n"), some(cat({lit(kDsmlInvoke), one}), lit("\n")), lit("\n" + kDsmlBlockEnd)});
    }
    return {};
  }

  // One call of `tool` from its name on.
  Expr call(const ToolSpec& tool) {
    const auto& name = tool.name;
    // `key`: the JSON key the format writes the arguments under.
    const auto json_call = [&](const char* key) {
      return cat({lit("{"), gap_, lit("\"name\""), gap_, lit(":"), gap_, quoted(name), gap_, lit(","), gap_,
                  quoted(key), gap_, lit(":"), gap_, json_arguments(tool), gap_, lit("}")});
    };
    switch (format_) {
      case ToolFormat::Hermes:
        return cat({json_call("arguments"), gap_, lit("</tool_call>")});
      case ToolFormat::Llama3Json:
        return json_call("parameters");
      case ToolFormat::Nemotron:
        return json_call("arguments");
      case ToolFormat::DeepSeek:
        return cat({lit(name + kDsSep), json_arguments(tool), lit(kDsCallEnd)});
      case ToolFormat::XmlFunction: {
        const std::vector<std::string> ends = {"</parameter>", "<parameter=", "</function>"};
        const auto params = text_properties(tool, ends, [&](const std::string& key, const Expr& value) {
          return cat({lit("<parameter=" + key + ">\n"), value, lit("\n</parameter>\n")});
        });
        return cat({lit(name + ">\n"), params, lit("</function>\n</tool_call>")});
      }
      case ToolFormat::Glm: {
        const auto nl = b_.opt(lit("\n"));
        const auto params = text_properties(tool, {"</arg_value>"}, [&](const std::string& key, const Expr& value) {
          return cat({lit("<arg_key>" + key + "</arg_key>"), nl, lit("<arg_value>"), value, lit("</arg_value>"), nl});
        });
        return cat({lit(name), nl, params, lit("</tool_call>")});
      }
      case ToolFormat::Gemma4: {
        const auto params = gemma_properties(tool);
        return cat({lit(name + "{"), params, lit("}<tool_call|>")});
      }
      case ToolFormat::Dsml:
        return cat({lit(name + "\">\n"), dsml_properties(tool), lit(kDsmlInvokeEnd)});
    }
    return {};
  }

  // The arguments as one JSON value of the tool's schema (any object when it cannot be compiled and the tool is
  // not strict).
  Expr json_arguments(const ToolSpec& tool) {
    try {
      grammar::JsonSchemaRules rules(b_, tool.parameters);
      return rules.document();
    } catch (const grammar::GrammarError&) {
      if (tool.strict) throw;
    }
    return any_object();
  }
  grammar::JsonSchemaRules& any() {
    static const json none;
    if (!any_) any_.emplace(b_, none);
    return *any_;
  }
  Expr any_object() { return any().any_object(); }

  // Text that does not contain any of `ends` (nor control characters but newline and tab): the states of a
  // matcher of the ends (each the longest suffix of the text so far that begins one), a rule each.
  Expr text_without(const std::vector<std::string>& ends) {
    const auto key = [&] {
      std::string k;
      for (const auto& e : ends) k += e + '\0';
      return k;
    }();
    if (const auto it = texts_.find(key); it != texts_.end()) return b_.ref(it->second);
    std::vector<std::string> states{""};
    for (const auto& e : ends)
      for (std::size_t n = 1; n < e.size(); ++n)
        if (std::find(states.begin(), states.end(), e.substr(0, n)) == states.end()) states.push_back(e.substr(0, n));
    std::vector<std::uint32_t> rules;
    for (std::size_t i = 0; i < states.size(); ++i) rules.push_back(b_.rule("text"));
    std::set<char32_t> wide;  // the code points past ASCII the markers hold
    for (const auto& e : ends)
      for (std::size_t k = 0; k < e.size();) {
        const auto lead = static_cast<unsigned char>(e[k]);
        const std::size_t n = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
        if (n > 1) {
          char32_t cp = lead & (0xFF >> (n + 1));
          for (std::size_t b = 1; b < n; ++b) cp = (cp << 6) | (static_cast<unsigned char>(e[k + b]) & 0x3F);
          wide.insert(cp);
        }
        k += n;
      }
    // The state after `s` reads `c` (a byte, or a whole character's bytes); -1 when that completes an end.
    const auto next = [&](const std::string& s, std::string_view c) -> int {
      const std::string t = s + std::string(c);
      for (const auto& e : ends)
        if (t.size() >= e.size() && t.compare(t.size() - e.size(), e.size(), e) == 0) return -1;
      for (std::size_t from = 0; from <= t.size(); ++from) {
        const auto it = std::find(states.begin(), states.end(), t.substr(from));
        if (it != states.end()) return static_cast<int>(it - states.begin());
      }
      return 0;
    };
    for (std::size_t i = 0; i < states.size(); ++i) {
      b_.add(rules[i], {});
      std::map<int, grammar::ByteSet> to;
      for (int c = 0; c < 0x80; ++c) {
        if (c < 0x20 && c != '\n' && c != '\t') continue;
        if (c == 0x7F) continue;
        const char byte = static_cast<char>(c);
        const int j = next(states[i], std::string_view(&byte, 1));
        if (j >= 0) to[j].set(static_cast<std::size_t>(c));
      }
      for (const auto& [j, set] : to) b_.add(rules[i], cat({b_.set(set), b_.ref(rules[static_cast<std::size_t>(j)])}));
      // Characters past ASCII: those of the markers (DSML's full-width bars) move the matcher like bytes above;
      // any other restarts it.
      std::vector<std::pair<char32_t, char32_t>> others;
      char32_t from = 0x80;
      for (const auto cp : wide) {
        const int j = next(states[i], grammar::utf8_of(cp));
        if (j >= 0) b_.add(rules[i], cat({b_.code_points({{cp, cp}}), b_.ref(rules[static_cast<std::size_t>(j)])}));
        if (cp > from) others.push_back({from, cp - 1});
        from = cp + 1;
      }
      others.push_back({from, 0x10FFFF});
      b_.add(rules[i], cat({b_.code_points(others), b_.ref(rules[0])}));
    }
    texts_.emplace(key, rules[0]);
    return b_.ref(rules[0]);
  }

  // A string parameter's text: one of its enum / const values, else any text without the end markers.
  std::optional<Expr> literal_strings(const json& schema) {
    std::vector<Expr> alts;
    if (const auto c = schema.find("const"); c != schema.end() && c->is_string())
      alts.push_back(lit(c->get<std::string>()));
    if (const auto e = schema.find("enum"); e != schema.end() && e->is_array())
      for (const auto& v : *e)
        if (v.is_string()) alts.push_back(lit(v.get<std::string>()));
    if (alts.empty()) return std::nullopt;
    return b_.alt(std::move(alts));
  }

  // A string parameter with minLength / maxLength: that many characters, none of them '<' (so no end marker
  // can appear) nor a control character but newline and tab.
  std::optional<Expr> bounded_text(const json& schema) {
    const auto count = [&](const char* key) -> std::optional<std::int64_t> {
      const auto it = schema.find(key);
      if (it == schema.end() || !it->is_number_integer() || it->get<std::int64_t>() < 0) return std::nullopt;
      return std::min<std::int64_t>(it->get<std::int64_t>(), 10000);
    };
    const auto min = count("minLength"), max = count("maxLength");
    if (!min && !max) return std::nullopt;
    const auto one = b_.code_points({{'\t', '\n'}, {0x20, '<' - 1}, {'<' + 1, 0x7E}, {0x80, 0x10FFFF}});
    return b_.repeat(b_.wrap(one), min.value_or(0), max.value_or(-1));
  }

  // A value written as text: a string parameter's text, or any other's JSON value (typed by the parser).
  template <typename Text>
  Expr text_value(const ToolSpec& tool, const json* schema, const std::string& key, Text text) {
    if (!schema || is_text_parameter(schema)) {
      if (!schema) return text();
      if (auto l = literal_strings(*schema)) return *l;
      if (const auto bounded = bounded_text(*schema)) return *bounded;
      if (tool.strict && (schema->contains("pattern") || schema->contains("format")))
        throw grammar::GrammarError("'pattern' and 'format' of a parameter written as text (the " +
                                        std::string(tool_format_name(format_)) + " format) are not supported",
                                    schema->contains("pattern") ? "pattern" : "format");
      return text();
    }
    try {
      grammar::JsonSchemaRules rules(b_, tool.parameters);
      return rules.value(*schema, "#/properties/" + key);
    } catch (const grammar::GrammarError&) {
      if (tool.strict) throw;
    }
    return text();
  }

  // The properties in the schema's order, each written by `written(key, value)`: the required ones always,
  // the others when the model writes them. A schema without properties: any keys, text values.
  template <typename Written>
  Expr text_properties(const ToolSpec& tool, const std::vector<std::string>& ends, Written written) {
    const auto text = [&] { return text_without(ends); };
    std::vector<Expr> items;
    const auto props = tool.parameters.find("properties");
    if (props == tool.parameters.end() || !props->is_object() || props->empty()) {
      grammar::ByteSet name_chars;
      for (int c = 0; c < 0x80; ++c)
        if (std::isalnum(c) || c == '_' || c == '-' || c == '.') name_chars.set(static_cast<std::size_t>(c));
      // Any key: written() takes a literal key, so the generic form is spelled here for each format.
      const auto key = b_.plus(b_.set(name_chars));
      const auto value = text();
      Expr one;
      if (format_ == ToolFormat::XmlFunction)
        one = cat({lit("<parameter="), key, lit(">\n"), value, lit("\n</parameter>\n")});
      else
        one = cat({lit("<arg_key>"), key, lit("</arg_key>"), b_.opt(lit("\n")), lit("<arg_value>"), value,
                   lit("</arg_value>"), b_.opt(lit("\n"))});
      return b_.star(b_.wrap(one));
    }
    std::vector<Property> list;
    for (const auto& [key, schema] : props->items())
      list.push_back({written(key, text_value(tool, &schema, key, text)), required(tool.parameters, key)});
    return ordered(list, {});
  }

  // DSML: a parameter a line, its value text (string="true", a string parameter) or JSON (string="false").
  Expr dsml_properties(const ToolSpec& tool) {
    const auto param = [&](const Expr& key, bool text, const Expr& value) {
      return cat({lit(kDsmlParameter), key, lit(text ? "\" string=\"true\">" : "\" string=\"false\">"), value,
                  lit(kDsmlParameterEnd + "\n")});
    };
    const auto text = [&] { return text_without({kDsmlParameterEnd}); };
    static const json any_value = json::object();
    const auto props = tool.parameters.find("properties");
    if (props == tool.parameters.end() || !props->is_object() || props->empty()) {
      grammar::ByteSet name_chars;
      for (int c = 0; c < 0x80; ++c)
        if (std::isalnum(c) || c == '_' || c == '-' || c == '.') name_chars.set(static_cast<std::size_t>(c));
      const auto key = b_.plus(b_.set(name_chars));
      return b_.star(b_.wrap(b_.alt({param(key, true, text()), param(key, false, any().value(any_value, "#"))})));
    }
    std::vector<Property> list;
    for (const auto& [key, schema] : props->items()) {
      Expr written;
      if (is_text_parameter(&schema)) {
        written = param(lit(key), true, text_value(tool, &schema, key, text));
      } else {
        try {
          grammar::JsonSchemaRules rules(b_, tool.parameters);
          written = param(lit(key), false, rules.value(schema, "#/properties/" + key));
        } catch (const grammar::GrammarError&) {
          if (tool.strict) throw;
          written = b_.alt({param(lit(key), true, text()), param(lit(key), false, any().value(any_value, "#"))});
        }
      }
      list.push_back({written, required(tool.parameters, key)});
    }
    return ordered(list, {});
  }

  // Gemma 4: key:value pairs separated by commas, strings between <|"|> marks.
  Expr gemma_properties(const ToolSpec& tool) {
    const auto text = [&] { return cat({lit(kGemmaQuote), text_without({kGemmaQuote}), lit(kGemmaQuote)}); };
    const auto props = tool.parameters.find("properties");
    if (props == tool.parameters.end() || !props->is_object() || props->empty())
      return b_.opt(cat({gemma_pair(), b_.star(cat({lit(","), gemma_pair()}))}));
    std::vector<Property> list;
    for (const auto& [key, schema] : props->items()) {
      Expr value;
      if (is_text_parameter(&schema)) {
        auto l = literal_strings(schema);
        if (!l) l = bounded_text(schema);
        value = l ? cat({lit(kGemmaQuote), *l, lit(kGemmaQuote)}) : text();
      } else if (structured(schema)) {
        value = gemma_value();
      } else {
        value = text_value(tool, &schema, key, text);
      }
      list.push_back({cat({lit(key + ":"), value}), required(tool.parameters, key)});
    }
    return ordered(list, lit(","));
  }
  static bool structured(const json& schema) {
    const auto t = schema.find("type");
    if (t == schema.end()) return true;
    const auto is = [](const json& x) { return x == "object" || x == "array"; };
    if (t->is_array()) return std::any_of(t->begin(), t->end(), is);
    return is(*t);
  }
  // Any value in Gemma's notation (bare keys, <|"|> strings).
  Expr gemma_value() {
    if (gemma_value_) return b_.ref(*gemma_value_);
    gemma_value_ = b_.rule("gemma value");
    static const json number = {{"type", "number"}};
    const auto v = b_.ref(*gemma_value_);
    const auto pair = cat({gemma_key(), lit(":"), v});
    for (auto e :
         {cat({lit(kGemmaQuote), text_without({kGemmaQuote}), lit(kGemmaQuote)}), any().value(number, "#"), lit("true"),
          lit("false"), lit("null"), cat({lit("{"), b_.opt(cat({pair, b_.star(cat({lit(","), pair}))})), lit("}")}),
          cat({lit("["), b_.opt(cat({v, b_.star(cat({lit(","), v}))})), lit("]")})})
      b_.add(*gemma_value_, e);
    return v;
  }
  Expr gemma_key() {
    grammar::ByteSet first, rest;
    for (int c = 0; c < 0x80; ++c) {
      if (std::isalpha(c) || c == '_') first.set(static_cast<std::size_t>(c));
      if (std::isalnum(c) || c == '_') rest.set(static_cast<std::size_t>(c));
    }
    return cat({b_.set(first), b_.repeat(b_.set(rest), 0, 63)});
  }
  Expr gemma_pair() { return cat({gemma_key(), lit(":"), gemma_value()}); }

  static bool required(const json& parameters, const std::string& key) {
    const auto r = parameters.find("required");
    if (r == parameters.end() || !r->is_array()) return false;
    return std::find(r->begin(), r->end(), json(key)) != r->end();
  }

  // The items in order, each required one always, `sep` between two written.
  Expr ordered(const std::vector<Property>& items, const Expr& sep) {
    // first[i]: items i.. with none written before; rest[i]: the same after one was written.
    const std::size_t n = items.size();
    std::vector<std::uint32_t> first(n + 1), rest(n + 1);
    for (std::size_t i = 0; i <= n; ++i) {
      first[i] = b_.rule("first");
      rest[i] = b_.rule("rest");
    }
    b_.add(first[n], {});
    b_.add(rest[n], {});
    for (std::size_t i = n; i-- > 0;) {
      b_.add(first[i], cat({items[i].expr, b_.ref(rest[i + 1])}));
      b_.add(rest[i], cat({sep, items[i].expr, b_.ref(rest[i + 1])}));
      if (!items[i].required) {
        b_.add(first[i], b_.ref(first[i + 1]));
        b_.add(rest[i], b_.ref(rest[i + 1]));
      }
    }
    return b_.ref(first[0]);
  }

  ToolFormat format_;
  bool parallel_;
  GrammarBuilder b_;
  Expr gap_;
  std::optional<grammar::JsonSchemaRules> any_;
  std::map<std::string, std::uint32_t> texts_;
  std::optional<std::uint32_t> gemma_value_;
};

}  // namespace

grammar::Grammar tool_call_grammar(ToolFormat format, const std::vector<ToolSpec>& tools, bool parallel) {
  return CallGrammarBuilder(format, parallel).build(tools);
}

std::vector<CallTrigger> call_triggers(ToolFormat format) {
  switch (format) {
    case ToolFormat::Hermes:
      return {{"<tool_call>"}};
    case ToolFormat::XmlFunction:
      return {{"<tool_call>"}, {"<function="}};
    case ToolFormat::Llama3Json:
      return {{"<|python_tag|>"}, {"{\"name\"", true}};
    case ToolFormat::Glm:
      return {{"<tool_call>"}};
    case ToolFormat::Gemma4:
      return {{"<|tool_call>"}};
    case ToolFormat::DeepSeek:
      return {{kDsCallsBegin}};
    case ToolFormat::Nemotron:
      return {{"<TOOLCALL>"}};
    case ToolFormat::Dsml:
      return {{kDsmlBlock}};
  }
  return {};
}

const std::vector<std::string>& tool_call_markers() {
  static const std::vector<std::string> all = {
      "<tool_call>",          "</tool_call>", "<|python_tag|>", "<arg_key>",    "</arg_key>",
      "<arg_value>",          "</arg_value>", "<|tool_call>",   "<tool_call|>", kGemmaQuote,
      kDsCallsBegin,          kDsCallsEnd,    kDsCallBegin,     kDsCallEnd,     kDsSep,
      "<TOOLCALL>",           "</TOOLCALL>",  kDsmlBlock,       kDsmlBlockEnd,  "</｜DSML｜invoke>",
      "</｜DSML｜parameter>", "｜DSML｜"};
  return all;
}

}  // namespace tf::tools
