"""Reference chat-template renderer: Python jinja2 set up with transformers' rules.

It mirrors transformers' utils/chat_template_utils.py (_compile_jinja_template / render_jinja_template):
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with the loopcontrols extension and
the {% generation %} tag, tojson replaced by json.dumps(ensure_ascii=False, ...), raise_exception() and
strftime_now(). strftime_now reads a fixed clock here so that renders are reproducible; the C++ side gets
the same time through RenderOptions.now (`tensorfold template --now`, tf_template_tool's "now").
"""

from __future__ import annotations

import copy
import datetime
import json

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationTag(Extension):
    """transformers' AssistantTracker without the assistant-mask bookkeeping: renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    @jinja2.pass_eval_context
    def _generation_support(self, context, caller):
        return caller()


def make_environment(now: datetime.datetime) -> jinja2.Environment:
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return now.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def normalize_messages(messages: list) -> list:
    """OpenAI-style tool_call arguments (a JSON string) become a mapping, the Hugging Face convention."""
    out = json.loads(json.dumps(messages))
    for m in out:
        for call in (m.get("tool_calls") or []) if isinstance(m, dict) else []:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
                try:
                    parsed = json.loads(fn["arguments"])
                except ValueError:
                    continue
                if isinstance(parsed, dict):
                    fn["arguments"] = parsed
    return out


class Reference:
    def __init__(self, now: datetime.datetime):
        self.env = make_environment(now)
        self._compiled: dict[str, object] = {}

    def render(self, source: str, messages, tools=None, documents=None, add_generation_prompt=False, kwargs=None):
        """Returns ("ok", text) or ("error", "ExceptionType: message")."""
        try:
            if source not in self._compiled:
                try:
                    self._compiled[source] = self.env.from_string(source)
                except Exception as e:  # noqa: BLE001 - any compile failure is a template error
                    self._compiled[source] = e
            tmpl = self._compiled[source]
            if isinstance(tmpl, Exception):
                raise tmpl
            # transformers: render(messages=..., tools=..., documents=..., add_generation_prompt=...,
            # **{**special_tokens_map, **kwargs})
            # fresh copies: a template can mutate its inputs in place (list += str in |indent)
            text = tmpl.render(
                messages=normalize_messages(messages),
                tools=copy.deepcopy(tools),
                documents=copy.deepcopy(documents),
                add_generation_prompt=add_generation_prompt,
                **copy.deepcopy(kwargs or {}),
            )
            return "ok", text
        except Exception as e:  # noqa: BLE001
            return "error", f"{type(e).__name__}: {e}"
