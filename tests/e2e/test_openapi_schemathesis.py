"""Schema-driven fuzzing of our own /openapi.json with schemathesis, as vLLM runs in CI: generated requests,
valid and invalid, against every operation of the session's server. No request may get a 5xx, and every
response must match the document (status, content type, headers, body schema). Bounded: a fixed number of
examples per operation, stateful links off, and max tokens capped here so each generation is a few tokens.

Not checked: that every schema-valid request is accepted. The document gives shapes; some refusals depend on
the model or the rest of the request (a token id beyond the vocabulary, tool_choice "required" without
tools, a tool_result naming no tool_use), and those are 400s with `param`, as they should be."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis.errors import Unsatisfiable  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402
from schemathesis.checks import (  # noqa: E402
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

DOCUMENT = Path(__file__).resolve().parents[2] / "src" / "server" / "openapi.json"
EXAMPLES = 30  # per operation, per generation mode
MAX_TOKENS = 2
MAX_CHOICES = 2
TOKEN_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
GENERATING = ("/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/messages")
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_headers_conformance,
          response_schema_conformance]


def cap_generation(case) -> None:
    """A generation of a few tokens whatever was generated: the server's limit is the context end, and a
    thousand examples of thousands of tokens would take hours on a CPU."""
    body = case.body
    if case.path not in GENERATING or not isinstance(body, dict):
        return
    for field in TOKEN_FIELDS:
        value = body.get(field)
        if isinstance(value, int) and not isinstance(value, bool) and value > MAX_TOKENS:
            body[field] = MAX_TOKENS
    if not any(f in body for f in TOKEN_FIELDS):
        body["max_output_tokens" if case.path == "/v1/responses" else "max_tokens"] = MAX_TOKENS
    # Choices too: n, best_of and a list of prompts each multiply the generations of one request.
    for field in ("n", "best_of"):
        value = body.get(field)
        if isinstance(value, int) and not isinstance(value, bool) and value > MAX_CHOICES:
            body[field] = MAX_CHOICES
    prompt = body.get("prompt")
    if isinstance(prompt, list) and prompt and not isinstance(prompt[0], int) and len(prompt) > MAX_CHOICES:
        body["prompt"] = prompt[:MAX_CHOICES]


# One test per operation and mode, each a hypothesis run over that operation's strategy. (schemathesis's own
# pytest plugin, schema.parametrize(), does not run under pytest 9 in 4.32.)
OPERATIONS = [result.ok() for result in schemathesis.openapi.from_path(str(DOCUMENT)).get_all_operations()]


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=lambda m: m.value)
@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.label)
def test_api_conforms_to_its_openapi_document(server, operation, mode):
    base_url = f"http://127.0.0.1:{server.port}"
    headers = {"Authorization": f"Bearer {server.api_key}"}

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=EXAMPLES, deadline=None, phases=[Phase.explicit, Phase.generate],
              suppress_health_check=list(HealthCheck), database=None, derandomize=True)
    def run(case):
        cap_generation(case)
        response = case.call_and_validate(base_url=base_url, headers=headers, checks=CHECKS, timeout=120)
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1

    statuses: dict[int, int] = {}
    try:
        run()
    except Unsatisfiable:
        pytest.skip("the operation takes no input to make invalid")
    print(f"\n{operation.label} {mode.value}: {sum(statuses.values())} requests, statuses {dict(sorted(statuses.items()))}")


def test_document_is_served_open(server):
    r = server.raw("GET", "/openapi.json", auth=False)
    assert r.status == 200
    doc = json.loads(r.body)
    assert doc["openapi"] == "3.1.0"
    assert "/v1/chat/completions" in doc["paths"]
