#pragma once
// The Mamba-2 selective scan of one stream on the CPU (families-and-formats §1.4), one position after another.
// A position's arithmetic depends only on its inputs and the state before it, never on how many positions
// share the call, so prefill, decode and verify rows give the same bits, and a rolled-back window replays to
// exactly the state serial decoding reaches. Prefill runs the same recurrence row by row (no chunked SSD form):
// slower on long prompts, but the prompt cache and drafts need nothing else.
#include <cstdint>

#include "backends/backend.h"

namespace tf {

// A layer's state: conv window [conv_kernel - 1, conv_channels] (oldest input first), then the SSM state
// [heads, head_dim, state_size].
inline std::int64_t mamba2_conv_floats(const Mamba2Spec& s) { return (s.conv_kernel - 1) * s.conv_channels(); }
inline std::int64_t mamba2_state_floats(const Mamba2Spec& s) {
  return mamba2_conv_floats(s) + s.inner() * s.state_size;
}

// Per-layer weights, float32: conv [conv_channels, conv_kernel], conv_bias [conv_channels] or null, a_log,
// dt_bias and d [heads].
struct Mamba2Weights {
  const float* conv = nullptr;
  const float* conv_bias = nullptr;
  const float* a_log = nullptr;
  const float* dt_bias = nullptr;
  const float* d = nullptr;
};

// Runs `rows` positions: xbc [rows, conv_channels] (before the conv), dt [rows, heads]; out [rows, inner]. The
// state before the first row is read from state_in and the state after the last row left in state_out (the
// same buffer: in place).
void mamba2_rows(const float* xbc, const float* dt, std::int64_t rows, const Mamba2Weights& w, const Mamba2Spec& spec,
                 const float* state_in, float* state_out, float* out);

}  // namespace tf
