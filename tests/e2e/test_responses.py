"""POST /v1/responses (plain, streamed, chained with previous_response_id), GET and DELETE."""

from __future__ import annotations

import openai
import pytest

from ._serve import ALIAS, sse_events

EVENTS = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
]
CLOSING = ["response.output_text.done", "response.content_part.done", "response.output_item.done"]


def check_status(resp, limit):
    assert resp.status in ("completed", "incomplete")
    if resp.status == "incomplete":
        assert resp.incomplete_details.reason == "max_output_tokens"
        assert resp.usage.output_tokens == limit
    else:
        assert resp.usage.output_tokens <= limit


def test_plain_response(client, server, render_chat, tokenize):
    r = client.responses.create(model=server.model_id, input="Name a color.", instructions="Answer briefly.",
                                max_output_tokens=8, temperature=0)
    assert r.id.startswith("resp_")
    assert r.object == "response"
    assert r.model == server.model_id
    assert r.instructions == "Answer briefly."
    assert r.max_output_tokens == 8
    assert len(r.output) == 1
    msg = r.output[0]
    assert msg.type == "message" and msg.role == "assistant" and msg.id.startswith("msg_")
    assert msg.content[0].type == "output_text"
    assert r.output_text == msg.content[0].text and r.output_text
    check_status(r, 8)
    assert r.usage.total_tokens == r.usage.input_tokens + r.usage.output_tokens
    messages = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Name a color."}]
    assert r.usage.input_tokens == len(tokenize(render_chat(messages)))


def test_message_items_input(client):
    r = client.responses.create(
        model=ALIAS, max_output_tokens=4, temperature=0,
        input=[
            {"role": "user", "content": [{"type": "input_text", "text": "Say hello."}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello."}]},
            {"role": "user", "content": "Again."},
        ],
    )
    check_status(r, 4)


def test_streamed_response(client):
    plain = client.responses.create(model=ALIAS, input="Say yes.", max_output_tokens=6, temperature=0)
    events = list(client.responses.create(model=ALIAS, input="Say yes.", max_output_tokens=6, temperature=0,
                                          stream=True))
    types = [e.type for e in events]
    assert types[:4] == EVENTS
    deltas = [e for e in events if e.type == "response.output_text.delta"]
    assert types[4:4 + len(deltas)] == ["response.output_text.delta"] * len(deltas)
    assert types[4 + len(deltas):-1] == CLOSING
    assert types[-1] == ("response.completed" if plain.status == "completed" else "response.incomplete")
    assert [e.sequence_number for e in events] == list(range(len(events)))
    text = "".join(d.delta for d in deltas)
    done = events[4 + len(deltas)]
    assert done.text == text == plain.output_text
    final = events[-1].response
    assert final.output_text == text
    assert final.usage.output_tokens == plain.usage.output_tokens
    assert events[0].response.status == "in_progress" and events[0].response.id == final.id


def test_streamed_response_raw_event_names(server):
    r = server.raw("POST", "/v1/responses", {"model": ALIAS, "input": "Hi", "max_output_tokens": 3, "stream": True})
    assert r.status == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    import json

    for name, data in sse_events(r.body):
        assert json.loads(data)["type"] == name


def test_previous_response_id_get_and_delete(client, render_chat, tokenize):
    first = client.responses.create(model=ALIAS, input="My name is Ada.", instructions="Be brief.",
                                    max_output_tokens=6, temperature=0)
    second = client.responses.create(model=ALIAS, input="What is my name?", previous_response_id=first.id,
                                     max_output_tokens=6, temperature=0)
    assert second.previous_response_id == first.id
    # The chain: the earlier input and answer, then the new input; instructions are not carried over.
    messages = [{"role": "user", "content": "My name is Ada."},
                {"role": "assistant", "content": first.output_text},
                {"role": "user", "content": "What is my name?"}]
    assert second.usage.input_tokens == len(tokenize(render_chat(messages)))

    fetched = client.responses.retrieve(first.id)
    assert fetched.id == first.id and fetched.output_text == first.output_text
    assert fetched.usage.output_tokens == first.usage.output_tokens
    client.responses.delete(first.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(first.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.delete(first.id)
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=ALIAS, input="x", previous_response_id=first.id, max_output_tokens=2)
    assert e.value.body["param"] == "previous_response_id"


def test_store_false_is_not_kept(client):
    r = client.responses.create(model=ALIAS, input="Hi", store=False, max_output_tokens=2)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(r.id)
