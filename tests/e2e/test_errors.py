"""Every refusal comes before any token, in OpenAI's envelope, with the right status; the server keeps
serving after each."""

from __future__ import annotations

import openai
import pytest

from ._serve import ALIAS

CHAT = "/v1/chat/completions"
USER = [{"role": "user", "content": "hi"}]


def check_envelope(r, status, code=None, param=None):
    assert r.status == status, r.body[:500]
    assert r.headers["content-type"].startswith("application/json")
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"}
    assert isinstance(err["message"], str) and err["message"]
    assert err["type"] == ("server_error" if status >= 500 else "invalid_request_error")
    if code is not None:
        assert err["code"] == code
    if param is not None:
        assert err["param"] == param
    return err


@pytest.mark.parametrize("body", [b"{", b"", b"[1, 2]", b'{"messages": NaN}', b"\xff\xfe", b'"text"'])
def test_malformed_json_is_400(server, body):
    check_envelope(server.raw("POST", CHAT, body), 400)


@pytest.mark.parametrize(
    "extra, param",
    [
        ({"temperature": True}, "temperature"),
        ({"temperature": "0.5"}, "temperature"),
        ({"temperature": 5}, "temperature"),
        ({"top_p": False}, "top_p"),
        ({"top_k": 2.5}, "top_k"),
        ({"top_k": True}, "top_k"),
        ({"seed": 1.5}, "seed"),
        ({"seed": "7"}, "seed"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": 2.5}, "max_tokens"),
        ({"max_completion_tokens": True}, "max_completion_tokens"),
        ({"stream": "yes"}, "stream"),
        ({"stop": 3}, "stop"),
        ({"messages": "hi"}, "messages"),
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "user"}]}, "messages[0].content"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
        # without --vision (docs/vision.md): the image part is refused, naming it
        ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
         "messages[0].content[0].image_url"),
        ({"logprobs": 1}, "logprobs"),
        ({"logprobs": True, "top_logprobs": 21}, "top_logprobs"),
        ({"n": 0}, "n"),
        ({"logit_bias": {"a": 1}}, "logit_bias"),
    ],
)
def test_wrong_types_and_values_are_400(server, extra, param):
    check_envelope(server.raw("POST", CHAT, {"model": ALIAS, "messages": USER, **extra}), 400, param=param)


def test_non_finite_numbers_are_400(server):
    # JSON has no NaN/Infinity; a literal beyond double's range is refused while parsing.
    body = b'{"messages": [{"role": "user", "content": "hi"}], "temperature": 1e999}'
    check_envelope(server.raw("POST", CHAT, body), 400)


def test_missing_fields_are_400(server):
    check_envelope(server.raw("POST", CHAT, {"model": ALIAS}), 400, param="messages")
    check_envelope(server.raw("POST", "/v1/completions", {"model": ALIAS}), 400, param="prompt")
    check_envelope(server.raw("POST", "/v1/responses", {"model": ALIAS}), 400, param="input")


def test_any_model_name_is_the_served_model_by_default(client, server):
    # --model-names any (the default): a hard-coded name is the one model; the reply names the served id.
    r = client.chat.completions.create(model="gpt-4o", messages=USER, max_tokens=2)
    assert r.model == server.model_id
    reply = server.raw("POST", "/v1/responses", {"model": "nope", "input": "x", "max_output_tokens": 2})
    assert reply.status == 200 and reply.json()["model"] == server.model_id
    # Retrieving a model by a name it does not have is still a 404.
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-4o")


def test_unknown_model_is_404_with_model_names_strict(tensorfold_bin, default_model_path, tmp_path):
    from ._serve import start_serve

    srv = start_serve(tensorfold_bin, default_model_path, ["--model-names", "strict", "--alias", ALIAS], tmp_path)
    try:
        err = check_envelope(srv.raw("POST", CHAT, {"model": "gpt-4o", "messages": USER}), 404,
                             code="model_not_found", param="model")
        assert "gpt-4o" in err["message"]
        with pytest.raises(openai.NotFoundError):
            srv.client().chat.completions.create(model="gpt-4o", messages=USER)
        check_envelope(srv.raw("POST", "/v1/responses", {"model": "nope", "input": "x"}), 404,
                       code="model_not_found")
        r = srv.client().chat.completions.create(model=ALIAS, messages=USER, max_tokens=2)
        assert r.model == srv.model_id
    finally:
        srv.stop()


def test_n_above_the_limit_is_400(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=ALIAS, messages=USER, n=129)
    assert e.value.body["param"] == "n"


def test_a_body_over_the_limit_is_413(server):
    body = b'{"messages": [{"role": "user", "content": "' + b"a" * (17 << 20) + b'"}]}'
    check_envelope(server.raw("POST", CHAT, body), 413)


def test_a_prompt_beyond_the_context_is_400(client, server):
    long_text = "hello " * 9000  # well over 8192 tokens
    for path, body, param in [
        (CHAT, {"messages": [{"role": "user", "content": long_text}]}, "messages"),
        ("/v1/completions", {"prompt": long_text}, "prompt"),
        ("/v1/responses", {"input": long_text}, "input"),
    ]:
        err = check_envelope(server.raw("POST", path, {"model": ALIAS, **body}), 400, code="context_length_exceeded",
                             param=param)
        assert err["message"].startswith("This server's maximum context length is 8192 tokens")
    # A short prompt whose requested completion does not fit.
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=ALIAS, messages=USER, max_tokens=8192)
    assert e.value.code == "context_length_exceeded"
    assert e.value.body["message"].startswith("This server's maximum context length is 8192 tokens")


@pytest.mark.parametrize(
    "extra, param",
    [({"echo": True, "max_tokens": -1}, "max_tokens"), ({"logprobs": 21}, "logprobs"), ({"logprobs": "1"}, "logprobs"),
     ({"suffix": "end"}, "suffix"), ({"best_of": 2, "n": 3}, "best_of"), ({"n": 0}, "n")],
)
def test_unsupported_completion_options_are_400(server, extra, param):
    check_envelope(server.raw("POST", "/v1/completions", {"model": ALIAS, "prompt": "x", **extra}), 400, param=param)


def test_out_of_vocabulary_token_ids_are_400(server):
    check_envelope(server.raw("POST", "/v1/completions", {"prompt": [1, 2, 10_000_000]}), 400, param="prompt")


def test_unsupported_responses_inputs_are_400(server):
    bodies = [
        ({"input": [{"type": "function_call_output", "call_id": "c", "output": "x"}]}, "input[0].call_id"),
        # read, then refused: this server runs without --vision
        ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "http://x"}]}]},
         "input[0].content[0].image_url"),
        ({"input": "x", "tools": [{"type": "web_search"}]}, "tools[0].type"),
        ({"input": "x", "background": True}, "background"),
    ]
    for body, param in bodies:
        check_envelope(server.raw("POST", "/v1/responses", body), 400, param=param)


def test_unknown_routes_are_404_and_wrong_methods_405(server):
    check_envelope(server.raw("GET", "/v1/engines"), 404)
    check_envelope(server.raw("POST", "/v2/chat/completions", {}), 404)
    r = server.raw("GET", CHAT)
    check_envelope(r, 405)
    assert r.headers["allow"] == "POST"
    r = server.raw("PUT", "/v1/responses/abc", {})
    check_envelope(r, 405)
    assert r.headers["allow"] == "GET, DELETE"


def test_the_server_still_serves_after_refusals(client):
    r = client.chat.completions.create(model=ALIAS, messages=USER, max_tokens=2)
    assert r.usage.completion_tokens <= 2
