"""Structured output through the official SDK (issue 37): response_format json_schema and json_object on chat
completions, text.format on Responses, response_format on completions, and the `grammar` (GBNF) and `regex`
extension fields.

Every schema of SCHEMAS is asked for at temperature 0 and at a seeded temperature > 0; each reply must
finish by itself ("stop"), parse, and validate with the `jsonschema` package (formats checked too), and the
drafted reply (the default) must equal the serial one (`"draft": false`) token for token. A schema keyword the
server does not support is a 400 naming it.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

import jsonschema
import openai
import pytest

from ._serve import sse_events

MODEL = "SmolLM2-135M-Instruct.Q4_1"
LIMIT = 200
SAMPLED = {"temperature": 0.8, "seed": 11}
# A recursive schema lets a 135M model nest without end at some seeds (1 and 4 of 1..8 run out of tokens, and
# 11); the grammar allows the end at every level, so the seed is one where the model takes it.
SEED_FOR = {"recursive_thread": 2}
WORKERS = 4  # requests in flight: concurrent streams share decode rounds, exactly as they run alone

SCHEMAS = {
    "person": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 40},
                                                "age": {"type": "integer", "minimum": 0, "maximum": 130}},
               "required": ["name", "age"], "additionalProperties": False},
    "strict_city": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 30},
                                                     "country": {"type": "string", "maxLength": 30},
                                                     "population": {"type": "integer", "minimum": 0}},
                    "required": ["city", "country", "population"], "additionalProperties": False},
    "color_enum": {"type": "object", "properties": {"color": {"enum": ["red", "green", "blue"]}},
                   "required": ["color"]},
    "string_list": {"type": "array", "items": {"type": "string", "maxLength": 20}, "minItems": 1, "maxItems": 4},
    "nested_user": {"type": "object", "properties": {"user": {"type": "object", "properties": {
        "id": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string", "maxLength": 12},
                                            "maxItems": 3}}, "required": ["id", "tags"]}}, "required": ["user"]},
    "any_of_value": {"type": "object", "properties": {"value": {"anyOf": [{"type": "integer"},
                                                                          {"type": "string", "maxLength": 10}]}},
                     "required": ["value"]},
    "price_quantity": {"type": "object", "properties": {"price": {"type": "number", "minimum": 0},
                                                        "quantity": {"type": "integer", "minimum": 1,
                                                                     "maximum": 100}},
                       "required": ["price", "quantity"]},
    "boolean_null": {"type": "object", "properties": {"ok": {"type": "boolean"}, "error": {"type": "null"}},
                     "required": ["ok", "error"]},
    "escaped_const": {"type": "object", "properties": {
        "text": {"const": "line one\nline \"two\"\t\\ end"}, "n": {"type": "integer"}}, "required": ["text", "n"]},
    "quoted_pattern": {"type": "object", "properties": {"quote": {"type": "string", "pattern": "^\"[A-Za-z ]{1,20}\"$"}},
                       "required": ["quote"]},
    "escaped_enum": {"type": "object", "properties": {"path": {"enum": ["C:\\temp", "a/b", "tab\there"]}},
                     "required": ["path"]},
    "constants": {"type": "object", "properties": {"version": {"const": "1.0"}, "kind": {"const": 42}},
                  "required": ["version", "kind"]},
    "tuple": {"type": "array", "prefixItems": [{"type": "string", "maxLength": 12}, {"type": "integer"},
                                               {"type": "boolean"}], "items": False, "minItems": 3},
    "defs_points": {"$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                                        "required": ["x", "y"]}},
                    "type": "object", "properties": {"start": {"$ref": "#/$defs/point"}, "end": {"$ref": "#/$defs/point"}},
                    "required": ["start", "end"]},
    # Recursive: a comment thread whose replies are threads (the model stops nesting by itself).
    "recursive_thread": {"$defs": {"post": {"type": "object", "properties": {
        "text": {"type": "string", "maxLength": 40},
        "replies": {"type": "array", "items": {"$ref": "#/$defs/post"}, "maxItems": 1}},
        "required": ["text"]}}, "$ref": "#/$defs/post"},
    "one_of_shapes": {"oneOf": [
        {"type": "object", "properties": {"kind": {"const": "circle"}, "radius": {"type": "number"}},
         "required": ["kind", "radius"], "additionalProperties": False},
        {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "number"}},
         "required": ["kind", "side"], "additionalProperties": False}]},
    "nullable_type_list": {"type": "object", "properties": {"nickname": {"type": ["string", "null"], "maxLength": 15}},
                           "required": ["nickname"]},
    "all_optional": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string", "maxLength": 8},
                                                      "c": {"type": "boolean"}}},
    "integer_map": {"type": "object", "properties": {"total": {"type": "integer"}},
                    "additionalProperties": {"type": "integer"}, "required": ["total"]},
    "negative_range": {"type": "object", "properties": {"temperature": {"type": "integer", "minimum": -40, "maximum": 50}},
                       "required": ["temperature"]},
    "date": {"type": "object", "properties": {"date": {"type": "string", "format": "date"}}, "required": ["date"]},
    "date_time": {"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}}, "required": ["at"]},
    "uuid": {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}}, "required": ["id"]},
    "code_pattern": {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"}},
                     "required": ["code"]},
    "todo_items": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"},
                                                                               "done": {"type": "boolean"}},
                                              "required": ["id", "done"]}, "maxItems": 3},
    "mixed_enum": {"enum": [1, 2, 3, "many", None]},
    "exclusive_score": {"type": "object", "properties": {"score": {"type": "integer", "exclusiveMinimum": 0,
                                                                   "exclusiveMaximum": 10}},
                        "required": ["score"]},
    "confidence": {"type": "object", "properties": {"label": {"enum": ["yes", "no"]},
                                                    "confidence": {"type": "number", "minimum": 0, "maximum": 1}},
                   "required": ["label", "confidence"]},
    "length_bounds": {"type": "object", "properties": {"code": {"type": "string", "minLength": 4, "maxLength": 6}},
                      "required": ["code"]},
    "unicode_enum": {"type": "object", "properties": {"city": {"enum": ["Zürich", "São Paulo", "東京"]}},
                     "required": ["city"]},
    "deep_nesting": {"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {
        "type": "object", "properties": {"c": {"type": "array", "items": {"type": "integer"}, "maxItems": 3}},
        "required": ["c"]}}, "required": ["b"]}}, "required": ["a"]},
    "draft7_tuple": {"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"name": {"type": "string", "maxLength": 10}}, "type": "array",
                     "items": [{"$ref": "#/definitions/name"}, {"type": "integer"}], "additionalItems": False,
                     "minItems": 2},
    "all_of_ref": {"allOf": [{"$ref": "#/$defs/t"}], "$defs": {"t": {"type": "object", "properties": {
        "title": {"type": "string", "maxLength": 30}}, "required": ["title"]}}},
    "escapes_in_strings": {"type": "object", "properties": {"lines": {"type": "array", "items": {
        "type": "string", "pattern": "^[a-z]{1,8}\\n[a-z]{1,8}$"}, "minItems": 1, "maxItems": 2}},
        "required": ["lines"]},
}

UNSUPPORTED = [
    ({"type": "string", "contentEncoding": "base64"}, "contentEncoding"),
    ({"type": "array", "items": {"type": "integer"}, "uniqueItems": True}, "uniqueItems"),
    ({"not": {"type": "string"}}, "not"),
    ({"type": "object", "patternProperties": {"^a": {"type": "integer"}}}, "patternProperties"),
    ({"type": "object", "properties": {"a": {"type": "integer", "multipleOf": 3}}}, "multipleOf"),
    ({"type": "string", "format": "hostname"}, "format"),
    ({"if": {"type": "string"}, "then": {"maxLength": 3}}, "if"),
    ({"$ref": "https://example.com/schema.json"}, "$ref"),
    ({"type": "number", "minimum": 0.5}, "minimum"),
    ({"type": "object", "minProperties": 1}, "minProperties"),
]


def ask(schema_name: str, schema) -> list:
    return [{"role": "system", "content": "You reply with JSON only."},
            {"role": "user", "content": f"Write an example '{schema_name}' as JSON matching this schema: "
                                        f"{json.dumps(schema)}"}]


def schema_format(name, schema, strict=True):
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": strict}}


def chat(client, messages, draft=True, **kw):
    extra = {"draft": draft, "return_token_ids": True}
    extra.update(kw.pop("extra_body", {}))
    return client.chat.completions.create(model=MODEL, messages=messages, extra_body=extra, max_tokens=LIMIT, **kw)


def check_reply(choice, schema, what):
    assert choice.finish_reason == "stop", f"{what}: the reply did not finish by itself: {choice.message.content!r}"
    value = json.loads(choice.message.content)
    jsonschema.validate(value, schema, format_checker=jsonschema.FormatChecker())  # the draft its $schema names
    return value


@pytest.fixture(scope="module")
def schema_replies(client):
    """Every schema at T=0 and seeded T>0, drafted and serial: {(name, sampling, draft): (choice, usage)}."""
    jobs = [(name, sampling, draft) for name in SCHEMAS for sampling in ("greedy", "seeded") for draft in (True, False)]

    def run(job):
        name, sampling, draft = job
        kw = {"temperature": 0} if sampling == "greedy" else {**SAMPLED, "seed": SEED_FOR.get(name, SAMPLED["seed"])}
        r = chat(client, ask(name, SCHEMAS[name]), draft=draft, response_format=schema_format(name, SCHEMAS[name]),
                 **kw)
        return job, (r.choices[0], r.usage)

    with ThreadPoolExecutor(WORKERS) as pool:
        return dict(pool.map(run, jobs))


def test_at_least_thirty_schemas():
    assert len(SCHEMAS) >= 30


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@pytest.mark.parametrize("sampling", ["greedy", "seeded"])
def test_schema_replies_validate_and_drafted_equals_serial(schema_replies, name, sampling):
    drafted, usage = schema_replies[(name, sampling, True)]
    serial, _ = schema_replies[(name, sampling, False)]
    check_reply(drafted, SCHEMAS[name], f"{name} {sampling}")
    assert drafted.model_extra["token_ids"] == serial.model_extra["token_ids"], f"{name}: drafted != serial"
    assert drafted.message.content == serial.message.content


def test_drafts_are_taken_under_the_grammar(schema_replies):
    """Copies of the schema's keys from the prompt are proposed and accepted: the mask does not turn drafting off."""
    accepted = sum(usage.model_extra["tensorfold"]["accepted"]
                   for (name, sampling, draft), (_, usage) in schema_replies.items() if draft)
    assert accepted > 0


def test_streamed_reply_equals_the_whole_one(client, schema_replies):
    name = "nested_user"
    whole, _ = schema_replies[(name, "greedy", True)]
    stream = client.chat.completions.create(model=MODEL, messages=ask(name, SCHEMAS[name]), temperature=0,
                                            max_tokens=LIMIT, stream=True,
                                            response_format=schema_format(name, SCHEMAS[name]))
    text, finish = "", None
    for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            finish = chunk.choices[0].finish_reason or finish
    assert text == whole.message.content
    assert finish == "stop"


def test_json_object_replies_are_objects(client):
    for kw in ({"temperature": 0}, SAMPLED):
        drafted = chat(client, [{"role": "user", "content": "Describe a cat as JSON."}],
                       response_format={"type": "json_object"}, **kw).choices[0]
        serial = chat(client, [{"role": "user", "content": "Describe a cat as JSON."}], draft=False,
                      response_format={"type": "json_object"}, **kw).choices[0]
        assert drafted.model_extra["token_ids"] == serial.model_extra["token_ids"]
        if drafted.finish_reason == "stop":
            assert isinstance(json.loads(drafted.message.content), dict)
        else:  # cut by max_tokens: what came is still the start of an object
            assert drafted.message.content.lstrip().startswith("{")


def test_responses_text_format_json_schema(client):
    schema = SCHEMAS["person"]
    r = client.responses.create(model=MODEL, input=ask("person", schema)[1]["content"], temperature=0,
                                max_output_tokens=LIMIT,
                                text={"format": {"type": "json_schema", "name": "person", "schema": schema,
                                                 "strict": True}})
    assert r.status == "completed"
    jsonschema.validate(json.loads(r.output_text), schema)
    chat_reply = chat(client, [{"role": "user", "content": ask("person", schema)[1]["content"]}], temperature=0,
                      response_format=schema_format("person", schema)).choices[0]
    assert r.output_text == chat_reply.message.content  # the same request as a chat
    obj = client.responses.create(model=MODEL, input="A dog as JSON.", temperature=0, max_output_tokens=64,
                                  text={"format": {"type": "json_object"}})
    assert obj.output_text.lstrip().startswith("{")


def test_completions_response_format(client):
    schema = SCHEMAS["color_enum"]
    kw = dict(model=MODEL, prompt="The sky's color as JSON: ", max_tokens=40, temperature=0)
    drafted = client.completions.create(**kw, extra_body={"response_format": schema_format("c", schema),
                                                          "return_token_ids": True}).choices[0]
    serial = client.completions.create(**kw, extra_body={"response_format": schema_format("c", schema), "draft": False,
                                                         "return_token_ids": True}).choices[0]
    assert drafted.finish_reason == "stop"
    jsonschema.validate(json.loads(drafted.text), schema)
    assert drafted.model_extra["token_ids"] == serial.model_extra["token_ids"]


def test_regex_and_gbnf_extensions(client):
    for kw in ({"temperature": 0}, SAMPLED):
        r = chat(client, [{"role": "user", "content": "Give a phone number."}],
                 extra_body={"regex": r"\+[0-9]{1,3} [0-9]{3}-[0-9]{4}"}, **kw).choices[0]
        assert r.finish_reason == "stop"
        assert re.fullmatch(r"\+[0-9]{1,3} [0-9]{3}-[0-9]{4}", r.message.content), r.message.content
        grammar = 'root ::= answer " because " reason\nanswer ::= "yes" | "no"\nreason ::= [a-z ]{1,30} "."'
        d = chat(client, [{"role": "user", "content": "Is water wet?"}], extra_body={"grammar": grammar}, **kw)
        s = chat(client, [{"role": "user", "content": "Is water wet?"}], draft=False, extra_body={"grammar": grammar},
                 **kw)
        text = d.choices[0].message.content
        assert d.choices[0].finish_reason == "stop"
        assert re.fullmatch(r"(yes|no) because [a-z ]{1,30}\.", text), text
        assert d.choices[0].model_extra["token_ids"] == s.choices[0].model_extra["token_ids"]


@pytest.mark.parametrize("schema,keyword", UNSUPPORTED, ids=[k for _, k in UNSUPPORTED])
def test_unsupported_keywords_are_a_400_naming_them(client, schema, keyword):
    with pytest.raises(openai.BadRequestError) as e:
        chat(client, [{"role": "user", "content": "x"}], response_format=schema_format("x", schema))
    err = e.value.body
    assert f"'{keyword}'" in err["message"], err
    assert err["param"] == "response_format.json_schema.schema"


def test_structured_output_errors(server):
    cases = [
        ({"response_format": {"type": "xml"}}, "response_format.type"),
        ({"response_format": {"type": "json_schema"}}, "response_format.json_schema"),
        ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": 3}}},
         "response_format.json_schema.schema"),
        ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}, "strict": "yes"}}},
         "response_format.json_schema.strict"),
        ({"grammar": "root ::= missing"}, "grammar"),
        ({"grammar": "root ::= root \"a\""}, "grammar"),
        ({"regex": "(?=a)"}, "regex"),
        ({"regex": "a", "grammar": "root ::= \"a\""}, "response_format"),
        ({"response_format": {"type": "json_object"}, "tool_choice": "required",
          "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]},
         "response_format"),
    ]
    for extra, param in cases:
        body = {"model": MODEL, "messages": [{"role": "user", "content": "x"}], "max_tokens": 4, **extra}
        reply = server.raw("POST", "/v1/chat/completions", body)
        assert reply.status == 400, (extra, reply.body)
        assert reply.json()["error"]["param"] == param, (extra, reply.json())
    bad = server.raw("POST", "/v1/responses", {"model": MODEL, "input": "x", "max_output_tokens": 4,
                                               "text": {"format": {"type": "json_schema", "name": "x",
                                                                   "schema": {"not": {}}}}})
    assert bad.status == 400
    assert bad.json()["error"]["param"] == "text.format.schema"
