"""Time per kernel name in a kernel trace (kernel_trace.cpp), from the first kernel whose name contains FROM.

    python3 bench/cuda/trace_totals.py TRACE.csv [FROM]

Prints each kernel name's launches and summed duration (ms), largest first, and the window's span: for a
phase such as prefill (FROM = prefill_prepare), where trace_attr.py's per-step view does not apply. FROM =
after:NAME starts after the last kernel named like NAME instead (after:greedy: what runs after the last decode
step, e.g. the benchmark's 2k prefill). With programmatic dependent launch kernels overlap and each one's
duration includes its wait for the one before, so the sums can exceed the span; TF_CUDA_PDL=0 separates them.
"""
import collections
import sys

from trace_attr import read_trace  # the same directory: on sys.path when run as a script


def short(mangled):
    """The first identifier in a mangled name that names a kernel (<length><identifier> pieces)."""
    ids, i = [], 0
    while i < len(mangled):
        if mangled[i].isdigit():
            j = i
            while j < len(mangled) and mangled[j].isdigit():
                j += 1
            n = int(mangled[i:j])
            ids.append(mangled[j:j + n])
            i = j + n
        else:
            i += 1
    named = [s for s in ids if "kernel" in s or s.startswith("imma_stream")]
    return named[0] if named else mangled[:60]


def main(path, start=""):
    kernels = read_trace(path)
    if start.startswith("after:"):
        last = max((i for i, k in enumerate(kernels) if start[6:] in k[2]), default=None)
        first = None if last is None or last + 1 >= len(kernels) else last + 1
    else:
        first = next((i for i, k in enumerate(kernels) if start in k[2]), None)
    if first is None:
        sys.exit(f"no kernel named like {start!r}")
    window = kernels[first:]
    total, count = collections.Counter(), collections.Counter()
    for b, e, name in window:
        key = short(name)
        total[key] += e - b
        count[key] += 1
    span = window[-1][1] - window[0][0]
    print(f"span {span / 1e6:.2f} ms over {len(window)} kernels")
    for key, t in total.most_common():
        print(f"{t / 1e6:10.2f} ms {count[key]:7d}  {key}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
