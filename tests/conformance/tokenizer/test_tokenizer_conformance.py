"""Token ids byte-identical with the Hugging Face stack.

1. llama.cpp's vocab-only GGUF files with their .inp/.out expected ids (generated from the Hugging Face
   tokenizers; read as llama.cpp's test-tokenizer-0 reads them: no BOS, special-token text not parsed).
2. A deterministic mixed corpus (make_corpus.py, 6000 texts) on SmolLM2's tokenizer (the embedded GGUF) and on
   five real tokenizer.json files, against the `tokenizers` package: encode(x, add_special_tokens=False)
   identical on every text; decode identical on every text; decode(encode(x)) == x wherever the reference
   round-trips; and add_special_tokens=True on a slice.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

VOCAB_FILES_WITH_VECTORS = [
    "bert-bge", "command-r", "deepseek-coder", "deepseek-llm", "falcon", "gemma-4", "gpt-2", "llama-bpe",
    "llama-spm", "mpt", "phi-3", "qwen2", "qwen35", "refact", "starcoder",
]
JSON_TOKENIZERS = ["qwen2", "llama3", "deepseek-v3", "mistral-v3", "llama2-layout"]
SEPARATOR = "\n__ggml_vocab_test__\n"


def read_vectors(vocab_dir: Path, name: str) -> tuple[list[str], list[list[int]]]:
    raw = (vocab_dir / f"ggml-vocab-{name}.gguf.inp").read_text(encoding="utf-8")
    texts, pos = [], 0
    while pos < len(raw):
        nxt = raw.find(SEPARATOR, pos)
        if nxt < 0:
            texts.append(raw[pos:])
            break
        texts.append(raw[pos:nxt])
        pos = nxt + len(SEPARATOR)
    out_lines = (vocab_dir / f"ggml-vocab-{name}.gguf.out").read_text(encoding="utf-8").split("\n")
    if out_lines and out_lines[-1] == "":
        out_lines.pop()
    assert len(out_lines) == len(texts), f"{name}: {len(texts)} inputs but {len(out_lines)} expected outputs"
    return texts, [[int(x) for x in line.split()] for line in out_lines]


def test_every_vocab_file_with_vectors_is_covered(llama_cpp_vocab_dir: Path):
    found = sorted(p.name[len("ggml-vocab-"):-len(".gguf.inp")] for p in llama_cpp_vocab_dir.glob("ggml-vocab-*.gguf.inp"))
    assert found == sorted(VOCAB_FILES_WITH_VECTORS)


@pytest.mark.parametrize("name", VOCAB_FILES_WITH_VECTORS)
def test_llama_cpp_vocab_vectors(name: str, llama_cpp_vocab_dir: Path, runner):
    texts, expected = read_vectors(llama_cpp_vocab_dir, name)
    got = runner.encode(llama_cpp_vocab_dir / f"ggml-vocab-{name}.gguf", texts, "--no-parse-special")
    bad = [(t, e, g) for t, e, g in zip(texts, expected, got) if e != g]
    print(f"\n{name}: {len(texts) - len(bad)}/{len(texts)} vectors identical")
    assert not bad, f"{len(bad)}/{len(texts)} vectors differ; first: " + "; ".join(
        f"{t!r}: expected {e} got {g}" for t, e, g in bad[:3])


# ---- references ------------------------------------------------------------------------------------------------

def smollm2_reference(reader):
    """SmolLM2's tokenizer rebuilt in `tokenizers` from the GGUF's vocab and merges, with the configuration of
    its published tokenizer.json: no normalizer; pre_tokenizer Sequence[Digits(individual_digits=true),
    ByteLevel(add_prefix_space=false, trim_offsets=true, use_regex=true)]; BPE without unk, byte_fallback or
    ignore_merges; the control tokens (ids 0-16) as special added tokens (normalized=false); ByteLevel decoder."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    f = reader.fields

    def strings(key):
        fld = f[key]
        return [bytes(fld.parts[i]).decode("utf-8") for i in fld.data]

    tokens = strings("tokenizer.ggml.tokens")
    merges = [tuple(m.split(" ", 1)) for m in strings("tokenizer.ggml.merges")]
    types = [int(f["tokenizer.ggml.token_type"].parts[i][0]) for i in f["tokenizer.ggml.token_type"].data]
    tok = Tokenizer(models.BPE({t: i for i, t in enumerate(tokens)}, merges))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    control = [i for i, t in enumerate(types) if t == 3]
    assert control == list(range(17)), control
    tok.add_special_tokens([AddedToken(tokens[i], special=True, normalized=False) for i in control])
    return tok


@pytest.fixture(scope="module")
def references(tokenizer_corpus_dir: Path, default_model_path: Path, default_model_reader):
    from tokenizers import Tokenizer

    refs = {"smollm2": (default_model_path, smollm2_reference(default_model_reader))}
    for name in JSON_TOKENIZERS:
        path = tokenizer_corpus_dir / name / "tokenizer.json"
        refs[name] = (path, Tokenizer.from_file(str(path)))
    return refs


ALL = ["smollm2", *JSON_TOKENIZERS]


@pytest.mark.parametrize("name", ALL)
def test_corpus_encode_decode(name: str, references, corpus_texts: list[str], runner):
    model, ref = references[name]
    assert len(corpus_texts) >= 5000
    want = [e.ids for e in ref.encode_batch(corpus_texts, add_special_tokens=False)]
    got = runner.encode(model, corpus_texts)
    bad = [i for i, (w, g) in enumerate(zip(want, got)) if w != g]
    print(f"\n{name}: encode identical on {len(corpus_texts) - len(bad)}/{len(corpus_texts)} texts")
    assert not bad, f"{len(bad)} texts encode differently; first: " + "; ".join(
        f"{corpus_texts[i]!r}: expected {want[i]} got {got[i]}" for i in bad[:3])

    ref_text = ref.decode_batch(want, skip_special_tokens=False)
    our_text = runner.decode(model, want)
    bad = [i for i, (w, g) in enumerate(zip(ref_text, our_text)) if w != g]
    round_trips = [i for i, t in enumerate(corpus_texts) if ref_text[i] == t]
    ours = sum(1 for i in round_trips if our_text[i] == corpus_texts[i])
    print(f"{name}: decode identical on {len(corpus_texts) - len(bad)}/{len(corpus_texts)}; "
          f"decode(encode(x)) == x on {ours}/{len(round_trips)} texts where the reference round-trips")
    assert not bad, f"{len(bad)} decodes differ; first: " + "; ".join(
        f"{want[i]}: expected {ref_text[i]!r} got {our_text[i]!r}" for i in bad[:3])
    assert ours == len(round_trips)
    # The corpus is meant to round-trip almost everywhere; a reference that stopped doing so would hollow the
    # check above out.
    assert len(round_trips) >= len(corpus_texts) // 2

    skipped_ref = ref.decode_batch(want[:1000], skip_special_tokens=True)
    skipped = runner.decode(model, want[:1000], "--skip-special")
    assert skipped == skipped_ref


@pytest.mark.parametrize("name", ALL)
def test_corpus_add_special(name: str, references, corpus_texts: list[str], runner):
    model, ref = references[name]
    texts = corpus_texts[::10]
    want = [e.ids for e in ref.encode_batch(texts, add_special_tokens=True)]
    got = runner.encode(model, texts, "--add-special")
    if name == "smollm2":
        # The GGUF says add_bos_token=false and has no post-processor, like SmolLM2's tokenizer.json.
        pass
    bad = [i for i, (w, g) in enumerate(zip(want, got)) if w != g]
    assert not bad, f"{len(bad)}/{len(texts)} differ; first: {texts[bad[0]]!r}: {want[bad[0]]} vs {got[bad[0]]}"


def test_special_token_strings_are_matched_by_default(references, runner):
    model, ref = references["qwen2"]
    text = "<|im_start|>user\nhi<|im_end|>"
    ids = runner.encode(model, [text])[0]
    assert ids == ref.encode(text, add_special_tokens=False).ids
    assert ids[0] == 151644 and ids[-1] == 151645
    plain = runner.encode(model, [text], "--no-parse-special")[0]
    assert 151644 not in plain and 151645 not in plain
