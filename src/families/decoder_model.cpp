#include "families/decoder_model.h"

#include <algorithm>
#include <stdexcept>

#include "blocks/host_row_log.h"
#include "blocks/weight_source.h"
#include "families/mtp_draft_head.h"
#include "families/stream_state.h"

namespace tf {

DecoderModel::DecoderModel(Backend& backend, ModelInfo info, DecoderWeights weights, GatedDeltaSpec recurrent,
                           std::optional<MtpHead> mtp, Mamba2Spec mamba)
    : backend_(backend), info_(std::move(info)), w_(std::move(weights)), recurrent_(recurrent), mamba_(mamba) {
  int gdn = 0, ssm = 0;
  for (const auto& l : w_.layers) {
    gdn += std::holds_alternative<GatedDeltaBlock>(l.mixer) || std::holds_alternative<KdaBlock>(l.mixer) ? 1 : 0;
    ssm += std::holds_alternative<Mamba2Block>(l.mixer) ? 1 : 0;
  }
  if (gdn > 0 && ssm > 0) throw std::invalid_argument("DecoderModel: Gated DeltaNet and Mamba-2 layers in one model");
  mamba_layers_ = ssm > 0;
  info_.hidden = w_.embed.cols;
  if (mtp) draft_head_ = std::make_unique<MtpDraftHead>(backend_, w_, std::move(*mtp));
  // One head shape per attention store: the layers attending everything, and those with a sliding window.
  bool seen[2] = {false, false};
  for (const auto& l : w_.layers)
    if (const auto* at = std::get_if<AttentionBlock>(&l.mixer)) {
      const bool windowed = at->cfg.spec.window > 0;
      AttentionSpec& shape = windowed ? window_shape_ : kv_shape_;
      if (seen[windowed] && (shape.kv_heads != at->cfg.spec.kv_heads || shape.head_dim != at->cfg.spec.head_dim ||
                             shape.window != at->cfg.spec.window))
        throw std::invalid_argument("DecoderModel: attention layers of one store with different key/value shapes");
      shape = at->cfg.spec;
      seen[windowed] = true;
    }
  // float32 keys and values a position of the full-attention layers; the window layers' store is a fixed size.
  info_.state_bytes_per_token = 4 * 2 * static_cast<std::size_t>(w_.attention_layers()) *
                                static_cast<std::size_t>(kv_shape_.kv_heads * kv_shape_.head_dim);
  // Two copies of each recurrent layer's state (the one before the last window is kept for rollback).
  info_.state_bytes_per_stream = 2 * static_cast<std::size_t>(w_.recurrent_layers()) *
                                 (mamba_layers_ ? mamba_.layer_bytes() : recurrent_.layer_bytes());
  // Host rows, float32: sparse attention's keys, values and index keys at every position; the n-gram layers'
  // windows at their reach plus a prefill chunk's rows, whatever the length (blocks/host_row_log.h).
  for (const auto& l : w_.host_row_layers())
    if (l.bounded())
      info_.state_bytes_per_stream += HostRowLog::steady_bytes(l, info_.prefill_chunk);
    else
      info_.state_bytes_per_token += 4 * static_cast<std::size_t>(l.width);
  if (w_.window_layers() > 0)
    info_.state_bytes_per_stream += backend_.window_cache_bytes(
        w_.window_layers(), window_shape_.kv_heads, window_shape_.head_dim, window_shape_.window, info_.prefill_chunk);
}

DecoderModel::~DecoderModel() = default;

std::unique_ptr<SequenceState> DecoderModel::new_state() const {
  const int attn = w_.attention_layers(), rec = w_.recurrent_layers(), windowed = w_.window_layers();
  return std::make_unique<StreamState>(
      attn > 0 ? backend_.new_kv_cache(attn, kv_shape_.kv_heads, kv_shape_.head_dim) : nullptr,
      rec == 0        ? nullptr
      : mamba_layers_ ? backend_.new_mamba2_state(rec, mamba_)
                      : backend_.new_recurrent_state(rec, recurrent_),
      windowed > 0 ? backend_.new_window_cache(windowed, window_shape_.kv_heads, window_shape_.head_dim,
                                               window_shape_.window, info_.prefill_chunk)
                   : nullptr,
      w_.host_row_layers().empty() ? nullptr : std::make_unique<HostRowLog>(w_.host_row_layers(), info_.prefill_chunk));
}

DecoderPart DecoderModel::part_of(SequenceState& state, std::span<const std::int32_t> tokens) const {
  auto& st = dynamic_cast<StreamState&>(state);
  return {st.kv(), st.recurrent(), tokens, nullptr, st.window(), st.host_rows(), state.images().get()};
}

std::vector<float> DecoderModel::forward(SequenceState& state, std::span<const std::int32_t> tokens,
                                         std::int64_t logit_rows) {
  return backend_.to_host(logits(state, tokens, logit_rows));
}

std::vector<float> DecoderModel::forward_hidden(SequenceState& state, std::span<const std::int32_t> tokens,
                                                std::int64_t logit_rows, std::vector<float>& hidden) {
  const DecoderPart part = part_of(state, tokens);
  Tensor rows;
  const Tensor logits = decoder_logits(backend_, w_, std::span<const DecoderPart>(&part, 1), logit_rows, &rows);
  auto out = backend_.to_host(logits);
  hidden = backend_.to_host(rows);
  return out;
}

std::vector<float> DecoderModel::forward_scored(SequenceState& state, std::span<const std::int32_t> tokens,
                                                std::vector<float>& every_row, std::vector<float>* hidden) {
  // The decode row through the one-row projection, exactly as forward(..., 1); every row's logits from the
  // normed hidden rows of the same pass (the state is written once).
  const DecoderPart part = part_of(state, tokens);
  Tensor rows;
  const Tensor last = decoder_logits(backend_, w_, std::span<const DecoderPart>(&part, 1), 1, &rows);
  const Tensor all = output_logits(backend_, w_, rows);  // recorded before any result is read: one pass
  auto out = backend_.to_host(last);
  every_row = backend_.to_host(all);
  if (hidden != nullptr) *hidden = backend_.to_host(rows);
  return out;
}

std::vector<std::int32_t> DecoderModel::forward_greedy(SequenceState& state, std::span<const std::int32_t> tokens,
                                                       std::int64_t rows) {
  return backend_.argmax_rows(logits(state, tokens, rows));
}

std::vector<std::int32_t> DecoderModel::forward_sampled(SequenceState& state, std::span<const std::int32_t> tokens,
                                                        std::int64_t rows, const TokenChoice& choice) {
  return choose_rows(logits(state, tokens, rows), rows, choice);
}

std::vector<std::int32_t> DecoderModel::choose_rows(const Tensor& logits, std::int64_t rows,
                                                    const TokenChoice& choice) {
  if (choice.temperature <= 0.0f) return backend_.argmax_rows(logits);
  std::vector<TokenChoice> each(static_cast<std::size_t>(rows), choice);
  for (std::size_t i = 0; i < each.size(); ++i) each[i].position += static_cast<std::int64_t>(i);
  return backend_.sample_rows_async(logits, each)->get();
}

std::vector<ForwardResult> DecoderModel::forward_parts(std::span<const ForwardPart> parts) {
  const auto on_backend = [&](const ForwardPart& p) {
    return p.choice.temperature <= 0.0f ? greedy_on_backend() : samples_on_backend();
  };
  // Before anything asks a state for its stores (StreamState::kv() drops a queued step).
  if (parts.size() == 1 && parts[0].ids && parts[0].tokens.size() == 1 && backend_.has_device_ids() &&
      w_.recurrent_layers() == 0 && w_.window_layers() == 0 && w_.host_row_layers().empty() && on_backend(parts[0]) &&
      parts[0].state->images() == nullptr) {  // GreedyAhead's rounds rotate by row: no M-RoPE positions
    TokenChoice c = parts[0].choice;
    c.position = parts[0].state->length() + 1;
    return {one_token_round(*parts[0].state, parts[0].tokens[0], parts[0].ahead, c)};
  }
  std::vector<DecoderPart> dp;
  std::vector<TokenChoice> choices;  // one a row, where a part asks for sampled ids
  std::int64_t rows = 0;
  bool any_ids = false, any_logits = false, any_sampled = false, all_on_backend = true;
  for (const auto& p : parts) {
    const auto n = static_cast<std::int64_t>(p.tokens.size());
    TokenChoice c = p.choice;
    c.position = p.state->length() + 1;  // before part_of: its length before this forward
    if (!p.ids) c = TokenChoice{};
    for (std::int64_t i = 0; i < n; ++i, ++c.position) choices.push_back(c);
    dp.push_back(part_of(*p.state, p.tokens));
    rows += n;
    (p.ids ? any_ids : any_logits) = true;
    any_sampled = any_sampled || (p.ids && p.choice.temperature > 0.0f);
    all_on_backend = all_on_backend && (!p.ids || on_backend(p));
  }
  if (parts.size() < 2 || rows > shared_round_rows() || !all_on_backend) return Model::forward_parts(parts);
  for (std::size_t i = 0; i < parts.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (parts[i].state == parts[j].state) throw std::invalid_argument("forward_parts: one stream twice in a round");
  const bool any_hidden = std::any_of(parts.begin(), parts.end(), [](const ForwardPart& p) { return p.hidden; });
  Tensor hidden_rows;
  const Tensor all = decoder_logits(backend_, w_, dp, rows, any_hidden ? &hidden_rows : nullptr);
  std::vector<std::int32_t> ids;
  std::vector<float> logits, hidden;
  if (any_sampled)
    ids = backend_.sample_rows_async(all, choices)->get();  // greedy rows among them as greedy_token
  else if (any_ids)
    ids = backend_.argmax_rows(all);
  if (any_logits) logits = backend_.to_host(all);
  if (any_hidden) hidden = backend_.to_host(hidden_rows);
  const auto width = static_cast<std::size_t>(info_.hidden);
  const auto vocab = static_cast<std::size_t>(info_.vocab);
  std::vector<ForwardResult> out(parts.size());
  std::size_t row = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::size_t n = parts[i].tokens.size();
    if (parts[i].ids)
      out[i].ids.assign(ids.begin() + static_cast<std::ptrdiff_t>(row),
                        ids.begin() + static_cast<std::ptrdiff_t>(row + n));
    else
      out[i].logits.assign(logits.begin() + static_cast<std::ptrdiff_t>(row * vocab),
                           logits.begin() + static_cast<std::ptrdiff_t>((row + n) * vocab));
    if (parts[i].hidden)
      out[i].hidden.assign(hidden.begin() + static_cast<std::ptrdiff_t>(row * width),
                           hidden.begin() + static_cast<std::ptrdiff_t>((row + n) * width));
    row += n;
  }
  return out;
}

// One token through GreedyAhead: a step queued by the last round is used when its token is this one, and
// with `queue_next` the next step is queued before the token comes back.
ForwardResult DecoderModel::one_token_round(SequenceState& state, std::int32_t token, bool queue_next,
                                            const TokenChoice& choice) {
  auto& st = dynamic_cast<StreamState&>(state);
  const auto record = [&](std::span<const std::int32_t> tokens, const std::shared_ptr<DeviceIds>& fed) {
    const DecoderPart part{&st.raw_kv(), nullptr, tokens, fed};
    return decoder_logits(backend_, w_, std::span<const DecoderPart>(&part, 1), 1);
  };
  ForwardResult r;
  r.ids.push_back(st.greedy_round(backend_, token, queue_next, record, choice));
  return r;
}

Tensor DecoderModel::logits(SequenceState& state, std::span<const std::int32_t> tokens, std::int64_t logit_rows) {
  const DecoderPart part = part_of(state, tokens);
  return decoder_logits(backend_, w_, std::span<const DecoderPart>(&part, 1), logit_rows);
}

}  // namespace tf
