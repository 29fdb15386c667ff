#include "text/tokenizer/tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/gguf.h"
#include "text/tokenizer/tokenizer_impl.h"
#include "text/tokenizer/unicode.h"

namespace tf {

namespace tokenizer_detail {

// ---- added tokens -------------------------------------------------------------------------------------------

void AddedTokenMatcher::add(std::string_view pattern, int32_t index) {
  if (pattern.empty()) return;
  first_byte_[static_cast<unsigned char>(pattern[0])] = true;
  int32_t node = 0;
  for (const char ch : pattern) {
    const auto c = static_cast<unsigned char>(ch);
    auto& next = nodes_[static_cast<std::size_t>(node)].next;
    auto it = std::lower_bound(next.begin(), next.end(), c,
                               [](const std::pair<unsigned char, int32_t>& e, unsigned char v) { return e.first < v; });
    if (it != next.end() && it->first == c) {
      node = it->second;
    } else {
      const auto child = static_cast<int32_t>(nodes_.size());
      next.insert(it, {c, child});
      nodes_.emplace_back();
      node = child;
    }
  }
  if (nodes_[static_cast<std::size_t>(node)].index < 0) nodes_[static_cast<std::size_t>(node)].index = index;
}

bool AddedTokenMatcher::find(std::string_view text, std::size_t from, std::size_t& start, std::size_t& len,
                             int32_t& index) const {
  for (std::size_t i = from; i < text.size(); ++i) {
    if (!first_byte_[static_cast<unsigned char>(text[i])]) continue;
    int32_t node = 0;
    std::size_t best_len = 0;
    int32_t best = -1;
    for (std::size_t k = i; k < text.size(); ++k) {
      const auto c = static_cast<unsigned char>(text[k]);
      const auto& next = nodes_[static_cast<std::size_t>(node)].next;
      auto it = std::lower_bound(next.begin(), next.end(), c,
                                 [](const std::pair<unsigned char, int32_t>& e, unsigned char v) { return e.first < v; });
      if (it == next.end() || it->first != c) break;
      node = it->second;
      if (nodes_[static_cast<std::size_t>(node)].index >= 0) {
        best = nodes_[static_cast<std::size_t>(node)].index;
        best_len = k + 1 - i;
      }
    }
    if (best >= 0) {
      start = i;
      len = best_len;
      index = best;
      return true;
    }
  }
  return false;
}

void TokenizerImpl::index_added_tokens() {
  is_byte_token.clear();
  if (decoder && decoder->joins_byte_runs()) {
    is_byte_token.assign(vocab.id_to_token.size(), false);
    for (std::size_t i = 0; i < vocab.id_to_token.size(); ++i)
      is_byte_token[i] = byte_token_value(vocab.id_to_token[i]) >= 0;
  }
  special_ids.clear();
  raw_all = raw_plain = normalized_all = normalized_plain = AddedTokenMatcher{};
  for (std::size_t k = 0; k < added.size(); ++k) {
    const AddedToken& t = added[k];
    if (t.content.empty()) continue;
    if (t.special) special_ids.insert(t.id);
    const auto index = static_cast<int32_t>(k);
    if (t.normalized) {
      std::string pattern = t.content;
      if (normalizer) normalizer->normalize(pattern);
      normalized_all.add(pattern, index);
      if (!t.special) normalized_plain.add(pattern, index);
    } else {
      raw_all.add(t.content, index);
      if (!t.special) raw_plain.add(t.content, index);
    }
  }
}

namespace {

struct Segment {
  std::string text;  // when id < 0
  int32_t id = -1;
  bool at_origin = false;
};

bool ends_with_word_char(std::string_view s) {
  if (s.empty()) return false;
  std::size_t b = s.size() - 1;
  while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
  std::size_t i = b;
  return is_word_char(utf8_next(s, i));
}

bool starts_with_word_char(std::string_view s) {
  if (s.empty()) return false;
  std::size_t i = 0;
  return is_word_char(utf8_next(s, i));
}

// The AddedVocabulary split: finds the added tokens in `text` and cuts it around them.
void split_added(const TokenizerImpl& impl, const AddedTokenMatcher& matcher, const std::string& text,
                 bool at_origin, std::vector<Segment>& out) {
  if (matcher.empty() || text.empty()) {
    if (!text.empty()) out.push_back(Segment{text, -1, at_origin});
    return;
  }
  std::size_t search = 0, start_offset = 0;
  std::size_t m_start = 0, m_len = 0;
  int32_t index = -1;
  while (search < text.size() && matcher.find(text, search, m_start, m_len, index)) {
    const AddedToken& tok = impl.added[static_cast<std::size_t>(index)];
    std::size_t start = m_start, stop = m_start + m_len;
    search = stop;
    if (tok.single_word) {
      const bool start_space = start == 0 || !ends_with_word_char(std::string_view(text).substr(0, start));
      const bool stop_space = stop == text.size() || !starts_with_word_char(std::string_view(text).substr(stop));
      if (!start_space || !stop_space) continue;
    }
    if (tok.lstrip) {
      std::size_t new_start = start;  // start of the whitespace run that ends at `start`
      while (new_start > 0) {
        std::size_t b = new_start - 1;
        while (b > 0 && (static_cast<unsigned char>(text[b]) & 0xC0) == 0x80) --b;
        std::size_t i = b;
        if (!is_white_space(utf8_next(text, i))) break;
        new_start = b;
      }
      start = std::max(new_start, start_offset);
    }
    if (tok.rstrip) {
      std::size_t i = stop;
      while (i < text.size()) {
        std::size_t j = i;
        if (!is_white_space(utf8_next(text, j))) break;
        i = j;
      }
      stop = i;
    }
    if (start_offset < start) out.push_back(Segment{text.substr(start_offset, start - start_offset), -1, at_origin && start_offset == 0});
    out.push_back(Segment{{}, tok.id, false});
    start_offset = stop;
  }
  if (start_offset < text.size())
    out.push_back(Segment{text.substr(start_offset), -1, at_origin && start_offset == 0});
}

}  // namespace

void TokenizerImpl::encode(std::string_view text, bool add_special, bool parse_special,
                           std::vector<int32_t>& out) const {
  const std::string input = is_valid_utf8(text) ? std::string(text) : utf8_lossy(text);
  std::vector<Segment> first;
  split_added(*this, parse_special ? raw_all : raw_plain, input, true, first);
  const AddedTokenMatcher& norm_matcher = parse_special ? normalized_all : normalized_plain;
  std::vector<Piece> pieces;
  for (Segment& seg : first) {
    if (seg.id >= 0) {
      out.push_back(seg.id);
      continue;
    }
    std::string normalized = std::move(seg.text);
    if (normalizer) normalizer->normalize(normalized);
    std::vector<Segment> second;
    split_added(*this, norm_matcher, normalized, seg.at_origin, second);
    for (Segment& s : second) {
      if (s.id >= 0) {
        out.push_back(s.id);
        continue;
      }
      pieces.clear();
      pieces.push_back(Piece{std::move(s.text), s.at_origin});
      if (pre_tokenizer) pre_tokenizer->pre_tokenize(pieces);
      for (const Piece& p : pieces) model->tokenize(p.text, out);
    }
  }
  if (add_special && post_processor) post_processor->process(out);
}

std::string TokenizerImpl::decode(const int32_t* ids, std::size_t n, bool skip_special, bool raw) const {
  std::vector<std::string> tokens;
  tokens.reserve(n);
  for (std::size_t k = 0; k < n; ++k) {
    const int32_t id = ids[k];
    if (id < 0 || static_cast<std::size_t>(id) >= vocab.id_to_token.size()) continue;
    if (skip_special && is_special(id)) continue;
    const std::string& t = vocab.id_to_token[static_cast<std::size_t>(id)];
    if (t.empty()) continue;
    tokens.push_back(t);
  }
  std::string text;
  if (decoder) {
    decoder->decode(tokens, raw);
    for (const auto& t : tokens) text += t;
  } else {
    for (std::size_t k = 0; k < tokens.size(); ++k) {
      if (k) text += ' ';
      text += tokens[k];
    }
  }
  if (!raw && !is_valid_utf8(text)) text = utf8_lossy(text);
  return text;
}

}  // namespace tokenizer_detail

using tokenizer_detail::TokenizerImpl;

Tokenizer make_tokenizer(std::shared_ptr<const TokenizerImpl> impl) { return Tokenizer(std::move(impl)); }

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special) const {
  EncodeOptions o;
  o.add_special = add_special;
  return encode(text, o);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  impl_->encode(text, options.add_special, options.parse_special, ids);
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  return impl_->decode(ids.data(), ids.size(), skip_special, false);
}

std::string Tokenizer::decode_bytes(std::span<const int32_t> ids) const {
  return impl_->decode(ids.data(), ids.size(), false, true);
}

IncrementalDecoder Tokenizer::incremental_decoder(bool skip_special) const { return IncrementalDecoder(impl_, skip_special); }

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const { return impl_->vocab.find(token); }

std::optional<std::string> Tokenizer::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= impl_->vocab.id_to_token.size()) return std::nullopt;
  return impl_->vocab.id_to_token[static_cast<std::size_t>(id)];
}

bool Tokenizer::is_special(int32_t id) const { return impl_->is_special(id); }

std::vector<int32_t> Tokenizer::special_ids() const {
  std::vector<int32_t> v(impl_->special_ids.begin(), impl_->special_ids.end());
  std::sort(v.begin(), v.end());
  return v;
}

std::optional<int32_t> Tokenizer::bos_id() const { return impl_->bos; }
std::optional<int32_t> Tokenizer::eos_id() const { return impl_->eos; }
std::optional<int32_t> Tokenizer::unk_id() const { return impl_->unk; }
std::optional<int32_t> Tokenizer::pad_id() const { return impl_->pad; }
std::vector<int32_t> Tokenizer::eog_ids() const { return impl_->eog; }
std::size_t Tokenizer::vocab_size() const { return impl_->vocab.id_to_token.size(); }
std::string_view Tokenizer::model_kind() const { return impl_->model->kind(); }
const std::string& Tokenizer::source() const { return impl_->source; }

// ---- incremental decoding ---------------------------------------------------------------------------------------

std::string IncrementalDecoder::push(int32_t id) {
  ids_.push_back(id);
  // A run of byte tokens decodes as a whole: wait for its end, a kept token that is not one (ids that decode
  // drops, out of range or skipped special ones, do not end a run).
  if (!impl_->is_byte_token.empty()) {
    for (auto it = ids_.rbegin(); it != ids_.rend(); ++it) {
      const int32_t k = *it;
      if (k < 0 || static_cast<std::size_t>(k) >= impl_->vocab.id_to_token.size() ||
          impl_->vocab.id_to_token[static_cast<std::size_t>(k)].empty() || (skip_special_ && impl_->is_special(k)))
        continue;
      if (impl_->is_byte_token[static_cast<std::size_t>(k)]) return {};
      break;
    }
  }
  const int32_t* window = ids_.data() + prefix_offset_;
  const std::size_t n = ids_.size() - prefix_offset_;
  // Bytes of an unfinished character at the end: wait for the tokens that finish it.
  if (tokenizer_detail::utf8_incomplete_tail(impl_->decode(window, n, skip_special_, true)) != 0) return {};
  const std::string context = impl_->decode(window, read_offset_ - prefix_offset_, skip_special_, false);
  const std::string full = impl_->decode(window, n, skip_special_, false);
  if (full.size() <= context.size() || full.compare(0, context.size(), context) != 0) return {};
  std::string out = full.substr(context.size());
  // The tokens just emitted become the context of the next ones; older ones are no longer needed.
  ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(read_offset_));
  prefix_offset_ = 0;
  read_offset_ = ids_.size();
  return out;
}

std::string IncrementalDecoder::flush() {
  std::string out;
  if (read_offset_ < ids_.size()) {
    const int32_t* window = ids_.data() + prefix_offset_;
    const std::string context = impl_->decode(window, read_offset_ - prefix_offset_, skip_special_, false);
    const std::string full = impl_->decode(window, ids_.size() - prefix_offset_, skip_special_, false);
    if (full.size() > context.size() && full.compare(0, context.size(), context) == 0) out = full.substr(context.size());
  }
  reset();
  return out;
}

void IncrementalDecoder::reset() {
  ids_.clear();
  prefix_offset_ = read_offset_ = 0;
}

// ---- loading -----------------------------------------------------------------------------------------------------

namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw CheckpointError(p.string(), "cannot be read");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool has_gguf_magic(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  return in.gcount() == 4 && std::string_view(magic, 4) == "GGUF";
}

}  // namespace

Tokenizer load_tokenizer(const std::string& model_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(model_path);
  if (fs::is_directory(p, ec)) {
    const fs::path json = p / "tokenizer.json";
    if (!fs::is_regular_file(json, ec))
      throw CheckpointError(model_path, "no tokenizer.json in this directory (a GGUF file carries its own tokenizer)");
    std::string config;
    if (fs::is_regular_file(p / "tokenizer_config.json", ec)) config = read_file(p / "tokenizer_config.json");
    return load_tokenizer_json(read_file(json), json.string(), config);
  }
  if (!fs::exists(p, ec)) throw CheckpointError(model_path, "no such file or directory");
  if (has_gguf_magic(p)) {
    const GgufFile file(model_path);
    return load_tokenizer_gguf(file.header(), model_path);
  }
  std::string config;
  const fs::path sibling = p.parent_path() / "tokenizer_config.json";
  if (p.filename() == "tokenizer.json" && fs::is_regular_file(sibling, ec)) config = read_file(sibling);
  return load_tokenizer_json(read_file(p), model_path, config);
}

}  // namespace tf
