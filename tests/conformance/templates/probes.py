"""Template snippets that probe jinja2 semantics one feature at a time (rendered by both sides with
PROBE_CONTEXT). Each line of PROBES is one template."""

PROBE_CONTEXT = {
    "s": "Hello World",
    "u": "Grüße, Σίσυφος ΣΑΣ! 日本語 😀 İstanbul ß ǆ",
    "ws": "  \t padded \n ",
    "n": 42,
    "neg": -7,
    "f": 3.5,
    "big": 1e18,
    "tiny": 1.5e-7,
    "l": [3, 1, 2],
    "words": ["banana", "Apple", "cherry", "apple"],
    "d": {"b": 2, "a": 1, "items": "shadow", "C": 3},
    "nested": {"x": {"y": [10, 20, {"z": "deep"}]}},
    "people": [
        {"name": "Ann", "age": 31, "role": "admin", "tags": ["a", "b"]},
        {"name": "bob", "age": 25, "role": "user"},
        {"name": "Cid", "age": 31, "role": None},
    ],
    "none": None,
    "t": True,
    "fl": False,
    "empty": [],
    "edict": {},
    "json_str": "{\"a\": 1}",
    "html": "<b>bold</b> & 'q' \"dq\"",
    "multiline": "line one\nline two\r\nline three\n\nlast",
    "messages": [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "yo", "tool_calls": [{"function": {"name": "f", "arguments": {"q": 1}}}]},
    ],
}

PROBES = r"""
{{ s }}|{{ n }}|{{ f }}|{{ none }}|{{ t }}|{{ fl }}|{{ l }}|{{ d }}|{{ empty }}|{{ edict }}
{{ big }}|{{ tiny }}|{{ 1e100 }}|{{ 0.1 }}|{{ 100.0 }}|{{ 1/3 }}|{{ 2.0**60 }}|{{ -0.0 }}|{{ 12345678901234567.0 }}|{{ 1e16 }}|{{ 1e15 }}
{{ 1 + 2 }}|{{ 1 + 2.5 }}|{{ 7 / 2 }}|{{ 8 / 2 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 % 3 }}|{{ -7 % 3 }}|{{ 7 % -3 }}|{{ 2 ** 10 }}|{{ 2 ** -1 }}|{{ 7.5 // 2 }}|{{ -7.5 % 2 }}
{{ 'a' + 'b' }}|{{ 'ab' * 3 }}|{{ 3 * 'x' }}|{{ [1] * 2 }}|{{ [1, 2] + [3] }}|{{ (1, 2) + (3,) }}|{{ 'a' ~ 1 ~ none ~ t }}|{{ -n }}|{{ +f }}|{{ not n }}
{{ 1 / 0 }}
{{ 1 // 0 }}
{{ 'a' + 1 }}
{{ 1 + 'a' }}
{{ [1] + (2,) }}
{{ 'a' - 'b' }}
{{ none + 1 }}
{{ undefined_var + 1 }}
{{ undefined_var }}|{{ undefined_var is defined }}|{{ undefined_var is undefined }}|{{ undefined_var|default('dflt') }}|{{ none|default('x') }}|{{ none|default('x', true) }}|{{ ''|d('e', boolean=true) }}
{{ undefined_var.attr }}
{{ undefined_var['k'] }}
{{ d.missing }}|{{ d.missing is defined }}|{{ d['missing'] }}|{{ l[10] }}|{{ s.nope }}|{{ none.attr }}|{{ n.attr }}
{{ d.missing.deeper }}
{{ d.items is defined }}|{{ d['items'] }}|{{ d.get('a') }}|{{ d.get('zz', 'def') }}|{{ d.get('zz') }}
{{ d.keys()|list }}|{{ d.values()|list }}|{{ d.items()|list }}|{{ d.keys() }}|{{ d.items() }}
{{ l[0] }}|{{ l[-1] }}|{{ l[1:] }}|{{ l[:-1] }}|{{ l[::-1] }}|{{ l[::2] }}|{{ s[0] }}|{{ s[-1] }}|{{ s[2:5] }}|{{ s[::-1] }}|{{ u[0:6] }}|{{ u[-3:] }}|{{ u[::-2] }}
{{ l[1:2:0] }}
{{ none[1:] }}
{{ d[1:] }}
{{ s.upper() }}|{{ s.lower() }}|{{ u.upper() }}|{{ u.lower() }}|{{ u.title() }}|{{ u.capitalize() }}|{{ u.swapcase() }}|{{ s.title() }}
{{ ws.strip() }}|{{ ws.lstrip() }}|{{ ws.rstrip() }}|{{ 'xxhixx'.strip('x') }}|{{ '<<a>>'.lstrip('<') }}|{{ 'ab'.rstrip('b') }}
{{ s.split() }}|{{ s.split('o') }}|{{ s.split('o', 1) }}|{{ s.rsplit('o', 1) }}|{{ ws.split() }}|{{ '  a  b  '.split(None, 1) }}|{{ '  a  b  '.rsplit(None, 1) }}|{{ 'a,b,,c'.split(',') }}
{{ s.split('') }}
{{ multiline.splitlines() }}|{{ multiline.splitlines(true) }}
{{ s.startswith('He') }}|{{ s.startswith(('x', 'Hel')) }}|{{ s.endswith('ld') }}|{{ s.startswith('World', 6) }}|{{ s.endswith('Hello', 0, 5) }}
{{ s.replace('o', '0') }}|{{ s.replace('o', '0', 1) }}|{{ 'ab'.replace('', '-') }}|{{ s.find('o') }}|{{ s.rfind('o') }}|{{ s.find('zz') }}|{{ s.count('o') }}|{{ s.index('W') }}|{{ u.find('日') }}
{{ s.index('zz') }}
{{ '-'.join(['a', 'b']) }}|{{ s.center(15, '*') }}|{{ s.ljust(13, '.') }}|{{ s.rjust(13) }}|{{ '42'.zfill(5) }}|{{ '-42'.zfill(5) }}|{{ 'a\tb'.expandtabs(4) }}
{{ s.partition(' ') }}|{{ s.rpartition('o') }}|{{ s.partition('zz') }}|{{ 'abc'.removeprefix('a') }}|{{ 'abc'.removesuffix('c') }}
{{ '12'.isdigit() }}|{{ 'ab'.isalpha() }}|{{ 'ab1'.isalnum() }}|{{ ' '.isspace() }}|{{ 'abc'.islower() }}|{{ 'ABC'.isupper() }}|{{ 'Ab Cd'.istitle() }}|{{ ''.isdigit() }}|{{ 'x1'.isidentifier() }}
{{ '{} and {}'.format('a', 'b') }}|{{ '{0}{1}{0}'.format('x', 'y') }}|{{ '{name}!'.format(name='Bo') }}|{{ '{:>5}|{:<5}|{:^5}'.format('a', 'b', 'c') }}|{{ '{:.2f}'.format(3.14159) }}|{{ '{:05d}'.format(42) }}|{{ '{:,}'.format(1234567) }}|{{ '{!r}'.format('q') }}|{{ '{0[0]}-{1.x}'.format(l, nested) }}|{{ '{{}}'.format() }}
{{ '%s-%d' % ('a', 3) }}|{{ '%5.1f|%-4d|%x' % (3.14159, 7, 255) }}|{{ '%(a)s' % {'a': 1} }}|{{ '%s' % none }}|{{ '%r' % 'q' }}|{{ '%%' % () }}
{{ '%d' % 'x' }}
{{ '%s %s' % ('a',) }}
{{ s|length }}|{{ u|length }}|{{ l|length }}|{{ d|length }}|{{ l|count }}|{{ undefined_var|length }}
{{ n|length }}
{{ s|upper }}|{{ s|lower }}|{{ u|upper }}|{{ u|lower }}|{{ 'hello wORLD-foo bar(baz'|title }}|{{ u|title }}|{{ 'hELLO world'|capitalize }}|{{ ws|trim }}|{{ 'xxhixx'|trim('x') }}
{{ l|first }}|{{ l|last }}|{{ s|first }}|{{ s|last }}|{{ empty|first }}|{{ empty|last }}|{{ d|first }}|{{ d|last }}
{{ l|sort }}|{{ l|sort(reverse=true) }}|{{ words|sort }}|{{ words|sort(case_sensitive=true) }}|{{ people|sort(attribute='age')|map(attribute='name')|list }}|{{ people|sort(attribute='age,name')|map(attribute='name')|join(',') }}
{{ words|unique|list }}|{{ words|unique(case_sensitive=true)|list }}|{{ people|unique(attribute='age')|map(attribute='name')|list }}
{{ l|max }}|{{ l|min }}|{{ words|max }}|{{ words|min }}|{{ people|max(attribute='age') }}|{{ empty|max }}|{{ l|sum }}|{{ people|sum(attribute='age') }}|{{ [[1],[2]]|sum(start=[]) }}
{{ l|join }}|{{ l|join(', ') }}|{{ people|join(';', attribute='name') }}|{{ undefined_var|join(',') }}
{{ l|reverse|list }}|{{ s|reverse }}|{{ d|reverse|list }}|{{ l|list }}|{{ s|list }}|{{ d|list }}
{{ d|dictsort }}|{{ d|dictsort(case_sensitive=true) }}|{{ d|dictsort(by='value', reverse=true) }}|{{ d|items|list }}|{{ undefined_var|items|list }}
{{ l|items|list }}
{{ people|selectattr('role', 'equalto', 'admin')|map(attribute='name')|list }}|{{ people|rejectattr('role')|map(attribute='name')|list }}|{{ people|selectattr('role')|list|length }}|{{ l|select('odd')|list }}|{{ l|reject('odd')|list }}|{{ [0, 1, '', 'a', none]|select|list }}
{{ people|selectattr('role', 'none')|map(attribute='name')|first }}|{{ people|map(attribute='tags')|list }}|{{ people|map(attribute='tags', default=[])|list }}|{{ l|map('string')|join('-') }}|{{ words|map('upper')|list }}|{{ people|map(attribute='tags.0')|list }}
{{ l|map|list }}
{{ people|selectattr('age', 'gt', 26)|map(attribute='name')|join }}|{{ people|selectattr('name', 'in', ['Ann', 'Cid'])|list|length }}|{{ [1,2,3,4]|select('divisibleby', 2)|list }}
{{ people|groupby('age')|list }}|{{ people|groupby('role', default='none')|map(attribute='grouper')|list }}
{% for g in people|groupby('age') %}{{ g.grouper }}:{{ g.list|map(attribute='name')|join(',') }};{% endfor %}
{{ [1,2,3,4,5]|batch(2)|list }}|{{ [1,2,3,4,5]|batch(2, 'x')|list }}|{{ [1,2,3,4,5]|slice(2)|list }}|{{ [1,2,3,4,5]|slice(3, 0)|list }}
{{ 3.7|int }}|{{ '42'|int }}|{{ ' 42 '|int }}|{{ '4_2'|int }}|{{ '0x1A'|int(base=16) }}|{{ '0x1A'|int(0, 0) }}|{{ 'nope'|int }}|{{ 'nope'|int(7) }}|{{ '3.9'|int }}|{{ none|int }}|{{ t|int }}
{{ '3.5'|float }}|{{ 'x'|float }}|{{ n|float }}|{{ '1e3'|float }}|{{ ' inf '|float }}|{{ '1_0.5'|float }}|{{ none|float }}
{{ n|string }}|{{ f|string }}|{{ none|string }}|{{ l|string }}|{{ d|string }}|{{ t|string }}|{{ undefined_var|string }}
{{ -3|abs }}|{{ -3.5|abs }}|{{ neg|abs }}|{{ 2.567|round }}|{{ 2.567|round(2) }}|{{ 2.5|round }}|{{ 3.5|round }}|{{ 2.567|round(1, 'floor') }}|{{ 2.561|round(2, 'ceil') }}|{{ 12|round }}|{{ 1234|round(-2) }}
{{ 'a\nb\n\nc'|indent }}|{{ 'a\nb'|indent(2, true) }}|{{ 'a\n\nb'|indent(2, blank=true) }}|{{ 'a\nb'|indent('> ') }}|{{ multiline|indent(3) }}
{{ 'one two  three'|wordcount }}|{{ u|wordcount }}|{{ 'ab'|center(6) }}|{{ 'hello world foo bar'|truncate(9) }}|{{ 'hello world foo bar'|truncate(9, true) }}|{{ 'hello'|truncate(10) }}
{{ '%s-%s'|format('a', 'b') }}|{{ '%(x)s'|format(x=1) }}|{{ html|e }}|{{ html|escape }}|{{ html|safe }}|{{ html|forceescape }}|{{ html|striptags }}|{{ '<p>a</p> <!-- c --> b &amp; c'|striptags }}
{{ {'a': 1, 'b': none}|xmlattr }}|{{ 'a b&c/d'|urlencode }}|{{ {'q': 'a b', 'n': 1}|urlencode }}|{{ 1500|filesizeformat }}|{{ 1500|filesizeformat(true) }}|{{ 1|filesizeformat }}|{{ 999|filesizeformat }}
{{ html|safe + '<i>' }}|{{ '<i>' + html|safe }}|{{ (html|safe).upper() }}|{{ (html|safe)|upper }}|{{ html|e|length }}|{{ ('a'|safe) ~ '<' }}|{{ '%s'|safe % '<' }}|{{ ['x'|safe] }}
{{ messages|tojson }}|{{ d|tojson }}|{{ d|tojson(indent=2) }}|{{ d|tojson(sort_keys=true) }}|{{ l|tojson(separators=(',', ':')) }}|{{ u|tojson }}|{{ u|tojson(ensure_ascii=true) }}|{{ 'a\x01\x7f\u2028'|tojson }}
{{ {'f': f, 'big': big, 'n': none, 't': t, 'nested': nested}|tojson }}|{{ (1, 2)|tojson }}|{{ {1: 'a', none: 'b', 2.5: 'c', t: 'd'}|tojson }}|{{ 'x'|tojson(indent='\t') }}|{{ [1,[2,{}],[]]|tojson(indent=1) }}|{{ d|tojson(2) }}
{{ undefined_var|tojson }}
{{ {'a': 1, 2: 'b'}|tojson(sort_keys=true) }}
{{ n is number }}|{{ f is number }}|{{ t is number }}|{{ n is integer }}|{{ t is integer }}|{{ f is float }}|{{ s is string }}|{{ d is mapping }}|{{ l is mapping }}|{{ l is sequence }}|{{ s is sequence }}|{{ d is sequence }}|{{ n is sequence }}|{{ undefined_var is sequence }}|{{ d.keys() is sequence }}
{{ l is iterable }}|{{ s is iterable }}|{{ n is iterable }}|{{ none is iterable }}|{{ undefined_var is iterable }}|{{ (l|map('string')) is iterable }}|{{ (l|map('string')) is sequence }}|{{ none is none }}|{{ t is boolean }}|{{ n is boolean }}|{{ t is true }}|{{ fl is false }}|{{ 1 is true }}
{{ n is odd }}|{{ n is even }}|{{ n is divisibleby 7 }}|{{ n is divisibleby(5) }}|{{ 'abc' is lower }}|{{ 'ABC' is upper }}|{{ s is callable }}|{{ s.upper is callable }}|{{ undefined_var is callable }}|{{ range is callable }}|{{ html|safe is escaped }}|{{ s is escaped }}
{{ n is eq 42 }}|{{ n is equalto 42 }}|{{ n is ne 41 }}|{{ n is gt 41 }}|{{ n is ge 42 }}|{{ n is lt 43 }}|{{ n is le 42 }}|{{ n is greaterthan 1 }}|{{ n is lessthan 1 }}|{{ 2 is in l }}|{{ 'a' is in 'cat' }}|{{ none is sameas none }}|{{ t is sameas true }}|{{ l is sameas l }}
{{ 'upper' is filter }}|{{ 'nope' is filter }}|{{ 'odd' is test }}|{{ n is not none }}|{{ not n is none }}|{{ n is defined and n > 1 }}
{{ 1 < 2 < 3 }}|{{ 1 < 3 < 2 }}|{{ 'a' < 'b' }}|{{ [1, 2] < [1, 3] }}|{{ (1, 2) == (1, 2) }}|{{ [1, 2] == (1, 2) }}|{{ 1 == 1.0 }}|{{ t == 1 }}|{{ none == none }}|{{ undefined_var == undefined_var2 }}|{{ 'a' != 'b' }}|{{ d == {'C': 3, 'a': 1, 'b': 2, 'items': 'shadow'} }}
{{ 1 < 'a' }}
{{ none < 1 }}
{{ undefined_var < 1 }}
{{ 2 in l }}|{{ 5 not in l }}|{{ 'Wor' in s }}|{{ 'a' in d }}|{{ 'zz' in d }}|{{ 1 in undefined_var }}|{{ 'x' in empty }}|{{ none in [none] }}
{{ 1 in 'abc' }}
{{ 1 in n }}
{{ [1] in d }}
{{ 'yes' if t else 'no' }}|{{ 'yes' if fl else 'no' }}|{{ 'yes' if fl }}|{{ ('yes' if fl) is defined }}|{{ n and s }}|{{ 0 and s }}|{{ none or 'x' }}|{{ n or 'x' }}|{{ empty or edict or 'last' }}
{{ (1, 2) }}|{{ (1,) }}|{{ () }}|{{ [] }}|{{ {} }}|{{ {'a': [1, {'b': none}]} }}|{{ 'it''s' }}|{{ "say \"hi\"" }}|{{ 'tab\there' }}|{{ '\u00e9\x41\101\N' }}
{{ 'a\'b"c' }}|{{ "a'b" }}|{{ ['a\'b', "c\"d", 'e\'f"g'] }}|{{ ['\n\t\x00\x7f\u200b\u2028é😀'] }}|{{ [1.0, -0.5, 1e20, none, t, 'x'] }}|{{ {'k': ('t',)} }}
{{ range(5)|list }}|{{ range(2, 10, 3)|list }}|{{ range(5) }}|{{ range(0, 10, 2) }}|{{ range(5)|length }}|{{ range(10, 0, -3)|list }}|{{ range(3)[1] }}|{{ 2 in range(3) }}
{{ range(1000000) }}
{{ range(1, 2, 0) }}
{{ dict(a=1, b=2) }}|{{ dict({'x': 1}, y=2) }}|{{ dict([('k', 'v')]) }}|{{ dict() }}
{% set c = cycler('odd', 'even') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}{{ c.current }}{% set j = joiner(', ') %}{{ j() }}a{{ j() }}b{{ j() }}c
{% set ns = namespace(a=1, items=[]) %}{% set ns.a = ns.a + 1 %}{% set ns.b = 'new' %}{{ ns.a }}{{ ns.b }}{{ ns.items }}{{ ns }}{{ ns.missing }}|{{ ns['a'] }}
{% set ns = namespace(d) %}{{ ns.a }}{{ ns.C }}
{% set x = 5 %}{% set x.y = 1 %}
{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c, d2 = 'xy' %}{{ c }}{{ d2 }}{% set (e, f2) = [3, 4] %}{{ e }}{{ f2 }}
{% set a, b = [1, 2, 3] %}
{% set a, b, c = [1, 2] %}
{% set x %}block {{ n }}{% endset %}{{ x }}|{% set y | upper %}shout {{ s }}{% endset %}{{ y }}|{% set z | trim | replace('a', 'b') %}  aaa  {% endset %}[{{ z }}]
{% filter upper %}filtered {{ s }}{% endfilter %}|{% filter replace('o', '0') %}{{ s }} foo{% endfilter %}
{% with a = 1, b = n %}{{ a }}{{ b }}{% endwith %}{{ a }}
{% for x in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}:{{ x }};{% endfor %}
{% for x in l %}{{ loop.previtem }}-{{ loop.nextitem }}|{{ loop.cycle('a', 'b') }}|{{ loop.changed(x > 1) }};{% endfor %}
{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}|{% for k in d %}{{ k }}{% endfor %}|{% for c in 'héllo' %}{{ c }}.{% endfor %}
{% for x in l if x > 1 %}{{ x }}{{ loop.index }}{{ loop.length }}{{ loop.last }}{% else %}none{% endfor %}|{% for x in empty %}{{ x }}{% else %}empty!{% endfor %}|{% for x in undefined_var %}{{ x }}{% else %}undef{% endfor %}
{% for x in n %}{{ x }}{% endfor %}
{% for x in l %}{% if x == 1 %}{% continue %}{% endif %}{{ x }}{% if x == 2 %}{% break %}{% endif %}{% endfor %}|{% for x in [1, 2] %}{% for y in [3, 4] %}{% if y == 4 %}{% break %}{% endif %}{{ x }}{{ y }}{% endfor %}{% endfor %}
{% for x in [1, 2] %}{% continue %}{% else %}E1{% endfor %}|{% for x in [1, 2] %}{% if x == 2 %}{% break %}{% endif %}{% else %}E2{% endfor %}|{% for x in [1, 2] %}{% if loop.last %}{% break %}{% endif %}x{% else %}E3{% endfor %}
{% for a, b in [(1, 2), (3, 4)] %}{{ a + b }}{% endfor %}|{% for a, (b, c) in [(1, (2, 3))] %}{{ a }}{{ b }}{{ c }}{% endfor %}|{% for a, b in ['xy', 'zw'] %}{{ b }}{% endfor %}
{% for a, b in [1, 2] %}{% endfor %}
{% for x in [[1, [2, [3]]]] recursive %}[{% for y in x %}{% if y is iterable %}{{ loop(y) }}{% else %}{{ y }}@{{ loop.depth }}{% endif %}{% endfor %}]{% endfor %}
{% for item in [{'n': 'a', 'c': [{'n': 'b', 'c': []}]}] recursive %}{{ item.n }}{{ loop.depth0 }}({{ loop(item.c) }}){% endfor %}
{% for x in l %}{% set inner = x %}{% endfor %}{{ inner }}|{% set outer = 'o' %}{% for x in l %}{% set outer = x %}{% endfor %}{{ outer }}
{% for i in [1, 2] %}{{ xx|default('u') }}{% set xx = i %}{% endfor %}|{% set yy = 5 %}{% for i in [1, 2] %}{{ yy }}{% set yy = i %}{% endfor %}{{ yy }}
{% for i in [1, 2] %}{% if i == 2 %}{{ zz }}{% endif %}{% set zz = i %}{% endfor %}|{% if t %}{% set in_if = 'set' %}{% endif %}{{ in_if }}
{% for m in messages %}{{ n }}{% endfor %}{% set n = 'shadowed' %}{{ n }}
{% macro m(x) %}{{ n }}{% endmacro %}{{ m(1) }}{% set n = 'late' %}{{ m(1) }}
{% macro greet(name, greeting='Hi') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet('Ann') }}|{{ greet('Bob', 'Yo') }}|{{ greet(greeting='Hey', name='Cid') }}|{{ greet() }}
{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}
{% macro m(a) %}{{ a }}{% endmacro %}{{ m(b=2) }}
{% macro m() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, k=3) }}|{% macro m2(a, b=a) %}{{ a }}{{ b }}{% endmacro %}{{ m2(5) }}|{{ m2 }}|{{ m2.name }}|{{ m2.arguments }}
{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}inner {{ s }}{% endcall %}|{% macro each(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(x) each([1, 2]) %}[{{ x }}]{% endcall %}
{% macro rec(n) %}{{ n }}{% if n > 0 %}{{ rec(n - 1) }}{% endif %}{% endmacro %}{{ rec(5) }}
{% macro m() %}{% set local = 1 %}{{ local }}{% endmacro %}{{ m() }}{{ local }}
{{ raise_exception('custom failure') }}
{% if n > 40 %}big{% elif n > 10 %}medium{% else %}small{% endif %}|{% if none %}x{% elif empty %}y{% elif d %}z{% endif %}|{% if fl %}{% else %}else{% endif %}
{{ strftime_now('%Y-%m-%d %H:%M:%S %A %B %j %U %w %p %I %y %b %a %f %% %Z%z') }}
{% generation %}generated {{ s }}{% endgeneration %}|{% generation %}{% set gv = 1 %}{% endgeneration %}{{ gv }}
{% raw %}{{ not rendered }} {% if %}{% endraw %}|{% raw -%}   trimmed   {%- endraw %}|
{% set items = [1, 2] %}{{ items.append(3) }}
{{ l.append }}|{{ l.append is defined }}|{{ d.update is defined }}|{{ l.pop }}
{{ l.append(1) }}
{{ d.update({'x': 1}) }}
{{ d.pop('a') }}
{{ ns.__class__ }}
{{ s.__class__ }}|{{ s.__len__ is defined }}
{{ l.index(2) }}|{{ l.count(3) }}|{{ (1, 2, 2).count(2) }}|{{ l.copy() }}|{{ d.copy() }}|{{ n.real }}|{{ f.is_integer() }}|{{ (4.0).is_integer() }}|{{ n.bit_length() }}
{% include 'other.jinja' %}
{% extends 'base.jinja' %}
{% import 'x.jinja' as x %}
{% if t %}{{ x|nosuchfilter }}{% endif %}ok
{{ x|nosuchfilter }}
{% if fl %}{{ x|nosuchfilter }}{% endif %}ok
{% if t %}{% for i in l %}{{ i|nosuchfilter }}{% endfor %}{% endif %}
{{ 'a' if x is nosuchtest else 'b' }}
{{ x is nosuchtest }}
{% for loop in l %}{% endfor %}
{% break %}
{% macro m() %}{% for i in l %}{{ caller() }}{% endfor %}{% endmacro %}{{ m() }}
{% if %}
{{ }}
{{ 1 + }}
{% for %}
{% endfor %}
{% set x = 1 %}{% endset %}
{{ "unterminated }}
{{ a b }}
{% unknowntag %}
{{ (1, 2 }}
{% if t %}never closed
{{ x is defined is defined }}
{{ 'a' | }}
{% macro m(a=1, b) %}{% endmacro %}
{{ f(**1) }}
{{ d['a'] }}{{ d.a }}{{ d[t] }}{{ {1: 'one'}[1.0] }}{{ {1: 'one'}[t] }}{{ nested.x.y[2].z }}{{ nested['x']['y'][-1]['z'] }}{{ nested.x.y.1 }}
{{ l.0 }}{{ [[1,2]].0.1 }}{{ messages[2].tool_calls[0].function.arguments.q }}{{ messages|map(attribute='role')|join('/') }}{{ messages|selectattr('tool_calls', 'defined')|list|length }}
{{ messages[-1].tool_calls[0].function.arguments|tojson }}|{{ messages[-1]['tool_calls'][0]['function']['arguments'] is mapping }}|{{ messages[0].content is string }}
{{ 'a' 'b' }}|{{ 1_000 }}|{{ 0x1F }}|{{ 0o17 }}|{{ 0b101 }}|{{ 1_0.5_0 }}|{{ 1e3 }}|{{ 1E-3 }}|{{ True }}{{ False }}{{ None }}|{{ true }}|{{ none is none }}
{{ s|replace('o', 'O')|upper|truncate(8, true, '') }}|{{ -2 ** 2 }}|{{ (-2) ** 2 }}|{{ 2 ** 3 ** 2 }}|{{ 10 - 2 - 3 }}|{{ 100 / 10 / 5 }}|{{ not t == fl }}|{{ 1 + 2 ~ 3 * 2 }}|{{ -l|length }}|{{ 'ab' ~ 'c'|upper }}
{{ messages[0]|dictsort }}|{{ messages[0]|items|list }}|{{ messages|length > 2 and messages[0].role == 'system' }}|{{ messages[1:]|map(attribute='content')|list }}
{{ (l|map('string'))|join }}{% set g = l|map('string') %}|{{ g|list }}|{{ g|list }}|{{ g is iterable }}
{{ (l|select)|length }}
{{ u.split() }}|{{ u[3] }}|{{ u|reverse }}|{{ u.find('ß') }}|{{ u.startswith('Grü') }}|{{ u|wordcount }}|{{ 'ΣΑΣ'.lower() }}|{{ 'ὈΔΥΣΣΕΎΣ'.lower() }}|{{ 'ﬁ'.upper() }}|{{ 'ǆ'.title() }}|{{ 'straße'|upper }}
{{ "%-5s|%5s|%05.1f|%+d|% d|%c|%c" % ('ab', 'cd', 2.25, 3, 4, 65, 'z') }}|{{ "%.3s" % 'abcdef' }}|{{ "%x|%X|%o|%#x|%#o" % (255, 255, 8, 255, 8) }}|{{ "%e|%g|%G" % (12345.678, 0.00001234, 1e20) }}
{{ '{:10.3f}|{:<10}|{:+}|{: }|{:x}|{:#b}|{:e}|{:g}|{:%}|{:.1%}'.format(3.14159, 'l', 5, 5, 255, 5, 1234.5, 0.0001, 0.25, 0.123) }}|{{ '{:*^11}'.format('mid') }}|{{ '{:.3}'.format(3.14159) }}|{{ '{}'.format(1.0) }}|{{ '{:.2}'.format('abc') }}
{{ '{} {}'.format('a') }}
{{ '{0} {}'.format('a', 'b') }}
""".strip("\n").split("\n")

# Whitespace control, trim_blocks and lstrip_blocks need templates that span lines.
MULTILINE_PROBES = [
    "{#- comment -#}   a   {#- another #}b{# c #}\n  {% if t %}\n    indented\n  {% endif %}\n    {%+ if t %}kept{% endif %}\n",
    "{{- ' x ' -}}   {{ s }}   {{- 'y' }}\nline1\n  {%- if t %}\n  inner\n  {% endif -%}\n  line2\n",
    "{% for x in l -%}\n  {{ x }}\n{%- endfor %}\ntext {% if t %}\nafter{% endif %}\n{{ s }} {# comment #}\n  {# indented comment #}\ntail\n",
    "a\r\nb\rc\n{% if t %}\r\n  x\r\n{% endif %}\r\n\n\n",
    "  {% for m in messages %}\n    {{ m.role }}\n  {% endfor %}\n\t{% if t -%}  \n tabbed\n\t{%- endif %}",
    "{% raw %}\n  {{ raw }}\n{% endraw %}\n  {%- raw %} x {% endraw -%}  \n y",
    "{% macro m() -%}\n  body\n{%- endmacro %}\n[{{ m() }}]\n{% set v -%}\n   val   \n{%- endset %}[{{ v }}]",
    "no trailing newline kept\n\n",
    "\u3000{% if t %}ideographic space before{% endif %}\n\u00a0{% if t %}nbsp{% endif %}",
    "x {%- if t %} y {% endif -%} z\n  {{ 'v' }}  \n  {%- for i in l %}{{ i }}{% endfor +%}\n  done",
]
