#include "text/grammar/grammar.h"

#include <algorithm>
#include <functional>

namespace tf::grammar {

namespace {

constexpr char32_t kMaxCodePoint = 0x10FFFF;

std::string set_key(const ByteSet& s) { return s.to_string(); }

void encode_utf8(char32_t c, std::uint8_t* out, int& n) {
  if (c < 0x80) {
    out[0] = static_cast<std::uint8_t>(c);
    n = 1;
  } else if (c < 0x800) {
    out[0] = static_cast<std::uint8_t>(0xC0 | (c >> 6));
    out[1] = static_cast<std::uint8_t>(0x80 | (c & 0x3F));
    n = 2;
  } else if (c < 0x10000) {
    out[0] = static_cast<std::uint8_t>(0xE0 | (c >> 12));
    out[1] = static_cast<std::uint8_t>(0x80 | ((c >> 6) & 0x3F));
    out[2] = static_cast<std::uint8_t>(0x80 | (c & 0x3F));
    n = 3;
  } else {
    out[0] = static_cast<std::uint8_t>(0xF0 | (c >> 18));
    out[1] = static_cast<std::uint8_t>(0x80 | ((c >> 12) & 0x3F));
    out[2] = static_cast<std::uint8_t>(0x80 | ((c >> 6) & 0x3F));
    out[3] = static_cast<std::uint8_t>(0x80 | (c & 0x3F));
    n = 4;
  }
}

void utf8_split(char32_t lo, char32_t hi, std::vector<std::vector<std::pair<std::uint8_t, std::uint8_t>>>& out) {
  if (lo > hi) return;
  if (lo <= 0xDFFF && hi >= 0xD800) {  // surrogates are not characters
    if (lo < 0xD800) utf8_split(lo, 0xD7FF, out);
    if (hi > 0xDFFF) utf8_split(0xE000, hi, out);
    return;
  }
  for (const char32_t max : {char32_t{0x7F}, char32_t{0x7FF}, char32_t{0xFFFF}}) {
    if (lo <= max && hi > max) {
      utf8_split(lo, max, out);
      utf8_split(max + 1, hi, out);
      return;
    }
  }
  if (hi <= 0x7F) {
    out.push_back({{static_cast<std::uint8_t>(lo), static_cast<std::uint8_t>(hi)}});
    return;
  }
  // Split until every byte position varies independently (Rust regex-syntax's Utf8Sequences).
  for (int i = 1; i < 4; ++i) {
    const char32_t m = (char32_t{1} << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        utf8_split(lo, lo | m, out);
        utf8_split((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        utf8_split(lo, (hi & ~m) - 1, out);
        utf8_split(hi & ~m, hi, out);
        return;
      }
    }
  }
  std::uint8_t a[4], b[4];
  int na = 0, nb = 0;
  encode_utf8(lo, a, na);
  encode_utf8(hi, b, nb);
  std::vector<std::pair<std::uint8_t, std::uint8_t>> seq;
  for (int i = 0; i < na; ++i) seq.emplace_back(a[i], b[i]);
  out.push_back(std::move(seq));
}

}  // namespace

std::string utf8_of(char32_t c) {
  std::uint8_t b[4];
  int n = 0;
  encode_utf8(c, b, n);
  return {reinterpret_cast<const char*>(b), static_cast<std::size_t>(n)};
}

std::vector<std::vector<std::pair<std::uint8_t, std::uint8_t>>> utf8_sequences(char32_t lo, char32_t hi) {
  std::vector<std::vector<std::pair<std::uint8_t, std::uint8_t>>> out;
  utf8_split(lo, std::min(hi, kMaxCodePoint), out);
  return out;
}

void GrammarBuilder::grow(std::size_t items) {
  elements_ += items + 1;
  if (elements_ > kMaxElements || names_.size() > kMaxRules)
    throw GrammarError("the grammar is too large (over a million elements or 100,000 rules)");
}

std::uint32_t GrammarBuilder::rule(std::string name) {
  names_.push_back(std::move(name));
  alts_.emplace_back();
  grow(0);
  return static_cast<std::uint32_t>(names_.size() - 1);
}

void GrammarBuilder::add(std::uint32_t rule, Expr alternative) {
  grow(alternative.size());
  alts_[rule].push_back(std::move(alternative));
}

GrammarBuilder::Expr GrammarBuilder::set(const ByteSet& s) {
  const auto key = set_key(s);
  auto it = set_index_.find(key);
  if (it == set_index_.end()) {
    it = set_index_.emplace(key, static_cast<std::uint32_t>(sets_.size())).first;
    sets_.push_back(s);
  }
  return {Item{false, it->second}};
}

GrammarBuilder::Expr GrammarBuilder::bytes(std::string_view text) {
  Expr e;
  for (const char c : text) {
    ByteSet s;
    s.set(static_cast<std::uint8_t>(c));
    append(e, set(s));
  }
  return e;
}

GrammarBuilder::Expr GrammarBuilder::byte_range(std::uint8_t lo, std::uint8_t hi) {
  ByteSet s;
  for (int b = lo; b <= hi; ++b) s.set(static_cast<std::size_t>(b));
  return set(s);
}

GrammarBuilder::Expr GrammarBuilder::code_points(const std::vector<std::pair<char32_t, char32_t>>& ranges) {
  // One byte set for every single-byte character; sequences grouped by their leading byte ranges.
  ByteSet ascii;
  std::vector<Expr> alternatives;
  std::map<std::vector<std::pair<std::uint8_t, std::uint8_t>>, bool> seen;
  for (const auto& [lo, hi] : ranges) {
    for (const auto& seq : utf8_sequences(lo, hi)) {
      if (seq.size() == 1) {
        for (int b = seq[0].first; b <= seq[0].second; ++b) ascii.set(static_cast<std::size_t>(b));
        continue;
      }
      if (seen[seq]) continue;
      seen[seq] = true;
      Expr e;
      for (const auto& [a, b] : seq) append(e, byte_range(a, b));
      alternatives.push_back(std::move(e));
    }
  }
  if (ascii.any()) alternatives.insert(alternatives.begin(), set(ascii));
  if (alternatives.empty()) return set(ByteSet{});  // matches nothing
  if (alternatives.size() == 1) return alternatives.front();
  return alt(std::move(alternatives));
}

GrammarBuilder::Expr GrammarBuilder::cat(std::initializer_list<Expr> parts) {
  Expr e;
  for (const auto& p : parts) append(e, p);
  return e;
}

GrammarBuilder::Expr GrammarBuilder::alt(std::vector<Expr> alternatives) {
  if (alternatives.size() == 1) return alternatives.front();
  auto it = alt_rules_.find(alternatives);
  if (it != alt_rules_.end()) return ref(it->second);
  const auto r = rule("alt");
  for (const auto& a : alternatives) add(r, a);
  alt_rules_.emplace(std::move(alternatives), r);
  return ref(r);
}

GrammarBuilder::Expr GrammarBuilder::wrap(const Expr& e) {
  if (e.size() <= 1) return e;
  std::vector<Expr> key{e};
  auto it = alt_rules_.find(key);
  if (it != alt_rules_.end()) return ref(it->second);
  const auto r = rule("group");
  add(r, e);
  alt_rules_.emplace(std::move(key), r);
  return ref(r);
}

GrammarBuilder::Expr GrammarBuilder::repeat(const Expr& body, std::int64_t min, std::int64_t max) {
  if (max >= 0 && max < min) throw GrammarError("a repetition's maximum is below its minimum");
  if (min > 10000 || max > 10000) throw GrammarError("a repetition count over 10,000");
  const Expr e = wrap(body);
  Expr out;
  for (std::int64_t i = 0; i < min; ++i) append(out, e);
  if (max == min) return out;
  const auto key = std::make_pair(e, std::make_pair(std::int64_t{0}, max < 0 ? std::int64_t{-1} : max - min));
  if (auto it = repeat_rules_.find(key); it != repeat_rules_.end()) {
    append(out, ref(it->second));
    return out;
  }
  std::uint32_t head;
  if (max < 0) {  // R ::= e R | empty
    head = rule("star");
    add(head, cat({e, ref(head)}));
    add(head, {});
  } else {  // R_k ::= e R_{k+1} | empty, for k < max - min
    const std::int64_t n = max - min;
    std::uint32_t next = rule("opt");
    add(next, e);
    add(next, {});
    for (std::int64_t k = n - 1; k > 0; --k) {
      const auto r = rule("opt");
      add(r, cat({e, ref(next)}));
      add(r, {});
      next = r;
    }
    head = next;
  }
  repeat_rules_.emplace(key, head);
  append(out, ref(head));
  return out;
}

Grammar GrammarBuilder::build(std::uint32_t root) const {
  const std::size_t n = names_.size();
  // Reachable rules must be defined.
  std::vector<bool> reach(n, false);
  std::vector<std::uint32_t> todo{root};
  reach[root] = true;
  while (!todo.empty()) {
    const auto r = todo.back();
    todo.pop_back();
    if (alts_[r].empty()) throw GrammarError("the rule '" + names_[r] + "' is used but not defined", names_[r]);
    for (const auto& a : alts_[r])
      for (const auto& it : a)
        if (it.ref && !reach[it.value]) {
          reach[it.value] = true;
          todo.push_back(it.value);
        }
  }
  // Nullable rules (they can match the empty text): an alternative is nullable once every item of it is a
  // reference to a nullable rule; a worklist keeps this linear in the grammar's size.
  std::vector<bool> nullable(n, false);
  {
    struct Alt {
      std::uint32_t rule;
      std::size_t left;  // items not known to be nullable
    };
    std::vector<Alt> alts;
    std::vector<std::vector<std::size_t>> uses(n);  // rule -> alternatives that reference it (once per item)
    std::vector<std::uint32_t> work;
    for (std::size_t r = 0; r < n; ++r) {
      if (!reach[r]) continue;
      for (const auto& a : alts_[r]) {
        const bool has_set = std::any_of(a.begin(), a.end(), [](const Item& it) { return !it.ref; });
        if (has_set) continue;  // a byte set is never empty text
        alts.push_back({static_cast<std::uint32_t>(r), a.size()});
        for (const auto& it : a) uses[it.value].push_back(alts.size() - 1);
        if (a.empty() && !nullable[r]) {
          nullable[r] = true;
          work.push_back(static_cast<std::uint32_t>(r));
        }
      }
    }
    while (!work.empty()) {
      const auto r = work.back();
      work.pop_back();
      for (const auto k : uses[r]) {
        if (--alts[k].left == 0 && !nullable[alts[k].rule]) {
          nullable[alts[k].rule] = true;
          work.push_back(alts[k].rule);
        }
      }
    }
  }
  // Left recursion: a rule reaching itself through references preceded only by nullable items.
  std::vector<std::vector<std::uint32_t>> left(n);
  for (std::size_t r = 0; r < n; ++r) {
    if (!reach[r]) continue;
    for (const auto& a : alts_[r])
      for (const auto& it : a) {
        if (!it.ref) break;
        left[r].push_back(it.value);
        if (!nullable[it.value]) break;
      }
  }
  std::vector<int> mark(n, 0);  // 0 new, 1 on the path, 2 done
  for (std::size_t s = 0; s < n; ++s) {
    if (!reach[s] || mark[s] != 0) continue;
    std::vector<std::pair<std::uint32_t, std::size_t>> path{{static_cast<std::uint32_t>(s), 0}};
    mark[s] = 1;
    while (!path.empty()) {
      auto& [r, i] = path.back();
      if (i < left[r].size()) {
        const auto next = left[r][i++];
        if (mark[next] == 1)
          throw GrammarError("the rule '" + names_[next] + "' is left recursive (it can reach itself before any byte)",
                             names_[next]);
        if (mark[next] == 0) {
          mark[next] = 1;
          path.emplace_back(next, 0);
        }
      } else {
        mark[r] = 2;
        path.pop_back();
      }
    }
  }
  Grammar g;
  g.sets = sets_;
  g.names = names_;
  g.root = root;
  g.rules.resize(n);
  g.elements.push_back({Grammar::Kind::End, 0});  // position 0 is never a live position
  for (std::size_t r = 0; r < n; ++r) {
    for (const auto& a : alts_[r]) {
      g.rules[r].push_back(static_cast<std::uint32_t>(g.elements.size()));
      for (const auto& it : a) g.elements.push_back({it.ref ? Grammar::Kind::Ref : Grammar::Kind::Set, it.value});
      g.elements.push_back({Grammar::Kind::End, 0});
    }
  }
  return g;
}

GrammarMatcher::GrammarMatcher(Grammar g) : g_(std::move(g)) { reset(); }

void GrammarMatcher::reset() {
  nodes_.assign(1, Node{0, 0});  // kEmpty
  node_index_.clear();
  states_.assign(1, {});  // kDead
  state_index_.clear();
  state_index_.emplace(std::vector<std::uint32_t>{}, kDead);
  next_.assign(1, {});
  accepting_.assign(1, false);
  finished_.assign(1, false);
  std::vector<std::uint32_t> stacks;
  for (const auto a : g_.rules[g_.root]) expand(a, kEmpty, stacks);
  initial_ = intern(stacks);
}

std::uint32_t GrammarMatcher::cons(std::uint32_t pos, std::uint32_t parent) {
  const std::uint64_t key = (static_cast<std::uint64_t>(pos) << 32) | parent;
  const auto [it, fresh] = node_index_.try_emplace(key, static_cast<std::uint32_t>(nodes_.size()));
  if (fresh) nodes_.push_back(Node{pos, parent});
  return it->second;
}

void GrammarMatcher::expand(std::uint32_t start, std::uint32_t start_parent, std::vector<std::uint32_t>& out) {
  // Depth first over the alternatives, with an explicit stack (rule chains may be long).
  auto& work = work_;
  work.assign(1, {start, start_parent});
  while (!work.empty()) {
    auto [pos, parent] = work.back();
    work.pop_back();
    for (bool more = true; more;) {
      more = false;
      const auto& e = g_.elements[pos];
      switch (e.kind) {
        case Grammar::Kind::End:
          if (parent == kEmpty) {
            out.push_back(kEmpty);
            break;
          }
          pos = nodes_[parent].pos;
          parent = nodes_[parent].parent;
          more = true;
          break;
        case Grammar::Kind::Set:
          if (g_.sets[e.value].any()) out.push_back(cons(pos, parent));
          break;
        case Grammar::Kind::Ref: {
          const std::uint32_t cont = pos + 1;
          const std::uint32_t below = g_.elements[cont].kind == Grammar::Kind::End ? parent : cons(cont, parent);
          const auto& alts = g_.rules[e.value];
          for (auto it = alts.rbegin(); it != alts.rend(); ++it) work.emplace_back(*it, below);
          break;
        }
      }
    }
  }
}

std::uint32_t GrammarMatcher::intern(std::vector<std::uint32_t>& stacks) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  if (stacks.empty()) return kDead;
  const auto [it, fresh] = state_index_.try_emplace(stacks, static_cast<std::uint32_t>(states_.size()));
  if (fresh) {
    const bool accepting = stacks.front() == kEmpty;
    states_.push_back(stacks);
    next_.emplace_back();
    accepting_.push_back(accepting);
    finished_.push_back(accepting && stacks.size() == 1);
  }
  return it->second;
}

std::uint32_t GrammarMatcher::compute_step(std::uint32_t state, std::uint8_t byte) {
  if (state == kDead) return kDead;
  if (next_[state].empty()) next_[state].assign(256, -1);
  std::vector<std::uint32_t> out;
  for (const auto n : states_[state]) {
    if (n == kEmpty) continue;
    const auto [pos, parent] = nodes_[n];
    if (!g_.sets[g_.elements[pos].value].test(byte)) continue;
    expand(pos + 1, parent, out);
  }
  const auto s = intern(out);
  next_[state][byte] = static_cast<std::int32_t>(s);  // next_ may have grown: index again
  return s;
}

}  // namespace tf::grammar
