#pragma once
// A constraint on what a stream may generate (a tool call's or a structured reply's grammar:
// engine/grammar_constraint.h; a reasoning budget, here). It masks each sampled row: tokens it does not allow
// get -inf before sampling.
//
// Exactness: the mask is a pure function of the tokens generated before the row, so a verify row masked by
// its own prefix (the drafts before it) is masked as serial decoding masks that position, and a draft is
// still accepted iff it equals the keyed sample of its row: drafted == serial, with the constraint too.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tf {

class Tokenizer;

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // Sets to -inf the logits of the tokens that may not follow `generated` (the tokens generated so far).
  virtual void mask(std::span<const std::int32_t> generated, std::span<float> logits) const = 0;
};

// Each token's text decoded alone, indexed by id. A constraint reads generated text as the concatenation of
// its tokens' texts: a pure function of the ids (for the ASCII of call syntax it is the decoded text).
using TokenTexts = std::vector<std::string>;
std::shared_ptr<const TokenTexts> token_texts(const Tokenizer& tokenizer);

// A reasoning block closed after exactly `budget` of its tokens: once the block holds that many tokens without
// having closed, the reply must continue with `forced` (a newline, the close marker, a blank line), then is free.
// The block starts with the reply when `starts_open` (the prompt opened it), else when the reply starts
// (after whitespace) with `open`; it counts the tokens after the one that completed `open`.
struct ReasoningBudget {
  std::int64_t budget = 0;
  bool starts_open = false;
  std::string open = "<think>";
  std::string close = "</think>";
};
std::shared_ptr<const TokenConstraint> make_reasoning_budget(std::shared_ptr<const TokenTexts> texts,
                                                             ReasoningBudget budget);

// Forced text is reachable when every byte of it is a token (byte-level BPE, byte fallback); a row where a
// constraint would allow no token at all is left unmasked.

// Both constraints: a token is allowed when each allows it.
std::shared_ptr<const TokenConstraint> both_constraints(std::shared_ptr<const TokenConstraint> a,
                                                        std::shared_ptr<const TokenConstraint> b);

}  // namespace tf
