"""Inputs for compare_with_jinja2.py. Expected outputs are never written here: jinja2 renders
every case during the test run."""

LONG_TEXT = " ".join(f"word{i}" for i in range(700)) + "\n\nEnd of a long message."
UNICODE_TEXT = "¿Qué tal? 你好，世界 🌍 naïve café — “quotes” ‘single’ \u2028 Ωμέγα Привет ß"

_SNIPPETS = [
    # literals and printing
    ("literals", "{{ 1 }}|{{ 1.5 }}|{{ 'a' }}|{{ \"b\" }}|{{ true }}|{{ None }}|{{ [1, 'x', none] }}"),
    ("floats", "{{ 1e16 }} {{ 0.0001 }} {{ 1e-5 }} {{ 1/3 }} {{ 2.0 }} {{ 123456789.125 }} {{ -0.5 }}"),
    ("dict repr", "{{ {'a': 1, 'b': [true, 'it\\'s', \"q\\\"\"]} }}"),
    ("escapes", "{{ 'tab\\tnl\\nuni\\u00e9 hex\\x41 oct\\101 back\\\\ unknown\\q' }}"),
    ("adjacent strings", "{{ 'a' 'b' \"c\" }}"),
    # arithmetic
    ("arithmetic", "{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 3 / 2 }} {{ 4 / 2 }}"),
    ("float arithmetic", "{{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 1.5 * 2 }} {{ 1 + 2.5 }} {{ 10 - 0.25 }}"),
    ("precedence", "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ -2 ** 2 }} {{ 2 ** 3 ** 2 }} {{ not 1 == 2 }}"),
    ("concat", "{{ 'a' ~ 1 ~ none ~ [1] }} {{ 'x' + 'y' }} {{ [1] + [2, 3] }} {{ 'ab' * 3 }} {{ [0] * 3 }}"),
    ("comparison", "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 == 1.0 }} {{ 1 != '1' }} {{ true == 1 }}"),
    ("in", "{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'abc' }}"),
    ("and or", "{{ 0 or 'x' }} {{ 1 and 'y' }} {{ '' and 'z' }} {{ none or [] }} {{ not '' }}"),
    ("conditional", "{{ 'yes' if 1 else 'no' }} {{ 'yes' if 0 }}|{{ 'a' if 0 else 'b' if 1 else 'c' }}"),
    ("unary minus filter", "{{ -2|abs }} {{ -(2|abs) }} {{ +3 }}"),
    # subscripts and slices
    ("slices", "{{ 'abcdef'[1:4] }} {{ 'abcdef'[::-1] }} {{ 'abcdef'[::2] }} {{ 'abcdef'[-2:] }} {{ [1,2,3,4][1:] }} {{ [1,2,3][::-1] }} {{ 'héllo'[1:3] }} {{ 'abc'[5:] }}|"),
    ("negative slices", "{{ 'abcdef'[-1:-4:-1] }} {{ 'abcdef'[4:1:-2] }} {{ [1,2,3,4,5][-100:100] }}"),
    ("index", "{{ 'abc'[0] }} {{ 'abc'[-1] }} {{ [1, 2][1] }} {{ {'a': {'b': 3}}['a']['b'] }} {{ {'a': 1}.a }} {{ [5, 6].1 }}"),
    ("missing", "{{ {'a': 1}.b }}|{{ {'a': 1}['b'] }}|{{ [1][5] }}|{{ x }}|"),
    ("missing attribute of undefined", "{{ x.y }}"),
    ("dict method wins", "{{ d.items is defined }} {{ d['items'] }}"),
    # tests
    ("tests", "{{ x is defined }} {{ y is undefined }} {{ none is none }} {{ 'a' is string }} {{ {} is mapping }} {{ [] is iterable }} {{ 'a' is iterable }} {{ [] is sequence }} {{ 1 is number }} {{ 1.5 is float }} {{ 1 is integer }} {{ true is boolean }} {{ true is number }}"),
    ("more tests", "{{ 4 is even }} {{ 3 is odd }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }} {{ 'abc' is lower }} {{ 'ABC' is upper }} {{ 1 is eq 1 }} {{ 2 is gt 1 }} {{ 2 is in [1, 2] }} {{ none is sameas none }} {{ true is true }} {{ false is false }}"),
    ("is not", "{{ x is not defined }} {{ none is not none }} {{ 'a' is not string }}"),
    # filters
    ("string filters", "{{ '  a b  '|trim }}|{{ 'xxhixx'|trim('x') }}|{{ 'Hello'|upper }} {{ 'Hello'|lower }} {{ 'hello world'|title }} {{ 'hELLO'|capitalize }} {{ 'aXbX'|replace('X', '-') }} {{ 'aaa'|replace('a', 'b', 2) }}"),
    ("length", "{{ 'héllo'|length }} {{ [1,2]|length }} {{ {'a': 1}|count }} {{ x|length }}"),
    ("default", "{{ x|default('d') }} {{ none|default('d') }} {{ ''|default('d', true) }} {{ 0|d(5, true) }} {{ 'v'|default('d') }}"),
    ("join", "{{ [1, 'a', none]|join(', ') }} {{ ['a','b']|join }} {{ [{'n': 'x'}, {'n': 'y'}]|join('/', attribute='n') }}"),
    ("first last", "{{ [1,2,3]|first }} {{ [1,2,3]|last }} {{ 'abc'|first }} {{ []|first }}|"),
    ("list items", "{{ 'ab'|list }} {{ {'a': 1, 'b': 2}|items|list }} {{ {'b': 1, 'a': 2}|dictsort }} {{ {'b': 1, 'A': 2, 'a': 0}|dictsort(true) }} {{ {'x': 3, 'y': 1}|dictsort(by='value') }}"),
    ("sort unique", "{{ [3, 1, 2]|sort }} {{ ['b', 'A', 'c']|sort }} {{ ['b', 'A', 'c']|sort(case_sensitive=true) }} {{ [3, 1]|sort(reverse=true) }} {{ [{'t': 2}, {'t': 1}]|sort(attribute='t') }} {{ ['a', 'A', 'b']|unique|list }}"),
    ("select", "{{ [1, 2, 3, 4]|select('odd')|list }} {{ [1, 0, 2]|select|list }} {{ [1, 2]|reject('equalto', 2)|list }}"),
    ("selectattr", "{{ msgs|selectattr('role', 'equalto', 'user')|map(attribute='content')|list }} {{ msgs|rejectattr('role', 'equalto', 'user')|list|length }} {{ msgs|selectattr('extra', 'defined')|list|length }} {{ msgs|selectattr('content')|list|length }}"),
    ("map", "{{ ['a', 'b']|map('upper')|list }} {{ msgs|map(attribute='role')|join(',') }} {{ [1.5, 2.5]|map('int')|list }}"),
    ("tojson", "{{ {'a': [1, 2.5, none, true], 'é': 'ü\\n\"\\\\', 'n': {}} |tojson }} {{ 'x'|tojson }} {{ [1, [2, {'k': []}]]|tojson(indent=2) }}"),
    ("tojson args", "{{ {'é': 'ü'}|tojson(ensure_ascii=true) }} {{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }} {{ [1, 2]|tojson(separators=(',', ':')) }} {{ {'a': 1}|tojson(indent=4) }}"),
    ("tojson emoji", "{{ '🌍'|tojson(ensure_ascii=true) }} {{ '\\x01\\x7f'|tojson }}"),
    ("string int float", "{{ 12|string }} {{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ '2.5'|float }} {{ 3|float }} {{ true|int }}"),
    ("numbers", "{{ -3|abs }} {{ 2.5|round }} {{ 3.5|round }} {{ 2.567|round(2) }} {{ 2.1|round(0, 'ceil') }} {{ [1, 2, 3]|sum }} {{ [3, 1, 2]|min }} {{ [3, 1, 2]|max }}"),
    ("indent", "{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent(3, blank=true) }}|{{ 'x\\ny'|indent('> ') }}"),
    ("misc filters", "{{ [1, 2]|reverse|list }} {{ 'abc'|reverse }} {{ 'a b  c'|wordcount }} {{ '<a & b>'|e }} {{ 'x'|safe }} {{ 'ab'|center(6) }}|"),
    ("filter chain", "{{ '  Mixed Case  '|trim|lower|replace(' ', '_') }}"),
    # methods
    ("split", "{{ ' a  b '.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a b c'.split(' ', 1) }} {{ 'a b c'.rsplit(' ', 1) }} {{ '  x y  z '.split(none, 1) }} {{ 'x'.split('x') }}"),
    ("strip", "{{ '  x  '.strip() }}|{{ '\\n\\tx\\n'.lstrip() }}|{{ 'xyx'.strip('x') }}|{{ 'abc'.rstrip('c') }}|{{ '\u3000x\u00a0'.strip() }}|"),
    ("startswith", "{{ 'hello'.startswith('he') }} {{ 'hello'.endswith('lo') }} {{ 'hello'.startswith(('x', 'h')) }} {{ 'a'.endswith('abc') }}"),
    ("string methods", "{{ 'abc'.upper() }} {{ 'ABC'.lower() }} {{ 'a-b'.replace('-', '+') }} {{ 'hello'.find('l') }} {{ 'héllo'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.count('l') }} {{ 'x'.find('z') }} {{ 'hi there'.title() }} {{ 'hi'.capitalize() }}"),
    ("format", "{{ '{} and {}'.format(1, 'two') }} {{ '{0}{0}'.format('x') }} {{ '{name}!'.format(name='n') }} {{ '{{}}'.format() }}"),
    ("join method", "{{ ', '.join(['a', 'b']) }} {{ ''.join('abc') }}"),
    ("str predicates", "{{ '123'.isdigit() }} {{ 'abc'.isalpha() }} {{ ' '.isspace() }} {{ 'ab1'.isalnum() }} {{ 'AB'.isupper() }} {{ 'ab'.islower() }} {{ ''.isdigit() }}"),
    ("splitlines partition", "{{ 'a\\nb\\r\\nc'.splitlines() }} {{ 'k=v=w'.partition('=') }} {{ 'k=v=w'.rpartition('=') }}"),
    ("dict methods", "{{ d.get('items') }} {{ d.get('zz') }} {{ d.get('zz', 5) }} {{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }}"),
    ("list methods", "{{ [1, 2, 1].count(1) }} {{ ['a', 'b'].index('b') }}"),
    ("append refused", "{% set l = [1] %}{% set _ = l.append(2) %}{{ l }}"),
    # statements
    ("if elif else", "{% if x %}x{% elif 0 %}zero{% elif 'a' %}a{% else %}else{% endif %}"),
    ("for loop vars", "{% for i in ['a', 'b', 'c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }};{% endfor %}"),
    ("for else", "{% for i in [] %}x{% else %}empty{% endfor %}{% for i in none or [] %}{% else %}e2{% endfor %}"),
    ("for filter", "{% for i in range(10) if i is odd %}{{ i }}{{ loop.length }},{% endfor %}"),
    ("for unpack", "{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }}{% endfor %}"),
    ("for dict", "{% for k in {'x': 1, 'y': 2} %}{{ k }}{% endfor %}"),
    ("for string", "{% for c in 'héy' %}[{{ c }}]{% endfor %}"),
    ("break continue", "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}"),
    ("loop cycle", "{% for i in range(4) %}{{ loop.cycle('a', 'b') }}{% endfor %}"),
    ("nested loops", "{% for i in range(2) %}{% for j in range(2) %}{{ loop.index }}{{ i }}{{ j }} {% endfor %}{{ loop.index }}|{% endfor %}"),
    ("range", "{{ range(3)|list }} {{ range(1, 10, 3)|list }} {{ range(5, 0, -2)|list }} {{ range(0)|list }}"),
    ("set scoping", "{% set x = 1 %}{% for i in range(3) %}{% set x = x + 1 %}[{{ x }}]{% endfor %}{{ x }}{% if true %}{% set x = 9 %}{% endif %}{{ x }}"),
    ("set in loop does not persist", "{% for i in range(3) %}{% if i == 0 %}{% set y = 5 %}{% endif %}[{{ y }}]{% endfor %}"),
    ("namespace", "{% set ns = namespace(count=0, found=false) %}{% for i in range(3) %}{% set ns.count = ns.count + i %}{% endfor %}{{ ns.count }} {{ ns.found }}"),
    ("namespace from dict", "{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}{{ ns.c is defined }}"),
    ("set tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = (1, 2) %}{{ t|length }}"),
    ("block set", "{% set body %}  hello {{ 'world' }}\n{% endset %}[{{ body }}]{% set up | upper %}shout{% endset %}{{ up }}"),
    ("macro", "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('a') }} {{ greet('b', '?') }} {{ greet(punct='.', name='c') }} {{ greet() }}"),
    ("macro varargs", "{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k=4) }}"),
    ("macro recursion", "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}{{ fact(6) }}"),
    ("call block", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}inner {{ 1 + 1 }}{% endcall %}"),
    ("call block args", "{% macro each(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(x) each([1, 2]) %}<{{ x }}>{% endcall %}"),
    ("filter block", "{% filter upper %}hello {{ 'x' }}{% endfilter %}"),
    ("raw", "{% raw %}{{ not rendered }}{% endraw %}"),
    ("comments", "a{# comment #}b{#- trimmed -#}  c"),
    ("raise", "{{ raise_exception('custom message') }}"),
    ("strftime", "{{ strftime_now('%d %b %Y') }} {{ strftime_now('%Y-%m-%d') }}"),
    ("dict global", "{{ dict(a=1, b='x') }}"),
    ("joiner", "{% set j = joiner('|') %}{% for i in range(3) %}{{ j() }}{{ i }}{% endfor %}"),
    ("undefined ops", "{{ x ~ 'a' }}|{% for i in x %}never{% endfor %}|{{ x|string }}|{{ 'a' in x }}"),
    ("undefined arithmetic", "{{ x + 1 }}"),
    ("none attribute", "{{ none.x is defined }}"),
    ("type error", "{{ 'a' + 1 }}"),
    ("generation tag", "{% generation %}assistant text {{ 1 }}{% endgeneration %}"),
    # whitespace control
    ("trim blocks", "a\n{% if true %}\nb\n{% endif %}\nc\n"),
    ("lstrip blocks", "a\n    {% if true %}\n    b\n    {% endif %}\n  {# c #}\nd"),
    ("dash control", "a   {{- 'b' -}}   c {%- if true -%}  d  {%- endif -%}  e"),
    ("plus control", "a\n  {%+ if true %}b{% endif +%}\nc"),
    ("mixed whitespace", "{% for i in [1,2] %}\n  {{ i }}\n{% endfor %}\n"),
    ("crlf", "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\nc"),
    ("trailing newline", "text\n"),
    ("variable no trim", "{{ 'a' }}\nb"),
    ("lstrip after expression", "{{ 'x' }}  {% if true %}y{% endif %}"),
    # errors
    ("syntax error", "{% if %}"),
    ("unclosed", "{% for x in y %}"),
    ("unknown filter", "{{ 1|nosuchfilter }}"),
    ("unknown tag", "{% nosuchtag %}"),
]

_CONTEXT = {
    "msgs": [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"},
             {"role": "assistant", "content": ""}, {"role": "user", "content": "U2"}],
    "d": {"items": "the key", "b": 2},
}

SEMANTIC_CASES = [(name, template, _CONTEXT) for name, template in _SNIPPETS]

_TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}]

_CONVERSATIONS = {
    "single turn": [{"role": "user", "content": "Hello! How are you?"}],
    "system + multi-turn": [
        {"role": "system", "content": "You are a concise assistant."},
        {"role": "user", "content": "What is the capital of France?"},
        {"role": "assistant", "content": "Paris."},
        {"role": "user", "content": "And of Italy?"},
    ],
    "empty content": [
        {"role": "system", "content": ""},
        {"role": "user", "content": ""},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "Anything?"},
    ],
    "unicode": [
        {"role": "user", "content": UNICODE_TEXT},
        {"role": "assistant", "content": "Très bien ✓ — 好的"},
        {"role": "user", "content": "Emoji: 🤖🎉 and <|im_end|> typed by a user"},
    ],
    "long": [
        {"role": "system", "content": "Summarize."},
        *[m for i in range(5) for m in (
            {"role": "user", "content": f"Part {i}: {LONG_TEXT}"},
            {"role": "assistant", "content": f"Summary {i}: words."})],
        {"role": "user", "content": "Final question?"},
    ],
    "tool call": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather",
         "content": "{\"temperature\": 21}"},
    ],
    "reasoning": [
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "reasoning_content": "Simple arithmetic.",
         "content": "<think>\nSimple arithmetic.\n</think>\n\n4"},
        {"role": "user", "content": "3+3?"},
    ],
}


def chat_contexts():
    """(name, context) pairs: every conversation with and without the generation prompt,
    plus tools and enable_thinking variants."""
    for name, messages in _CONVERSATIONS.items():
        for add_generation_prompt in (True, False):
            context = {
                "messages": messages,
                "add_generation_prompt": add_generation_prompt,
                "bos_token": "<s>",
                "eos_token": "</s>",
            }
            if name == "tool call":
                context["tools"] = _TOOLS
            yield f"{name}, add_generation_prompt={add_generation_prompt}", context
    yield "single turn, enable_thinking=false", {
        "messages": _CONVERSATIONS["single turn"], "add_generation_prompt": True,
        "bos_token": "<s>", "eos_token": "</s>", "enable_thinking": False}
