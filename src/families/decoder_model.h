#pragma once
// The one Model every decoder family serves through (ARCHITECTURE §2): a family reads its config, builds a
// layer plan over the shared blocks (DecoderWeights) and hands it here; this class owns what all of them
// share: the per-stream state (StreamState: one store per state kind), forward passes of one stream or a
// shared round of several, greedy and sampled ids found on the backend, and such steps queued ahead.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "blocks/mtp_head.h"
#include "families/decoder_forward.h"
#include "families/model.h"

namespace tf {

class DecoderModel final : public Model {
 public:
  // `info` names the family and architecture and gives vocab and context; weight and state bytes are filled
  // in here. `recurrent` is the shape of the Gated DeltaNet layers, if any; `mtp` the checkpoint's MTP head;
  // `mamba` the shape of the Mamba-2 layers, if any (a model's recurrent layers are of one kind: one store).
  DecoderModel(Backend& backend, ModelInfo info, DecoderWeights weights, GatedDeltaSpec recurrent = {},
               std::optional<MtpHead> mtp = std::nullopt, Mamba2Spec mamba = {});
  ~DecoderModel() override;

  const ModelInfo& info() const override { return info_; }
  std::unique_ptr<SequenceState> new_state() const override;
  std::vector<float> forward(SequenceState& state, std::span<const std::int32_t> tokens,
                             std::int64_t logit_rows) override;
  std::vector<float> forward_hidden(SequenceState& state, std::span<const std::int32_t> tokens, std::int64_t logit_rows,
                                    std::vector<float>& hidden) override;
  std::vector<float> forward_scored(SequenceState& state, std::span<const std::int32_t> tokens,
                                    std::vector<float>& every_row, std::vector<float>* hidden) override;
  DraftHead* draft_head() override { return draft_head_.get(); }
  bool greedy_on_backend() const override { return backend_.has_argmax_rows(); }
  std::vector<std::int32_t> forward_greedy(SequenceState& state, std::span<const std::int32_t> tokens,
                                           std::int64_t rows) override;
  bool samples_on_backend() const override { return backend_.has_sample_rows(); }
  std::vector<std::int32_t> forward_sampled(SequenceState& state, std::span<const std::int32_t> tokens,
                                            std::int64_t rows, const TokenChoice& choice) override;
  std::int64_t shared_round_rows() const override { return backend_.invariant_rows(); }
  std::vector<ForwardResult> forward_parts(std::span<const ForwardPart> parts) override;

 private:
  ForwardResult one_token_round(SequenceState& state, std::int32_t token, bool queue_next, const TokenChoice& choice);
  // Each row's token under choice (row i's at choice.position + i): argmax_rows when greedy.
  std::vector<std::int32_t> choose_rows(const Tensor& logits, std::int64_t rows, const TokenChoice& choice);
  Tensor logits(SequenceState& state, std::span<const std::int32_t> tokens, std::int64_t logit_rows);
  DecoderPart part_of(SequenceState& state, std::span<const std::int32_t> tokens) const;

  Backend& backend_;
  ModelInfo info_;
  DecoderWeights w_;
  GatedDeltaSpec recurrent_;
  Mamba2Spec mamba_;
  bool mamba_layers_ = false;              // the recurrent layers are Mamba-2's (else Gated DeltaNet's)
  AttentionSpec kv_shape_;                 // of the layers attending every position (they share one)
  AttentionSpec window_shape_;             // of the sliding-window layers (they share one)
  std::unique_ptr<DraftHead> draft_head_;  // over w_'s embedding and output projection
};

}  // namespace tf
