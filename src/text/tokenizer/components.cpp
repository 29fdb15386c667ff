// Normalizers, pre-tokenizers, decoders and post-processors, each as the `tokenizers` library defines it.
#include <algorithm>
#include <functional>
#include <stdexcept>

#include "text/tokenizer/tokenizer_impl.h"
#include "text/tokenizer/unicode.h"

namespace tf::tokenizer_detail {

namespace {

using Segments = std::vector<std::pair<std::pair<std::size_t, std::size_t>, bool>>;  // ((start, end), is_match)

// Replaces every occurrence of a literal (non-overlapping, left to right).
std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  if (from.empty()) return std::string(s);
  std::string out;
  out.reserve(s.size());
  std::size_t pos = 0;
  while (true) {
    const std::size_t hit = s.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(s.substr(pos));
  return out;
}

// Segments of `s` for the matches of a character predicate: each matching character is a match of its own.
Segments char_segments(std::string_view s, const std::function<bool(char32_t)>& pred) {
  Segments segs;
  std::size_t last = 0, i = 0;
  while (i < s.size()) {
    const std::size_t b = i;
    const char32_t c = utf8_next(s, i);
    if (pred(c)) {
      if (last < b) segs.push_back({{last, b}, false});
      segs.push_back({{b, i}, true});
      last = i;
    }
  }
  if (last < s.size()) segs.push_back({{last, s.size()}, false});
  return segs;
}

Segments regex_segments(std::string_view s, const Regex& re) {
  std::vector<std::pair<std::size_t, std::size_t>> matches;
  re.find_all(s, matches);
  Segments segs;
  std::size_t prev = 0;
  for (const auto& [b, e] : matches) {
    if (prev < b) segs.push_back({{prev, b}, false});
    segs.push_back({{b, e}, true});
    prev = e;
  }
  if (prev < s.size()) segs.push_back({{prev, s.size()}, false});
  return segs;
}

// NormalizedString::split: turns the match segments into the pieces the behavior keeps (empty ones dropped).
void apply_split(const Piece& piece, Segments segs, SplitBehavior behavior, bool invert, std::vector<Piece>& out) {
  if (invert)
    for (auto& s : segs) s.second = !s.second;
  std::vector<std::pair<std::size_t, std::size_t>> keep;
  switch (behavior) {
    case SplitBehavior::Removed:
      for (const auto& [off, m] : segs)
        if (!m) keep.push_back(off);
      break;
    case SplitBehavior::Isolated:
      for (const auto& [off, m] : segs) keep.push_back(off);
      break;
    case SplitBehavior::MergedWithPrevious: {
      bool prev_match = false;
      for (const auto& [off, m] : segs) {
        if (m && !prev_match && !keep.empty())
          keep.back().second = off.second;
        else
          keep.push_back(off);
        prev_match = m;
      }
      break;
    }
    case SplitBehavior::MergedWithNext: {
      bool prev_match = false;
      for (auto it = segs.rbegin(); it != segs.rend(); ++it) {
        if (it->second && !prev_match && !keep.empty())
          keep.back().first = it->first.first;
        else
          keep.push_back(it->first);
        prev_match = it->second;
      }
      std::reverse(keep.begin(), keep.end());
      break;
    }
    case SplitBehavior::Contiguous: {
      bool prev_match = false;
      for (const auto& [off, m] : segs) {
        if (m == prev_match && !keep.empty())
          keep.back().second = off.second;
        else
          keep.push_back(off);
        prev_match = m;
      }
      break;
    }
  }
  for (const auto& [b, e] : keep)
    if (e > b) out.push_back(Piece{piece.text.substr(b, e - b), piece.at_origin && b == 0});
}

template <typename F>
void split_each(std::vector<Piece>& pieces, F&& make_segments, SplitBehavior behavior, bool invert) {
  std::vector<Piece> out;
  out.reserve(pieces.size() * 2);
  for (const Piece& p : pieces) apply_split(p, make_segments(p.text), behavior, invert, out);
  pieces = std::move(out);
}

bool is_bert_punctuation(char32_t c) {
  if (c < 0x80) return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
  return is_punctuation(c);
}

// ---- normalizers --------------------------------------------------------------------------------------------

struct SequenceNormalizer final : Normalizer {
  std::vector<std::unique_ptr<Normalizer>> parts;
  void normalize(std::string& s) const override {
    for (const auto& p : parts) p->normalize(s);
  }
};

struct UnicodeNormalizer final : Normalizer {
  NormalForm form;
  explicit UnicodeNormalizer(NormalForm f) : form(f) {}
  void normalize(std::string& s) const override { s = tokenizer_detail::normalize(s, form); }
};

struct PrependNormalizer final : Normalizer {
  std::string prefix;
  void normalize(std::string& s) const override {
    if (!s.empty()) s.insert(0, prefix);
  }
};

struct ReplaceNormalizer final : Normalizer {
  std::string pattern, content;
  std::unique_ptr<Regex> re;
  void normalize(std::string& s) const override {
    if (!re) {
      s = replace_all(s, pattern, content);
      return;
    }
    std::vector<std::pair<std::size_t, std::size_t>> m;
    re->find_all(s, m);
    if (m.empty()) return;
    std::string out;
    std::size_t prev = 0;
    for (const auto& [b, e] : m) {
      out.append(s, prev, b - prev);
      out += content;
      prev = e;
    }
    out.append(s, prev, std::string::npos);
    s = std::move(out);
  }
};

struct LowercaseNormalizer final : Normalizer {
  void normalize(std::string& s) const override { s = to_lowercase(s); }
};

struct StripNormalizer final : Normalizer {
  bool left = false, right = false;
  void normalize(std::string& s) const override {
    std::size_t b = 0, e = s.size();
    if (left) {
      std::size_t i = 0;
      while (i < s.size()) {
        std::size_t j = i;
        if (!is_white_space(utf8_next(s, j))) break;
        i = j;
      }
      b = i;
    }
    if (right) {
      // walk back over whitespace characters
      while (e > b) {
        std::size_t start = e - 1;
        while (start > b && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
        std::size_t j = start;
        if (!is_white_space(utf8_next(s, j))) break;
        e = start;
      }
    }
    s = s.substr(b, e - b);
  }
};

struct StripAccentsNormalizer final : Normalizer {
  void normalize(std::string& s) const override {
    std::string out;
    std::size_t i = 0;
    while (i < s.size()) {
      const std::size_t b = i;
      const char32_t c = utf8_next(s, i);
      if (!is_mark(c)) out.append(s, b, i - b);
    }
    s = std::move(out);
  }
};

struct BertNormalizer final : Normalizer {
  bool clean_text = true, chinese = true, strip_accents = true, lowercase = true;
  void normalize(std::string& s) const override {
    std::string out;
    out.reserve(s.size() + 8);
    std::size_t i = 0;
    while (i < s.size()) {
      const std::size_t b = i;
      const char32_t c = utf8_next(s, i);
      if (clean_text) {
        if (c == 0 || c == 0xFFFD) continue;
        const bool ws = c == '\t' || c == '\n' || c == '\r' || is_white_space(c);
        if (!ws && is_other(c)) continue;
        if (ws) {
          out += ' ';
          continue;
        }
      }
      if (chinese && is_cjk_ideograph(c)) {
        out += ' ';
        out.append(s, b, i - b);
        out += ' ';
        continue;
      }
      out.append(s, b, i - b);
    }
    if (strip_accents) {
      const std::string d = tokenizer_detail::normalize(out, NormalForm::NFD);
      out.clear();
      std::size_t k = 0;
      while (k < d.size()) {
        const std::size_t b = k;
        const char32_t c = utf8_next(d, k);
        if (!is_mark_nonspacing(c)) out.append(d, b, k - b);
      }
    }
    if (lowercase) out = to_lowercase(out);
    s = std::move(out);
  }
};

// ---- pre-tokenizers -----------------------------------------------------------------------------------------

struct SequencePreTokenizer final : PreTokenizer {
  std::vector<std::unique_ptr<PreTokenizer>> parts;
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    for (const auto& p : parts) p->pre_tokenize(pieces);
  }
};

struct SplitPreTokenizer final : PreTokenizer {
  std::string literal;
  std::unique_ptr<Regex> re;
  SplitBehavior behavior = SplitBehavior::Isolated;
  bool invert = false;
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    split_each(
        pieces,
        [&](const std::string& s) {
          if (re) return regex_segments(s, *re);
          Segments segs;
          std::size_t prev = 0;
          if (!literal.empty()) {
            std::size_t pos = 0;
            while ((pos = s.find(literal, pos)) != std::string::npos) {
              if (prev < pos) segs.push_back({{prev, pos}, false});
              segs.push_back({{pos, pos + literal.size()}, true});
              prev = pos = pos + literal.size();
            }
          }
          if (prev < s.size()) segs.push_back({{prev, s.size()}, false});
          return segs;
        },
        behavior, invert);
  }
};

constexpr std::string_view kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

struct ByteLevelPreTokenizer final : PreTokenizer {
  bool add_prefix_space = false;
  std::unique_ptr<Regex> re;  // null: use_regex false
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    if (add_prefix_space)
      for (Piece& p : pieces)
        if (p.text.empty() || p.text[0] != ' ') p.text.insert(0, " ");
    if (re) split_each(pieces, [&](const std::string& s) { return regex_segments(s, *re); }, SplitBehavior::Isolated, false);
    for (Piece& p : pieces) {
      std::string mapped;
      mapped.reserve(p.text.size() + p.text.size() / 2);
      for (const char ch : p.text) mapped += byte_to_unicode(static_cast<unsigned char>(ch));
      p.text = std::move(mapped);
    }
  }
};

struct DigitsPreTokenizer final : PreTokenizer {
  bool individual = false;
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    split_each(pieces, [](const std::string& s) { return char_segments(s, is_numeric); },
               individual ? SplitBehavior::Isolated : SplitBehavior::Contiguous, false);
  }
};

struct MetaspacePreTokenizer final : PreTokenizer {
  std::string replacement;
  char32_t replacement_char = 0x2581;
  int prepend = 0;  // 0 always, 1 first, 2 never
  bool split = true;
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    for (Piece& p : pieces) {
      p.text = replace_all(p.text, " ", replacement);
      const bool starts = p.text.compare(0, replacement.size(), replacement) == 0;
      if (!starts && (prepend == 0 || (prepend == 1 && p.at_origin))) p.text.insert(0, replacement);
    }
    if (split) {
      const char32_t rc = replacement_char;
      split_each(pieces, [rc](const std::string& s) { return char_segments(s, [rc](char32_t c) { return c == rc; }); },
                 SplitBehavior::MergedWithNext, false);
    }
  }
};

struct WhitespacePreTokenizer final : PreTokenizer {  // \w+|[^\w\s]+, keeping the matches
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    std::vector<Piece> out;
    for (const Piece& p : pieces) {
      const std::string& s = p.text;
      std::size_t i = 0;
      int cls = -1;  // 0 word, 1 other non-space
      std::size_t start = 0;
      auto flush = [&](std::size_t end) {
        if (cls >= 0 && end > start) out.push_back(Piece{s.substr(start, end - start), p.at_origin && start == 0});
        cls = -1;
      };
      while (i < s.size()) {
        const std::size_t b = i;
        const char32_t c = utf8_next(s, i);
        const int k = is_word_char(c) ? 0 : is_white_space(c) ? 2 : 1;
        if (k != cls) {
          flush(b);
          if (k != 2) {
            cls = k;
            start = b;
          }
        }
      }
      flush(s.size());
    }
    pieces = std::move(out);
  }
};

struct CharPredicatePreTokenizer final : PreTokenizer {
  std::function<bool(char32_t)> pred;
  SplitBehavior behavior = SplitBehavior::Removed;
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    split_each(pieces, [&](const std::string& s) { return char_segments(s, pred); }, behavior, false);
  }
};

// ---- decoders ---------------------------------------------------------------------------------------------------

std::string join(const std::vector<std::string>& tokens) {
  std::string out;
  for (const auto& t : tokens) out += t;
  return out;
}

struct SequenceDecoder final : Decoder {
  std::vector<std::unique_ptr<Decoder>> parts;
  void decode(std::vector<std::string>& tokens, bool raw) const override {
    for (const auto& p : parts) p->decode(tokens, raw);
  }
  bool joins_byte_runs() const override {
    for (const auto& p : parts)
      if (p->joins_byte_runs()) return true;
    return false;
  }
};

struct ByteLevelDecoder final : Decoder {
  void decode(std::vector<std::string>& tokens, bool raw) const override {
    std::string bytes;
    for (const std::string& t : tokens) {
      const std::size_t mark = bytes.size();
      std::size_t i = 0;
      bool all = true;
      while (i < t.size()) {
        const int b = unicode_to_byte(utf8_next(t, i));
        if (b < 0) {
          all = false;
          break;
        }
        bytes += static_cast<char>(b);
      }
      if (!all) {
        bytes.resize(mark);
        bytes += t;
      }
    }
    tokens.assign(1, raw ? std::move(bytes) : utf8_lossy(bytes));
  }
};

struct MetaspaceDecoder final : Decoder {
  std::string replacement;
  bool strip_first = true;
  void decode(std::vector<std::string>& tokens, bool) const override {
    for (std::size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = replace_all(tokens[i], replacement, (i == 0 && strip_first) ? "" : " ");
  }
};

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

// "<0xNN>" as u8::from_str_radix reads NN (a leading '+' sign is accepted there).
int byte_token_value(const std::string& t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  if (t[3] == '+') return hex_value(t[4]);
  const int hi = hex_value(t[3]), lo = hex_value(t[4]);
  return (hi < 0 || lo < 0) ? -1 : hi * 16 + lo;
}

namespace {

struct ByteFallbackDecoder final : Decoder {
  bool joins_byte_runs() const override { return true; }
  void decode(std::vector<std::string>& tokens, bool raw) const override {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string pending;
    auto flush = [&] {
      if (pending.empty()) return;
      if (raw || is_valid_utf8(pending))
        out.push_back(pending);
      else
        for (std::size_t k = 0; k < pending.size(); ++k) out.emplace_back("\xEF\xBF\xBD");
      pending.clear();
    };
    for (std::string& t : tokens) {
      const int b = byte_token_value(t);
      if (b >= 0) {
        pending += static_cast<char>(b);
        continue;
      }
      flush();
      out.push_back(std::move(t));
    }
    flush();
    tokens = std::move(out);
  }
};

struct FuseDecoder final : Decoder {
  void decode(std::vector<std::string>& tokens, bool) const override { tokens.assign(1, join(tokens)); }
};

struct StripDecoder final : Decoder {
  std::string content;  // one character
  std::size_t start = 0, stop = 0;
  void decode(std::vector<std::string>& tokens, bool) const override {
    for (std::string& t : tokens) {
      // character boundaries of t
      std::vector<std::size_t> bounds{0};
      std::size_t i = 0;
      while (i < t.size()) {
        i += std::min(utf8_len(static_cast<unsigned char>(t[i])), t.size() - i);
        bounds.push_back(i);
      }
      const std::size_t nchars = bounds.size() - 1;
      auto char_at = [&](std::size_t k) { return std::string_view(t).substr(bounds[k], bounds[k + 1] - bounds[k]); };
      std::size_t start_cut = 0;
      while (start_cut < start && start_cut < nchars && char_at(start_cut) == content) ++start_cut;
      std::size_t stop_cut = 0;
      while (stop_cut < stop && stop_cut < nchars && char_at(nchars - 1 - stop_cut) == content) ++stop_cut;
      // The reference keeps (byte length - cuts) characters after the start cut: with multi-byte characters
      // that can be all of them.
      const std::size_t remaining = nchars - start_cut;
      std::size_t take = remaining;
      if (t.size() >= start_cut + stop_cut) take = std::min(remaining, t.size() - start_cut - stop_cut);
      t = t.substr(bounds[start_cut], bounds[start_cut + take] - bounds[start_cut]);
    }
  }
};

struct ReplaceDecoder final : Decoder {
  ReplaceNormalizer impl;
  void decode(std::vector<std::string>& tokens, bool) const override {
    for (std::string& t : tokens) impl.normalize(t);
  }
};

struct WordPieceDecoder final : Decoder {
  std::string prefix;
  bool cleanup = true;
  static std::string clean(std::string s) {
    static const std::pair<const char*, const char*> kRules[] = {
        {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
        {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (const auto& [from, to] : kRules) s = replace_all(s, from, to);
    return s;
  }
  void decode(std::vector<std::string>& tokens, bool) const override {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0) {
        if (!prefix.empty() && t.compare(0, prefix.size(), prefix) == 0)
          t.erase(0, prefix.size());
        else
          t.insert(0, " ");
      }
      if (cleanup) t = clean(std::move(t));
    }
  }
};

struct BpeSuffixDecoder final : Decoder {
  std::string suffix;
  void decode(std::vector<std::string>& tokens, bool) const override {
    for (std::size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = replace_all(tokens[i], suffix, i + 1 == tokens.size() ? "" : " ");
  }
};

// ---- post-processors --------------------------------------------------------------------------------------------

struct TemplateProcessor final : PostProcessor {
  std::vector<int32_t> before, after;
  void process(std::vector<int32_t>& ids) const override {
    ids.insert(ids.begin(), before.begin(), before.end());
    ids.insert(ids.end(), after.begin(), after.end());
  }
};

struct SequenceProcessor final : PostProcessor {
  std::vector<std::unique_ptr<PostProcessor>> parts;
  void process(std::vector<int32_t>& ids) const override {
    for (const auto& p : parts) p->process(ids);
  }
};

std::unique_ptr<Regex> compile(const std::string& pattern) { return std::make_unique<Regex>(pattern); }

char32_t single_char(const std::string& s) {
  std::size_t i = 0;
  if (s.empty()) return 0;
  return utf8_next(s, i);
}

}  // namespace

std::unique_ptr<Normalizer> make_sequence_normalizer(std::vector<std::unique_ptr<Normalizer>> parts) {
  auto n = std::make_unique<SequenceNormalizer>();
  n->parts = std::move(parts);
  return n;
}
std::unique_ptr<Normalizer> make_unicode_normalizer(int form) {
  return std::make_unique<UnicodeNormalizer>(static_cast<NormalForm>(form));
}
std::unique_ptr<Normalizer> make_prepend_normalizer(std::string prefix) {
  auto n = std::make_unique<PrependNormalizer>();
  n->prefix = std::move(prefix);
  return n;
}
std::unique_ptr<Normalizer> make_replace_normalizer(std::string pattern, bool is_regex, std::string content) {
  auto n = std::make_unique<ReplaceNormalizer>();
  if (is_regex) n->re = compile(pattern);
  n->pattern = std::move(pattern);
  n->content = std::move(content);
  return n;
}
std::unique_ptr<Normalizer> make_lowercase_normalizer() { return std::make_unique<LowercaseNormalizer>(); }
std::unique_ptr<Normalizer> make_strip_normalizer(bool left, bool right) {
  auto n = std::make_unique<StripNormalizer>();
  n->left = left;
  n->right = right;
  return n;
}
std::unique_ptr<Normalizer> make_strip_accents_normalizer() { return std::make_unique<StripAccentsNormalizer>(); }
std::unique_ptr<Normalizer> make_bert_normalizer(bool clean_text, bool handle_chinese_chars, bool strip_accents,
                                                 bool lowercase) {
  auto n = std::make_unique<BertNormalizer>();
  n->clean_text = clean_text;
  n->chinese = handle_chinese_chars;
  n->strip_accents = strip_accents;
  n->lowercase = lowercase;
  return n;
}

std::unique_ptr<PreTokenizer> make_sequence_pre_tokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts) {
  auto p = std::make_unique<SequencePreTokenizer>();
  p->parts = std::move(parts);
  return p;
}
std::unique_ptr<PreTokenizer> make_split_pre_tokenizer(std::string pattern, bool is_regex, SplitBehavior behavior,
                                                       bool invert) {
  auto p = std::make_unique<SplitPreTokenizer>();
  if (is_regex)
    p->re = compile(pattern);
  else
    p->literal = std::move(pattern);
  p->behavior = behavior;
  p->invert = invert;
  return p;
}
std::unique_ptr<PreTokenizer> make_byte_level_pre_tokenizer(bool add_prefix_space, bool use_regex) {
  auto p = std::make_unique<ByteLevelPreTokenizer>();
  p->add_prefix_space = add_prefix_space;
  if (use_regex) p->re = compile(std::string(kGpt2Pattern));
  return p;
}
std::unique_ptr<PreTokenizer> make_digits_pre_tokenizer(bool individual_digits) {
  auto p = std::make_unique<DigitsPreTokenizer>();
  p->individual = individual_digits;
  return p;
}
std::unique_ptr<PreTokenizer> make_metaspace_pre_tokenizer(std::string replacement, int prepend, bool split) {
  auto p = std::make_unique<MetaspacePreTokenizer>();
  p->replacement_char = single_char(replacement);
  p->replacement = std::move(replacement);
  p->prepend = prepend;
  p->split = split;
  return p;
}
std::unique_ptr<PreTokenizer> make_whitespace_pre_tokenizer() { return std::make_unique<WhitespacePreTokenizer>(); }
std::unique_ptr<PreTokenizer> make_whitespace_split_pre_tokenizer() {
  auto p = std::make_unique<CharPredicatePreTokenizer>();
  p->pred = is_white_space;
  p->behavior = SplitBehavior::Removed;
  return p;
}
std::unique_ptr<PreTokenizer> make_punctuation_pre_tokenizer(SplitBehavior behavior) {
  auto p = std::make_unique<CharPredicatePreTokenizer>();
  p->pred = is_bert_punctuation;
  p->behavior = behavior;
  return p;
}
std::unique_ptr<PreTokenizer> make_bert_pre_tokenizer() {
  std::vector<std::unique_ptr<PreTokenizer>> parts;
  parts.push_back(make_whitespace_split_pre_tokenizer());
  parts.push_back(make_punctuation_pre_tokenizer(SplitBehavior::Isolated));
  return make_sequence_pre_tokenizer(std::move(parts));
}
std::unique_ptr<PreTokenizer> make_char_delimiter_pre_tokenizer(std::string delimiter) {
  auto p = std::make_unique<CharPredicatePreTokenizer>();
  const char32_t d = single_char(delimiter);
  p->pred = [d](char32_t c) { return c == d; };
  p->behavior = SplitBehavior::Removed;
  return p;
}

std::unique_ptr<Decoder> make_sequence_decoder(std::vector<std::unique_ptr<Decoder>> parts) {
  auto d = std::make_unique<SequenceDecoder>();
  d->parts = std::move(parts);
  return d;
}
std::unique_ptr<Decoder> make_byte_level_decoder() { return std::make_unique<ByteLevelDecoder>(); }
std::unique_ptr<Decoder> make_metaspace_decoder(std::string replacement, bool strip_first) {
  auto d = std::make_unique<MetaspaceDecoder>();
  d->replacement = std::move(replacement);
  d->strip_first = strip_first;
  return d;
}
std::unique_ptr<Decoder> make_byte_fallback_decoder() { return std::make_unique<ByteFallbackDecoder>(); }
std::unique_ptr<Decoder> make_fuse_decoder() { return std::make_unique<FuseDecoder>(); }
std::unique_ptr<Decoder> make_strip_decoder(std::string content, std::size_t start, std::size_t stop) {
  auto d = std::make_unique<StripDecoder>();
  d->content = std::move(content);
  d->start = start;
  d->stop = stop;
  return d;
}
std::unique_ptr<Decoder> make_replace_decoder(std::string pattern, bool is_regex, std::string content) {
  auto d = std::make_unique<ReplaceDecoder>();
  if (is_regex) d->impl.re = compile(pattern);
  d->impl.pattern = std::move(pattern);
  d->impl.content = std::move(content);
  return d;
}
std::unique_ptr<Decoder> make_wordpiece_decoder(std::string prefix, bool cleanup) {
  auto d = std::make_unique<WordPieceDecoder>();
  d->prefix = std::move(prefix);
  d->cleanup = cleanup;
  return d;
}
std::unique_ptr<Decoder> make_bpe_suffix_decoder(std::string suffix) {
  auto d = std::make_unique<BpeSuffixDecoder>();
  d->suffix = std::move(suffix);
  return d;
}

std::unique_ptr<PostProcessor> make_template_processor(std::vector<std::vector<int32_t>> items_before,
                                                       std::vector<std::vector<int32_t>> items_after) {
  auto p = std::make_unique<TemplateProcessor>();
  for (const auto& v : items_before) p->before.insert(p->before.end(), v.begin(), v.end());
  for (const auto& v : items_after) p->after.insert(p->after.end(), v.begin(), v.end());
  return p;
}
std::unique_ptr<PostProcessor> make_sequence_processor(std::vector<std::unique_ptr<PostProcessor>> parts) {
  auto p = std::make_unique<SequenceProcessor>();
  p->parts = std::move(parts);
  return p;
}

}  // namespace tf::tokenizer_detail
