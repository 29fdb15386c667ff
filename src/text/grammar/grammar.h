#pragma once
// A context-free grammar over bytes, the form every structured-output constraint is compiled to (JSON schemas,
// json_object, GBNF grammars, regular expressions), and the matcher that runs it one byte at a time.
//
// A grammar is a set of rules; a rule is a list of alternatives; an alternative is a sequence of byte sets and
// references to rules. Text (UTF-8) is matched as its bytes: a class of code points becomes alternatives of
// byte sequences (utf8_alternatives). Repetition is right recursion (R ::= X R | empty), so a matcher's stacks
// do not grow with the count. Left recursion (a rule that can reach itself before reading a byte) is refused
// when the grammar is built, since a top-down matcher would never stop expanding it.
//
// Matching (GrammarMatcher) is the pushdown reading of llama.cpp's grammars: a state is the set of stacks of
// positions still possible, each stack's top a byte set. Stacks are hash-consed into nodes (a position and the
// node below), and states into ids, so a state is one integer and a step is a table lookup once computed.
#include <bitset>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tf::grammar {

using ByteSet = std::bitset<256>;

// A grammar that cannot be built or a source (schema, GBNF, regex) that cannot be compiled: `what()` says
// why; `keyword` names the schema keyword or construct at fault when there is one.
class GrammarError : public std::runtime_error {
 public:
  explicit GrammarError(const std::string& message, std::string keyword = {})
      : std::runtime_error(message), keyword_(std::move(keyword)) {}
  const std::string& keyword() const { return keyword_; }

 private:
  std::string keyword_;
};

// The built grammar, flattened: each alternative is a run of elements in `elements` closed by an End.
struct Grammar {
  enum class Kind : std::uint8_t { End, Set, Ref };
  struct Element {
    Kind kind = Kind::End;
    std::uint32_t value = 0;  // Set: index into sets; Ref: rule id
  };
  std::vector<Element> elements;
  std::vector<std::vector<std::uint32_t>> rules;  // per rule: where each alternative starts in `elements`
  std::vector<std::string> names;                 // per rule, for errors and debugging
  std::vector<ByteSet> sets;
  std::uint32_t root = 0;
};

// Builds a Grammar. An expression (Expr) is a sequence of items; rules hold alternatives of expressions.
class GrammarBuilder {
 public:
  struct Item {
    bool ref = false;
    std::uint32_t value = 0;  // set index or rule id
    bool operator<(const Item& o) const { return ref != o.ref ? ref < o.ref : value < o.value; }
    bool operator==(const Item& o) const = default;
  };
  using Expr = std::vector<Item>;

  // Bounds on what one grammar may hold (a request's schema is compiled per request).
  static constexpr std::size_t kMaxRules = 100000;
  static constexpr std::size_t kMaxElements = 1000000;

  std::uint32_t rule(std::string name);  // a new rule without alternatives yet
  void add(std::uint32_t rule, Expr alternative);
  bool defined(std::uint32_t rule) const { return !alts_[rule].empty(); }

  Expr empty() const { return {}; }
  Expr bytes(std::string_view text);  // the bytes of text, in order
  Expr set(const ByteSet& s);
  Expr byte_range(std::uint8_t lo, std::uint8_t hi);
  // A code point range as UTF-8 (surrogates left out), and a sorted list of ranges.
  Expr code_points(const std::vector<std::pair<char32_t, char32_t>>& ranges);
  Expr ref(std::uint32_t rule) const { return {Item{true, rule}}; }
  static Expr cat(std::initializer_list<Expr> parts);
  static void append(Expr& to, const Expr& e) { to.insert(to.end(), e.begin(), e.end()); }
  // One of the alternatives (a helper rule, shared by equal alternative lists).
  Expr alt(std::vector<Expr> alternatives);
  Expr opt(const Expr& e) { return alt({e, {}}); }
  // e as one reference to a rule of its own (shared by equal expressions): a single item for repetitions.
  Expr wrap(const Expr& e);
  // e repeated min..max times (max < 0: no upper bound). e must not match the empty text when unbounded.
  Expr repeat(const Expr& e, std::int64_t min, std::int64_t max);
  Expr star(const Expr& e) { return repeat(e, 0, -1); }
  Expr plus(const Expr& e) { return repeat(e, 1, -1); }

  std::size_t size() const { return elements_; }
  // Checks and flattens; throws GrammarError for an undefined rule that is reachable or left recursion.
  Grammar build(std::uint32_t root) const;

 private:
  void grow(std::size_t items);
  std::vector<std::string> names_;
  std::vector<std::vector<Expr>> alts_;
  std::vector<ByteSet> sets_;
  std::map<std::string, std::uint32_t> set_index_;
  std::map<std::vector<Expr>, std::uint32_t> alt_rules_;
  std::map<std::pair<Expr, std::pair<std::int64_t, std::int64_t>>, std::uint32_t> repeat_rules_;
  std::size_t elements_ = 0;
};

// The UTF-8 bytes of code point c.
std::string utf8_of(char32_t c);
// The UTF-8 byte sequences of the code points lo..hi (surrogates left out): each a list of byte ranges.
std::vector<std::vector<std::pair<std::uint8_t, std::uint8_t>>> utf8_sequences(char32_t lo, char32_t hi);

// Runs a Grammar over bytes. Not thread-safe: one user at a time (GrammarConstraint holds a lock).
class GrammarMatcher {
 public:
  static constexpr std::uint32_t kDead = 0;  // the state with no stack: the text left the grammar
  explicit GrammarMatcher(Grammar g);
  const Grammar& grammar() const { return g_; }

  std::uint32_t initial() const { return initial_; }
  // The state after one more byte (kDead once the text cannot be completed any more): a table lookup once
  // computed.
  std::uint32_t step(std::uint32_t state, std::uint8_t byte) {
    const auto& row = next_[state];
    if (!row.empty() && row[byte] >= 0) return static_cast<std::uint32_t>(row[byte]);
    return compute_step(state, byte);
  }
  std::uint32_t run(std::uint32_t state, std::string_view bytes) {
    for (const char c : bytes) {
      if (state == kDead) break;
      state = step(state, static_cast<std::uint8_t>(c));
    }
    return state;
  }
  // The grammar is complete in this state (the text may end here).
  bool accepting(std::uint32_t state) const { return accepting_[state]; }
  // Only the end may follow (complete, and no byte continues it).
  bool finished(std::uint32_t state) const { return finished_[state]; }
  std::size_t states() const { return states_.size(); }
  // Forgets every state but the initial one (a bound on memory); ids from before are invalid after.
  void reset();

 private:
  struct Node {
    std::uint32_t pos, parent;
  };
  static constexpr std::uint32_t kEmpty = 0;  // the empty stack: the grammar is complete
  std::uint32_t cons(std::uint32_t pos, std::uint32_t parent);
  void expand(std::uint32_t pos, std::uint32_t parent, std::vector<std::uint32_t>& out);
  std::uint32_t intern(std::vector<std::uint32_t>& stacks);
  std::uint32_t compute_step(std::uint32_t state, std::uint8_t byte);
  struct StacksHash {
    std::size_t operator()(const std::vector<std::uint32_t>& v) const {
      std::uint64_t h = 0x9E3779B97F4A7C15ull ^ v.size();
      for (const auto x : v) h = (h ^ x) * 0x100000001B3ull + (h >> 29);
      return static_cast<std::size_t>(h);
    }
  };

  Grammar g_;
  std::vector<Node> nodes_;
  std::unordered_map<std::uint64_t, std::uint32_t> node_index_;
  std::vector<std::vector<std::uint32_t>> states_;  // sorted stack nodes
  std::unordered_map<std::vector<std::uint32_t>, std::uint32_t, StacksHash> state_index_;
  std::vector<std::vector<std::int32_t>> next_;  // per state, 256 entries (-1: not computed), empty until stepped
  std::vector<bool> accepting_, finished_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> work_;  // expand()'s scratch
  std::uint32_t initial_ = kDead;
};

}  // namespace tf::grammar
