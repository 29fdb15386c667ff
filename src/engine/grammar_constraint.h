#pragma once
// Structured output's token mask: a grammar (text/grammar: a JSON schema, json_object, GBNF or a regex) held
// over a stream, token by token, on every sampled row, verify rows included.
//
// Exactness: the mask is a pure function of the tokens generated before the row (the grammar's state after
// their bytes), as token_constraint.h requires, so drafted output equals serial output under it.
//
// Cost: a row's mask is the set of tokens whose bytes the grammar can read from the row's state. It is found
// by one walk over a trie of the vocabulary's byte strings (built once per tokenizer), pruned where the
// grammar dies, with each byte a lookup in the matcher's transition table once computed; masks are kept per
// grammar state, so a state met again (inside a string, between values) costs the masking of the row alone.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/token_constraint.h"
#include "text/grammar/grammar.h"
#include "text/tool_calls/call_grammar.h"

namespace tf {

class Tokenizer;

// Each token's bytes (raw: partial UTF-8 characters kept), and a trie over those a grammar may produce
// (special tokens are left out: a grammar never writes one). Built once per tokenizer.
struct TokenVocabulary {
  std::vector<std::string> bytes;  // by id
  // The trie in depth-first order: node i's byte, depth (the root, node 0, has depth 0) and the node after
  // its subtree; the tokens whose bytes end at node i are token_ids[token_first[i] .. token_first[i + 1]).
  std::vector<std::uint8_t> byte;
  std::vector<std::uint16_t> depth;
  std::vector<std::uint32_t> skip;
  std::vector<std::uint32_t> token_first;
  std::vector<std::int32_t> token_ids;
  std::size_t max_depth = 0;
};
// `markers`: special tokens whose text is one of these stay in the trie (a tool call's grammar writes them).
std::shared_ptr<const TokenVocabulary> token_vocabulary(const Tokenizer& tokenizer,
                                                        const std::vector<std::string>& markers = {});
// From byte strings directly (tests); ids in `excluded` are left out of the trie.
std::shared_ptr<const TokenVocabulary> token_vocabulary(std::vector<std::string> bytes,
                                                        const std::vector<std::int32_t>& excluded = {});

// `eos`: the end-of-generation ids, allowed once the grammar is complete (and then only they, when nothing
// can continue it). `after`: when set, the text is free until it has generated this (the close marker of a
// reasoning block the prompt opened); the grammar then reads what follows it. `triggers` (a lazy grammar: tool
// calls under tool_choice auto): when set, the text is free until it writes one of them; the grammar reads the
// text from the first trigger's first byte on.
std::shared_ptr<const TokenConstraint> make_grammar_constraint(std::shared_ptr<const TokenVocabulary> vocabulary,
                                                               grammar::Grammar grammar, std::vector<std::int32_t> eos,
                                                               std::string after = {},
                                                               std::vector<tools::CallTrigger> triggers = {});

// The same constraint's counters, for the benchmark: masks computed by a trie walk, masks taken from the cache.
struct GrammarMaskStats {
  std::int64_t walks = 0, cached = 0, states = 0;
};
GrammarMaskStats grammar_mask_stats(const TokenConstraint& constraint);

}  // namespace tf
