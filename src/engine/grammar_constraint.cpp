#include "engine/grammar_constraint.h"

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "text/tokenizer/tokenizer.h"

namespace tf {

namespace {

// Bounds on one constraint's caches: matcher states (each up to 1 KiB of transitions) and masks (a bit per
// token). Past either, both are dropped before the next row (a mask is then recomputed, the same mask).
constexpr std::size_t kMaxStates = 32768;
constexpr std::size_t kMaxMaskBytes = std::size_t{64} << 20;
constexpr const char* kBlanks = " \n\r\t";
constexpr float kNone = -std::numeric_limits<float>::infinity();

using Bits = std::vector<std::uint64_t>;

class GrammarConstraint final : public TokenConstraint {
 public:
  GrammarConstraint(std::shared_ptr<const TokenVocabulary> v, grammar::Grammar g, std::vector<std::int32_t> eos,
                    std::string after, std::vector<tools::CallTrigger> triggers)
      : v_(std::move(v)),
        m_(std::move(g)),
        eos_(std::move(eos)),
        after_(std::move(after)),
        triggers_(std::move(triggers)) {
    words_ = (v_->bytes.size() + 63) / 64;
  }

  void mask(std::span<const std::int32_t> generated, std::span<float> logits) const override {
    std::lock_guard lock(mu_);
    if (m_.states() > kMaxStates || masks_.size() * words_ * 8 > kMaxMaskBytes) {
      m_.reset();
      masks_.clear();
    }
    std::string text;
    for (const auto id : generated)
      if (id >= 0 && static_cast<std::size_t>(id) < v_->bytes.size()) text += v_->bytes[static_cast<std::size_t>(id)];
    std::string_view rest = text;
    if (!after_.empty()) {
      const auto end = text.find(after_);
      if (end == std::string::npos) return;  // still free (reasoning)
      rest.remove_prefix(end + after_.size());
    }
    if (!triggers_.empty()) {
      const auto start = first_trigger(rest, true);
      if (start == std::string_view::npos) {  // no call opened yet: free, but for the tokens that would open one
        mask_openings(rest, logits);
        return;
      }
      rest.remove_prefix(start);
    }
    const auto state = m_.run(m_.initial(), rest);
    if (state == grammar::GrammarMatcher::kDead) return;  // off the grammar already: nothing to hold to
    auto it = masks_.find(state);
    if (it == masks_.end()) {
      it = masks_.emplace(state, walk(state)).first;
      ++stats_.walks;
    } else {
      ++stats_.cached;
    }
    stats_.states = static_cast<std::int64_t>(m_.states());
    const Bits& allowed = it->second;
    if (std::all_of(allowed.begin(), allowed.end(), [](std::uint64_t w) { return w == 0; })) return;
    const std::size_t n = logits.size();
    for (std::size_t w = 0; w * 64 < n; ++w) {
      const std::uint64_t bits = w < allowed.size() ? allowed[w] : 0;
      if (bits == ~std::uint64_t{0}) continue;
      const std::size_t end = std::min(n, w * 64 + 64);
      for (std::size_t id = w * 64; id < end; ++id)
        if (!((bits >> (id - w * 64)) & 1)) logits[id] = kNone;
    }
  }

  GrammarMaskStats stats() const {
    std::lock_guard lock(mu_);
    return stats_;
  }

 private:
  // Where the first trigger starts in `text` (npos: none yet); `lead`: `text` starts where the reply does, so
  // the triggers that count only there may match.
  std::size_t first_trigger(std::string_view text, bool lead) const {
    std::size_t first = std::string_view::npos;
    const auto at_lead = text.find_first_not_of(kBlanks);
    for (const auto& t : triggers_) {
      std::size_t at = std::string_view::npos;
      if (!t.at_start)
        at = text.find(t.text);
      else if (lead && at_lead != std::string_view::npos && text.substr(at_lead, t.text.size()) == t.text)
        at = at_lead;
      first = std::min(first, at);
    }
    return first;
  }

  // A call is held from its trigger's first byte, the bytes of the token that completes the trigger included:
  // a token that would complete one and go on off the grammar (`<tool_call>` then a backquote in one token) is
  // masked, else the call would escape its grammar. Which tokens those are depends only on the part of the free
  // text a trigger could still start in (see pending_opening), so they are found once per such part.
  void mask_openings(std::string_view free_text, std::span<float> logits) const {
    auto key = pending_opening(free_text);
    auto it = opening_bans_.find(key);
    if (it == opening_bans_.end()) {
      std::vector<std::int32_t> banned;
      std::string text = key.first;
      for (std::size_t id = 0; id < v_->bytes.size(); ++id) {
        text.resize(key.first.size());
        text += v_->bytes[id];
        const auto at = first_trigger(text, key.second);
        if (at == std::string::npos) continue;
        if (m_.run(m_.initial(), std::string_view(text).substr(at)) == grammar::GrammarMatcher::kDead)
          banned.push_back(static_cast<std::int32_t>(id));
      }
      it = opening_bans_.emplace(std::move(key), std::move(banned)).first;
    }
    for (const auto id : it->second)
      if (static_cast<std::size_t>(id) < logits.size()) logits[static_cast<std::size_t>(id)] = kNone;
  }

  // The end of the free text a trigger completed by the next token can start in: the text past its leading
  // blanks while that could still become a trigger that counts only at the reply's start (second: true), else
  // the longest suffix that begins a trigger (empty when none does).
  std::pair<std::string, bool> pending_opening(std::string_view text) const {
    const auto at_lead = std::min(text.size(), text.find_first_not_of(kBlanks));
    const auto stripped = text.substr(at_lead);
    for (const auto& t : triggers_)
      if (t.at_start && stripped.size() < t.text.size() && std::string_view(t.text).starts_with(stripped))
        return {std::string(stripped), true};
    std::size_t longest = 0;
    for (const auto& t : triggers_)
      for (std::size_t n = std::min(text.size(), t.text.size() - 1); n > longest; --n)
        if (text.substr(text.size() - n) == std::string_view(t.text).substr(0, n)) {
          longest = n;
          break;
        }
    return {std::string(text.substr(text.size() - longest)), false};
  }

  // The tokens the grammar can read from `state`: one pass over the trie in depth-first order, skipping the
  // subtree of every node where the grammar dies.
  Bits walk(std::uint32_t state) const {
    Bits bits(words_, 0);
    const auto& v = *v_;
    std::vector<std::uint32_t> at(v.max_depth + 1);
    at[0] = state;
    const std::size_t nodes = v.byte.size();
    for (std::size_t i = 1; i < nodes;) {
      const auto d = v.depth[i];
      const auto s = m_.step(at[d - 1u], v.byte[i]);
      if (s == grammar::GrammarMatcher::kDead) {
        i = v.skip[i];
        continue;
      }
      at[d] = s;
      for (auto k = v.token_first[i]; k < v.token_first[i + 1]; ++k) {
        const auto id = static_cast<std::size_t>(v.token_ids[k]);
        bits[id / 64] |= std::uint64_t{1} << (id % 64);
      }
      ++i;
    }
    // The end tokens end the reply whatever their text: allowed exactly when the grammar is complete.
    const bool end = m_.accepting(state);
    for (const auto id : eos_) {
      if (id < 0 || static_cast<std::size_t>(id) >= v.bytes.size()) continue;
      const auto bit = std::uint64_t{1} << (static_cast<std::size_t>(id) % 64);
      auto& word = bits[static_cast<std::size_t>(id) / 64];
      word = end ? (word | bit) : (word & ~bit);
    }
    return bits;
  }

  std::shared_ptr<const TokenVocabulary> v_;
  mutable std::mutex mu_;
  mutable grammar::GrammarMatcher m_;
  mutable std::unordered_map<std::uint32_t, Bits> masks_;
  mutable GrammarMaskStats stats_;
  std::vector<std::int32_t> eos_;
  std::string after_;
  std::vector<tools::CallTrigger> triggers_;
  mutable std::map<std::pair<std::string, bool>, std::vector<std::int32_t>> opening_bans_;
  std::size_t words_ = 0;
};

std::shared_ptr<TokenVocabulary> build_trie(std::vector<std::string> bytes, const std::vector<bool>& excluded) {
  auto v = std::make_shared<TokenVocabulary>();
  // Sorted byte strings give the trie's depth-first order directly.
  std::vector<std::int32_t> order;
  for (std::size_t id = 0; id < bytes.size(); ++id)
    if (!bytes[id].empty() && !(id < excluded.size() && excluded[id])) order.push_back(static_cast<std::int32_t>(id));
  std::sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
    const auto& x = bytes[static_cast<std::size_t>(a)];
    const auto& y = bytes[static_cast<std::size_t>(b)];
    return x != y ? x < y : a < b;
  });
  v->byte.push_back(0);
  v->depth.push_back(0);
  v->token_first.push_back(0);
  std::vector<std::uint32_t> path{0};  // the nodes of the current string, by depth
  std::string current;
  for (const auto id : order) {
    const std::string& s = bytes[static_cast<std::size_t>(id)];
    if (s.size() > 65000) continue;
    std::size_t common = 0;
    while (common < current.size() && common < s.size() && current[common] == s[common]) ++common;
    path.resize(common + 1);
    for (std::size_t k = common; k < s.size(); ++k) {
      path.push_back(static_cast<std::uint32_t>(v->byte.size()));
      v->byte.push_back(static_cast<std::uint8_t>(s[k]));
      v->depth.push_back(static_cast<std::uint16_t>(k + 1));
      v->token_first.push_back(static_cast<std::uint32_t>(v->token_ids.size()));
    }
    current = s;
    v->token_ids.push_back(id);  // at the last node (the nodes' token ranges are fixed below)
    v->max_depth = std::max(v->max_depth, s.size());
  }
  // token_first[i] was set when node i was made, before its own token: tokens of node i are those pushed
  // between its creation and the next node's creation. Close the ranges and find each subtree's end.
  const std::size_t n = v->byte.size();
  v->token_first.push_back(static_cast<std::uint32_t>(v->token_ids.size()));
  v->skip.assign(n, static_cast<std::uint32_t>(n));
  std::vector<std::uint32_t> open;  // nodes whose subtree is not closed yet
  for (std::size_t i = 0; i < n; ++i) {
    while (!open.empty() && v->depth[open.back()] >= v->depth[i]) {
      v->skip[open.back()] = static_cast<std::uint32_t>(i);
      open.pop_back();
    }
    open.push_back(static_cast<std::uint32_t>(i));
  }
  v->bytes = std::move(bytes);
  return v;
}

}  // namespace

std::shared_ptr<const TokenVocabulary> token_vocabulary(std::vector<std::string> bytes,
                                                        const std::vector<std::int32_t>& excluded) {
  std::vector<bool> out(bytes.size(), false);
  for (const auto id : excluded)
    if (id >= 0 && static_cast<std::size_t>(id) < out.size()) out[static_cast<std::size_t>(id)] = true;
  return build_trie(std::move(bytes), out);
}

std::shared_ptr<const TokenVocabulary> token_vocabulary(const Tokenizer& tokenizer,
                                                        const std::vector<std::string>& markers) {
  const std::size_t n = tokenizer.vocab_size();
  std::vector<std::string> bytes(n);
  std::vector<bool> excluded(n, false);
  for (std::size_t id = 0; id < n; ++id) {
    const auto i = static_cast<std::int32_t>(id);
    // A token's own bytes: decoders that treat the first token apart (a leading space stripped) do so for
    // the first of two alike only, so the second copy is the token as it reads inside a text.
    const std::int32_t two[] = {i, i};
    const std::int32_t one[] = {i};
    const auto both = tokenizer.decode_bytes(two);
    const auto first = tokenizer.decode_bytes(one);
    bytes[id] = both.size() >= first.size() ? both.substr(first.size()) : first;
    excluded[id] =
        tokenizer.is_special(i) && std::find(markers.begin(), markers.end(), tokenizer.decode(one)) == markers.end();
  }
  return build_trie(std::move(bytes), excluded);
}

std::shared_ptr<const TokenConstraint> make_grammar_constraint(std::shared_ptr<const TokenVocabulary> vocabulary,
                                                               grammar::Grammar grammar, std::vector<std::int32_t> eos,
                                                               std::string after,
                                                               std::vector<tools::CallTrigger> triggers) {
  return std::make_shared<GrammarConstraint>(std::move(vocabulary), std::move(grammar), std::move(eos),
                                             std::move(after), std::move(triggers));
}

GrammarMaskStats grammar_mask_stats(const TokenConstraint& constraint) {
  const auto* g = dynamic_cast<const GrammarConstraint*>(&constraint);
  return g ? g->stats() : GrammarMaskStats{};
}

}  // namespace tf
