#include "engine/token_constraint.h"

#include <algorithm>
#include <limits>
#include <string_view>

#include "text/tokenizer/tokenizer.h"
#include "text/tool_calls/json_scanner.h"

namespace tf {

namespace {

std::string concat(const TokenTexts& texts, std::span<const std::int32_t> ids) {
  std::string text;
  for (const auto id : ids)
    if (id >= 0 && static_cast<std::size_t>(id) < texts.size()) text += texts[static_cast<std::size_t>(id)];
  return text;
}

// Sets the logits of tokens not allowed to -inf, unless none is allowed (then the row is left as it is).
void apply_mask(const std::vector<bool>& allowed, std::span<float> logits) {
  if (std::find(allowed.begin(), allowed.end(), true) == allowed.end()) return;
  for (std::size_t id = 0; id < logits.size(); ++id)
    if (!allowed[id]) logits[id] = -std::numeric_limits<float>::infinity();
}

// How far a text has come through a CallGrammar.
struct Progress {
  enum Stage { After, Opening, Arguments, Closing, Free, Complete };
  Stage stage = Opening;
  std::size_t at = 0;          // bytes of the opening (or closing) matched
  std::vector<int> candidates;  // openings still possible
  int chosen = -1;              // the opening read
  tools::JsonScanner scanner{true};
  std::string key;  // the top-level argument key being written
};

class CallConstraint final : public TokenConstraint {
 public:
  CallConstraint(std::shared_ptr<const TokenTexts> texts, CallGrammar grammar, std::vector<std::int32_t> eos)
      : texts_(std::move(texts)), g_(std::move(grammar)), eos_(std::move(eos)) {}

  void mask(std::span<const std::int32_t> generated, std::span<float> logits) const override {
    Progress start;
    for (int i = 0; i < static_cast<int>(g_.openings.size()); ++i) start.candidates.push_back(i);
    std::string text = concat(*texts_, generated);
    if (!g_.after.empty()) {
      const auto end = text.find(g_.after);
      if (end == std::string::npos) return;  // still reasoning: free
      text.erase(0, end + g_.after.size());
    }
    if (!advance(start, text)) return;  // off the grammar already: nothing to hold to
    if (start.stage == Progress::Free) return;
    const bool may_end = start.stage == Progress::Complete;
    std::vector<bool> allowed(logits.size());
    for (std::size_t id = 0; id < logits.size(); ++id) {
      if (std::find(eos_.begin(), eos_.end(), static_cast<std::int32_t>(id)) != eos_.end()) {
        allowed[id] = may_end;  // the end only once the call is complete
        continue;
      }
      const std::string_view t = id < texts_->size() ? std::string_view((*texts_)[id]) : std::string_view();
      Progress p = start;
      allowed[id] = !t.empty() && advance(p, t);
    }
    apply_mask(allowed, logits);
  }

 private:
  // Reads `text` on from `p`; false when the text leaves the grammar.
  bool advance(Progress& p, std::string_view text) const {
    for (const char c : text) {
      switch (p.stage) {
        case Progress::After: return true;
        case Progress::Opening: {
          if (p.at == 0 && (c == ' ' || c == '\n' || c == '\r' || c == '\t')) break;  // blank lines before the call
          std::vector<int> still;
          for (const int i : p.candidates) {
            const auto& o = g_.openings[static_cast<std::size_t>(i)];
            if (p.at < o.size() && o[p.at] == c) still.push_back(i);
          }
          if (still.empty()) return false;
          p.candidates = std::move(still);
          ++p.at;
          for (const int i : p.candidates)
            if (g_.openings[static_cast<std::size_t>(i)].size() == p.at) {
              p.stage = g_.json_arguments ? Progress::Arguments : Progress::Free;
              p.chosen = i;
              p.at = 0;
              break;
            }
          break;
        }
        case Progress::Arguments: {
          const bool was_key = p.scanner.in_key() && p.scanner.depth() == 1;
          const auto s = p.scanner.feed(c);
          if (s == tools::JsonScanner::Status::Error) return false;
          if (!key_fits(p, was_key, c)) return false;
          if (s == tools::JsonScanner::Status::Done) p.stage = g_.closing.empty() ? Progress::Complete : Progress::Closing;
          break;
        }
        case Progress::Closing:
          if (g_.closing[p.at] != c) return false;
          if (++p.at == g_.closing.size()) p.stage = Progress::Complete;
          break;
        case Progress::Free: return true;
        case Progress::Complete: return false;
      }
    }
    return true;
  }

  // A top-level key must be one of the chosen tool's keys: each byte keeps it a prefix of one, and the closing
  // quote ends it on one.
  bool key_fits(Progress& p, bool was_key, char c) const {
    const auto i = static_cast<std::size_t>(p.chosen);
    if (p.chosen < 0 || i >= g_.keys.size() || !g_.keys[i]) return true;
    const auto& keys = *g_.keys[i];
    const bool is_key = p.scanner.in_key() && p.scanner.depth() == 1;
    if (is_key && !was_key) {  // the opening quote
      p.key.clear();
      return true;
    }
    if (is_key) {
      p.key += c;
      for (const auto& k : keys)
        if (k.size() >= p.key.size() && k.compare(0, p.key.size(), p.key) == 0) return true;
      return false;
    }
    if (was_key) {  // the closing quote
      for (const auto& k : keys)
        if (k == p.key) return true;
      return false;
    }
    return true;
  }

  std::shared_ptr<const TokenTexts> texts_;
  CallGrammar g_;
  std::vector<std::int32_t> eos_;
};

class BudgetConstraint final : public TokenConstraint {
 public:
  BudgetConstraint(std::shared_ptr<const TokenTexts> texts, ReasoningBudget b)
      : texts_(std::move(texts)), b_(std::move(b)), forced_("\n" + b_.close + "\n\n") {}

  void mask(std::span<const std::int32_t> generated, std::span<float> logits) const override {
    // Where the block's tokens start.
    std::size_t first = 0;
    if (!b_.starts_open) {
      std::string text;
      bool opened = false;
      for (; first < generated.size() && !opened; ++first) {
        text += token(generated[first]);
        const auto blank = text.find_first_not_of(" \n\r\t");
        if (blank == std::string::npos) continue;
        const std::string_view rest = std::string_view(text).substr(blank);
        if (rest.size() >= b_.open.size()) {
          if (rest.substr(0, b_.open.size()) != b_.open) return;  // the reply does not reason
          opened = true;
        } else if (std::string_view(b_.open).substr(0, rest.size()) != rest) {
          return;
        }
      }
      if (!opened) return;
    }
    const auto block = generated.subspan(first);
    if (static_cast<std::int64_t>(block.size()) < b_.budget) return;
    if (concat(*texts_, block.first(static_cast<std::size_t>(b_.budget))).find(b_.close) != std::string::npos) return;
    const std::string since = concat(*texts_, block.subspan(static_cast<std::size_t>(b_.budget)));
    if (since.size() >= forced_.size()) return;  // forced text written: free again
    const std::string_view left = std::string_view(forced_).substr(since.size());
    std::vector<bool> allowed(logits.size());
    for (std::size_t id = 0; id < logits.size(); ++id) {
      const std::string_view t = token(static_cast<std::int32_t>(id));
      const auto n = std::min(t.size(), left.size());
      allowed[id] = !t.empty() && t.substr(0, n) == left.substr(0, n);
    }
    apply_mask(allowed, logits);
  }

 private:
  std::string_view token(std::int32_t id) const {
    return id >= 0 && static_cast<std::size_t>(id) < texts_->size() ? std::string_view((*texts_)[static_cast<std::size_t>(id)])
                                                                   : std::string_view();
  }
  std::shared_ptr<const TokenTexts> texts_;
  ReasoningBudget b_;
  std::string forced_;
};

class BothConstraints final : public TokenConstraint {
 public:
  BothConstraints(std::shared_ptr<const TokenConstraint> a, std::shared_ptr<const TokenConstraint> b)
      : a_(std::move(a)), b_(std::move(b)) {}
  void mask(std::span<const std::int32_t> generated, std::span<float> logits) const override {
    a_->mask(generated, logits);
    b_->mask(generated, logits);
  }

 private:
  std::shared_ptr<const TokenConstraint> a_, b_;
};

}  // namespace

std::shared_ptr<const TokenConstraint> make_reasoning_budget(std::shared_ptr<const TokenTexts> texts,
                                                             ReasoningBudget budget) {
  return std::make_shared<BudgetConstraint>(std::move(texts), std::move(budget));
}

std::shared_ptr<const TokenConstraint> both_constraints(std::shared_ptr<const TokenConstraint> a,
                                                        std::shared_ptr<const TokenConstraint> b) {
  if (!a) return b;
  if (!b) return a;
  return std::make_shared<BothConstraints>(std::move(a), std::move(b));
}

std::shared_ptr<const TokenTexts> token_texts(const Tokenizer& tokenizer) {
  auto texts = std::make_shared<TokenTexts>();
  texts->reserve(tokenizer.vocab_size());
  for (std::size_t id = 0; id < tokenizer.vocab_size(); ++id) {
    const std::int32_t one[] = {static_cast<std::int32_t>(id)};
    texts->push_back(tokenizer.decode(one));
  }
  return texts;
}

std::shared_ptr<const TokenConstraint> make_call_constraint(std::shared_ptr<const TokenTexts> texts, CallGrammar grammar,
                                                            std::vector<std::int32_t> eos) {
  return std::make_shared<CallConstraint>(std::move(texts), std::move(grammar), std::move(eos));
}

}  // namespace tf
