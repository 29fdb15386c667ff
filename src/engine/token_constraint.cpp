#include "engine/token_constraint.h"

#include <algorithm>
#include <limits>
#include <string_view>

#include "text/tokenizer/tokenizer.h"

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

}  // namespace tf
