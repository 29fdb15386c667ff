#pragma once
// One descriptor per CUDA op kind: everything the code that records and runs tapes needs to know about a kind
// (its shape rule, dyn values, signature word, buffers, fusion rules, arena facts, launches), in one file of
// this folder per kind, found through op_descriptor(kind). The generic code (cuda_backend.cpp,
// cuda_tape_runner.cpp, cuda_fusion.cpp, cuda_arena_plan.cpp, cuda_launches.cpp) asks the descriptor instead
// of switching on the kind. A null function means the kind has nothing to do at that point.
//
// A fused step (cuda_fusion.h, Step) is launched, and planned, by the descriptor of its first op (the
// leader): an add + rms_norm by RmsNorm's, a linear or SwiGLU group by Linear's, a rope + attend by Attend's.
// A rule about a pair of kinds lives on the kind it belongs to, as its comment says.
#include <cstdint>
#include <vector>

#include "backends/cuda/cuda_tape.h"

namespace tf::cuda_internal {

struct Step;
struct FusionState;
struct LaunchContext;
struct LaunchBufferNeeds;
struct DynRefs;
class DynWriter;

struct OpShape {
  std::int64_t rows = 0, cols = 0;
};

// Each file fills in what its kind has (designated initializers); the rest stays null.
struct OpDescriptor {
  Kind kind = Kind::Count;
  const char* name = nullptr;

  // ---- recording (cuda_backend.cpp) ----
  // The output's shape from the op's inputs and fields; null: the recording call gives it (Upload).
  OpShape (*out_shape)(const Op& op) = nullptr;

  // ---- running (cuda_tape_runner.cpp) ----
  // Puts the op's dyn values (what changes from step to step) into the dyn block and notes where in `ref`.
  void (*put_dyn)(const Op& op, DynWriter& dyn, DynRefs& ref) = nullptr;
  // Copies dyn values that are on the device already over their placeholders in the device block
  // (`dyn_dev`), after the block's copy on `stream`.
  void (*copy_device_dyn)(const Op& op, const DynRefs& ref, void* dyn_dev, cudaStream_t stream) = nullptr;
  // The tape signature's one word that the op computes rather than holds: every Op field is hashed already,
  // this is for a launch parameter derived from the state its fields point at. Null: 0.
  std::uint64_t (*signature_word)(const Op& op) = nullptr;
  // Adds what the op's launches need of the runner's buffers.
  void (*need_buffers)(const Op& op, LaunchBufferNeeds& need) = nullptr;

  // ---- fusion (cuda_fusion.cpp), in the order the passes call them ----
  // Pass 1, every op in tape order: fuses op i with the ops that produce its inputs.
  void (*fuse_producers)(FusionState& f, int i) = nullptr;
  // Pass 2, every op still alone in tape order: groups op i with later ops of the same kind.
  void (*fuse_siblings)(FusionState& f, int i) = nullptr;
  // Pass 3 (decode tapes with norm fusion on), every step in order, by its leader: moves step sn into the
  // step that reads it (its launch computes sn's rows).
  void (*fuse_into_reader)(FusionState& f, int sn, std::int64_t fuse_norm_max) = nullptr;
  // Pass 4 (decode tapes), every step but the last in order, by its leader: lets step s write the x terms of
  // step s + 1's integer matmul (Step::prepares_next, Step::x_prepared).
  void (*prepare_next)(FusionState& f, int s) = nullptr;

  // ---- memory (cuda_arena_plan.cpp) ----
  // Whether no launch has to write the output when nobody reads it (`absorbed`: the op's step is another
  // op's). Null: it is always written.
  bool (*output_optional)(const Op& op, bool absorbed) = nullptr;
  // Marks the outputs of the step it leads that are not written (needed[op] = false) beyond a dead step's.
  void (*step_outputs)(const std::vector<Op>& ops, const Step& st, std::vector<bool>& needed) = nullptr;

  // ---- launching (cuda_launches.cpp) ----
  // Appends the launches of step `st`, which this op leads (never null).
  void (*launch)(const LaunchContext& c, const Step& st) = nullptr;
};

// The descriptor of `kind` (Kind::Count has none).
const OpDescriptor& op_descriptor(Kind kind);

// The descriptors, one in each file of this folder, in Kind's order in op_descriptor.cpp's table.
extern const OpDescriptor embed_op, rms_norm_op, linear_op, add_op, swiglu_op, rope_op, attend_op, last_rows_op,
    upload_op, rms_norm_heads_op, head_columns_op, sigmoid_gate_op, concat_columns_op, gdn_conv_op, gdn_recurrence_op,
    all_reduce_op, replace_rows_op;

}  // namespace tf::cuda_internal
