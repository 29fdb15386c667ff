// Rendering semantics (jinja2 runtime + Python values) and the sandbox's limits.
#include <gtest/gtest.h>

#include <thread>

#include "test_util.h"

namespace tf {
namespace {

using test::render;
using test::render_error;
using J = nlohmann::ordered_json;

TEST(TemplateRender, PythonValueFormatting) {
  EXPECT_EQ(render("{{ none }}|{{ true }}|{{ 1.0 }}|{{ 1e16 }}|{{ 0.1 + 0.2 }}|{{ 1e-5 }}|{{ [1, 'a', none] }}|{{ (1,) }}"),
            "None|True|1.0|1e+16|0.30000000000000004|1e-05|[1, 'a', None]|(1,)");
  EXPECT_EQ(render("{{ {'a': [1.5, {'b': \"it's\"}]} }}"), "{'a': [1.5, {'b': \"it's\"}]}");
  EXPECT_EQ(render("{{ x }}", J{{"x", J{{"k", "é\n\u200b"}}}}), "{'k': 'é\\n\\u200b'}");
}

TEST(TemplateRender, InputJsonKeepsKeyOrderAndNumberTypes) {
  const J vars = J::parse(R"({"d": {"z": 1, "a": 2.0, "m": [true, null]}})");
  EXPECT_EQ(render("{{ d }}|{{ d|tojson }}", vars), "{'z': 1, 'a': 2.0, 'm': [True, None]}|{\"z\": 1, \"a\": 2.0, \"m\": [true, null]}");
}

TEST(TemplateRender, Arithmetic) {
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 'ab' * 2 }} {{ 1 ~ 'x' ~ none }}"),
            "3 -4 2 3.5 1024 abab 1xNone");
  EXPECT_EQ(render_error("{{ 1 / 0 }}").kind(), TemplateError::Kind::Runtime);
  EXPECT_EQ(render_error("{{ 'a' + 1 }}").kind(), TemplateError::Kind::Runtime);
  EXPECT_EQ(render_error("{{ 9223372036854775807 + 1 }}").kind(), TemplateError::Kind::Runtime);
}

TEST(TemplateRender, UndefinedSemantics) {
  EXPECT_EQ(render("[{{ nope }}]{{ nope is defined }}{{ nope|default('d') }}{{ nope|length }}{% for x in nope %}x{% endfor %}"),
            "[]Falsed0");
  EXPECT_EQ(render("{{ d.missing }}|{{ d['missing'] is defined }}|{{ l[5] }}", J{{"d", J::object()}, {"l", J::array()}}),
            "|False|");
  EXPECT_EQ(render_error("{{ nope.attr }}").kind(), TemplateError::Kind::Runtime);
  EXPECT_EQ(render_error("{{ nope + 1 }}").kind(), TemplateError::Kind::Runtime);
  EXPECT_EQ(render_error("{{ nope() }}").kind(), TemplateError::Kind::Runtime);
}

TEST(TemplateRender, DictAttributesPreferMethods) {
  const J vars = {{"d", {{"items", "shadow"}, {"a", 1}}}};
  EXPECT_EQ(render("{{ d['items'] }}|{{ d.items()|list }}|{{ d.a }}|{{ d.get('b', 2) }}", vars),
            "shadow|[('items', 'shadow'), ('a', 1)]|1|2");
}

TEST(TemplateRender, ImmutableSandboxForbidsMutation) {
  const TemplateError e = render_error("{% set l = [] %}{{ l.append(1) }}");
  EXPECT_NE(std::string(e.what()).find("SecurityError"), std::string::npos) << e.what();
  EXPECT_EQ(render("{{ [].append is defined }}"), "False");
  EXPECT_EQ(render_error("{{ {}.update({'a': 1}) }}").kind(), TemplateError::Kind::Runtime);
  EXPECT_EQ(render("{{ ''.__class__ }}"), "");
}

TEST(TemplateRender, LoopVariableAndElse) {
  EXPECT_EQ(render("{% for x in 'abc' %}{{ loop.index }}{{ loop.revindex0 }}{{ loop.first|int }}{{ loop.last|int }}"
                   "{{ loop.cycle('x', 'y') }}{% endfor %}"),
            "1210x2100y3001x");
  EXPECT_EQ(render("{% for x in [1, 2, 3] if x != 2 %}{{ x }}/{{ loop.length }}{% endfor %}"), "1/23/2");
  EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  // as in jinja2, a loop left by break or continue in its only iteration also runs the else branch
  EXPECT_EQ(render("{% for x in [1] %}{% break %}{% else %}E{% endfor %}"), "E");
  EXPECT_EQ(render("{% for a, b in [[1, 2], [3, 4]] %}{{ a * b }},{% endfor %}"), "2,12,");
  EXPECT_EQ(render("{% for x in [1, [2, [3]]] recursive %}{% if x is iterable %}{{ loop(x) }}{% else %}{{ x }}{{ loop.depth }}{% endif %}{% endfor %}"),
            "112233");
}

TEST(TemplateRender, ScopingFollowsJinja) {
  // a loop body cannot change outer variables; a namespace can
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [1, 2] %}{% set x = x + i %}{% endfor %}{{ x }}"), "1");
  EXPECT_EQ(render("{% set ns = namespace(x=1) %}{% for i in [1, 2] %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}"), "4");
  // each iteration starts from the outer value
  EXPECT_EQ(render("{% set y = 5 %}{% for i in [1, 2] %}{{ y }}{% set y = i %}{% endfor %}"), "55");
  // if does not open a scope
  EXPECT_EQ(render("{% if true %}{% set z = 3 %}{% endif %}{{ z }}"), "3");
  // a name assigned at top level is undefined before the assignment, even when passed in
  EXPECT_EQ(render("{% for i in [1] %}[{{ v }}]{% endfor %}{% set v = 2 %}{{ v }}", J{{"v", "ctx"}}), "[]2");
  // macros see the current value of outer names
  EXPECT_EQ(render("{% macro m() %}{{ w }}{% endmacro %}{% set w = 'a' %}{{ m() }}{% set w = 'b' %}{{ m() }}"), "ab");
}

TEST(TemplateRender, MacrosAndCallBlocks) {
  EXPECT_EQ(render("{% macro g(n, greeting='Hi') %}{{ greeting }} {{ n }}{% endmacro %}{{ g('A') }}|{{ g(greeting='Yo', n='B') }}"),
            "Hi A|Yo B");
  EXPECT_EQ(render("{% macro w(t) %}<{{ t }}>{{ caller() }}</{{ t }}>{% endmacro %}{% call w('b') %}x{% endcall %}"),
            "<b>x</b>");
  EXPECT_EQ(render("{% macro m() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, k=2) }}"), "(1,){'k': 2}");
  EXPECT_EQ(render_error("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}").kind(), TemplateError::Kind::Runtime);
  EXPECT_EQ(render("{% generation %}gen {{ 1 }}{% endgeneration %}"), "gen 1");
}

TEST(TemplateRender, SetBlockFilterBlockAndWith) {
  EXPECT_EQ(render("{% set x | upper | trim %}  hi  {% endset %}[{{ x }}]"), "[HI]");
  EXPECT_EQ(render("{% filter replace('a', 'o') %}banana{% endfilter %}"), "bonono");
  EXPECT_EQ(render("{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a }}"), "3");
}

TEST(TemplateRender, FiltersUsedByChatTemplates) {
  const J vars = J::parse(R"({"people": [{"n": "b", "r": "x", "a": 2}, {"n": "a", "a": 1}], "s": "  Hi World  "})");
  EXPECT_EQ(render("{{ people|selectattr('r', 'defined')|map(attribute='n')|list }}"
                   "{{ people|rejectattr('r')|first }}{{ people|sort(attribute='a')|map(attribute='n')|join(',') }}"
                   "{{ people|map(attribute='a')|sum }}{{ people|length }}",
                   vars),
            "['b']{'n': 'a', 'a': 1}a,b32");
  EXPECT_EQ(render("{{ s|trim }}|{{ s|upper }}|{{ s|title }}|{{ 'x'|center(5) }}|{{ s|replace(' ', '') }}|{{ s|wordcount }}", vars),
            "Hi World|  HI WORLD  |  Hi World  |  x  |HiWorld|2");
  EXPECT_EQ(render("{{ [3, 1, 2]|sort|reverse|list }}{{ ['a', 'A', 'b']|unique|list }}{{ [1, 2, 3, 4, 5]|batch(2)|list }}"),
            "[3, 2, 1]['a', 'b'][[1, 2], [3, 4], [5]]");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2}|dictsort }}{{ {'k': 'v'}|items|list }}{{ 'a\\nb'|indent(2, true) }}"),
            "[('a', 2), ('b', 1)][('k', 'v')]  a\n  b");
  EXPECT_EQ(render("{{ '42'|int + '1.5'|float }}|{{ 'x'|int(7) }}|{{ 2.567|round(2) }}|{{ -3|abs }}|{{ 5|string }}"),
            "43.5|7|2.57|3|5");
}

TEST(TemplateRender, TojsonIsPythonJsonDumps) {
  const J vars = J::parse(R"({"v": {"b": "é\"\n", "a": [1, 2.5, null, false]}})");
  EXPECT_EQ(render("{{ v|tojson }}", vars), "{\"b\": \"é\\\"\\n\", \"a\": [1, 2.5, null, false]}");
  EXPECT_EQ(render("{{ v|tojson(ensure_ascii=true) }}", vars), "{\"b\": \"\\u00e9\\\"\\n\", \"a\": [1, 2.5, null, false]}");
  EXPECT_EQ(render("{{ v|tojson(indent=2, sort_keys=true) }}", vars),
            "{\n  \"a\": [\n    1,\n    2.5,\n    null,\n    false\n  ],\n  \"b\": \"é\\\"\\n\"\n}");
  EXPECT_EQ(render("{{ v.a|tojson(separators=(',', ':')) }}", vars), "[1,2.5,null,false]");
  EXPECT_EQ(render_error("{{ nope|tojson }}").kind(), TemplateError::Kind::Runtime);
}

TEST(TemplateRender, StringMethods) {
  EXPECT_EQ(render("{{ 'a,b,,c'.split(',') }}{{ ' x y '.split() }}{{ 'abc'.startswith(('z', 'a')) }}"
                   "{{ '<t>'.strip('<>') }}{{ 'aXa'.replace('a', 'b', 1) }}{{ 'abc'.find('c') }}{{ '{}-{:>3}'.format(1, 'x') }}"),
            "['a', 'b', '', 'c']['x', 'y']TruetbXa2" "1-  x");
  EXPECT_EQ(render("{{ 'straße'.upper() }}|{{ 'ΣΑΣ'.lower() }}|{{ 'héllo wörld'.title() }}|{{ '日本語'[1:] }}|{{ '😀ab'|length }}"),
            "STRASSE|σας|Héllo Wörld|本語|3");
}

TEST(TemplateRender, RaiseExceptionAndStrftimeNow) {
  const TemplateError e = render_error("{{ raise_exception('Only user and assistant roles are supported!') }}");
  EXPECT_EQ(e.kind(), TemplateError::Kind::Raised);
  EXPECT_STREQ(e.what(), "Only user and assistant roles are supported!");
  RenderOptions opts;
  opts.now = parse_template_time("2026-03-14T15:09:26");
  ASSERT_TRUE(opts.now.has_value());
  EXPECT_EQ(render("{{ strftime_now('%d %b %Y %H:%M %A') }}", J::object(), opts), "14 Mar 2026 15:09 Saturday");
}

TEST(TemplateRender, ConstantFoldingQuirksMatchJinja) {
  // jinja2 folds constant expressions at compile time through environment.getitem
  EXPECT_EQ(render("[{{ none[1:] }}]{{ (not 5[:1]) }}"), "[]True");
  EXPECT_EQ(render_error("{% set x = 5[:1] %}").kind(), TemplateError::Kind::Runtime);
}

TEST(TemplateLimits, OutputSizeIsBounded) {
  RenderOptions opts;
  opts.limits.max_output_bytes = 1000;
  EXPECT_EQ(render_error("{% for i in range(2000) %}x{% endfor %}", J::object(), opts).kind(), TemplateError::Kind::Limit);
  EXPECT_EQ(render_error("{{ 'x' * 100000 }}", J::object(), opts).kind(), TemplateError::Kind::Limit);
  EXPECT_EQ(render_error("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                         J::object(), opts)
                .kind(),
            TemplateError::Kind::Limit);
}

TEST(TemplateLimits, WorkAndDepthAreBounded) {
  RenderOptions opts;
  opts.limits.max_work = 100000;
  EXPECT_EQ(render_error("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", J::object(), opts).kind(),
            TemplateError::Kind::Limit);
  EXPECT_EQ(render_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").kind(), TemplateError::Kind::Limit);
  // the sandbox's own range limit
  EXPECT_EQ(render_error("{{ range(100001)|length }}").kind(), TemplateError::Kind::Runtime);
  EXPECT_EQ(render("{{ range(100000)|length }}"), "100000");
}

TEST(TemplateRender, ConcurrentRendersOfOneTemplate) {
  const JinjaTemplate t = JinjaTemplate::compile(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + m|length %}{{ m }}{% endfor %}{{ ns.n }}");
  std::vector<std::thread> threads;
  std::vector<std::string> out(8);
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      J vars = {{"messages", J::array()}};
      for (int k = 0; k <= i; ++k) vars["messages"].push_back(std::string(static_cast<std::size_t>(k + 1), 'a'));
      for (int rep = 0; rep < 50; ++rep) out[static_cast<std::size_t>(i)] = t.render(vars);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(out[0], "a1");
  EXPECT_EQ(out[2], "aaaaaa6");
  EXPECT_EQ(out[7], "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa36");
}

}  // namespace
}  // namespace tf
