"""Images through the Responses API and Anthropic's Messages API (`serve --vision`), with the official openai and
anthropic clients, on the tiny random Qwen3.5 VLM of tests/goldens/qwen3_5/vision: the same image and text give
the chat-completions path's prompt token count and greedy tokens (so the float64 golden holds on every API); a
continued response (previous_response_id) carries its images. Then the prompt cache keyed by image content: a
3-turn conversation with an image in turn 1 resumes from the cache and answers what a server without a cache
answers, bit for bit, and another image of the same size in the same place is not served the first image's state.
Then --vision-urls: every refusal of the URL policy is a 400 naming the part (no network is reachable in CI, so
no fetch that succeeds is tested here; tests/unit/server/image_fetch_test.cpp covers the hop rules)."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from pathlib import Path

import anthropic
import openai
import pytest

from ._serve import REQUEST_TIMEOUT_S, start_serve

GOLDEN = Path(__file__).resolve().parents[1] / "goldens" / "qwen3_5" / "vision"
REF = json.loads((GOLDEN / "golden.json").read_text())
STEPS = REF["greedy_steps"]


def b64(name: str) -> str:
    return base64.b64encode((GOLDEN / "images" / name).read_bytes()).decode()


def png(width: int, height: int, pixel) -> bytes:
    """A PNG of 8-bit RGB pixels (pixel(x, y) -> (r, g, b)), written here so the test needs no imaging library."""
    raw = b"".join(b"\0" + bytes(c for x in range(width) for c in pixel(x, y)) for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def chat_messages(case: dict) -> list:
    out = []
    for m in case["messages"]:
        content = m["content"]
        if not isinstance(content, str):
            content = [{"type": "image_url", "image_url": {"url": "data:image/png;base64," + b64(p["image"])}}
                       if p["type"] == "image" else p for p in content]
        out.append({"role": m["role"], "content": content})
    return out


def responses_input(case: dict) -> list:
    out = []
    for m in case["messages"]:
        content = m["content"]
        if not isinstance(content, str):
            content = [{"type": "input_image", "image_url": "data:image/png;base64," + b64(p["image"]),
                        "detail": "auto"} if p["type"] == "image" else {"type": "input_text", "text": p["text"]}
                       for p in content]
        out.append({"role": m["role"], "content": content})
    return out


def anthropic_request(case: dict) -> tuple:
    system, messages = None, []
    for m in case["messages"]:
        if m["role"] == "system":
            system = m["content"]
            continue
        content = m["content"]
        if not isinstance(content, str):
            content = [{"type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": b64(p["image"])}}
                       if p["type"] == "image" else p for p in content]
        messages.append({"role": m["role"], "content": content})
    return system, messages


@pytest.fixture(scope="module")
def server(tensorfold_bin, tmp_path_factory):
    d = tmp_path_factory.mktemp("vision-apis")
    s = start_serve(tensorfold_bin, GOLDEN, ["--vision", "--vision-urls", "--parallel", "2", "--prompt-cache-gib", "1",
                                             "--snapshot-dir", d / "snapshots"], d)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def fresh(tensorfold_bin, tmp_path_factory):
    d = tmp_path_factory.mktemp("vision-fresh")
    s = start_serve(tensorfold_bin, GOLDEN, ["--vision", "--prompt-cache-gib", "0", "--snapshot-dir", "none"], d)
    yield s
    s.stop()


def claude(server):
    return anthropic.Anthropic(base_url=f"http://127.0.0.1:{server.port}", api_key=server.api_key or "unused",
                               max_retries=0, timeout=REQUEST_TIMEOUT_S)


def chat_greedy(server, messages):
    """The chat path: token ids, each token's bytes and log-probability, the text, the prompt token count."""
    r = server.client().chat.completions.create(model=server.model_id, messages=messages, max_tokens=STEPS,
                                                temperature=0, logprobs=True,
                                                extra_body={"return_token_ids": True, "draft": False})
    c = r.choices[0]
    return (c.model_extra["token_ids"], [(bytes(t.bytes), t.logprob) for t in c.logprobs.content],
            c.message.content, r.usage.prompt_tokens)


@pytest.mark.parametrize("case", sorted(REF["cases"]))
def test_responses_input_image_answers_as_chat(server, case):
    c = REF["cases"][case]
    ids, tokens, _, prompt_tokens = chat_greedy(server, chat_messages(c))
    assert ids == c["greedy"] and prompt_tokens == len(c["prompt_ids"])
    r = server.client().responses.create(model=server.model_id, input=responses_input(c), max_output_tokens=STEPS,
                                         temperature=0, include=["message.output_text.logprobs"],
                                         extra_body={"draft": False})
    assert r.usage.input_tokens == prompt_tokens
    assert r.usage.output_tokens == STEPS
    part = [i for i in r.output if i.type == "message"][0].content[0]
    assert [(bytes(t.bytes), t.logprob) for t in part.logprobs] == tokens


@pytest.mark.parametrize("case", sorted(REF["cases"]))
def test_anthropic_image_blocks_answer_as_chat(server, case):
    c = REF["cases"][case]
    ids, _, text, prompt_tokens = chat_greedy(server, chat_messages(c))
    assert ids == c["greedy"]
    system, messages = anthropic_request(c)
    # temperature through extra_body: this anthropic client's create() no longer takes it as an argument.
    m = claude(server).messages.create(model=server.model_id, max_tokens=STEPS, messages=messages,
                                       extra_body={"temperature": 0, "draft": False},
                                       **({"system": system} if system else {}))
    assert m.usage.input_tokens + m.usage.cache_read_input_tokens == prompt_tokens
    assert m.usage.output_tokens == STEPS
    assert "".join(b.text for b in m.content if b.type == "text") == text
    count = claude(server).messages.count_tokens(model=server.model_id, messages=messages,
                                                 **({"system": system} if system else {}))
    assert count.input_tokens == prompt_tokens


def test_a_continued_response_carries_its_images(server):
    """previous_response_id: the stored conversation keeps its image, so turn 2 prompts as a chat request that
    sends the image again."""
    client = server.client()
    c = REF["cases"]["one_image"]
    first = client.responses.create(model=server.model_id, input=responses_input(c), max_output_tokens=4,
                                    temperature=0)
    second = client.responses.create(model=server.model_id, previous_response_id=first.id, max_output_tokens=4,
                                     temperature=0, input=[{"role": "user", "content": "And the colour?"}])
    messages = chat_messages(c) + [{"role": "assistant", "content": first.output_text},
                                   {"role": "user", "content": "And the colour?"}]
    _, _, text, prompt_tokens = chat_greedy(server, messages)
    assert second.usage.input_tokens == prompt_tokens
    assert second.output_text == text[:len(second.output_text)]


def test_refusals_name_the_api_field(server):
    client = server.client()
    bad = "data:image/png;base64," + base64.b64encode(b"not an image").decode()
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=server.model_id, max_output_tokens=2, input=[
            {"role": "user", "content": [{"type": "input_text", "text": "Hi"},
                                         {"type": "input_image", "image_url": bad, "detail": "auto"}]}])
    assert e.value.body["param"] == "input[0].content[1].image_url"
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model=server.model_id, max_output_tokens=2, input=[
            {"role": "user", "content": [{"type": "input_image", "file_id": "file-abc", "detail": "auto"}]}])
    assert e.value.body["param"] == "input[0].content[0].file_id"
    with pytest.raises(anthropic.BadRequestError) as e:
        claude(server).messages.create(model=server.model_id, max_tokens=2, messages=[
            {"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/gif",
                                                                      "data": "R0lGODlh"}}]}])
    assert e.value.body["error"]["message"].startswith("Invalid 'messages[0].content[0].source.media_type'")
    with pytest.raises(anthropic.BadRequestError) as e:
        claude(server).messages.create(model=server.model_id, max_tokens=2, messages=[
            {"role": "user", "content": [{"type": "text", "text": "Hi"},
                                         {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                                      "data": "@@@@"}}]}])
    assert "messages[0].content[1].source" in e.value.body["error"]["message"]
    assert "base64" in e.value.body["error"]["message"]


def test_anthropic_url_sources_need_vision_urls(fresh):
    with pytest.raises(anthropic.BadRequestError) as e:
        claude(fresh).messages.create(model=fresh.model_id, max_tokens=2, messages=[
            {"role": "user", "content": [{"type": "image", "source": {"type": "url",
                                                                      "url": "https://example.com/cat.png"}}]}])
    message = e.value.body["error"]["message"]
    assert "messages[0].content[0].source" in message and "--vision-urls" in message


# The prompt cache keyed by image content ------------------------------------------------------------------------

def turns(image_url: str, replies: list) -> list:
    """Turn k's messages (k = len(replies) + 1): an image in turn 1, text after."""
    msgs = [{"role": "system", "content": "You see images."},
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": image_url}},
                                         {"type": "text", "text": "What is in the picture?"}]}]
    follow = ["Say more about it.", "And its colours?"]
    for i, reply in enumerate(replies):
        msgs += [{"role": "assistant", "content": reply}, {"role": "user", "content": follow[i]}]
    return msgs


def greedy_turn(server, messages):
    r = server.client().chat.completions.create(model=server.model_id, messages=messages, max_tokens=STEPS,
                                                temperature=0, extra_body={"return_token_ids": True})
    return (r.choices[0].model_extra["token_ids"], r.choices[0].message.content, r.usage.prompt_tokens,
            r.usage.prompt_tokens_details.cached_tokens)


def test_image_conversations_resume_from_the_cache_exactly(server, fresh):
    url = "data:image/png;base64," + b64("a.png")
    replies, cached = [], []
    for _ in range(3):
        messages = turns(url, replies)
        ids, text, prompt_tokens, hit = greedy_turn(server, messages)
        want_ids, want_text, want_prompt, _ = greedy_turn(fresh, messages)
        assert (ids, text, prompt_tokens) == (want_ids, want_text, want_prompt)
        cached.append(hit)
        replies.append(text)
    # Where the image sits: the golden's two_images case opens the same way (this system message, then a user turn
    # that starts with an image).
    two = REF["cases"]["two_images"]["prompt_ids"]
    image_start = two.index(REF["image_pad_id"])
    image_tokens = REF["cases"]["one_image"]["prompt_ids"].count(REF["image_pad_id"])
    # Turns 2 and 3 resume past the image (each turn leaves its state at the reply's start, after the image).
    assert image_start + image_tokens < cached[1] < cached[2], cached

    # Another image of the same size (the same placeholder tokens) in the same place: the text before the image
    # may be reused, the first image's state never.
    other = "data:image/png;base64," + base64.b64encode(png(32, 48, lambda x, y: (8 * x % 256, 5 * y, 200))).decode()
    messages = turns(other, replies[:2])
    ids, text, prompt_tokens, hit = greedy_turn(server, messages)
    want_ids, want_text, want_prompt, _ = greedy_turn(fresh, messages)
    assert prompt_tokens == want_prompt and ids == want_ids
    # The text before the image may be reused, no more: the states past it were the first image's.
    assert hit <= image_start, (hit, image_start, cached)


# --vision-urls: the policy's refusals ------------------------------------------------------------------------------

@pytest.mark.parametrize("url,needle", [
    ("http://example.com/cat.png", "https"),
    ("https://example.com:8443/cat.png", "port 443"),
    ("https://user:secret@example.com/cat.png", "credentials"),
    ("https://127.0.0.1/cat.png", "loopback"),
    ("https://localhost/cat.png", "loopback"),
    ("https://10.1.2.3/cat.png", "private"),
    ("https://192.168.0.10/cat.png", "private"),
    ("https://169.254.169.254/latest/meta-data/", "link-local"),
    ("https://[::1]/cat.png", "loopback"),
    ("https://[fe80::1]/cat.png", "link-local"),
    ("https://[::ffff:127.0.0.1]/cat.png", "loopback"),
    ("https://224.0.0.1/cat.png", "multicast"),
    ("https://host.invalid/cat.png", "does not resolve"),
])
def test_vision_urls_refusals_are_400s_naming_the_part(server, url, needle):
    with pytest.raises(openai.BadRequestError) as e:
        server.client().chat.completions.create(model=server.model_id, max_tokens=2, messages=[
            {"role": "user", "content": [{"type": "text", "text": "What?"},
                                         {"type": "image_url", "image_url": {"url": url}}]}])
    err = e.value.body
    assert err["param"] == "messages[0].content[1].image_url", err
    assert needle in err["message"], err


def test_without_vision_urls_a_url_is_a_400_that_says_how(fresh):
    with pytest.raises(openai.BadRequestError) as e:
        fresh.client().chat.completions.create(model=fresh.model_id, max_tokens=2, messages=[
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]}])
    assert e.value.body["param"] == "messages[0].content[0].image_url"
    assert "--vision-urls" in e.value.body["message"]


def test_the_memory_line_counts_the_tower(server):
    """The startup report's memory line: the tower's bytes and the largest image's encode workspace held once, and a
    request's visual-token embeddings in its reservation (the tiny tower's numbers, as the engine computes them)."""
    import re

    def startup(s):
        return (Path(s.stderr_path).parent / "serve.stdout").read_text(errors="replace") + s.stderr()

    m = re.search(r"vision tower (\d+) bytes \+ (\d+) bytes to encode the largest image \(one at a time\)",
                  startup(server))
    assert m and int(m.group(1)) > 0 and int(m.group(2)) > 0, startup(server)
    assert re.search(r"of which (\d+) bytes for 4096 visual tokens' embeddings", startup(server))
