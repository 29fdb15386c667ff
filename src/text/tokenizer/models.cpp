// The models: BPE with ranked merges (the `tokenizers` BPE), SentencePiece BPE by scores (llama.cpp's SPM for
// GGUF "llama" vocabularies) and WordPiece.
#include <algorithm>
#include <cstdio>
#include <queue>
#include <stdexcept>

#include "text/tokenizer/tokenizer_impl.h"
#include "text/tokenizer/unicode.h"

namespace tf::tokenizer_detail {

namespace {

std::string byte_token_name(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "<0x%02X>", b);
  return buf;
}

// A word -> ids cache shared by all threads. Words are short; once full it stops growing (as the reference does).
class WordCache {
 public:
  bool get(std::string_view word, std::vector<int32_t>& out) const {
    if (word.size() > kMaxWordBytes) return false;
    std::shared_lock lock(mutex_);
    const auto it = map_.find(word);
    if (it == map_.end()) return false;
    out.insert(out.end(), it->second.begin(), it->second.end());
    return true;
  }
  void put(std::string_view word, const int32_t* ids, std::size_t n) const {
    if (word.size() > kMaxWordBytes) return;
    std::unique_lock lock(mutex_);
    if (map_.size() >= kCapacity) return;
    map_.emplace(std::string(word), std::vector<int32_t>(ids, ids + n));
  }

 private:
  static constexpr std::size_t kCapacity = 100000;
  static constexpr std::size_t kMaxWordBytes = 256;
  mutable std::shared_mutex mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> map_;
};

struct Merge {
  int32_t rank;
  int32_t new_id;
};

constexpr std::string_view kMarker = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// Whether "▁" only starts tokens (or makes up runs of "▁"): then no merge crosses a "▁" that follows another
// character.
bool marker_only_starts_tokens(const Vocab& vocab) {
  bool has_marker = false;
  for (const auto& t : vocab.id_to_token) {
    for (std::size_t p = t.find(kMarker); p != std::string::npos; p = t.find(kMarker, p + 1)) {
      has_marker = true;
      if (p > 0 && !(p >= kMarker.size() && t.compare(p - kMarker.size(), kMarker.size(), kMarker) == 0)) return false;
    }
  }
  return has_marker;
}

// Calls f on the parts of `word` cut before each "▁" that follows another character.
template <typename F>
void for_each_marker_part(std::string_view word, F&& f) {
  std::size_t start = 0;
  for (std::size_t p = word.find(kMarker, 1); p != std::string_view::npos; p = word.find(kMarker, p + 1)) {
    if (p >= kMarker.size() && word.compare(p - kMarker.size(), kMarker.size(), kMarker) == 0) continue;
    f(word.substr(start, p - start));
    start = p;
  }
  f(word.substr(start));
}

// Open-addressing map from a token pair to its merge: the BPE inner loop is mostly these lookups.
class MergeMap {
 public:
  void reserve(std::size_t n) {
    std::size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    slots_.assign(cap, Slot{kEmpty, {}});
    mask_ = cap - 1;
  }
  // Inserts or replaces.
  void set(uint64_t key, Merge m) {
    for (std::size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].key == kEmpty || slots_[i].key == key) {
        slots_[i] = Slot{key, m};
        return;
      }
    }
  }
  const Merge* find(uint64_t key) const {
    for (std::size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].key == key) return &slots_[i].merge;
      if (slots_[i].key == kEmpty) return nullptr;
    }
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};  // no pair of valid ids (both < 2^31) makes this key
  static std::size_t hash(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return static_cast<std::size_t>(x);
  }
  struct Slot {
    uint64_t key;
    Merge merge;
  };
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
};

class BpeModel final : public Model {
 public:
  BpeModel(const Vocab& vocab, const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options)
      : vocab_(vocab), opt_(std::move(options)) {
    merges_.reserve(merges.size() + 1);
    const std::size_t prefix_len = opt_.continuing_subword_prefix.size();
    for (std::size_t rank = 0; rank < merges.size(); ++rank) {
      const auto& [a, b] = merges[rank];
      const auto ia = vocab.find(a), ib = vocab.find(b);
      if (!ia || !ib) throw std::invalid_argument("merge " + std::to_string(rank) + " (\"" + a + " " + b +
                                                  "\") names a token that is not in the vocabulary");
      std::string merged = a;
      merged.append(b.compare(0, prefix_len, opt_.continuing_subword_prefix) == 0 ? b.substr(prefix_len) : b);
      const auto im = vocab.find(merged);
      if (!im) throw std::invalid_argument("merge " + std::to_string(rank) + " (\"" + a + " " + b +
                                           "\") makes a token that is not in the vocabulary");
      // A later duplicate replaces an earlier one, as collecting the reference's merge map does.
      merges_.set(key(*ia, *ib), Merge{static_cast<int32_t>(rank), *im});
    }
    for (int b = 0; b < 256; ++b) {
      const auto id = vocab.find(byte_token_name(static_cast<unsigned char>(b)));
      byte_ids_[b] = id ? *id : -1;
    }
    // SentencePiece-style vocabularies put "▁" only at the start of a token (or in runs of "▁"): then no merge
    // crosses a "▁" that follows another character, and a long text (these tokenizers do not pre-split it) can be
    // cut there and each part merged on its own, with the same result and the word cache's help.
    if (opt_.continuing_subword_prefix.empty() && opt_.end_of_word_suffix.empty() && !opt_.ignore_merges)
      split_at_marker_ = marker_only_starts_tokens(vocab);
  }

  std::string_view kind() const override { return "bpe"; }

  void tokenize(std::string_view word, std::vector<int32_t>& out) const override {
    if (word.empty()) return;
    if (opt_.ignore_merges) {
      if (const auto id = vocab_.find(word)) {
        out.push_back(*id);
        return;
      }
    }
    if (opt_.newline_words_whole && word.find_first_not_of('\n') == std::string_view::npos) {
      if (const auto id = vocab_.find(word)) {
        out.push_back(*id);
        return;
      }
    }
    if (split_at_marker_ && word.size() > 32) {
      for_each_marker_part(word, [&](std::string_view part) { cached_merge(part, out); });
      return;
    }
    cached_merge(word, out);
  }

 private:
  void cached_merge(std::string_view word, std::vector<int32_t>& out) const {
    if (word.empty()) return;
    if (cache_.get(word, out)) return;
    const std::size_t mark = out.size();
    merge_word(word, out);
    cache_.put(word, out.data() + mark, out.size() - mark);
  }

  static uint64_t key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  struct Symbol {
    int32_t id;
    int32_t prev, next;
    bool alive;
  };
  void merge_word(std::string_view w, std::vector<int32_t>& out) const {
    std::vector<int32_t> ids;
    ids.reserve(w.size());
    int32_t pending_unk = -1;  // an unknown-token run not yet emitted
    std::size_t i = 0;
    std::string s;
    while (i < w.size()) {
      const std::size_t b = i;
      i += std::min(utf8_len(static_cast<unsigned char>(w[i])), w.size() - i);
      const bool first = b == 0, last = i == w.size();
      std::optional<int32_t> id;
      if ((first || opt_.continuing_subword_prefix.empty()) && (!last || opt_.end_of_word_suffix.empty())) {
        id = vocab_.find(w.substr(b, i - b));
      } else {
        s.clear();
        if (!first) s = opt_.continuing_subword_prefix;
        s.append(w.substr(b, i - b));
        if (last) s += opt_.end_of_word_suffix;
        id = vocab_.find(s);
      }
      if (id) {
        if (pending_unk >= 0) {
          ids.push_back(pending_unk);
          pending_unk = -1;
        }
        ids.push_back(*id);
        continue;
      }
      if (opt_.byte_fallback) {
        const std::string_view chunk =
            (first || opt_.continuing_subword_prefix.empty()) && (!last || opt_.end_of_word_suffix.empty())
                ? w.substr(b, i - b)
                : std::string_view(s);
        bool all = true;
        for (const char c : chunk) all = all && byte_ids_[static_cast<unsigned char>(c)] >= 0;
        if (all) {
          for (const char c : chunk) ids.push_back(byte_ids_[static_cast<unsigned char>(c)]);
          continue;
        }
      }
      if (opt_.unk) {
        if (pending_unk >= 0 && !opt_.fuse_unk) ids.push_back(pending_unk);
        pending_unk = *opt_.unk;
      }
    }
    if (pending_unk >= 0) ids.push_back(pending_unk);

    const auto n = static_cast<int32_t>(ids.size());
    if (n < 2) {
      out.insert(out.end(), ids.begin(), ids.end());
      return;
    }
    std::vector<Symbol> sym(static_cast<std::size_t>(n));
    for (int32_t k = 0; k < n; ++k) sym[static_cast<std::size_t>(k)] = Symbol{ids[static_cast<std::size_t>(k)], k - 1, k + 1 < n ? k + 1 : -1, true};
    // A min-heap of (rank << 32 | position): the lowest rank first, then the leftmost, as the reference orders
    // its merges. Entries go stale when a side merges; they are checked when popped.
    std::vector<uint64_t> heap;
    heap.reserve(static_cast<std::size_t>(n) * 2);
    const auto cmp = std::greater<uint64_t>{};
    auto push_pair = [&](int32_t left) {
      const Symbol& l = sym[static_cast<std::size_t>(left)];
      if (l.next < 0) return;
      if (const Merge* m = merges_.find(key(l.id, sym[static_cast<std::size_t>(l.next)].id))) {
        heap.push_back((static_cast<uint64_t>(static_cast<uint32_t>(m->rank)) << 32) | static_cast<uint32_t>(left));
        std::push_heap(heap.begin(), heap.end(), cmp);
      }
    };
    for (int32_t k = 0; k + 1 < n; ++k) {
      const Merge* m = merges_.find(key(sym[static_cast<std::size_t>(k)].id, sym[static_cast<std::size_t>(k) + 1].id));
      if (m) heap.push_back((static_cast<uint64_t>(static_cast<uint32_t>(m->rank)) << 32) | static_cast<uint32_t>(k));
    }
    std::make_heap(heap.begin(), heap.end(), cmp);
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), cmp);
      const uint64_t top = heap.back();
      heap.pop_back();
      const auto rank = static_cast<int32_t>(top >> 32);
      const auto pos = static_cast<int32_t>(top & 0xffffffffu);
      Symbol& left = sym[static_cast<std::size_t>(pos)];
      if (!left.alive || left.next < 0) continue;
      Symbol& right = sym[static_cast<std::size_t>(left.next)];
      const Merge* m = merges_.find(key(left.id, right.id));
      if (!m || m->rank != rank) continue;  // stale entry: a side has changed since it was pushed
      left.id = m->new_id;
      right.alive = false;
      left.next = right.next;
      if (right.next >= 0) sym[static_cast<std::size_t>(right.next)].prev = pos;
      if (left.prev >= 0) push_pair(left.prev);
      push_pair(pos);
    }
    for (int32_t k = 0; k >= 0; k = sym[static_cast<std::size_t>(k)].next) out.push_back(sym[static_cast<std::size_t>(k)].id);
  }

  const Vocab& vocab_;
  BpeOptions opt_;
  MergeMap merges_;
  int32_t byte_ids_[256];
  bool split_at_marker_ = false;
  WordCache cache_;
};

class SpmModel final : public Model {
 public:
  SpmModel(const Vocab& vocab, std::vector<float> scores, std::optional<int32_t> unk)
      : vocab_(vocab), scores_(std::move(scores)), unk_(unk), split_at_marker_(marker_only_starts_tokens(vocab)) {
    for (int b = 0; b < 256; ++b) {
      const auto id = vocab.find(byte_token_name(static_cast<unsigned char>(b)));
      byte_ids_[b] = id ? *id : -1;
    }
  }
  std::string_view kind() const override { return "spm"; }

  void tokenize(std::string_view text, std::vector<int32_t>& out) const override {
    if (split_at_marker_ && text.size() > 32) {  // see BpeModel: merges never cross these cuts
      for_each_marker_part(text, [&](std::string_view part) { cached_run(part, out); });
      return;
    }
    cached_run(text, out);
  }

 private:
  struct Symbol {
    std::size_t start, len;
    int32_t prev, next;
  };
  struct Bigram {
    float score;
    int32_t left, right;
    std::size_t len;
    bool operator<(const Bigram& o) const {  // top = highest score, then leftmost
      return score != o.score ? score < o.score : left > o.left;
    }
  };

  void cached_run(std::string_view text, std::vector<int32_t>& out) const {
    if (text.empty()) return;
    if (cache_.get(text, out)) return;
    const std::size_t mark = out.size();
    run(text, out);
    cache_.put(text, out.data() + mark, out.size() - mark);
  }

  void run(std::string_view text, std::vector<int32_t>& out) const {
    std::vector<Symbol> sym;
    std::size_t off = 0;
    while (off < text.size()) {
      const std::size_t len = std::min(utf8_len(static_cast<unsigned char>(text[off])), text.size() - off);
      const auto idx = static_cast<int32_t>(sym.size());
      sym.push_back(Symbol{off, len, idx - 1, off + len == text.size() ? -1 : idx + 1});
      off += len;
    }
    std::priority_queue<Bigram> queue;
    auto try_add = [&](int32_t l, int32_t r) {
      if (l < 0 || r < 0) return;
      const Symbol& a = sym[static_cast<std::size_t>(l)];
      const Symbol& b = sym[static_cast<std::size_t>(r)];
      const std::string_view piece = text.substr(a.start, a.len + b.len);
      const auto id = vocab_.find(piece);
      if (!id || static_cast<std::size_t>(*id) >= scores_.size()) return;
      queue.push(Bigram{scores_[static_cast<std::size_t>(*id)], l, r, piece.size()});
    };
    for (int32_t k = 1; k < static_cast<int32_t>(sym.size()); ++k) try_add(k - 1, k);
    while (!queue.empty()) {
      const Bigram bg = queue.top();
      queue.pop();
      Symbol& l = sym[static_cast<std::size_t>(bg.left)];
      Symbol& r = sym[static_cast<std::size_t>(bg.right)];
      if (l.len == 0 || r.len == 0 || l.len + r.len != bg.len) continue;
      l.len += r.len;
      r.len = 0;
      l.next = r.next;
      if (r.next >= 0) sym[static_cast<std::size_t>(r.next)].prev = bg.left;
      try_add(l.prev, bg.left);
      try_add(bg.left, l.next);
    }
    for (int32_t k = 0; k >= 0 && !sym.empty(); k = sym[static_cast<std::size_t>(k)].next) {
      const Symbol& s = sym[static_cast<std::size_t>(k)];
      const std::string_view piece = text.substr(s.start, s.len);
      if (const auto id = vocab_.find(piece)) {
        out.push_back(*id);
        continue;
      }
      for (const char c : piece) {
        const int32_t b = byte_ids_[static_cast<unsigned char>(c)];
        if (b >= 0)
          out.push_back(b);
        else if (unk_)
          out.push_back(*unk_);
      }
    }
  }

  const Vocab& vocab_;
  std::vector<float> scores_;
  std::optional<int32_t> unk_;
  bool split_at_marker_;
  int32_t byte_ids_[256];
  WordCache cache_;
};

class WordPieceModel final : public Model {
 public:
  WordPieceModel(const Vocab& vocab, int32_t unk, std::string prefix, std::string word_prefix, std::size_t max_chars)
      : vocab_(vocab), unk_(unk), prefix_(std::move(prefix)), word_prefix_(std::move(word_prefix)), max_chars_(max_chars) {}
  std::string_view kind() const override { return "wordpiece"; }

  void tokenize(std::string_view word, std::vector<int32_t>& out) const override {
    std::vector<std::size_t> bounds{0};
    std::size_t i = 0;
    while (i < word.size()) {
      i += std::min(utf8_len(static_cast<unsigned char>(word[i])), word.size() - i);
      bounds.push_back(i);
    }
    if (bounds.size() - 1 > max_chars_) {
      out.push_back(unk_);
      return;
    }
    std::vector<int32_t> pieces;
    std::size_t start = 0;  // index into bounds
    std::string candidate;
    while (start + 1 < bounds.size()) {
      std::size_t end = bounds.size() - 1;
      std::optional<int32_t> found;
      while (end > start) {
        candidate = start > 0 ? prefix_ : word_prefix_;
        candidate.append(word.substr(bounds[start], bounds[end] - bounds[start]));
        if ((found = vocab_.find(candidate))) break;
        --end;
      }
      if (!found) {
        out.push_back(unk_);
        return;
      }
      pieces.push_back(*found);
      start = end;
    }
    out.insert(out.end(), pieces.begin(), pieces.end());
  }

 private:
  const Vocab& vocab_;
  int32_t unk_;
  std::string prefix_;
  std::string word_prefix_;
  std::size_t max_chars_;
};

}  // namespace

std::unique_ptr<Model> make_bpe_model(const Vocab& vocab, const std::vector<std::pair<std::string, std::string>>& merges,
                                      BpeOptions options) {
  return std::make_unique<BpeModel>(vocab, merges, std::move(options));
}

std::unique_ptr<Model> make_spm_model(const Vocab& vocab, std::vector<float> scores, std::optional<int32_t> unk) {
  return std::make_unique<SpmModel>(vocab, std::move(scores), unk);
}

std::unique_ptr<Model> make_wordpiece_model(const Vocab& vocab, int32_t unk, std::string prefix,
                                            std::size_t max_input_chars_per_word, std::string word_prefix) {
  return std::make_unique<WordPieceModel>(vocab, unk, std::move(prefix), std::move(word_prefix), max_input_chars_per_word);
}

}  // namespace tf::tokenizer_detail
