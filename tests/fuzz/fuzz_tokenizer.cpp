// libFuzzer target for tf_tokenizer: encode and decode arbitrary bytes and ids, and stream-decode ids.
//
// Tokenizers: a byte-level BPE (tokenizer.json layout) and a SentencePiece one with byte fallback (GGUF "llama"
// layout), both built in-process; with TF_FUZZ_TOKENIZER=<path> (a tokenizer.json, a directory with one, or a GGUF
// file) that one is fuzzed instead. Checks: no crash or hang; decode output is valid UTF-8; the incremental decoder's
// pieces are valid UTF-8 and add up to decode(ids); on the built-in byte-level tokenizer without special tokens,
// decode(encode(x)) gives x back (invalid UTF-8 read as U+FFFD).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/gguf.h"
#include "fuzz_check.h"
#include "text/tokenizer/tokenizer.h"
#include "text/tokenizer/unicode.h"

namespace {

std::string byte_level_json() {
  std::string vocab = "{";
  for (int b = 0; b < 256; ++b) {
    std::string esc;
    for (const char ch : tf::tokenizer_detail::byte_to_unicode(static_cast<unsigned char>(b))) {
      if (ch == '"' || ch == '\\') esc += '\\';
      esc += ch;
    }
    vocab += "\"" + esc + "\":" + std::to_string(b) + ",";
  }
  const char* merges[][2] = {{"t", "h"}, {"th", "e"}, {"\xC4\xA0", "t"}, {"h", "e"}, {"\xC4\xA0t", "he"}, {"i", "n"},
                             {"a", "n"}, {"an", "d"}, {"\xC4\xA0", "a"}, {"e", "r"}, {"o", "n"}};
  std::string merge_list = "[";
  int next = 256;
  for (const auto& m : merges) {
    vocab += "\"" + std::string(m[0]) + m[1] + "\":" + std::to_string(next++) + ",";
    merge_list += "\"" + std::string(m[0]) + " " + m[1] + "\",";
  }
  vocab.back() = '}';
  merge_list.back() = ']';
  return std::string(R"({"version":"1.0","added_tokens":[{"id":300,"content":"<|s|>","special":true,"normalized":false},
      {"id":301,"content":"<m>","special":false,"normalized":true,"lstrip":true,"rstrip":true,"single_word":true}],
    "normalizer":{"type":"NFC"},
    "pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Digits","individual_digits":true},
      {"type":"Split","pattern":{"Regex":"(?i:'s|'t)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},"behavior":"Isolated","invert":false},
      {"type":"ByteLevel","add_prefix_space":false,"use_regex":false}]},
    "decoder":{"type":"ByteLevel"},
    "model":{"type":"BPE","vocab":)") +
         vocab + R"(,"merges":)" + merge_list + "}}";
}

tf::GgufValue str(std::string s) { return tf::GgufValue{tf::GgufValueType::STRING, std::move(s)}; }

tf::Tokenizer spm_gguf() {
  auto tokens = std::make_shared<tf::GgufArray>();
  auto scores = std::make_shared<tf::GgufArray>();
  auto types = std::make_shared<tf::GgufArray>();
  tokens->element_type = tf::GgufValueType::STRING;
  scores->element_type = tf::GgufValueType::F32;
  types->element_type = tf::GgufValueType::I32;
  auto add = [&](const std::string& t, double score, int type) {
    tokens->items.push_back(str(t));
    scores->items.push_back(tf::GgufValue{tf::GgufValueType::F32, score});
    types->items.push_back(tf::GgufValue{tf::GgufValueType::I32, static_cast<int64_t>(type)});
  };
  add("<unk>", 0, 2);
  add("<s>", 0, 3);
  add("</s>", 0, 3);
  for (int i = 0; i < 256; ++i) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", i);
    add(buf, 0, 6);
  }
  const char* pieces[] = {"\xE2\x96\x81", "a", "b", "\xE2\x96\x81" "a", "ab", "\xE2\x96\x81" "ab", "\xC3\xA9", "\xE2\x96\x81\xE2\x96\x81"};
  double s = -1;
  for (const char* p : pieces) add(p, s--, 1);
  tf::GgufHeader h;
  h.metadata = {{"tokenizer.ggml.model", str("llama")},
                {"tokenizer.ggml.tokens", tf::GgufValue{tf::GgufValueType::ARRAY, tokens}},
                {"tokenizer.ggml.scores", tf::GgufValue{tf::GgufValueType::ARRAY, scores}},
                {"tokenizer.ggml.token_type", tf::GgufValue{tf::GgufValueType::ARRAY, types}}};
  return tf::load_tokenizer_gguf(h, "fuzz.gguf");
}

struct Tokenizers {
  std::vector<tf::Tokenizer> all;
  bool builtin = true;
};

const Tokenizers& tokenizers() {
  static const Tokenizers t = [] {
    Tokenizers r;
    if (const char* path = std::getenv("TF_FUZZ_TOKENIZER")) {
      r.all.push_back(tf::load_tokenizer(path));
      r.builtin = false;
    } else {
      r.all.push_back(tf::load_tokenizer_json(byte_level_json(), "fuzz.json"));
      r.all.push_back(spm_gguf());
    }
    return r;
  }();
  return t;
}

void check_decode(const tf::Tokenizer& tok, const std::vector<int32_t>& ids, bool skip) {
  const std::string text = tok.decode(ids, skip);
  FUZZ_CHECK(tf::tokenizer_detail::is_valid_utf8(text), "decode gave invalid UTF-8");
  tf::IncrementalDecoder stream = tok.incremental_decoder(skip);
  std::string streamed;
  for (const int32_t id : ids) {
    const std::string part = stream.push(id);
    FUZZ_CHECK(tf::tokenizer_detail::is_valid_utf8(part), "a streamed piece is invalid UTF-8");
    streamed += part;
  }
  streamed += stream.flush();
  FUZZ_CHECK(streamed == text, "streamed text differs from decode (%zu vs %zu bytes)", streamed.size(), text.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 4096) return 0;
  const Tokenizers& t = tokenizers();
  const uint8_t mode = data[0];
  const tf::Tokenizer& tok = t.all[mode % t.all.size()];
  const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);

  if ((mode >> 1) & 1) {
    // The rest is a list of ids (two bytes each, spread over the vocabulary and a little past it).
    std::vector<int32_t> ids;
    for (std::size_t i = 0; i + 1 < input.size(); i += 2) {
      const auto v = static_cast<uint16_t>(static_cast<uint8_t>(input[i]) | (static_cast<uint8_t>(input[i + 1]) << 8));
      ids.push_back(static_cast<int32_t>(v % (tok.vocab_size() + 8)) - 4);
    }
    check_decode(tok, ids, (mode >> 2) & 1);
    return 0;
  }
  tf::EncodeOptions opt;
  opt.parse_special = !((mode >> 2) & 1);
  opt.add_special = (mode >> 3) & 1;
  const std::vector<int32_t> ids = tok.encode(input, opt);
  for (const int32_t id : ids) FUZZ_CHECK(id >= 0 && static_cast<std::size_t>(id) < tok.vocab_size(), "id %d out of range", id);
  check_decode(tok, ids, false);
  if (t.builtin && mode % t.all.size() == 0 && !opt.add_special) {
    const std::string text = tok.decode(ids);
    std::string expected = tf::tokenizer_detail::utf8_lossy(input);
    // NFC may recompose; compare with the normalized form when the special-free text changed under it.
    const bool has_added = expected.find("<|s|>") != std::string::npos || expected.find("<m>") != std::string::npos;
    if (!has_added)
      FUZZ_CHECK(text == tf::tokenizer_detail::normalize(expected, tf::tokenizer_detail::NormalForm::NFC),
                 "decode(encode(x)) != NFC(x)");
  }
  return 0;
}
