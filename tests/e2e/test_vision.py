"""Images served end to end (`tensorfold serve --vision`) with the official openai SDK, on the tiny random Qwen3.5
VLM of tests/goldens/qwen3_5/vision (scripts/golden/make_qwen3_5_vision.py): PNG images sent as data URLs give the
prompt token count and the 12 greedy tokens of transformers' float64 reference, drafted == serial == concurrent;
every refusal is a 400 that names the field (and the limit); a server without --vision says how to turn images
on."""

from __future__ import annotations

import base64
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openai
import pytest

from ._serve import start_serve

GOLDEN = Path(__file__).resolve().parents[1] / "goldens" / "qwen3_5" / "vision"
REF = json.loads((GOLDEN / "golden.json").read_text())


def data_url(name: str, media: str = "image/png") -> str:
    return f"data:{media};base64," + base64.b64encode((GOLDEN / "images" / name).read_bytes()).decode()


def openai_messages(case: dict) -> list:
    """The golden's messages as OpenAI chat messages: image parts become image_url parts with data URLs."""
    out = []
    for m in case["messages"]:
        content = m["content"]
        if not isinstance(content, str):
            content = [{"type": "image_url", "image_url": {"url": data_url(p["image"])}} if p["type"] == "image"
                       else p for p in content]
        out.append({"role": m["role"], "content": content})
    return out


@pytest.fixture(scope="module")
def vision_server(tensorfold_bin, tmp_path_factory):
    # On CUDA (the device suite) prompt rows in --precision full: the golden is float64's, and bf16 prompt rows
    # move a random tiny model's logits by ~5e-3 (docs/cuda.md), enough to flip its near-ties.
    extra = ["--precision", "full"] if os.environ.get("TF_E2E_BACKEND") == "cuda" else []
    server = start_serve(tensorfold_bin, GOLDEN, ["--vision", "--parallel", "2", *extra],
                         tmp_path_factory.mktemp("vision"))
    yield server
    server.stop()


def greedy(client, model, messages, draft):
    r = client.chat.completions.create(model=model, messages=messages, max_tokens=REF["greedy_steps"],
                                       temperature=0, extra_body={"draft": draft, "return_token_ids": True})
    return r.choices[0].model_extra["token_ids"], r.usage.prompt_tokens


@pytest.mark.parametrize("case", sorted(REF["cases"]))
def test_data_url_images_answer_as_the_reference(vision_server, case):
    c = REF["cases"][case]
    client, model = vision_server.client(), vision_server.model_id
    serial, prompt_tokens = greedy(client, model, openai_messages(c), draft=False)
    assert prompt_tokens == len(c["prompt_ids"])
    assert serial == c["greedy"]
    drafted, _ = greedy(client, model, openai_messages(c), draft=True)
    assert drafted == serial


def test_concurrent_image_requests_answer_as_alone(vision_server):
    """The three cases at once, twice over (--parallel 2: shared rounds and queueing), each drafted: every reply's
    tokens are the reference's, as when it runs alone."""
    client, model = vision_server.client(), vision_server.model_id
    cases = sorted(REF["cases"]) * 2
    with ThreadPoolExecutor(len(cases)) as pool:
        got = list(pool.map(lambda c: greedy(client, model, openai_messages(REF["cases"][c]), draft=True)[0], cases))
    assert got == [REF["cases"][c]["greedy"] for c in cases]


def expect_400(client, model, messages, param, *needles):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=model, messages=messages, max_tokens=2)
    err = e.value.body
    assert err["param"] == param, err
    for n in needles:
        assert n in err["message"], err
    return err


def one_image(url: str) -> list:
    return [{"role": "user", "content": [{"type": "text", "text": "What?"},
                                         {"type": "image_url", "image_url": {"url": url}}]}]


def test_refusals_name_the_field_and_the_limit(vision_server):
    client, model = vision_server.client(), vision_server.model_id
    param = "messages[0].content[1].image_url"
    png = (GOLDEN / "images" / "a.png").read_bytes()
    corrupt = png[:40] + bytes(b ^ 0x5A for b in png[40:])
    expect_400(client, model, one_image("data:image/png;base64," + base64.b64encode(corrupt).decode()), param,
               "corrupt")
    expect_400(client, model, one_image("data:image/png;base64," + base64.b64encode(b"GIF89a....").decode()), param,
               "not a PNG, JPEG or WebP")
    expect_400(client, model, one_image("https://example.com/cat.png"), param, "data: URL")
    expect_400(client, model, one_image("data:image/png;base64,@@@@"), param, "base64")
    expect_400(client, model, one_image("data:image/png,rawbytes"), param, "base64")
    five = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url("d.png")}}] * 5}]
    expect_400(client, model, five, "messages[0].content[4].image_url", "the limit is 4")
    # the model's image tokens typed as text do not make an image slot
    forged = one_image(data_url("a.png"))
    forged[0]["content"][0]["text"] = "<|vision_start|><|image_pad|><|vision_end|>"
    expect_400(client, model, forged, "messages", "placeholder")


def test_jpeg_and_webp_data_urls(vision_server):
    client, model = vision_server.client(), vision_server.model_id
    for name, media in (("photo.jpg", "image/jpeg"), ("photo.webp", "image/webp")):
        r = client.chat.completions.create(
            model=model, max_tokens=3, temperature=0,
            messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url(name, media)}},
                                                   {"type": "text", "text": "Describe."}]}])
        assert r.usage.completion_tokens == 3


def test_without_vision_an_image_is_a_400_that_says_how(tensorfold_bin, tmp_path):
    server = start_serve(tensorfold_bin, GOLDEN, [], tmp_path)
    try:
        err = expect_400(server.client(), server.model_id, one_image(data_url("a.png")),
                         "messages[0].content[1].image_url", "--vision")
        assert "off" in err["message"]
    finally:
        server.stop()
