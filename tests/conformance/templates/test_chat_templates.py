"""Conformance: every corpus chat template renders byte-identical to Python jinja2 with transformers'
rules (reference.py) for every conversation of conversations.json, with add_generation_prompt off and
on, and raises where the reference raises.

All cases run through one tf_template_tool process (JSON lines in, JSON lines out)."""

from __future__ import annotations

import datetime
import json
import subprocess
from pathlib import Path

import pytest

from .reference import Reference

HERE = Path(__file__).resolve().parent
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")  # from jinja2 compiling odd probes
CONVERSATIONS = json.loads((HERE / "conversations.json").read_text(encoding="utf-8"))
NOW = datetime.datetime.fromisoformat(CONVERSATIONS["now"])


def build_cases(corpus: dict[str, str]) -> list[dict]:
    cases = []
    for name in sorted(corpus):
        for conv in CONVERSATIONS["conversations"]:
            for agp in (False, True):
                cases.append(
                    {
                        "template_name": name,
                        "conversation": conv["name"],
                        "add_generation_prompt": agp,
                        "messages": conv["messages"],
                        "tools": conv.get("tools"),
                        "documents": conv.get("documents"),
                        "kwargs": conv.get("kwargs", {}),
                    }
                )
    return cases


@pytest.fixture(scope="session")
def results(template_corpus, template_tool_bin):
    """Per case: (reference outcome, our outcome)."""
    cases = build_cases(template_corpus)
    special = CONVERSATIONS["special_tokens"]
    requests = []
    for i, c in enumerate(cases):
        req = {
            "id": i,
            "template": template_corpus[c["template_name"]],
            "messages": c["messages"],
            "add_generation_prompt": c["add_generation_prompt"],
            "kwargs": c["kwargs"],
            "special_tokens": special,
            "now": CONVERSATIONS["now"],
        }
        if c["tools"] is not None:
            req["tools"] = c["tools"]
        if c["documents"] is not None:
            req["documents"] = c["documents"]
        requests.append(json.dumps(req, ensure_ascii=False))
    proc = subprocess.run(
        [str(template_tool_bin)],
        input="\n".join(requests) + "\n",
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=300,
    )
    assert proc.returncode == 0, f"tf_template_tool exited {proc.returncode}: {proc.stderr[-2000:]}"
    ours = [json.loads(line) for line in proc.stdout.split("\n") if line.strip()]
    assert len(ours) == len(cases), f"tf_template_tool answered {len(ours)} of {len(cases)} requests"

    ref = Reference(NOW)
    out = {}
    for i, c in enumerate(cases):
        kwargs = {**special, **c["kwargs"]}
        expected = ref.render(
            template_corpus[c["template_name"]],
            c["messages"],
            tools=c["tools"],
            documents=c["documents"],
            add_generation_prompt=c["add_generation_prompt"],
            kwargs=kwargs,
        )
        got = ("ok", ours[i]["text"]) if ours[i]["ok"] else ("error", f'{ours[i]["kind"]}: {ours[i]["error"]}')
        out[(c["template_name"], c["conversation"], c["add_generation_prompt"])] = (expected, got)
    return out


def describe_mismatch(key, expected, got) -> str:
    name, conv, agp = key
    head = f"{name} × {conv} (add_generation_prompt={agp}):"
    if expected[0] != got[0]:
        return f"{head} reference {expected[0]} vs ours {got[0]}\n  reference: {expected[1][:400]!r}\n  ours:      {got[1][:400]!r}"
    # first differing position
    a, b = expected[1], got[1]
    i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
    return f"{head} texts differ at char {i}\n  reference: {a[max(0, i - 80):i + 120]!r}\n  ours:      {b[max(0, i - 80):i + 120]!r}"


def test_corpus_matrix_is_byte_identical(results):
    total = len(results)
    rendered = sum(1 for e, _ in results.values() if e[0] == "ok")
    raised = total - rendered
    mismatches = [(k, e, g) for k, (e, g) in results.items() if e[0] != g[0] or (e[0] == "ok" and e[1] != g[1])]
    templates = len({k[0] for k in results})
    print(
        f"\nchat-template conformance: {templates} templates × {total // max(templates, 1)} cases = {total}; "
        f"{rendered} rendered, {raised} raised in the reference; {total - len(mismatches)}/{total} identical"
    )
    assert not mismatches, f"{len(mismatches)} of {total} cases differ:\n" + "\n".join(
        describe_mismatch(*m) for m in mismatches[:15]
    )


def test_every_template_renders_some_conversation(results):
    """Guards the matrix itself: a template that raises for every conversation would make the
    comparison vacuous for it."""
    by_template: dict[str, int] = {}
    for (name, _, _), (expected, _) in results.items():
        by_template[name] = by_template.get(name, 0) + (expected[0] == "ok")
    dead = sorted(n for n, ok in by_template.items() if ok == 0)
    assert not dead, f"templates that render no conversation in the reference: {dead}"


def test_jinja_semantics_probes(template_tool_bin):
    """Hundreds of one-feature templates (probes.py): literals, operators, Python value formatting,
    undefined semantics, every filter/test/method the corpus needs and many more, scoping, loops,
    macros, whitespace control, and compile/runtime errors. Each must match jinja2 exactly."""
    from .probes import MULTILINE_PROBES, PROBE_CONTEXT, PROBES

    sources = PROBES + MULTILINE_PROBES
    lines = []
    for src in sources:
        lines.append(json.dumps({"template": src, "messages": PROBE_CONTEXT["messages"],
                                 "kwargs": {k: v for k, v in PROBE_CONTEXT.items() if k != "messages"},
                                 "now": CONVERSATIONS["now"]}, ensure_ascii=False))
    proc = subprocess.run([str(template_tool_bin)], input="\n".join(lines) + "\n", capture_output=True, text=True,
                          encoding="utf-8", timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    ours = [json.loads(x) for x in proc.stdout.split("\n") if x.strip()]
    assert len(ours) == len(sources)
    ref = Reference(NOW)
    failures = []
    for src, got in zip(sources, ours):
        expected = ref.render(src, PROBE_CONTEXT["messages"],
                              kwargs={k: v for k, v in PROBE_CONTEXT.items() if k != "messages"})
        g = ("ok", got["text"]) if got["ok"] else ("error", f'{got["kind"]}: {got["error"]}')
        if expected[0] != g[0] or (expected[0] == "ok" and expected[1] != g[1]):
            failures.append(f"template: {src!r}\n  reference: {expected[0]} {expected[1][:500]!r}\n  ours:      {g[0]} {g[1][:500]!r}")
    print(f"\njinja semantics probes: {len(sources) - len(failures)}/{len(sources)} identical")
    assert not failures, f"{len(failures)} of {len(sources)} probes differ:\n" + "\n".join(failures[:40])


def test_random_templates_match_jinja2(template_tool_bin):
    """Seeded random expressions and statements (random_templates.py) over the probe context: the
    outcome (text, or an error) must match jinja2's. Renders that print an object's memory address
    (a method or generator object) are left out: their text differs on every run."""
    from .probes import PROBE_CONTEXT
    from .random_templates import random_templates

    sources = random_templates(seed=20260314, count=3000)
    kwargs = {k: v for k, v in PROBE_CONTEXT.items() if k != "messages"}
    lines = [json.dumps({"template": s, "messages": PROBE_CONTEXT["messages"], "kwargs": kwargs}, ensure_ascii=False)
             for s in sources]
    proc = subprocess.run([str(template_tool_bin)], input="\n".join(lines) + "\n", capture_output=True, text=True,
                          encoding="utf-8", timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    ours = [json.loads(x) for x in proc.stdout.split("\n") if x.strip()]
    assert len(ours) == len(sources)
    ref = Reference(NOW)
    failures, compared = [], 0
    for src, got in zip(sources, ours):
        expected = ref.render(src, PROBE_CONTEXT["messages"], kwargs=kwargs)
        if expected[0] == "ok" and " at 0x" in expected[1]:
            continue
        compared += 1
        g = ("ok", got["text"]) if got["ok"] else ("error", f'{got["kind"]}: {got["error"]}')
        if expected[0] != g[0] or (expected[0] == "ok" and expected[1] != g[1]):
            failures.append(f"template: {src!r}\n  reference: {expected[0]} {expected[1][:300]!r}\n  ours:      {g[0]} {g[1][:300]!r}")
    print(f"\nrandom templates: {compared - len(failures)}/{compared} identical ({len(sources) - compared} left out)")
    assert not failures, f"{len(failures)} of {compared} random templates differ:\n" + "\n".join(failures[:30])


def test_random_layouts_match_jinja2(template_tool_bin):
    """Seeded random template layouts (text, newlines, tabs, tags with -/+ modifiers, comments, raw
    blocks, nested if/for/macro): whitespace control with trim_blocks and lstrip_blocks must give the
    same bytes as jinja2."""
    from .probes import PROBE_CONTEXT
    from .random_templates import random_layouts

    sources = random_layouts(seed=7, count=3000)
    kwargs = {k: v for k, v in PROBE_CONTEXT.items() if k != "messages"}
    lines = [json.dumps({"template": s, "messages": [], "kwargs": kwargs}, ensure_ascii=False) for s in sources]
    proc = subprocess.run([str(template_tool_bin)], input="\n".join(lines) + "\n", capture_output=True, text=True,
                          encoding="utf-8", timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    ours = [json.loads(x) for x in proc.stdout.split("\n") if x.strip()]
    assert len(ours) == len(sources)
    ref = Reference(NOW)
    failures = []
    for src, got in zip(sources, ours):
        expected = ref.render(src, [], kwargs=kwargs)
        g = ("ok", got["text"]) if got["ok"] else ("error", f'{got["kind"]}: {got["error"]}')
        if expected[0] != g[0] or (expected[0] == "ok" and expected[1] != g[1]):
            failures.append(f"template: {src!r}\n  reference: {expected[0]} {expected[1][:300]!r}\n  ours:      {g[0]} {g[1][:300]!r}")
    print(f"\nrandom layouts: {len(sources) - len(failures)}/{len(sources)} identical")
    assert not failures, f"{len(failures)} of {len(sources)} random layouts differ:\n" + "\n".join(failures[:20])
