#pragma once
// Causal attention for a few query rows over a KV cache, computed per (row, head) with arithmetic that
// does not depend on how many rows are in the call: decode (1 row) and a verify window (K rows) give each
// row the same bits. Used on the CPU for decode and verification; prefill keeps MLX's fused path.
#include <cstdint>

namespace tf {

struct AttentionShape {
  int heads = 0, kv_heads = 0, head_dim = 0;
  float scale = 1.0f;
  int window = 0;  // > 0: a row at position p attends p - window + 1 .. p (sliding-window attention)
};

// q: [rows, heads * head_dim] for absolute positions start .. start + rows - 1.
// keys/values: [kv_heads, capacity, head_dim] (row stride head_dim, head stride capacity * head_dim),
//   holding positions held_from .. start + rows - 1 (a sliding window's store keeps only the recent ones:
//   held_from at most the first position the first row attends).
// out: [rows, heads * head_dim].
void invariant_attention(const float* q, std::int64_t rows, std::int64_t start, const float* keys, const float* values,
                         std::int64_t capacity, const AttentionShape& shape, float* out, std::int64_t held_from = 0);

}  // namespace tf
