#pragma once
// The tokenizer pipeline, as the Hugging Face `tokenizers` library runs it:
//   added tokens (not normalized) -> normalizer -> added tokens (normalized) -> pre-tokenizer -> model
//   -> post-processor (add_special)        and for decode: ids -> token strings -> decoder chain.
// Both loaders (tokenizer.json and GGUF) build this same structure.
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "text/tokenizer/regex.h"

namespace tf::tokenizer_detail {

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using TokenMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// A stretch of text on its way to the model. at_origin: it starts at offset 0 of the input (Metaspace's
// prepend_scheme "first" prepends only there).
struct Piece {
  std::string text;
  bool at_origin = false;
};

// ---- normalizers ----------------------------------------------------------------------------------------
struct Normalizer {
  virtual ~Normalizer() = default;
  virtual void normalize(std::string& s) const = 0;
};

// ---- pre-tokenizers -------------------------------------------------------------------------------------
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

struct PreTokenizer {
  virtual ~PreTokenizer() = default;
  virtual void pre_tokenize(std::vector<Piece>& pieces) const = 0;
};

// ---- models -------------------------------------------------------------------------------------------------
struct Vocab {
  std::vector<std::string> id_to_token;  // "" for an id that has no token
  TokenMap token_to_id;
  std::optional<int32_t> find(std::string_view s) const {
    const auto it = token_to_id.find(s);
    if (it == token_to_id.end()) return std::nullopt;
    return it->second;
  }
};

struct Model {
  virtual ~Model() = default;
  // Appends the ids of one pre-tokenized word.
  virtual void tokenize(std::string_view word, std::vector<int32_t>& out) const = 0;
  virtual std::string_view kind() const = 0;
};

// ---- decoders -----------------------------------------------------------------------------------------------
// Decoders transform the list of token strings. With raw = true, steps that would turn invalid UTF-8 into U+FFFD
// keep the bytes instead (the incremental decoder decides about unfinished characters itself).
struct Decoder {
  virtual ~Decoder() = default;
  virtual void decode(std::vector<std::string>& tokens, bool raw) const = 0;
  // Whether the chain has a ByteFallback step: a run of <0xNN> tokens decodes as a whole (one invalid byte turns
  // the whole run into U+FFFD), so a stream must wait for the run to end.
  virtual bool joins_byte_runs() const { return false; }
};

// ---- post-processors ----------------------------------------------------------------------------------
struct PostProcessor {
  virtual ~PostProcessor() = default;
  virtual void process(std::vector<int32_t>& ids) const = 0;
};

// ---- added tokens ---------------------------------------------------------------------------------------
struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
};

// Leftmost-longest matching of a set of strings (the aho-corasick MatchKind::LeftmostLongest the reference uses).
class AddedTokenMatcher {
 public:
  void add(std::string_view pattern, int32_t index);
  bool empty() const { return nodes_.size() <= 1; }
  // The leftmost match at or after `from`: its start, length and index; false if none.
  bool find(std::string_view text, std::size_t from, std::size_t& start, std::size_t& len, int32_t& index) const;

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> next;  // sorted by byte
    int32_t index = -1;
  };
  std::vector<Node> nodes_{Node{}};
  bool first_byte_[256] = {};
};

struct TokenizerImpl {
  std::string source;
  Vocab vocab;  // every token: the model's and the added ones
  std::shared_ptr<const Vocab> model_vocab;  // the model's own, when it differs (tokenizer.json)
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<Model> model;
  std::unique_ptr<PostProcessor> post_processor;
  std::unique_ptr<Decoder> decoder;  // null: tokens are joined with " " (as the reference does)

  std::vector<AddedToken> added;  // all added tokens
  std::unordered_set<int32_t> special_ids;
  // Matchers over `added`, each split in two: with and without the special tokens (parse_special = false).
  AddedTokenMatcher raw_all, raw_plain, normalized_all, normalized_plain;

  std::optional<int32_t> bos, eos, unk, pad;
  std::vector<int32_t> eog;
  std::vector<bool> is_byte_token;  // "<0xNN>" tokens, when the decoder joins byte runs

  // Fills the matchers and special_ids from `added` (after the normalizer is set).
  void index_added_tokens();

  void encode(std::string_view text, bool add_special, bool parse_special, std::vector<int32_t>& out) const;
  // Token strings of ids (out-of-range ids and, with skip_special, special ids dropped) through the decoder.
  std::string decode(const int32_t* ids, std::size_t n, bool skip_special, bool raw) const;
  bool is_special(int32_t id) const { return special_ids.count(id) != 0; }
};

// The byte of a "<0xNN>" token, or -1.
int byte_token_value(const std::string& token);

// ---- component factories (components.cpp, models.cpp) -----------------------------------------------
std::unique_ptr<Normalizer> make_sequence_normalizer(std::vector<std::unique_ptr<Normalizer>> parts);
std::unique_ptr<Normalizer> make_unicode_normalizer(int form);  // NormalForm as int
std::unique_ptr<Normalizer> make_prepend_normalizer(std::string prefix);
std::unique_ptr<Normalizer> make_replace_normalizer(std::string pattern, bool is_regex, std::string content);
std::unique_ptr<Normalizer> make_lowercase_normalizer();
std::unique_ptr<Normalizer> make_strip_normalizer(bool left, bool right);
std::unique_ptr<Normalizer> make_strip_accents_normalizer();
std::unique_ptr<Normalizer> make_bert_normalizer(bool clean_text, bool handle_chinese_chars, bool strip_accents,
                                                 bool lowercase);

std::unique_ptr<PreTokenizer> make_sequence_pre_tokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts);
std::unique_ptr<PreTokenizer> make_split_pre_tokenizer(std::string pattern, bool is_regex, SplitBehavior behavior,
                                                       bool invert);
std::unique_ptr<PreTokenizer> make_byte_level_pre_tokenizer(bool add_prefix_space, bool use_regex);
std::unique_ptr<PreTokenizer> make_digits_pre_tokenizer(bool individual_digits);
// prepend: 0 always, 1 first, 2 never
std::unique_ptr<PreTokenizer> make_metaspace_pre_tokenizer(std::string replacement, int prepend, bool split);
std::unique_ptr<PreTokenizer> make_whitespace_pre_tokenizer();        // \w+|[^\w\s]+
std::unique_ptr<PreTokenizer> make_whitespace_split_pre_tokenizer();  // split on whitespace
std::unique_ptr<PreTokenizer> make_punctuation_pre_tokenizer(SplitBehavior behavior);
std::unique_ptr<PreTokenizer> make_bert_pre_tokenizer();
std::unique_ptr<PreTokenizer> make_char_delimiter_pre_tokenizer(std::string delimiter);

std::unique_ptr<Decoder> make_sequence_decoder(std::vector<std::unique_ptr<Decoder>> parts);
std::unique_ptr<Decoder> make_byte_level_decoder();
std::unique_ptr<Decoder> make_metaspace_decoder(std::string replacement, bool strip_first);
std::unique_ptr<Decoder> make_byte_fallback_decoder();
std::unique_ptr<Decoder> make_fuse_decoder();
std::unique_ptr<Decoder> make_strip_decoder(std::string content, std::size_t start, std::size_t stop);
std::unique_ptr<Decoder> make_replace_decoder(std::string pattern, bool is_regex, std::string content);
std::unique_ptr<Decoder> make_wordpiece_decoder(std::string prefix, bool cleanup);
std::unique_ptr<Decoder> make_bpe_suffix_decoder(std::string suffix);

std::unique_ptr<PostProcessor> make_template_processor(std::vector<std::vector<int32_t>> items_before,
                                                       std::vector<std::vector<int32_t>> items_after);
std::unique_ptr<PostProcessor> make_sequence_processor(std::vector<std::unique_ptr<PostProcessor>> parts);

struct BpeOptions {
  std::optional<int32_t> unk;
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
  bool newline_words_whole = false;  // a word of only '\n' that is a token is taken whole (llama.cpp gemma4)
};
// merges: (left, right) token pairs in rank order. Throws std::invalid_argument naming a merge whose parts
// or result are not in the vocabulary.
std::unique_ptr<Model> make_bpe_model(const Vocab& vocab, const std::vector<std::pair<std::string, std::string>>& merges,
                                      BpeOptions options);
// SentencePiece BPE by scores (GGUF "llama"): merges the adjacent pair whose concatenation is the best-scoring
// token, then bytes as <0xNN> tokens (or unk) for what is left out of the vocabulary.
std::unique_ptr<Model> make_spm_model(const Vocab& vocab, std::vector<float> scores, std::optional<int32_t> unk);
// word_prefix marks a word's first piece (llama.cpp's GGUF conversion writes "▁hello" and "llo" for the
// "hello" and "##llo" of the original vocabulary).
std::unique_ptr<Model> make_wordpiece_model(const Vocab& vocab, int32_t unk, std::string prefix,
                                            std::size_t max_input_chars_per_word, std::string word_prefix = {});

}  // namespace tf::tokenizer_detail
