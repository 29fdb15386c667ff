#!/usr/bin/env python3
"""The tiny qwen3_5 golden checkpoint as llama.cpp writes it, GGUF F16, Q8_0 and Q4_K_M (llama.cpp's arch
`qwen35`), and llama.cpp's own greedy continuations of the golden prompts on each file.

    python scripts/golden/make_qwen3_5_gguf.py [--sdist FILE] [--work DIR] [--jobs N]

Needs torch, transformers and numpy (/work/venv-golden has them), cmake, ninja and a C++ compiler.

1. llama.cpp: vendor/llama.cpp of the llama-cpp-python 0.3.36 sdist (--sdist, else `pip download` into
   --work), unpacked whole into WORK/llama.cpp (the converter needs its conversion/ package and gguf-py).
2. Built from it, CPU only, static: llama-quantize and libllama (only those targets), and
   llama_cpp_greedy.cpp (next to this script) linked against them.
3. tests/goldens/qwen3_5/bf16-mtp converted by the pinned convert_hf_to_gguf.py to F16 (MTP head included,
   as block 8), then llama-quantize F16 -> Q8_0 and Q4_K_M. The tiny model's rows of 128 are not whole 256-blocks,
   so llama-quantize gives those tensors its fallback types (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0); the
   rows of 256 (ffn_down, the MTP fusion) keep the K-quants.
4. llama.cpp's greedy ids, top-2 gaps and logits after the prompt for the prompts of bf16-mtp/golden.json, as
   many steps, on each file: llama_cpp_greedy.json, the goldens of tests/conformance/test_qwen3_5_gguf.py.

The converter runs unchanged but for one thing: it names the tokenizer's pre-tokenizer by hashing the ids the
tokenizer gives a fixed test text, and the tiny checkpoint's 320-token vocabulary hashes to nothing it knows.
So this script reads the pre-tokenizer's regex from tokenizer.json and names it itself (the tiny tokenizer
splits as Qwen2 does); a regex it does not know stops the script.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "tests/goldens/qwen3_5/bf16-mtp"
OUT = ROOT / "tests/goldens/qwen3_5/gguf"
VERSION = "0.3.36"  # llama-cpp-python, as bench/llama_cpp/side_by_side.sh
QUANTS = ["Q8_0", "Q4_K_M"]

# The Split regexes of tokenizer.json and llama.cpp's tokenizer.ggml.pre name for each.
KNOWN_PRE = {
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+":
        "qwen2",
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+": "qwen35",
}


def log(msg):
    print(f"make_qwen3_5_gguf: {msg}", file=sys.stderr, flush=True)


def pre_tokenizer_name(src: Path) -> str:
    tok = json.loads((src / "tokenizer.json").read_text())
    for p in tok["pre_tokenizer"].get("pretokenizers", [tok["pre_tokenizer"]]):
        if p.get("type") == "Split":
            regex = p["pattern"]["Regex"]
            if regex not in KNOWN_PRE:
                sys.exit(f"unknown pre-tokenizer regex {regex!r}")
            return KNOWN_PRE[regex]
    sys.exit("tokenizer.json has no Split pre-tokenizer")


def llama_cpp_sources(sdist, work: Path) -> Path:
    dest = work / "llama.cpp"
    if (dest / "convert_hf_to_gguf.py").is_file():
        return dest
    if sdist is None:
        sdist = work / f"llama_cpp_python-{VERSION}.tar.gz"
        if not sdist.is_file():
            log(f"pip download llama-cpp-python=={VERSION} (source)")
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                            "-d", str(work), f"llama-cpp-python=={VERSION}"], check=True)
    log(f"unpacking vendor/llama.cpp of {sdist}")
    tmp = work / "llama.cpp.part"
    shutil.rmtree(tmp, ignore_errors=True)
    with tarfile.open(sdist) as tar:
        for m in tar:
            parts = m.name.split("/")
            if len(parts) < 4 or parts[1:3] != ["vendor", "llama.cpp"] or not (m.isfile() or m.isdir()):
                continue
            m.name = "/".join(parts[3:])
            tar.extract(m, tmp, set_attrs=False)
    tmp.rename(dest)
    return dest


def build(llama_cpp: Path, work: Path, jobs: int):
    """llama-quantize, and llama_cpp_greedy linked against the static libllama and ggml of the same build."""
    bld = work / "build"
    quantize = bld / "bin/llama-quantize"
    if not quantize.is_file() or not (bld / "src/libllama.a").is_file():
        log(f"building llama-quantize and libllama in {bld} (-j{jobs})")
        subprocess.run(["cmake", "-S", str(llama_cpp), "-B", str(bld), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                        "-DGGML_NATIVE=ON", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_BUILD_TESTS=OFF",
                        "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_APP=OFF", "-DLLAMA_BUILD_UI=OFF",
                        "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_SERVER=OFF"],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["ninja", "-C", str(bld), f"-j{jobs}", "llama-quantize", "llama"], check=True,
                       stdout=subprocess.DEVNULL)
    greedy = work / "llama_cpp_greedy"
    driver = Path(__file__).with_name("llama_cpp_greedy.cpp")
    if not greedy.is_file() or greedy.stat().st_mtime < driver.stat().st_mtime:
        libs = [bld / "src/libllama.a"] + sorted((bld / "ggml/src").glob("libggml*.a"))
        # libggml.a first (it calls into the backends), then the backends, then libggml-base.a.
        libs = ([p for p in libs if p.name == "libllama.a"] + [p for p in libs if p.name == "libggml.a"] +
                [p for p in libs if p.name not in ("libllama.a", "libggml.a", "libggml-base.a")] +
                [p for p in libs if p.name == "libggml-base.a"])
        subprocess.run([os.environ.get("CXX", "c++"), "-std=c++17", "-O2", str(driver),
                        f"-I{llama_cpp / 'include'}", f"-I{llama_cpp / 'ggml/include'}", *map(str, libs),
                        "-fopenmp", "-lpthread", "-ldl", "-o", str(greedy)], check=True)
    return quantize, greedy


def convert_f16(llama_cpp: Path, src: Path, out: Path) -> None:
    sys.path[:0] = [str(llama_cpp), str(llama_cpp / "gguf-py")]
    import convert_hf_to_gguf  # noqa: E402 (the pinned converter, found through the sdist)
    from conversion import base

    name = pre_tokenizer_name(src)
    base.TextModel.get_vocab_base_pre = lambda self, tokenizer: name
    argv = sys.argv
    sys.argv = ["convert_hf_to_gguf.py", str(src), "--outtype", "f16", "--outfile", str(out)]
    try:
        convert_hf_to_gguf.main()
    finally:
        sys.argv = argv


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sdist", type=Path, help="llama_cpp_python-0.3.36.tar.gz (else pip download)")
    ap.add_argument("--work", type=Path, default=Path.home() / ".cache/tensorfold/gguf-goldens")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    llama_cpp = llama_cpp_sources(args.sdist, args.work)
    quantize, greedy = build(llama_cpp, args.work, args.jobs)

    OUT.mkdir(parents=True, exist_ok=True)
    files = {"F16": OUT / "qwen3_5-tiny-F16.gguf"}
    convert_f16(llama_cpp, SRC, files["F16"])
    for q in QUANTS:
        files[q] = OUT / f"qwen3_5-tiny-{q}.gguf"
        run = subprocess.run([str(quantize), str(files["F16"]), str(files[q]), q], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"llama-quantize {q} failed:\n{run.stderr[-3000:]}")
        falls = [line.strip() for line in run.stderr.splitlines() if "falling back" in line]
        log(f"{q}: {len(falls)} tensors in fallback types")

    golden = json.loads((SRC / "golden.json").read_text())
    steps = len(golden["greedy"][0])
    cases = args.work / "cases.json"
    cases.write_text(json.dumps({"cases": [{"prompt_ids": p} for p in golden["prompt_ids"]]}))
    result = {
        "made_with": f"scripts/golden/make_qwen3_5_gguf.py: llama-cpp-python {VERSION} vendor/llama.cpp "
                     "(convert_hf_to_gguf.py, llama-quantize, llama_cpp_greedy.cpp on the CPU, one thread)",
        "prompt_ids": golden["prompt_ids"],
        "steps": steps,
        "files": {},
    }
    for name, path in files.items():
        run = subprocess.run([str(greedy), str(path), str(cases), str(steps)], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"llama_cpp_greedy {name} failed:\n{run.stderr[-3000:]}")
        out = json.loads(run.stdout)["cases"]
        result["files"][path.name] = {"greedy": [c["greedy"] for c in out], "gaps": [c["gaps"] for c in out],
                                      "prompt_logits": [c["prompt_logits"] for c in out]}
        log(f"{name}: {path.stat().st_size} bytes; llama.cpp greedy {[c['greedy'][:6] for c in out]}")
    (OUT / "llama_cpp_greedy.json").write_text(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
