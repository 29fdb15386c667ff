#pragma once
// A constraint on what a stream may generate (tool_choice "required" or a named function: the reply must be
// a call). It masks each sampled row: tokens it does not allow get -inf before sampling.
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

// The text of one tool call, as a small grammar: one of `openings` (the call's start, up to its arguments),
// then, with json_arguments, one JSON object and `closing`, after which only end-of-generation may follow.
// Without json_arguments the text after the opening is free.
// `after`: when set, the text is free until it has generated this (a reasoning block's close marker, when the
// prompt opened one): the call follows the reasoning. Whitespace may come before the opening.
// `keys`: per opening, the keys the arguments object may have at its top level (the tool's schema properties);
// none (or no entry) allows any.
struct CallGrammar {
  std::vector<std::string> openings;
  bool json_arguments = false;
  std::string closing;
  std::string after;
  std::vector<std::optional<std::vector<std::string>>> keys;
};

// A token is allowed while the generated text followed by the token's text still fits the grammar;
// end-of-generation tokens (`eos`) only once the call is complete (or free).
std::shared_ptr<const TokenConstraint> make_call_constraint(std::shared_ptr<const TokenTexts> texts, CallGrammar grammar,
                                                            std::vector<std::int32_t> eos);

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
