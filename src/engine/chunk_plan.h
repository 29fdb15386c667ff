#pragma once
// Where prefill cuts a prompt into chunks (ARCHITECTURE §4, prompt caching). Prefill chunks longer than the
// backend's row-invariant windows take paths (BLAS, fused attention) whose bits depend on the chunk's extent,
// so a state restored at position p continues exactly as a fresh prefill only if the fresh prefill also cut
// at p. The plan therefore cuts at every message start (the chat template's message-opening token, found
// from its generation prompt) and otherwise every `chunk` tokens after the previous cut: each cut depends
// only on the tokens before it, so two prompts sharing a prefix share the plan's cuts inside that prefix,
// and fresh and resumed requests run the same chunks.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tf {

struct ChunkPlanRule {
  std::int64_t chunk = 512;         // the family's chunk length
  std::int32_t message_start = -1;  // the token that opens a message (-1: none known, fixed chunks only)
  std::string identity() const;     // for snapshot headers: a plan of another rule cuts elsewhere
};

struct ChunkPlan {
  std::vector<std::int64_t> ends;            // each chunk's end, ascending; the last is the prompt's length
  std::vector<std::int64_t> message_starts;  // positions of message starts in (0, n), ascending (all are in ends)
};

ChunkPlan plan_chunks(std::span<const std::int32_t> tokens, const ChunkPlanRule& rule);

}  // namespace tf
