#pragma once
// The process memory budget and what one request costs in it (ARCHITECTURE §5): the weights are held once;
// each admitted stream reserves its cache for every position it may reach (prompt plus completion), its
// fixed-size state (recurrent layers) and a prefill workspace, from admission until it finishes or is cancelled.
#include <cstddef>
#include <cstdint>
#include <string>

namespace tf {

struct MemoryPlan {
  std::size_t budget_bytes = 0;  // weights and streams together
  std::string budget_source;     // how the budget was found, for the startup report
  std::size_t weight_bytes = 0;
  std::size_t mapped_bytes = 0;  // weights read from the mapped file on demand (ModelInfo::mapped_bytes)
  std::size_t state_bytes_per_token = 0;
  std::size_t state_bytes_per_stream = 0;  // fixed per stream (recurrent layers), whatever its length
  std::size_t workspace_bytes = 0;         // per stream: activations of a prefill chunk and the logits of a round
  std::size_t prompt_cache_bytes = 0;      // retained prompt prefixes (--prompt-cache-gib), held beside the streams
  // --vision: the tower's weights and the workspace of one image's encode at the largest the limits allow (images
  // are encoded one at a time), held once; and, inside workspace_bytes, the embeddings of a request's visual
  // tokens at the limit (every stream may carry them).
  std::size_t vision_bytes = 0, vision_workspace_bytes = 0;
  std::size_t image_embedding_bytes = 0;

  // Bytes left for streams once the weights, the vision tower and the prompt cache are in.
  std::size_t stream_room() const {
    const std::size_t held = weight_bytes + vision_bytes + vision_workspace_bytes + prompt_cache_bytes;
    return budget_bytes > held ? budget_bytes - held : 0;
  }
  // What a stream reaching `tokens` positions reserves.
  std::size_t request_bytes(std::int64_t tokens) const;
  // The most positions one stream may reach when it runs alone (0: not even one).
  std::int64_t max_tokens_alone() const;
};

// The workspace estimate for a family's prefill chunk: the chunk's activations (a few times its cache
// growth) plus float32 logits for a verify window of `window_rows`.
std::size_t prefill_workspace_bytes(std::int64_t prefill_chunk, std::size_t state_bytes_per_token, std::int64_t vocab,
                                    int window_rows);

// TENSORFOLD_MEMORY_LIMIT_GB (GiB, a positive float) when set; throws std::runtime_error when it is set but
// not a positive number. 0 when unset.
std::size_t memory_limit_from_env();

}  // namespace tf
