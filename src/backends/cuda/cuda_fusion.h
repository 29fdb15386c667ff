#pragma once
// Fusion: which of a tape's ops run as one launch (a step). cuda_fusion.cpp runs the passes; each rule is on
// the descriptor of the op kind it is about (ops/); the tape as a whole is described at the top of
// cuda_tape_runner.cpp.
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "backends/cuda/cuda_tape.h"

namespace tf::cuda_internal {

// Ops fused into one unit: one kernel launch covers them (an attend's step launches its attention too).
struct Step {
  std::vector<int> ops;   // the ops this launch covers (first is the leader)
  enum { Single, AddNorm, LinearGroup, SwigluGroup, RopeAttend } type = Single;
  int swiglu_op = -1;
  int norm_step = -1;  // a linear group: the (add +) rms_norm step it computes in its prologue
  bool dead = false;   // fused into a later step
  // An (add +) rms_norm step that writes the next step's x terms for the integer matmul instead of its
  // normed rows (rms_norm_imma_prepare), or a decode attention step that writes them besides its output
  // (DecodeAttnArgs::prepare_x), and that linear group (which then skips its own prepare launch).
  // A SwiGLU group may also prepare the next linear group's terms (the down projection: its kernel's
  // swiglu_prepare); those go to the second scratch (x_in_alt), since the group reads its own from the first.
  bool prepares_next = false;
  bool x_prepared = false;
  bool x_in_alt = false;
};

struct Fusion {
  std::vector<Step> steps;                // in tape order of their leaders
  std::vector<int> step_index;            // op -> the step that runs it
  std::vector<int> absorbed_by;           // op -> the leader whose step absorbed it (-1: none)
  std::vector<std::vector<int>> readers;  // op -> the ops that read its output, in tape order
};

// The fusion passes' working state: fuse() runs the passes, the ops' rules (OpDescriptor's fusion functions)
// read and change it.
struct FusionState {
  FusionState(const std::vector<Op>& ops, const std::vector<char>& esc, bool decode);
  const std::vector<Op>& ops;
  const std::vector<char>& esc;                  // as for fuse()
  bool decode;                                   // as for fuse()
  std::unordered_map<const Act*, int> producer;  // the op that produces each activation of the tape
  std::vector<std::vector<int>> readers;         // op -> the ops that read its output, in tape order
  // Passes 1 and 2: who leads a step, and each leader's step so far (no ops yet: a step of its own).
  std::vector<int> absorbed_by;  // op -> the op whose step runs it (-1: none)
  std::vector<Step> step_of_leader;
  std::vector<bool> is_leader;
  // Passes 3 and 4: the steps, in tape order of their leaders.
  std::vector<Step> steps;
  std::vector<int> step_index;  // op -> the step that runs it
  // The op of this tape that produces `a` (-1: none).
  int prod(const ActP& a) const {
    if (!a) return -1;
    auto it = producer.find(a.get());
    return it == producer.end() ? -1 : it->second;
  }
};

// `esc[i]`: op i's output is still held by the caller after the tape. `decode`: every op has at most
// cuda::kMaxDecodeRows rows. `fuse_norm`, `fuse_norm_max`: whether, and up to how many rows x cols, an
// rms_norm moves into the decode linear group that reads it (TapeRunner's settings).
Fusion fuse(const std::vector<Op>& ops, const std::vector<char>& esc, bool decode, bool fuse_norm,
            std::int64_t fuse_norm_max);

}  // namespace tf::cuda_internal
