#include "backends/cuda/cuda_arena_plan.h"

#include <algorithm>

#include "backends/cuda/ops/op_descriptor.h"

namespace tf::cuda_internal {

ArenaPlan plan_arena(const std::vector<Op>& ops, const std::vector<char>& esc, const Fusion& fusion) {
  // 2. memory: which outputs are needed, and where they live.
  const int n_ops = static_cast<int>(ops.size());
  const std::vector<Step>& steps = fusion.steps;
  const std::vector<int>& step_index = fusion.step_index;
  const std::vector<int>& absorbed_by = fusion.absorbed_by;
  const std::vector<std::vector<int>>& readers = fusion.readers;
  const int n_steps = static_cast<int>(steps.size());
  std::vector<int> last_use(static_cast<std::size_t>(n_ops), -1);
  for (int i = 0; i < n_ops; ++i)
    for (int r : readers[static_cast<std::size_t>(i)]) {
      // A reader absorbed into its producer's own step reads nothing from memory (the swiglu epilogue).
      if (step_index[static_cast<std::size_t>(r)] == step_index[static_cast<std::size_t>(i)]) continue;
      last_use[static_cast<std::size_t>(i)] = std::max(last_use[static_cast<std::size_t>(i)], step_index[static_cast<std::size_t>(r)]);
    }
  std::vector<bool> escapes(static_cast<std::size_t>(n_ops), false), needed(static_cast<std::size_t>(n_ops), false);
  for (int i = 0; i < n_ops; ++i) {
    escapes[static_cast<std::size_t>(i)] = esc[static_cast<std::size_t>(i)] != 0;
    needed[static_cast<std::size_t>(i)] = escapes[static_cast<std::size_t>(i)] || last_use[static_cast<std::size_t>(i)] >= 0;
  }
  // Outputs that some kernel must write even when nobody reads them.
  for (int i = 0; i < n_ops; ++i) {
    const Op& op = ops[static_cast<std::size_t>(i)];
    const auto optional = op_descriptor(op.kind).output_optional;
    if (!(optional && optional(op, absorbed_by[static_cast<std::size_t>(i)] >= 0)))
      needed[static_cast<std::size_t>(i)] = true;
  }
  // A norm fused into a linear group (a dead step) is never written (its sum, when needed, is). The outputs a
  // fused step does not write are its leader's to say (the rules touch no op of another step).
  for (const Step& st : steps) {
    if (st.dead) needed[static_cast<std::size_t>(st.ops[0])] = false;
    if (auto unwritten = op_descriptor(ops[static_cast<std::size_t>(st.ops[0])].kind).step_outputs)
      unwritten(ops, st, needed);
  }
  // Arena plan: first fit over [def step, last use step] of non-escaping outputs.
  std::vector<std::size_t> offset(static_cast<std::size_t>(n_ops), 0);
  std::size_t arena_need = 0;
  {
    struct Block {
      std::size_t off, size;
    };
    std::vector<Block> live_free;  // free ranges, sorted by offset
    std::size_t top = 0;
    std::vector<std::vector<int>> frees_after(static_cast<std::size_t>(n_steps));
    std::vector<std::vector<int>> defs(static_cast<std::size_t>(n_steps));
    for (int i = 0; i < n_ops; ++i) {
      if (!needed[static_cast<std::size_t>(i)] || escapes[static_cast<std::size_t>(i)]) continue;
      const int d = step_index[static_cast<std::size_t>(i)];
      defs[static_cast<std::size_t>(d)].push_back(i);
      frees_after[static_cast<std::size_t>(std::max(d, last_use[static_cast<std::size_t>(i)]))].push_back(i);
    }
    auto release = [&](std::size_t off, std::size_t size) {
      live_free.push_back({off, size});
      std::sort(live_free.begin(), live_free.end(), [](const Block& x, const Block& y) { return x.off < y.off; });
      std::vector<Block> merged;
      for (const auto& b : live_free) {
        if (!merged.empty() && merged.back().off + merged.back().size == b.off) merged.back().size += b.size;
        else merged.push_back(b);
      }
      live_free = std::move(merged);
    };
    for (int s = 0; s < n_steps; ++s) {
      for (int i : defs[static_cast<std::size_t>(s)]) {
        const std::size_t size = ops[static_cast<std::size_t>(i)].out->bytes();
        bool placed = false;
        for (auto it = live_free.begin(); it != live_free.end(); ++it) {
          if (it->size >= size) {
            offset[static_cast<std::size_t>(i)] = it->off;
            it->off += size;
            it->size -= size;
            if (it->size == 0) live_free.erase(it);
            placed = true;
            break;
          }
        }
        if (!placed) {
          offset[static_cast<std::size_t>(i)] = top;
          top += size;
        }
      }
      for (int i : frees_after[static_cast<std::size_t>(s)]) release(offset[static_cast<std::size_t>(i)], ops[static_cast<std::size_t>(i)].out->bytes());
    }
    arena_need = top;
  }
  return {std::move(escapes), std::move(needed), std::move(offset), arena_need};
}

}  // namespace tf::cuda_internal
