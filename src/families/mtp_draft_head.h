#pragma once
// The model's MTP head as the engine's DraftHead: the head block (blocks/mtp_head.h) between the decoder's
// own embedding and output projection, over a per-stream KV cache of one layer (a StreamState, so it
// truncates like the stream's own caches).
#include "backends/backend.h"
#include "blocks/mtp_head.h"
#include "families/decoder_forward.h"
#include "families/model.h"

namespace tf {

class MtpDraftHead final : public DraftHead {
 public:
  // `w` (embedding and output projection) must outlive the head.
  MtpDraftHead(Backend& backend, const DecoderWeights& w, MtpHead head);

  std::unique_ptr<SequenceState> new_state() const override;
  std::size_t state_bytes_per_token() const override;
  Rows forward(SequenceState& state, std::span<const std::int32_t> tokens, std::span<const float> hidden,
               std::int64_t rows) override;

 private:
  Backend& backend_;
  const DecoderWeights& w_;
  MtpHead head_;
};

}  // namespace tf
