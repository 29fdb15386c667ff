#pragma once
// Memory of a fused tape: which outputs some launch must write, and the arena offsets of those nobody holds
// after the tape (first fit over their live ranges, in steps). Outputs the caller holds (escapes) get pool
// memory instead (TapeRunner::run).
#include <cstddef>
#include <vector>

#include "backends/cuda/cuda_fusion.h"

namespace tf::cuda_internal {

struct ArenaPlan {
  std::vector<bool> escapes;        // op -> its output is held by the caller after the tape (pool memory)
  std::vector<bool> needed;         // op -> some launch writes its output
  std::vector<std::size_t> offset;  // op -> where its output lives in the arena (needed, not escaping)
  std::size_t arena_need = 0;       // the arena bytes the plan uses
};

// `esc` as for fuse(); `fusion` is fuse()'s result for the same tape.
ArenaPlan plan_arena(const std::vector<Op>& ops, const std::vector<char>& esc, const Fusion& fusion);

}  // namespace tf::cuda_internal
