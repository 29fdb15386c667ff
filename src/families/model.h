#pragma once
// The contract between the engine and a model family. A family reads its checkpoint, uploads weights to a
// backend and runs forward passes over per-stream sequence state; the engine never sees tensors.
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/state_image.h"
#include "backends/token_choice.h"

namespace tf {

class Backend;
class StreamImages;

struct ModelInfo {
  std::string family;        // our folder under src/families/
  std::string architecture;  // GGUF general.architecture / config.json model_type
  std::int64_t vocab = 0;
  std::int64_t context = 0;                // the checkpoint's trained context length
  std::size_t weight_bytes = 0;            // as uploaded to the backend
  std::size_t mapped_bytes = 0;            // read in place from the mapped checkpoint as tokens need them (n-gram
                                           // tables): the page cache holds what the text touches, not the budget
  std::size_t state_bytes_per_token = 0;   // cache growth per position of one stream
  std::size_t state_bytes_per_stream = 0;  // what one stream holds whatever its length (recurrent layers)
  std::int64_t prefill_chunk = 512;        // the family's fixed chunk grid for prefill (ARCHITECTURE §4)
  std::int64_t hidden = 0;                 // the width of the hidden rows a forward can return (ForwardPart::hidden)
};

// What one stream carries between forward passes: KV caches for attention layers, recurrent state for
// linear-attention layers. Truncation rolls back to an earlier length: to any position from the start of the
// last forward call on (a verify window's rejected drafts), exactly.
class SequenceState {
 public:
  virtual ~SequenceState() = default;
  virtual std::int64_t length() const = 0;
  virtual void truncate(std::int64_t length) = 0;
  virtual std::size_t bytes() const = 0;
  // The whole state as bytes, and back: a restored state continues exactly as the saved one would have.
  virtual std::vector<std::uint8_t> snapshot() const = 0;
  virtual void restore(std::span<const std::uint8_t> bytes) = 0;
  // The same kept where the backend computes (backends/state_image.h): what the prompt cache retains.
  virtual std::shared_ptr<const StateImage> image() const { return std::make_shared<HostStateImage>(snapshot()); }
  virtual void restore_image(const StateImage& image) { restore_from_bytes(*this, image); }
  // The images of this stream's prompt (families/stream_images.h): their embeddings replace the placeholder
  // rows a forward reaches, and every row's rotary position follows them (M-RoPE). Null: text only.
  void set_images(std::shared_ptr<const StreamImages> images) { images_ = std::move(images); }
  const std::shared_ptr<const StreamImages>& images() const { return images_; }

 private:
  std::shared_ptr<const StreamImages> images_;
};

// One stream's part of a shared round: `tokens` at positions state.length() .., appended to the state, and
// every row's result.
struct ForwardPart {
  SequenceState* state = nullptr;
  std::span<const std::int32_t> tokens;
  // Each row's chosen token instead of its logits: its greedy token (as forward_greedy) at temperature 0,
  // else its keyed sample under `choice` (as forward_sampled).
  bool ids = false;
  // With ids and one token: the stream's next round will be one such token too, the one this round
  // finds. A family may queue that round now, fed the token on the device (families/greedy_ahead.h), when
  // it runs the part alone; its state never counts the queued round (length(), truncate(), other forwards
  // drop it first), so the results are those of plain rounds.
  bool ahead = false;
  // Also return each row's hidden state after the final norm (what the output projection reads): a draft
  // head (MTP) proposes from it. Only asked for when such a head drafts, so other rounds copy nothing more;
  // with logits only (not ids).
  bool hidden = false;
  // With ids: how each row's token is chosen; its position is ignored, row i's token being the one at
  // state.length() + 1 + i (the state's length before this forward).
  TokenChoice choice;
};

// The result of a part's rows: [rows, vocab] logits, or with greedy ids [rows] token ids; with
// ForwardPart::hidden also [rows, info().hidden] hidden rows.
struct ForwardResult {
  std::vector<float> logits;
  std::vector<std::int32_t> ids;
  std::vector<float> hidden;
};

// A head that predicts the token after next from the model's hidden rows (multi-token prediction, MTP). It
// keeps its own per-stream state (an attention layer's KV cache): row t pairs the model's hidden row of
// position t with the token at t + 1 and runs at position t, so the head's state trails the stream's by one.
class DraftHead {
 public:
  virtual ~DraftHead() = default;
  virtual std::unique_ptr<SequenceState> new_state() const = 0;
  virtual std::size_t state_bytes_per_token() const = 0;
  struct Rows {
    std::vector<float> logits;  // [rows, vocab]
    std::vector<float> hidden;  // [rows, hidden]: the head's output after its final norm, to chain a next step
  };
  // Runs rows at positions state.length() ..: `hidden` [n, info().hidden] (the model's rows, or a chained
  // step's) with `tokens` [n] (each the token after its row's position), appending them to the state, and
  // returns the last `rows` rows.
  virtual Rows forward(SequenceState& state, std::span<const std::int32_t> tokens, std::span<const float> hidden,
                       std::int64_t rows) = 0;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelInfo& info() const = 0;
  virtual std::unique_ptr<SequenceState> new_state() const = 0;
  // Runs `tokens` at positions state.length() .. + n - 1, appending them to the state, and returns the
  // logits of the last `logit_rows` positions as [logit_rows, vocab] float32, row-major.
  virtual std::vector<float> forward(SequenceState& state, std::span<const std::int32_t> tokens,
                                     std::int64_t logit_rows) = 0;
  // forward, and every row's hidden state after the final norm into `hidden` ([n, info().hidden]); only
  // where draft_head() is set.
  virtual std::vector<float> forward_hidden(SequenceState& /*state*/, std::span<const std::int32_t> /*tokens*/,
                                            std::int64_t /*logit_rows*/, std::vector<float>& /*hidden*/) {
    throw std::logic_error("forward_hidden: this model has no draft head");
  }
  // Prompt scoring: forward with logit_rows = 1 (the returned row has exactly forward's bits, so the reply
  // that follows samples as without scoring), and every row's logits into `every_row` ([n, vocab]; the output
  // projection over many rows may take another kernel, so its last row may differ from the returned one in
  // the last bits). With `hidden`, also forward_hidden's rows. The default runs forward (or forward_hidden)
  // over every row: right for models whose rows do not depend on how many logits rows are asked.
  virtual std::vector<float> forward_scored(SequenceState& state, std::span<const std::int32_t> tokens,
                                            std::vector<float>& every_row, std::vector<float>* hidden);
  // The checkpoint's own draft head (MTP), or null.
  virtual DraftHead* draft_head() { return nullptr; }
  // Greedy decoding without the logits: forward's run, then each of the last `rows` positions' greedy
  // token (the engine's greedy_token of that logits row, bit for bit), found on the backend so that only
  // ids reach the host. Only where greedy_on_backend().
  virtual bool greedy_on_backend() const { return false; }
  // The same for keyed sampling: forward's run, then each of the last `rows` positions' token as
  // sample_token chooses it under `choice` (row i's at choice.position + i), found on the backend.
  virtual bool samples_on_backend() const { return false; }
  virtual std::vector<std::int32_t> forward_sampled(SequenceState& /*state*/, std::span<const std::int32_t> /*tokens*/,
                                                    std::int64_t /*rows*/, const TokenChoice& /*choice*/) {
    throw std::logic_error("forward_sampled: this model samples on the host");
  }
  virtual std::vector<std::int32_t> forward_greedy(SequenceState& /*state*/, std::span<const std::int32_t> /*tokens*/,
                                                   std::int64_t /*rows*/) {
    throw std::logic_error("forward_greedy: this model samples on the host");
  }
  // The most rows a shared round may hold (0: the family runs one stream per forward pass).
  virtual std::int64_t shared_round_rows() const { return 0; }
  // Several streams' rounds: with shared_round_rows() >= the parts' rows, one forward pass over all of them,
  // each part's rows computed as in a forward of that part alone (the backend's row invariance, which the
  // engine's load-time row check verifies); otherwise, and by default, one forward per part.
  virtual std::vector<ForwardResult> forward_parts(std::span<const ForwardPart> parts);
};

// Opens a GGUF file or a checkpoint directory and builds the family that serves its architecture.
// Throws CheckpointError for unreadable or unsupported checkpoints.
std::unique_ptr<Model> load_model(const std::string& path, Backend& backend);

}  // namespace tf
