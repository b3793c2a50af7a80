#!/usr/bin/env python3
"""Compares textgen's Jinja engine with Python's jinja2 (Debian python3-jinja2), byte for byte.

Two sets of cases, both rendered by jinja2 here, during the test run, and by
`textgen-render-template` (the C++ engine):
  * semantics: small templates covering expressions, filters, tests, methods, scoping and
    whitespace control (tests/model/chat/jinja_cases.py);
  * real chat templates: every *.jinja in TEMPLATE_DIR (llama.cpp's models/templates) with a
    set of conversations (single turn, system + multi-turn, empty content, unicode, long, tools,
    reasoning), with and without the generation prompt.

jinja2 is configured as Hugging Face transformers renders chat templates: an immutable
sandbox, trim_blocks, lstrip_blocks, the loopcontrols extension, a `{% generation %}` tag
that renders its body, tojson = json.dumps(ensure_ascii=False), raise_exception and
strftime_now as globals (strftime_now at a fixed time, so both sides agree).

A case agrees when both produce the same text or both refuse it. Exit status 1 when any case
disagrees. Usage: compare_with_jinja2.py RENDER_TOOL TEMPLATE_DIR [--report FILE]
"""
import argparse
import datetime
import json
import os
import subprocess
import sys

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jinja_cases  # noqa: E402

NOW = 1_763_900_000  # a fixed "now" for strftime_now (Nov 2025)


class GenerationTag(Extension):
    """`{% generation %}...{% endgeneration %}`: marks assistant text; renders the body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_environment():
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, loopcontrols])

    def tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent,
                          separators=separators, sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def strftime_now(fmt):
        return datetime.datetime.fromtimestamp(NOW).strftime(fmt)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render_python(env, template, context):
    try:
        return {"output": env.from_string(template).render(**context)}
    except Exception as error:  # jinja2 raises many kinds; any refusal counts as one
        return {"error": f"{type(error).__name__}: {error}"}


def render_textgen(tool, requests):
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in requests)
    done = subprocess.run([tool], input=lines.encode(), capture_output=True, check=True)
    replies = [json.loads(line) for line in done.stdout.decode().split("\n") if line]
    if len(replies) != len(requests):
        sys.exit(f"render tool answered {len(replies)} of {len(requests)} requests")
    return replies


def agree(expected, actual):
    if "output" in expected:
        return actual.get("output") == expected["output"]
    return "error" in actual


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tool")
    parser.add_argument("template_dir")
    parser.add_argument("--report", help="write a per-template table (Markdown) here")
    args = parser.parse_args()

    env = make_environment()
    cases = []  # (group, name, template, context)
    for name, template, context in jinja_cases.SEMANTIC_CASES:
        cases.append(("semantics", name, template, context))
    templates = sorted(f for f in os.listdir(args.template_dir) if f.endswith(".jinja"))
    if len(templates) < 50:
        sys.exit(f"expected llama.cpp's ~70 chat templates in {args.template_dir}, "
                 f"found {len(templates)}")
    for file in templates:
        with open(os.path.join(args.template_dir, file), encoding="utf-8") as f:
            text = f.read()
        for name, context in jinja_cases.chat_contexts():
            cases.append((file, name, text, context))

    expected = [render_python(env, template, context) for _, _, template, context in cases]
    actual = render_textgen(args.tool, [
        {"template": template, "context": context, "now": NOW}
        for _, _, template, context in cases])

    failures = []
    per_template = {}
    for (group, name, template, context), want, got in zip(cases, expected, actual):
        ok = agree(want, got)
        stats = per_template.setdefault(group, {"cases": 0, "agree": 0, "rendered": 0,
                                                "errors": set()})
        stats["cases"] += 1
        stats["agree"] += ok
        if "output" in want:
            stats["rendered"] += 1
        else:
            stats["errors"].add(want["error"].split("\n")[0][:120])
        if not ok:
            failures.append((group, name, want, got))

    for group, name, want, got in failures[:40]:
        print(f"DISAGREE {group} / {name}")
        if "output" in want and "output" in got:
            at = first_difference(want["output"], got["output"])
            print(f"  first difference at byte {at}:")
            print(f"  jinja2 : {want['output'][max(0, at - 60):at + 60]!r}")
            print(f"  textgen: {got['output'][max(0, at - 60):at + 60]!r}")
        else:
            print(f"  jinja2 : {json.dumps(want, ensure_ascii=False)[:300]}")
            print(f"  textgen: {json.dumps(got, ensure_ascii=False)[:300]}")

    semantic = per_template.pop("semantics")
    all_match = [t for t, s in per_template.items() if s["agree"] == s["cases"]]
    fully_rendered = [t for t, s in per_template.items() if s["rendered"] == s["cases"]]
    print(f"semantic cases: {semantic['agree']}/{semantic['cases']} agree")
    print(f"chat templates: {len(all_match)}/{len(per_template)} agree on every conversation "
          f"({sum(s['cases'] for s in per_template.values())} renderings); "
          f"{len(fully_rendered)} render every conversation in jinja2")
    for template, stats in sorted(per_template.items()):
        if stats["rendered"] < stats["cases"]:
            print(f"  {template}: jinja2 refuses {stats['cases'] - stats['rendered']} of "
                  f"{stats['cases']}: {'; '.join(sorted(stats['errors']))[:200]}")
    if args.report:
        with open(args.report, "w", encoding="utf-8") as f:
            f.write("| template | conversations | agree | refused by jinja2 (reason) |\n")
            f.write("| --- | --- | --- | --- |\n")
            for template, stats in sorted(per_template.items()):
                reasons = "; ".join(sorted(stats["errors"]))[:160].replace("|", "\\|")
                f.write(f"| {template} | {stats['cases']} | {stats['agree']} | "
                        f"{stats['cases'] - stats['rendered']} {reasons} |\n")
    if failures:
        print(f"{len(failures)} of {len(cases)} cases disagree")
        return 1
    print(f"all {len(cases)} cases agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
