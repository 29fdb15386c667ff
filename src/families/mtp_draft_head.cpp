#include "families/mtp_draft_head.h"

#include <stdexcept>

#include "blocks/host_row_log.h"
#include "families/stream_state.h"

namespace tf {

MtpDraftHead::MtpDraftHead(Backend& backend, const DecoderWeights& w, MtpHead head)
    : backend_(backend), w_(w), head_(std::move(head)) {
  // The head's state is a KV cache and host rows (latent attention), both truncated to any length: a recurrent
  // layer would need its own rollback (no family has one).
  for (const auto& l : head_.layers)
    if (l.recurrent()) throw std::invalid_argument("MtpDraftHead: an MTP head with a recurrent layer");
  if (head_.attention_layers() == 0 && head_.host_row_layers().empty())
    throw std::invalid_argument("MtpDraftHead: an MTP head without attention");
}

std::unique_ptr<SequenceState> MtpDraftHead::new_state() const {
  const AttentionSpec s = head_.kv_shape();
  const auto rows = head_.host_row_layers();
  return std::make_unique<StreamState>(
      head_.attention_layers() > 0 ? backend_.new_kv_cache(head_.attention_layers(), s.kv_heads, s.head_dim) : nullptr,
      nullptr, nullptr, rows.empty() ? nullptr : std::make_unique<HostRowLog>(rows, 1));
}

std::size_t MtpDraftHead::state_bytes_per_token() const {
  const AttentionSpec s = head_.kv_shape();
  std::size_t n = 2 * static_cast<std::size_t>(head_.attention_layers()) * static_cast<std::size_t>(s.kv_heads) *
                  static_cast<std::size_t>(s.head_dim) * 4;                                  // float32 keys and values
  for (const auto& l : head_.host_row_layers()) n += 4 * static_cast<std::size_t>(l.width);  // float32 rows
  return n;
}

DraftHead::Rows MtpDraftHead::forward(SequenceState& state, std::span<const std::int32_t> tokens,
                                      std::span<const float> hidden, std::int64_t rows) {
  const auto n = static_cast<std::int64_t>(tokens.size());
  const std::int64_t width = w_.embed.cols;
  if (n == 0 || static_cast<std::int64_t>(hidden.size()) != n * width || rows < 1 || rows > n)
    throw std::invalid_argument("MtpDraftHead::forward: rows and hidden rows disagree");
  auto& st = dynamic_cast<StreamState&>(state);
  StreamRows run;
  run.cache = st.kv();
  run.host_rows = st.host_rows();
  run.start = st.length();
  run.rows = n;
  run.tokens = tokens;
  const Tensor out = head_.forward(backend_, backend_.embed(w_.embed, tokens), backend_.from_host(hidden, n, width),
                                   std::span<const StreamRows>(&run, 1));
  const Tensor last = backend_.last_rows(out, rows);
  Rows r;
  r.logits = backend_.to_host(output_logits(backend_, w_, last));
  r.hidden = backend_.to_host(last);
  return r;
}

}  // namespace tf
