#pragma once
// Tokenizers that give the same ids as the Hugging Face stack (the `tokenizers` library on a tokenizer.json,
// and llama.cpp's reading of the tokenizer.ggml.* keys of a GGUF file), with no Python at run time.
//
//   tf::Tokenizer tok = tf::load_tokenizer(path);      // GGUF file, tokenizer.json, or a directory with one
//   std::vector<int32_t> ids = tok.encode(text);        // as HF encode(text, add_special_tokens=False)
//   std::string text = tok.decode(ids);                 // as HF decode(ids, skip_special_tokens=False)
//   tf::IncrementalDecoder stream = tok.incremental_decoder();
//   for (int32_t id : generated) send(stream.push(id)); send(stream.flush());
//
// A Tokenizer is immutable once loaded and may be shared by any number of threads (copies are cheap: they
// share the loaded vocabulary). A bad file is reported as tf::CheckpointError naming the file and the problem.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tf {

struct GgufHeader;

namespace tokenizer_detail {
struct TokenizerImpl;
}

struct EncodeOptions {
  // Add what the tokenizer's post-processor adds (BOS, EOS, CLS/SEP; for GGUF: tokenizer.ggml.add_bos_token and
  // add_eos_token), as HF encode(add_special_tokens=True).
  bool add_special = false;
  // Match special-token strings in the text ("<|im_start|>") as those tokens, as HF does by default. When false
  // they are tokenized as plain text (HF's encode_special_tokens=True, llama.cpp's parse_special=false); added
  // tokens that are not special are still matched.
  bool parse_special = true;
};

class IncrementalDecoder;

class Tokenizer {
 public:
  // Encodes UTF-8 text. Invalid UTF-8 in the input is read as U+FFFD (one per maximal invalid sequence).
  std::vector<int32_t> encode(std::string_view text, bool add_special = false) const;
  std::vector<int32_t> encode(std::string_view text, const EncodeOptions& options) const;

  // Decodes ids to UTF-8 text through the tokenizer's decoder chain. skip_special drops special tokens (HF's
  // skip_special_tokens). Ids outside the vocabulary are skipped, as HF does.
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;

  // decode() without its last step: byte-level and byte-fallback pieces stay raw bytes, so an unfinished UTF-8
  // character is its bytes, not U+FFFD (what a grammar reads of a token).
  std::string decode_bytes(std::span<const int32_t> ids) const;

  // A streaming decoder that returns only whole UTF-8 characters; see IncrementalDecoder.
  IncrementalDecoder incremental_decoder(bool skip_special = false) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The token's vocabulary string as stored (e.g. "Ġthe", "▁the", "<0x0A>"), or nullopt if out of range.
  std::optional<std::string> id_to_token(int32_t id) const;
  bool is_special(int32_t id) const;  // a special (control) token: skipped by skip_special
  std::vector<int32_t> special_ids() const;

  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> eos_id() const;
  std::optional<int32_t> unk_id() const;
  std::optional<int32_t> pad_id() const;
  // Ids that end generation: eos plus end-of-turn tokens found by name (<|im_end|>, <|eot_id|>, <end_of_turn>...).
  std::vector<int32_t> eog_ids() const;

  // One past the highest token id (the model's embedding rows may be more).
  std::size_t vocab_size() const;
  // "bpe" (byte-level or byte-fallback BPE with merges), "spm" (SentencePiece scores) or "wordpiece".
  std::string_view model_kind() const;
  // Where it was loaded from.
  const std::string& source() const;

 private:
  friend Tokenizer make_tokenizer(std::shared_ptr<const tokenizer_detail::TokenizerImpl>);
  friend class IncrementalDecoder;
  explicit Tokenizer(std::shared_ptr<const tokenizer_detail::TokenizerImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const tokenizer_detail::TokenizerImpl> impl_;
};

// Streaming detokenization: push ids as they are generated; each call returns the text that is now final,
// never a partial UTF-8 character (bytes of an unfinished character are held back until it completes). The
// concatenation of every push() and the final flush() equals decode(all ids). Not thread-safe; one per stream.
class IncrementalDecoder {
 public:
  std::string push(int32_t id);
  // Returns what is held back (an unfinished character, as U+FFFD) and resets the stream.
  std::string flush();
  void reset();

 private:
  friend class Tokenizer;
  IncrementalDecoder(std::shared_ptr<const tokenizer_detail::TokenizerImpl> impl, bool skip_special)
      : impl_(std::move(impl)), skip_special_(skip_special) {}
  std::shared_ptr<const tokenizer_detail::TokenizerImpl> impl_;
  bool skip_special_ = false;
  std::vector<int32_t> ids_;
  std::size_t prefix_offset_ = 0;  // ids_[prefix_offset_, read_offset_) is context already emitted
  std::size_t read_offset_ = 0;
};

// Loads a tokenizer from a GGUF file (its tokenizer.ggml.* metadata; vocab-only files too), a tokenizer.json
// file, or a directory holding tokenizer.json (tokenizer_config.json there supplies bos/eos when present).
Tokenizer load_tokenizer(const std::string& model_path);
// From the text of a tokenizer.json; `source` names it in errors.
Tokenizer load_tokenizer_json(std::string_view json_text, const std::string& source,
                              std::string_view tokenizer_config_json = {});
// From a parsed GGUF header.
Tokenizer load_tokenizer_gguf(const GgufHeader& header, const std::string& source);

}  // namespace tf
