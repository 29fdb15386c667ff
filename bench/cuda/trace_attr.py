"""Each kernel kind's share of a decode step's critical path, from a kernel trace (kernel_trace.cpp).

    python3 bench/cuda/trace_attr.py TRACE.csv LABEL

A greedy decode step ends with the greedy kernel; within a step, the integer matmul's launches are q/k/v, o,
gate/up and down per layer, then the lm_head. With programmatic dependent launch the kernels overlap, so a
kernel's own duration says little about the step's time; what it adds is end(k) - end(k - 1) in launch order
(the critical path): additive, summing to the step's span. Steps of the most common kernel count, the last
three quarters of the run (warm), medians over steps. The gap before a step is the time from the previous
step's greedy kernel to this step's first kernel: the host's share of a step that no kernel overlaps (the
token's way back, the first piece's recording, planning and launch).
"""
import collections
import statistics
import sys

ROLES = (("attention_combine", "attn_combine"), ("decode_attention", "attention"), ("norm_prepare", "norm+x"),
         ("imma_prepare", "x_terms"), ("rms_norm", "rms_norm"), ("greedy", "greedy"), ("embed", "embed"),
         ("add_kernel", "add"), ("copy_kernel", "copy"))


def role(name, i_stream, n_stream):
    if "imma_stream" in name:
        return "lm_head" if i_stream == n_stream - 1 else ("qkv", "o", "gate_up", "down")[i_stream % 4]
    for key, r in ROLES:
        if key in name:
            return r
    return name[:40]


def read_trace(path):
    """(start_ns, end_ns, mangled name) of every kernel in a kernel_trace.cpp CSV, by start time."""
    kernels = []
    for line in open(path).read().splitlines()[1:]:
        f = line.split(",", 7)
        if len(f) == 8:
            kernels.append((float(f[0]), float(f[1]), f[7]))
    return sorted(kernels)


def main(path, label):
    kernels = read_trace(path)
    steps, cur = [], []
    for k in kernels:
        cur.append(k)
        if "greedy_kernel" in k[2]:
            steps.append(cur)
            cur = []
    if not steps:
        print(f"{label}: no greedy steps in the trace")
        return
    common = collections.Counter(len(s) for s in steps).most_common(1)[0][0]
    path_us, own_us, spans, gaps = collections.defaultdict(list), collections.defaultdict(list), [], []
    for i in range(len(steps) // 4, len(steps)):
        s = steps[i]
        if len(s) != common:
            continue
        if i > 0:  # the GPU idle between the previous step's greedy kernel and this step's first kernel
            gaps.append(max(s[0][0] - steps[i - 1][-1][1], 0.0) / 1e3)
        n_stream = sum("imma_stream" in k[2] for k in s)
        i_stream, prev_end = 0, s[0][0]
        on_path, own = collections.defaultdict(float), collections.defaultdict(float)
        for start, end, name in s:
            r = role(name, i_stream, n_stream)
            i_stream += "imma_stream" in name
            on_path[r] += max(end - prev_end, 0.0)
            own[r] += end - start
            prev_end = max(prev_end, end)
        for r in on_path:
            path_us[r].append(on_path[r] / 1e3)
            own_us[r].append(own[r] / 1e3)
        spans.append((s[-1][1] - s[0][0]) / 1e3)
    print(f"{label}: {len(steps)} steps, {len(spans)} used ({common} kernels each); "
          f"step span median {statistics.median(spans):.1f} us, "
          f"gap before a step median {statistics.median(gaps) if gaps else 0.0:.1f} us")
    for r in sorted(path_us, key=lambda r: -statistics.median(path_us[r])):
        print(f"  {r:10s} critical path {statistics.median(path_us[r]):8.1f} us a step   "
              f"kernels' own start-to-end {statistics.median(own_us[r]):8.1f} us a step")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else sys.argv[1])
