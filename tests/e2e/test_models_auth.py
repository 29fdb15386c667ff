"""/health, /v1/models and bearer authentication."""

from __future__ import annotations

import openai
import pytest

from ._serve import ALIAS, API_KEYS


def test_health_is_open_without_a_key(server):
    r = server.raw("GET", "/health", auth=False)
    assert r.status == 200
    assert r.json() == {"status": "ok"}


def test_models_list_id_aliases_and_context(client, server):
    models = client.models.list()
    ids = [m.id for m in models.data]
    assert ids == [server.model_id, ALIAS]
    main = models.data[0]
    assert main.object == "model"
    assert main.owned_by == "tensorfold"
    assert isinstance(main.created, int)
    extra = main.model_extra
    assert extra["aliases"] == [ALIAS]
    assert extra["context_length"] == 8192  # SmolLM2-135M's trained context
    assert client.models.retrieve(ALIAS).id == ALIAS
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-4o")


def test_the_default_id_is_the_checkpoint_file_name(server):
    assert server.model_id == "SmolLM2-135M-Instruct.Q4_1"


@pytest.mark.parametrize("key", API_KEYS)
def test_every_configured_key_works(server, key):
    r = server.raw("GET", "/v1/models", headers={"Authorization": f"Bearer {key}"})
    assert r.status == 200


@pytest.mark.parametrize("auth", [None, "Bearer wrong-key", "Basic c2stZTJlLWZpcnN0", API_KEYS[0]])
def test_a_missing_or_wrong_key_is_401_with_a_bearer_challenge(server, auth):
    headers = {"Authorization": auth} if auth else {}
    r = server.raw("POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]},
                   headers=headers, auth=False)
    assert r.status == 401
    assert r.headers.get("www-authenticate") == "Bearer"
    err = r.json()["error"]
    assert set(err) == {"message", "type", "param", "code"}
    assert err["code"] == "invalid_api_key"


def test_the_sdk_reports_401_as_authentication_error(server):
    with pytest.raises(openai.AuthenticationError):
        server.client(api_key="nope").models.list()
