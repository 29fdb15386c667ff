#include "families/stream_state.h"

#include <cstring>
#include <stdexcept>

namespace tf {

StreamState::StreamState(std::unique_ptr<KvCache> kv, std::unique_ptr<RecurrentState> recurrent,
                         std::unique_ptr<WindowKvCache> window, std::unique_ptr<StateStore> host_rows)
    : kv_(std::move(kv)),
      recurrent_(std::move(recurrent)),
      window_(std::move(window)),
      host_rows_(std::move(host_rows)) {
  if (!kv_ && !recurrent_ && !window_ && !host_rows_)
    throw std::invalid_argument("StreamState: a model with no layers");
}

std::vector<StateStore*> StreamState::stores() const {
  std::vector<StateStore*> out;
  for (StateStore* s : {static_cast<StateStore*>(kv_.get()), static_cast<StateStore*>(recurrent_.get()),
                        static_cast<StateStore*>(window_.get()), host_rows_.get()})
    if (s != nullptr) out.push_back(s);
  return out;
}

StreamState::~StreamState() {
  try {
    ahead_.settle();  // a queued step writes the cache: it runs before the cache goes
  } catch (...) {     // a destructor must not throw; a device error resurfaces at the next CUDA call
  }
}

std::int64_t StreamState::length() const {
  return (kv_          ? kv_->length()
          : recurrent_ ? recurrent_->length()
          : window_    ? window_->length()
                       : host_rows_->length()) -
         ahead_.ahead();
}

void StreamState::truncate(std::int64_t length) {
  if (length == this->length()) return;
  if (kv_) kv()->truncate(length);
  if (recurrent_) recurrent_->truncate(length);
  if (window_) window_->truncate(length);
  if (host_rows_) host_rows_->truncate(length);
}

std::size_t StreamState::bytes() const {
  std::size_t n = 0;
  for (const StateStore* s : stores()) n += s->bytes();
  return n;
}

KvCache* StreamState::kv() {
  if (kv_) ahead_.drop(*kv_);
  return kv_.get();
}

RecurrentState* StreamState::recurrent() { return recurrent_.get(); }

std::int32_t StreamState::greedy_round(Backend& b, std::int32_t token, bool queue_next,
                                       const GreedyAhead::Record& record, const TokenChoice& choice) {
  if (!kv_ || recurrent_ || window_ || host_rows_)
    throw std::logic_error("greedy_round: only models of one attention store queue steps ahead");
  return ahead_.next(b, *kv_, token, queue_next, record, choice);
}

namespace {

// [store count: u32][per store: byte count u64, bytes] (StreamState::snapshot's layout).
std::vector<std::uint8_t> join_stores(const std::vector<std::vector<std::uint8_t>>& stores) {
  std::vector<std::uint8_t> out(4);
  const auto count = static_cast<std::uint32_t>(stores.size());
  std::memcpy(out.data(), &count, 4);
  for (const auto& bytes : stores) {
    const std::uint64_t n = bytes.size();
    const std::size_t at = out.size();
    out.resize(at + 8 + bytes.size());
    std::memcpy(out.data() + at, &n, 8);
    std::memcpy(out.data() + at + 8, bytes.data(), bytes.size());
  }
  return out;
}

// A stream's image: its stores' images, in snapshot()'s order.
class StreamImage final : public StateImage {
 public:
  explicit StreamImage(std::vector<std::shared_ptr<const StateImage>> parts) : parts_(std::move(parts)) {}
  std::size_t bytes() const override {
    std::size_t n = 4;
    for (const auto& p : parts_) n += 8 + p->bytes();
    return n;
  }
  std::vector<std::uint8_t> host_bytes() const override {
    std::vector<std::vector<std::uint8_t>> stores;
    for (const auto& p : parts_) stores.push_back(p->host_bytes());
    return join_stores(stores);
  }
  const std::vector<std::shared_ptr<const StateImage>>& parts() const { return parts_; }

 private:
  std::vector<std::shared_ptr<const StateImage>> parts_;
};

}  // namespace

std::vector<std::uint8_t> StreamState::snapshot() const {
  if (ahead_.ahead() != 0) throw std::logic_error("StreamState::snapshot with a greedy step queued");
  std::vector<std::vector<std::uint8_t>> bytes;
  for (const StateStore* s : stores()) bytes.push_back(s->snapshot());
  return join_stores(bytes);
}

std::shared_ptr<const StateImage> StreamState::image() const {
  if (ahead_.ahead() != 0) throw std::logic_error("StreamState::image with a greedy step queued");
  std::vector<std::shared_ptr<const StateImage>> parts;
  for (const StateStore* s : stores()) parts.push_back(s->image());
  return std::make_shared<StreamImage>(std::move(parts));
}

void StreamState::restore_image(const StateImage& image) {
  const auto* mine = dynamic_cast<const StreamImage*>(&image);
  if (mine == nullptr) return restore_from_bytes(*this, image);  // a disk file's bytes
  if (kv_) ahead_.drop(*kv_);
  const auto mine_stores = stores();
  if (mine->parts().size() != mine_stores.size())
    throw std::invalid_argument("StreamState::restore_image: a state of another model");
  for (std::size_t i = 0; i < mine_stores.size(); ++i) mine_stores[i]->restore_image(*mine->parts()[i]);
  for (const StateStore* s : mine_stores)
    if (s->length() != mine_stores.front()->length())
      throw std::invalid_argument("StreamState::restore_image: stores of different lengths");
}

void StreamState::restore(std::span<const std::uint8_t> bytes) {
  if (kv_) ahead_.drop(*kv_);
  std::uint32_t count = 0;
  if (bytes.size() < 4) throw std::invalid_argument("StreamState::restore: truncated");
  std::memcpy(&count, bytes.data(), 4);
  const auto mine = stores();
  if (count != mine.size()) throw std::invalid_argument("StreamState::restore: a state of another model");
  std::size_t at = 4;
  for (StateStore* s : mine) {
    std::uint64_t n = 0;
    if (bytes.size() - at < 8) throw std::invalid_argument("StreamState::restore: truncated");
    std::memcpy(&n, bytes.data() + at, 8);
    at += 8;
    if (bytes.size() - at < n) throw std::invalid_argument("StreamState::restore: truncated");
    s->restore(bytes.subspan(at, n));
    at += n;
  }
  if (at != bytes.size()) throw std::invalid_argument("StreamState::restore: trailing bytes");
  for (const StateStore* s : mine)
    if (s->length() != mine.front()->length())
      throw std::invalid_argument("StreamState::restore: stores of different lengths");
}

}  // namespace tf
