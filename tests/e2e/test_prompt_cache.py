"""Prompt caching end to end (issue 35): a conversation's second turn restores the state its first turn left at
the last message start, prefills only what follows, and still replies exactly what a server without any cache
replies, bit for bit (token ids), greedy and seeded T>0, on the default model (llama family), the tiny qwen3_5
checkpoint (Gated DeltaNet: conv windows and recurrent state are restored too) and the tiny nemotron_h one
(Mamba-2 conv windows and SSM states, experts) and the tiny gemma4 one (a sliding-window store past its
window, beside full layers of another head shape) and the tiny qwen4_exp one (sparse attention's rows and the
n-gram windows in the host-row store, past the indexer's dense prefix) and the tiny glm5_next one (Kimi delta
attention's state, latent rows with the KPool indexer's choices, a shared indexer) and the tiny deepseek_v4 one (the
compressed attention's rows: a window of 8, overlapping and pooled compressor entries, the indexer's keys; hash-routed
experts). Then the same after a restart
that reads the snapshots from --snapshot-dir; a corrupted, a truncated and another model's snapshot are each
refused (removed, with a log line) and the reply still equals fresh; and a cache filled past --prompt-cache-gib
stays within its budget. The qwen3_5 turns and the restart also run on two tensor-parallel ranks (--tp 2)."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import pytest

from ._serve import start_serve

QWEN = Path(__file__).resolve().parents[1] / "goldens" / "qwen3_5" / "mlx-4bit"
NEMOTRON = Path(__file__).resolve().parents[1] / "goldens" / "nemotron_h" / "bf16"
GEMMA4 = Path(__file__).resolve().parents[1] / "goldens" / "gemma4" / "bf16"
QWEN4_EXP = Path(__file__).resolve().parents[1] / "goldens" / "qwen4_exp" / "bf16"
GLM5_NEXT = Path(__file__).resolve().parents[1] / "goldens" / "glm5_next" / "bf16"
DEEPSEEK_V4 = Path(__file__).resolve().parents[1] / "goldens" / "deepseek_v4" / "bf16"
MAX_TOKENS = 12

CONVERSATIONS = [
    ("You are a terse assistant.", "Name three colours.", "Now name three animals."),
    ("You answer in one sentence.", "What is the capital of France?", "And of Italy? Say why it matters."),
    ("You are a poet.", "Write a line about the sea.", "Another line, about the moon, please."),
    ("You help with code.", "How do I reverse a list in Python?", "And a string?"),
]
SAMPLING = [
    {"temperature": 0.0, "seed": 1},
    {"temperature": 0.7, "seed": 7},
    {"temperature": 1.0, "top_p": 0.9, "seed": 3},
]
LLAMA_CASES = list(itertools.product(range(len(CONVERSATIONS)), range(len(SAMPLING))))  # 12
QWEN_CASES = list(itertools.product(range(len(CONVERSATIONS)), range(2)))  # 8


def chat(client, model, messages, sampling):
    r = client.chat.completions.create(
        model=model, messages=messages, max_tokens=MAX_TOKENS,
        extra_body={"return_token_ids": True, **{k: v for k, v in sampling.items() if k == "top_k"}},
        **{k: v for k, v in sampling.items() if k in ("temperature", "top_p", "seed")})
    return (r.choices[0].model_extra["token_ids"], r.choices[0].message.content or "",
            r.usage.prompt_tokens_details.cached_tokens, r.usage.prompt_tokens)


def turn2_messages(conv, reply1):
    system, user1, user2 = conv
    return [{"role": "system", "content": system}, {"role": "user", "content": user1},
            {"role": "assistant", "content": reply1}, {"role": "user", "content": user2}]


def turn1_messages(conv):
    return [{"role": "system", "content": conv[0]}, {"role": "user", "content": conv[1]}]


class Family:
    """One model's servers: `cached` (with a snapshot dir), `fresh` (no cache at all), and the turn-2 requests
    and replies recorded on `cached`, for the restart and refusal cases."""

    def __init__(self, binary, model, workdir: Path, extra: list | None = None):
        self.binary, self.model, self.workdir = binary, model, workdir
        self.extra = list(extra or [])
        self.snapshots = workdir / "snapshots"
        self.cached = self.start("cached", ["--prompt-cache-gib", "1", "--snapshot-dir", self.snapshots])
        self.fresh = self.start("fresh", ["--prompt-cache-gib", "0", "--snapshot-dir", "none"])
        self.turn2 = {}  # case -> (messages, sampling, ids on the cached server)

    def start(self, name, args):
        d = self.workdir / name
        d.mkdir(exist_ok=True)
        return start_serve(self.binary, self.model, ["--parallel", "2", *self.extra, *args], d)

    def run_case(self, conv_i, sampling_i):
        conv, sampling = CONVERSATIONS[conv_i], SAMPLING[sampling_i]
        client, model = self.cached.client(), self.cached.model_id
        ids1, reply1, _, _ = chat(client, model, turn1_messages(conv), sampling)
        fresh1 = chat(self.fresh.client(), self.fresh.model_id, turn1_messages(conv), sampling)
        assert fresh1[0] == ids1
        messages = turn2_messages(conv, reply1)
        ids2, _, cached2, prompt2 = chat(client, model, messages, sampling)
        fresh2, _, fresh_cached, _ = chat(self.fresh.client(), self.fresh.model_id, messages, sampling)
        assert fresh_cached == 0
        assert 0 < cached2 < prompt2, "turn 2 restored nothing"
        assert ids2 == fresh2
        self.turn2[(conv_i, sampling_i)] = (messages, sampling, fresh2)

    def stop(self):
        for s in (self.cached, self.fresh):
            assert s.stop() == 0, s.stderr()


@pytest.fixture(scope="module")
def llama(tensorfold_bin, default_model_path, tmp_path_factory):
    f = Family(tensorfold_bin, default_model_path, tmp_path_factory.mktemp("cache-llama"))
    yield f
    f.stop()


@pytest.fixture(scope="module")
def qwen(tensorfold_bin, tmp_path_factory):
    f = Family(tensorfold_bin, QWEN, tmp_path_factory.mktemp("cache-qwen"))
    yield f
    f.stop()


@pytest.fixture(scope="module")
def nemotron(tensorfold_bin, tmp_path_factory):
    # Copies drafts: the checkpoint's MTP head would draft for every stream, and such streams prefill from the
    # start (the head's state is not in a snapshot; the startup report says so, tested below).
    f = Family(tensorfold_bin, NEMOTRON, tmp_path_factory.mktemp("cache-nemotron"), ["--drafter", "copies"])
    yield f
    f.stop()


@pytest.fixture(scope="module")
def gemma4(tensorfold_bin, tmp_path_factory):
    f = Family(tensorfold_bin, GEMMA4, tmp_path_factory.mktemp("cache-gemma4"))
    yield f
    f.stop()


@pytest.fixture(scope="module")
def qwen4_exp(tensorfold_bin, tmp_path_factory):
    f = Family(tensorfold_bin, QWEN4_EXP, tmp_path_factory.mktemp("cache-qwen4_exp"))
    yield f
    f.stop()


@pytest.fixture(scope="module")
def glm5_next(tensorfold_bin, tmp_path_factory):
    f = Family(tensorfold_bin, GLM5_NEXT, tmp_path_factory.mktemp("cache-glm5_next"))
    yield f
    f.stop()


@pytest.fixture(scope="module")
def deepseek_v4(tensorfold_bin, tmp_path_factory):
    f = Family(tensorfold_bin, DEEPSEEK_V4, tmp_path_factory.mktemp("cache-deepseek_v4"))
    yield f
    f.stop()


def test_startup_report_says_mtp_drafted_streams_are_not_cached(tensorfold_bin, tmp_path):
    server = start_serve(tensorfold_bin, NEMOTRON, ["--prompt-cache-gib", "1", "--snapshot-dir", "none"], tmp_path)
    try:
        assert "not for streams the MTP head drafts for" in server.report
    finally:
        server.stop()


def test_startup_report_names_the_cache(llama):
    assert "caching   retained prefixes up to 1.00 GiB in memory" in llama.cached.report
    assert "prefill cuts at each message start" in llama.cached.report
    assert "caching   off (--prompt-cache-gib 0)" in llama.fresh.report


@pytest.mark.parametrize("conv_i,sampling_i", LLAMA_CASES)
def test_llama_turn2_resumes_exactly(llama, conv_i, sampling_i):
    llama.run_case(conv_i, sampling_i)


@pytest.mark.parametrize("conv_i,sampling_i", QWEN_CASES)
def test_qwen3_5_turn2_resumes_exactly(qwen, conv_i, sampling_i):
    qwen.run_case(conv_i, sampling_i)


@pytest.mark.parametrize("conv_i,sampling_i", QWEN_CASES)
def test_nemotron_h_turn2_resumes_exactly(nemotron, conv_i, sampling_i):
    nemotron.run_case(conv_i, sampling_i)


@pytest.mark.parametrize("conv_i,sampling_i", QWEN_CASES)
def test_gemma4_turn2_resumes_exactly_after_the_window_slid(gemma4, conv_i, sampling_i):
    """Turn 2's prompt is far past the sliding window (8): the restored window store and a fresh prefill agree."""
    gemma4.run_case(conv_i, sampling_i)


@pytest.mark.parametrize("conv_i,sampling_i", QWEN_CASES)
def test_qwen4_exp_turn2_resumes_exactly(qwen4_exp, conv_i, sampling_i):
    """Turn 2's prompt is past the indexer's dense prefix: the restored host rows and a fresh prefill agree."""
    qwen4_exp.run_case(conv_i, sampling_i)


@pytest.mark.parametrize("conv_i,sampling_i", QWEN_CASES)
def test_glm5_next_turn2_resumes_exactly(glm5_next, conv_i, sampling_i):
    """Turn 2's prompt is past the indexer's dense prefix (2 pools of 4): restored rows and state equal fresh."""
    glm5_next.run_case(conv_i, sampling_i)


@pytest.mark.parametrize("conv_i,sampling_i", QWEN_CASES)
def test_deepseek_v4_turn2_resumes_exactly(deepseek_v4, conv_i, sampling_i):
    """Turn 2's prompt is past the window (8) and fills both compressors (rates 4 and 8) past the indexer's top 4:
    the restored rows and a fresh prefill agree."""
    deepseek_v4.run_case(conv_i, sampling_i)


def test_metrics_count_hits(llama):
    text = llama.cached.raw("GET", "/metrics").body.decode()
    hits = [l for l in text.splitlines() if l.startswith("vllm:prefix_cache_hits{")]
    assert hits and float(hits[0].split()[-1]) > 0
    health = llama.cached.raw("GET", "/health").json()
    assert health["prompt_cache"]["hits"] > 0 and health["cached_tokens_total"] > 0


def restart_and_check(family, snapshots: Path, name: str, expect_cached: bool):
    """A server over `snapshots`: every recorded turn 2 equals fresh; cached_tokens > 0 iff expect_cached."""
    srv = family.start(name, ["--prompt-cache-gib", "1", "--snapshot-dir", snapshots])
    try:
        for messages, sampling, fresh in family.turn2.values():
            ids, _, cached, _ = chat(srv.client(), srv.model_id, messages, sampling)
            assert ids == fresh
            if expect_cached:
                assert cached > 0
        return srv.stderr(), srv.raw("GET", "/health").json()
    finally:
        assert srv.stop() == 0, srv.stderr()


def copy_snapshots(family, name) -> Path:
    # The cached server writes snapshots on a background thread; stopping it waits for them. Copy from a
    # server that has stopped would lose the fixture, so wait until the files settle instead.
    import time
    deadline = time.monotonic() + 30
    last = None
    while time.monotonic() < deadline:
        now = sorted((p.name, p.stat().st_size) for p in family.snapshots.glob("*.tfsnap"))
        if now and now == last and not list(family.snapshots.glob("*.tmp")):
            break
        last = now
        time.sleep(0.5)
    dest = family.workdir / name
    shutil.copytree(family.snapshots, dest)
    return dest


@pytest.fixture(scope="module")
def qwen_tp2(tensorfold_bin, tmp_path_factory):
    """Two tensor-parallel ranks (--tp 2): each rank's share of the state is kept and restored together."""
    f = Family(tensorfold_bin, QWEN, tmp_path_factory.mktemp("cache-qwen-tp2"), ["--tp", "2"])
    yield f
    f.stop()


@pytest.mark.parametrize("conv_i,sampling_i", QWEN_CASES[:4])
def test_qwen3_5_turn2_resumes_exactly_on_two_ranks(qwen_tp2, conv_i, sampling_i):
    qwen_tp2.run_case(conv_i, sampling_i)


@pytest.mark.parametrize("fam", ["llama", "qwen", "qwen_tp2", "nemotron", "gemma4", "qwen4_exp", "glm5_next",
                                 "deepseek_v4"])
def test_restart_resumes_from_disk(request, fam):
    family = request.getfixturevalue(fam)
    assert family.turn2, "run the turn-2 cases first (file order)"
    stderr, health = restart_and_check(family, copy_snapshots(family, "restart"), "restart", expect_cached=True)
    assert health["prompt_cache"]["snapshots_loaded"] > 0
    assert "refused" not in stderr


def test_corrupted_snapshots_are_refused(llama):
    snaps = copy_snapshots(llama, "corrupt")
    for p in snaps.glob("*.tfsnap"):
        data = bytearray(p.read_bytes())
        data[-100] ^= 0x40  # a payload byte: only the checksum can tell
        p.write_bytes(bytes(data))
    stderr, health = restart_and_check(llama, snaps, "corrupt", expect_cached=False)
    assert "checksum mismatch" in stderr and "removed" in stderr
    assert health["prompt_cache"]["snapshots_refused"] > 0 and health["prompt_cache"]["snapshots_loaded"] == 0


def test_truncated_snapshots_are_refused(llama):
    snaps = copy_snapshots(llama, "truncated")
    files = list(snaps.glob("*.tfsnap"))
    for p in files:
        data = p.read_bytes()
        p.write_bytes(data[: len(data) // 2])
    stderr, health = restart_and_check(llama, snaps, "truncated", expect_cached=False)
    assert "truncated" in stderr
    # Every truncated file was refused at start (the server then wrote whole ones of its own).
    assert health["prompt_cache"]["snapshots_refused"] == len(files)


def test_other_model_snapshots_are_refused(llama, qwen):
    snaps = copy_snapshots(llama, "other-model")
    if not qwen.turn2:  # run alone (-k): one qwen conversation writes its snapshots
        qwen.run_case(0, 0)
    qwen_files = list(copy_snapshots(qwen, "for-llama").glob("*.tfsnap"))
    assert qwen_files
    for p in snaps.glob("*.tfsnap"):
        # Another model's file under the name this model looks up: the header's identity refuses it.
        shutil.copyfile(qwen_files[0], p)
    stderr, health = restart_and_check(llama, snaps, "other-model", expect_cached=False)
    assert "another model" in stderr
    assert health["prompt_cache"]["snapshots_loaded"] == 0


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def test_cache_filled_past_its_budget_stays_within_it(tensorfold_bin, default_model_path, tmp_path):
    budget_gib = 0.02  # about 20 MiB: a handful of this model's prefixes
    srv = start_serve(tensorfold_bin, default_model_path,
                      ["--prompt-cache-gib", budget_gib, "--snapshot-dir", "none", "--parallel", "1"], tmp_path)
    try:
        client, model = srv.client(), srv.model_id
        budget = int(budget_gib * 2**30)
        chat(client, model, [{"role": "system", "content": "Warm up."}, {"role": "user", "content": "hi"}],
             SAMPLING[0])
        rss0 = rss_bytes(srv.process.pid)
        peak_cache = 0
        # Each request retains two prefixes of about 80 tokens (3.7 MB each on this model): 8 requests insert
        # about three times the budget.
        for i in range(8):
            system = f"Conversation {i}: " + " ".join(f"w{i}{k}" for k in range(25))
            chat(client, model, [{"role": "system", "content": system}, {"role": "user", "content": f"Say {i}."}],
                 SAMPLING[0])
            pc = srv.raw("GET", "/health").json()["prompt_cache"]
            assert pc["budget_bytes"] == budget
            assert pc["bytes"] <= budget
            peak_cache = max(peak_cache, pc["bytes"])
        assert peak_cache > budget // 2, "the cache never filled"
        pc = srv.raw("GET", "/health").json()["prompt_cache"]
        # Inserted well past the budget, so old entries were evicted: fewer entries than conversations.
        assert pc["entries"] < 16
        # The process grew by the budget at most, with room for allocator slack, not by every prefix inserted.
        assert rss_bytes(srv.process.pid) - rss0 < budget + 64 * 2**20
    finally:
        assert srv.stop() == 0, srv.stderr()


def responses_chain(srv):
    client, model = srv.client(), srv.model_id
    first = client.responses.create(model=model, instructions="You are terse.", input="Name a planet.",
                                    temperature=0.0, max_output_tokens=MAX_TOKENS)
    # instructions are not carried over from the previous response (OpenAI's rule): sent again, the rendered
    # history starts with the same tokens.
    second = client.responses.create(model=model, previous_response_id=first.id, instructions="You are terse.",
                                     input="Name another one.",
                                     temperature=0.0, max_output_tokens=MAX_TOKENS)
    return first.output_text, second.output_text, second.usage.input_tokens_details.cached_tokens


def test_responses_previous_response_id_hits_the_cache(llama):
    cached = responses_chain(llama.cached)
    fresh = responses_chain(llama.fresh)
    assert cached[:2] == fresh[:2]
    assert cached[2] > 0 and fresh[2] == 0


def test_snapshots_of_two_ranks_are_refused_by_one(qwen, qwen_tp2):
    # A snapshot holds each rank's share of the state: a server of another rank count must not restore it.
    if not qwen_tp2.turn2:
        qwen_tp2.run_case(0, 0)
    if not qwen.turn2:
        qwen.run_case(0, 0)
    snaps = copy_snapshots(qwen_tp2, "tp2-for-tp1")
    stderr, health = restart_and_check(qwen, snaps, "tp2-for-tp1", expect_cached=False)
    assert health["prompt_cache"]["snapshots_loaded"] == 0 and health["prompt_cache"]["snapshots_refused"] > 0, stderr
