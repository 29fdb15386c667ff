#!/usr/bin/env python3
"""Writes small valid seed inputs for the libFuzzer targets (stdlib only).

    python3 tests/fuzz/make_seeds.py OUT_DIR

creates OUT_DIR/fuzz_gguf/*.gguf, OUT_DIR/fuzz_safetensors/*.safetensors and
OUT_DIR/fuzz_mlx_quant_config/*.json, OUT_DIR/fuzz_request/*.json and OUT_DIR/fuzz_image/* (the vision\ngolden's images). The output is deterministic, so re-running is harmless.
"""
import json
import random
import struct
import sys
from pathlib import Path

# ---- GGUF ------------------------------------------------------------------------------------------
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
SCALAR_FMT = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f",
              BOOL: "<?", U64: "<Q", I64: "<q", F64: "<d"}

# ggml type: (number, elements per block, bytes per block)
GGML = {"F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_0": (2, 32, 18), "Q4_1": (3, 32, 20), "Q8_0": (8, 32, 34),
        "Q4_K": (12, 256, 144), "Q6_K": (14, 256, 210), "BF16": (30, 1, 2), "Q5_0": (6, 32, 22)}


def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gvalue(vtype, v):
    if vtype == STRING:
        return gstr(v)
    if vtype == ARRAY:
        elem, items = v
        return struct.pack("<IQ", elem, len(items)) + b"".join(gvalue(elem, x) for x in items)
    return struct.pack(SCALAR_FMT[vtype], v)


def f16(x):
    return struct.pack("<e", x)


def block_bytes(rng, name, n_blocks):
    """Plausible block data: sane f16 scales, random quants."""
    out = bytearray()
    for _ in range(n_blocks):
        if name == "F32":
            out += struct.pack("<f", rng.uniform(-2, 2))
        elif name == "F16":
            out += f16(rng.uniform(-2, 2))
        elif name == "BF16":
            out += struct.pack("<f", rng.uniform(-2, 2))[2:]
        elif name == "Q4_0":
            out += f16(rng.uniform(0.001, 0.1)) + rng.randbytes(16)
        elif name == "Q4_1":
            out += f16(rng.uniform(0.001, 0.1)) + f16(rng.uniform(-1, 1)) + rng.randbytes(16)
        elif name == "Q8_0":
            out += f16(rng.uniform(0.001, 0.1)) + rng.randbytes(32)
        elif name == "Q4_K":
            out += f16(rng.uniform(0.001, 0.1)) + f16(rng.uniform(0.001, 0.1)) + rng.randbytes(12) + rng.randbytes(128)
        elif name == "Q6_K":
            out += rng.randbytes(128) + rng.randbytes(64) + bytes(rng.randrange(-32, 32) & 0xff for _ in range(16))
            out += f16(rng.uniform(0.001, 0.1))
        else:
            out += rng.randbytes(GGML[name][2])
    return bytes(out)


def gguf(metadata, tensors, version=3, alignment=32, seed=0):
    """metadata: [(key, type, value)]; tensors: [(name, ggml type name, dims)]"""
    rng = random.Random(seed)
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(metadata))
    for key, vtype, v in metadata:
        head += gstr(key) + struct.pack("<I", vtype) + gvalue(vtype, v)
    data = b""
    for name, tname, dims in tensors:
        num, be, bb = GGML[tname]
        n = 1
        for d in dims:
            n *= d
        data += b"\0" * (-len(data) % alignment)
        head += gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        head += struct.pack("<IQ", num, len(data))
        data += block_bytes(rng, tname, n // be)
    if not tensors:
        return head
    return head + b"\0" * (-len(head) % alignment) + data


def gguf_seeds():
    every_type = [
        ("general.architecture", STRING, "llama"),
        ("general.name", STRING, "fuzz seed \u00e9"),
        ("general.alignment", U32, 32),
        ("seed.u8", U8, 200), ("seed.i8", I8, -100), ("seed.u16", U16, 65000), ("seed.i16", I16, -30000),
        ("seed.i32", I32, -2**31), ("seed.f32", F32, 1.5), ("seed.bool", BOOL, True),
        ("seed.u64", U64, 2**63), ("seed.i64", I64, -2**62), ("seed.f64", F64, -0.25),
        ("llama.block_count", U32, 2), ("llama.context_length", U32, 4096),
        ("llama.embedding_length", U32, 256), ("llama.attention.head_count", U32, 4),
        ("tokenizer.ggml.model", STRING, "gpt2"),
        ("tokenizer.ggml.tokens", ARRAY, (STRING, ["<s>", "</s>", "a", "b", ""])),
        ("tokenizer.ggml.scores", ARRAY, (F32, [0.0, -1.0, -2.5])),
        ("tokenizer.ggml.token_type", ARRAY, (I32, [1, 3, 1])),
        ("seed.nested", ARRAY, (ARRAY, [(U8, [1, 2, 3]), (STRING, ["x"]), (U64, [])])),
        ("seed.empty_array", ARRAY, (BOOL, [])),
    ]
    small_meta = [("general.architecture", STRING, "llama"), ("general.alignment", U32, 32)]
    seeds = {
        "all_metadata_types.gguf": gguf(every_type, [("tok_embd.weight", "F32", [4, 2])], seed=1),
        "vocab_only.gguf": gguf(every_type, []),
        "v2.gguf": gguf(small_meta, [("a", "F16", [8]), ("b", "Q4_0", [32, 2])], version=2, seed=2),
        "align64.gguf": gguf([("general.alignment", U32, 64)], [("a", "Q8_0", [32]), ("b", "BF16", [3, 3])],
                             alignment=64, seed=3),
        "legacy_quants.gguf": gguf(small_meta, [("blk.0.q", "Q4_0", [64]), ("blk.0.k", "Q4_1", [32, 2]),
                                                ("blk.0.v", "Q8_0", [32]), ("blk.0.o", "F16", [5, 2]),
                                                ("blk.0.n", "F32", [7])], seed=4),
        "k_quants.gguf": gguf(small_meta, [("blk.0.ffn_up", "Q4_K", [256]), ("blk.0.ffn_down", "Q6_K", [256]),
                                           ("blk.0.norm", "F32", [4])], seed=5),
        "not_dequantizable.gguf": gguf(small_meta, [("x", "Q5_0", [32]), ("y", "F32", [1, 1, 1, 1])], seed=6),
        "zero_elements.gguf": gguf(small_meta, [("z", "F32", [0, 5]), ("w", "Q4_0", [32])], seed=7),
    }
    return seeds


# ---- safetensors -----------------------------------------------------------------------------------
ST_BYTES = {"F32": 4, "F16": 2, "BF16": 2, "U32": 4, "I64": 8, "U8": 1, "BOOL": 1, "F8_E4M3": 1}


def safetensors(tensors, metadata=None, pad=0, seed=0):
    """tensors: [(name, dtype, shape)] (or (name, dtype, shape, nbytes) for packed types)"""
    rng = random.Random(seed)
    header, data = {}, b""
    for t in tensors:
        name, dtype, shape = t[:3]
        if len(t) > 3:
            nbytes = t[3]
        else:
            nbytes = ST_BYTES[dtype]
            for d in shape:
                nbytes *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + nbytes]}
        data += rng.randbytes(nbytes)
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode() + b" " * pad
    return struct.pack("<Q", len(text)) + text + data


def safetensors_seeds():
    return {
        "empty.safetensors": safetensors([]),
        "metadata_only.safetensors": safetensors([], {"format": "pt"}),
        "mixed.safetensors": safetensors(
            [("model.embed_tokens.weight", "BF16", [4, 8]), ("model.norm.weight", "F32", [8]),
             ("lm_head.weight", "F16", [2, 8]), ("ids", "I64", [3]), ("mask", "BOOL", [5]),
             ("fp8", "F8_E4M3", [2, 2])], {"format": "pt", "note": "seed"}, pad=6, seed=1),
        "mlx_quantized.safetensors": safetensors(
            [("model.layers.0.mlp.up_proj.weight", "U32", [4, 8]),
             ("model.layers.0.mlp.up_proj.scales", "BF16", [4, 1]),
             ("model.layers.0.mlp.up_proj.biases", "BF16", [4, 1]), ("scalar", "F32", [])], {"format": "mlx"},
            seed=2),
        "packed_f4.safetensors": safetensors([("w", "F4", [4, 4], 8), ("v", "F6_E2M3", [4], 3)], seed=3),
        "zero_size.safetensors": safetensors([("a", "F32", [0]), ("b", "U8", [3, 0, 2]), ("c", "U8", [2])], seed=4),
    }


# ---- MLX quantization configs -------------------------------------------------------------------------
def quant_config_seeds():
    def cfg(obj, tail=None):
        text = json.dumps(obj, indent=1).encode()
        return text if tail is None else text + b"\0" + bytes(tail)

    hostile = list(struct.pack("<QQ", 3, 64)) + [24, 192, 48]  # rows=3 cols=64: consistent for 4-bit
    return {
        "plain.json": cfg({"model_type": "llama", "quantization": {"group_size": 64, "bits": 4}}),
        "mode.json": cfg({"quantization": {"group_size": 32, "bits": 8, "mode": "affine"}}, [1, 1, 1]),
        "overrides.json": cfg({"quantization": {
            "group_size": 64, "bits": 4,
            "model.layers.0.mlp.down_proj": {"bits": 6, "group_size": 32},
            "model.layers.0.mlp.gate_proj": {"bits": 3},
            "model.layers.1.self_attn.q_proj": {"group_size": 128},
            "model.embed_tokens": True, "lm_head": False}}, [2, 1, 2]),
        "mirror.json": cfg({"quantization_config": {"group_size": 128, "bits": 5}}, [0, 0, 0]),
        "foreign.json": cfg({"quantization_config": {"quant_method": "gptq", "bits": 4}}),
        "two_bit_hostile_tail.json": cfg({"quantization": {"group_size": 64, "bits": 2}}, [0, 0, 1] + hostile),
        "four_bit_hostile_tail.json": cfg({"quantization": {"group_size": 64, "bits": 4}}, [2, 0, 0] + hostile),
        "bad_bits.json": cfg({"quantization": {"group_size": 64, "bits": 7}}),
    }


# ---- HTTP request bodies --------------------------------------------------------------------------------
def request_seeds():
    tool = {"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
                                             "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                            "required": ["city"]}}}
    call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}
    bodies = {
        "chat.json": {"model": "m", "messages": [{"role": "system", "content": "Be brief."},
                                                 {"role": "user", "content": "Hello"}],
                      "max_tokens": 16, "temperature": 0.7, "top_p": 0.9, "seed": 3, "stop": ["\n"], "stream": True,
                      "stream_options": {"include_usage": True}, "logprobs": True, "top_logprobs": 3, "n": 2,
                      "logit_bias": {"42": -100}, "presence_penalty": 0.5, "frequency_penalty": 0.1},
        "chat_tools.json": {"messages": [{"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
                                         {"role": "assistant", "content": None, "tool_calls": [call]},
                                         {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}],
                            "tools": [tool], "tool_choice": "auto", "parallel_tool_calls": False,
                            "reasoning_effort": "low", "response_format": {"type": "text"}},
        "completion.json": {"prompt": ["Once upon", "a time"], "max_tokens": 8, "echo": True, "logprobs": 2,
                            "best_of": 2, "suffix": None, "stop": "x"},
        "completion_ids.json": {"prompt": [[1, 2, 3], [4, 5]], "max_tokens": 0, "temperature": 0},
        "responses.json": {"input": [{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]}],
                           "instructions": "Be brief.", "max_output_tokens": 32, "tools": [
                               {"type": "function", "name": "f", "parameters": {"type": "object"}}],
                           "text": {"format": {"type": "text"}}, "store": False, "reasoning": {"effort": "low"}},
        "messages.json": {"model": "m", "max_tokens": 64, "system": [{"type": "text", "text": "Be brief."}],
                          "messages": [{"role": "user", "content": "Hi"},
                                       {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f",
                                                                          "input": {"a": 1}}]},
                                       {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                                     "content": "ok"}]}],
                          "tools": [{"name": "f", "input_schema": {"type": "object"}}], "stop_sequences": ["END"],
                          "thinking": {"type": "enabled", "budget_tokens": 1024}, "stream": True},
        "tokenize.json": {"content": "Hello, world", "add_special": True, "with_pieces": True, "tokens": [1, 2, 3]},
    }
    return {name: json.dumps(body).encode() for name, body in bodies.items()}


def image_seeds():
    """The vision golden's PNG (RGB, RGBA, palette + tRNS, grey), JPEG and WebP files."""
    d = Path(__file__).resolve().parents[1] / "goldens" / "qwen3_5" / "vision" / "images"
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.suffix in (".png", ".jpg", ".webp")}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = Path(sys.argv[1])
    for target, seeds in (("fuzz_gguf", gguf_seeds()), ("fuzz_safetensors", safetensors_seeds()),
                          ("fuzz_mlx_quant_config", quant_config_seeds()), ("fuzz_request", request_seeds()),
                          ("fuzz_image", image_seeds())):
        d = out / target
        d.mkdir(parents=True, exist_ok=True)
        for name, data in seeds.items():
            path = d / name
            if not path.exists() or path.read_bytes() != data:
                path.write_bytes(data)
        print(f"{target}: {len(seeds)} seeds in {d}")


if __name__ == "__main__":
    main()
