// Unit tests of tf_tokenizer on small tokenizers built in the test (tokenizer.json text and GGUF headers).
// Expected ids are worked out by hand from the rules of the reference (the `tokenizers` library, llama.cpp).
#include "text/tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/gguf.h"
#include "text/tokenizer/regex.h"
#include "text/tokenizer/unicode.h"

namespace tf {
namespace {

using Ids = std::vector<int32_t>;

// A byte-level BPE tokenizer.json: the 256 byte stand-ins as ids 0..255 in GPT-2 order of bytes, then merged
// tokens from 256 on, then the given added tokens.
std::string byte_level_json(const std::vector<std::pair<std::string, std::string>>& merges, const std::string& pre,
                            const std::string& added = "[]", const std::string& extra_model = "") {
  std::string vocab = "{";
  for (int b = 0; b < 256; ++b) {
    const std::string& c = tokenizer_detail::byte_to_unicode(static_cast<unsigned char>(b));
    std::string esc;
    for (const char ch : c) {
      if (ch == '"' || ch == '\\') esc += '\\';
      esc += ch;
    }
    vocab += "\"" + esc + "\":" + std::to_string(b) + ",";
  }
  int next = 256;
  std::string merge_list = "[";
  for (const auto& [a, b] : merges) {
    vocab += "\"" + a + b + "\":" + std::to_string(next++) + ",";
    merge_list += "\"" + a + " " + b + "\",";
  }
  vocab.back() = '}';
  if (merge_list.size() > 1) merge_list.pop_back();
  merge_list += "]";
  return R"({"version":"1.0","added_tokens":)" + added + R"(,"normalizer":null,"pre_tokenizer":)" + pre +
         R"(,"post_processor":null,"decoder":{"type":"ByteLevel"},"model":{"type":"BPE","vocab":)" + vocab +
         R"(,"merges":)" + merge_list + extra_model + "}}";
}

const char* kByteLevelPre = R"({"type":"ByteLevel","add_prefix_space":false,"use_regex":true})";

Tokenizer bl(const std::vector<std::pair<std::string, std::string>>& merges, const std::string& pre = kByteLevelPre,
             const std::string& added = "[]", const std::string& extra_model = "") {
  return load_tokenizer_json(byte_level_json(merges, pre, added, extra_model), "test.json");
}

// id of a single byte in byte_level_json
int32_t b(char c) { return static_cast<unsigned char>(c); }

TEST(ByteLevelBpe, MergesInRankOrderWithinRegexWords) {
  // "Ġ" is the stand-in of the space byte (0x20 -> U+0120).
  const Tokenizer t = bl({{"l", "l"}, {"h", "e"}, {"he", "ll"}, {"Ġ", "w"}});
  // "hello world" -> "hello" | " world": h e l l o -> (l l)=256, (h e)=257, (he ll)=258 -> [258, o]
  EXPECT_EQ(t.encode("hello world"), (Ids{258, b('o'), 259, b('o'), b('r'), b('l'), b('d')}));
  EXPECT_EQ(t.decode(t.encode("hello world")), "hello world");
  EXPECT_EQ(t.encode(""), Ids{});
  EXPECT_EQ(t.vocab_size(), 260u);
  EXPECT_EQ(t.model_kind(), "bpe");
  EXPECT_EQ(t.token_to_id("hell"), 258);
  EXPECT_EQ(t.id_to_token(259), "\xC4\xA0w");
}

TEST(ByteLevelBpe, EqualRankMergesGoLeftFirst) {
  const Tokenizer t = bl({{"a", "a"}});
  EXPECT_EQ(t.encode("aaa"), (Ids{256, b('a')}));
  EXPECT_EQ(t.encode("aaaa"), (Ids{256, 256}));
}

TEST(ByteLevelBpe, InvalidUtf8InputIsReadAsReplacementCharacters) {
  const Tokenizer t = bl({});
  // 0xFF is not UTF-8: it becomes U+FFFD = EF BF BD
  EXPECT_EQ(t.encode(std::string("a\xFF")), (Ids{b('a'), 0xEF, 0xBF, 0xBD}));
}

TEST(AddedTokens, SpecialTokensAreMatchedUnlessParseSpecialIsOff) {
  const Tokenizer t = bl({}, kByteLevelPre,
                         R"([{"id":300,"content":"<|x|>","special":true,"normalized":false},
                             {"id":301,"content":"<y>","special":false,"normalized":false}])");
  EXPECT_EQ(t.encode("a<|x|>b<y>"), (Ids{b('a'), 300, b('b'), 301}));
  EncodeOptions plain;
  plain.parse_special = false;
  const Ids ids = t.encode("a<|x|><y>", plain);
  EXPECT_EQ(ids.back(), 301);  // a non-special added token is still matched
  EXPECT_EQ(ids.size(), 1u + 5u + 1u);
  EXPECT_TRUE(t.is_special(300));
  EXPECT_FALSE(t.is_special(301));
  EXPECT_EQ(t.decode(Ids{b('a'), 300, b('b')}), "a<|x|>b");
  EXPECT_EQ(t.decode(Ids{b('a'), 300, b('b')}, true), "ab");
  EXPECT_EQ(t.decode(Ids{b('a'), 999, -4, b('b')}), "ab");  // unknown ids are dropped
}

TEST(AddedTokens, LongestMatchAtTheLeftmostPositionWins) {
  const Tokenizer t = bl({}, kByteLevelPre,
                         R"([{"id":300,"content":"<a>","special":true,"normalized":false},
                             {"id":301,"content":"<a><b>","special":true,"normalized":false},
                             {"id":302,"content":"a>","special":true,"normalized":false}])");
  EXPECT_EQ(t.encode("<a><b>"), (Ids{301}));
  EXPECT_EQ(t.encode("<a>x"), (Ids{300, b('x')}));
}

TEST(AddedTokens, LstripRstripAndSingleWord) {
  const Tokenizer t = bl({}, kByteLevelPre,
                         R"([{"id":300,"content":"<m>","special":true,"normalized":false,"lstrip":true,"rstrip":true},
                             {"id":301,"content":"ab","special":false,"normalized":false,"single_word":true}])");
  EXPECT_EQ(t.encode("x  <m>  y"), (Ids{b('x'), 300, b('y')}));
  // "ab" alone is a word; inside "cab" it is not, and " cab" goes to the model (the space byte is id 32 here)
  EXPECT_EQ(t.encode("ab cab"), (Ids{301, b(' '), b('c'), b('a'), b('b')}));
}

TEST(Split, BehaviorsDecideWhatTheModelSees) {
  auto with = [](const std::string& behavior, bool invert = false) {
    const std::string pre = R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"String":"b"},"behavior":")" +
                            behavior + R"(","invert":)" + (invert ? "true" : "false") +
                            R"(},{"type":"ByteLevel","add_prefix_space":false,"use_regex":false}]})";
    return bl({{"a", "b"}, {"b", "c"}}, pre);
  };
  // "abc": merges a+b (256) then b+c (257)
  EXPECT_EQ(with("Isolated").encode("abc"), (Ids{b('a'), b('b'), b('c')}));
  EXPECT_EQ(with("Removed").encode("abc"), (Ids{b('a'), b('c')}));
  EXPECT_EQ(with("MergedWithPrevious").encode("abc"), (Ids{256, b('c')}));
  EXPECT_EQ(with("MergedWithNext").encode("abc"), (Ids{b('a'), 257}));
  EXPECT_EQ(with("Contiguous").encode("abbc"), (Ids{b('a'), b('b'), b('b'), b('c')}));
  EXPECT_EQ(with("Removed", true).encode("abc"), (Ids{b('b')}));
}

TEST(Digits, IndividualOrContiguous) {
  const std::string individual =
      R"({"type":"Sequence","pretokenizers":[{"type":"Digits","individual_digits":true},{"type":"ByteLevel","add_prefix_space":false,"use_regex":false}]})";
  const std::string contiguous =
      R"({"type":"Sequence","pretokenizers":[{"type":"Digits","individual_digits":false},{"type":"ByteLevel","add_prefix_space":false,"use_regex":false}]})";
  EXPECT_EQ(bl({{"1", "2"}}, individual).encode("12"), (Ids{b('1'), b('2')}));
  EXPECT_EQ(bl({{"1", "2"}}, contiguous).encode("12"), (Ids{256}));
}

// A SentencePiece-style BPE tokenizer.json with byte fallback (Llama 2 / Mistral layout).
std::string spm_json(const std::string& normalizer, const std::string& pre) {
  std::string vocab = R"({"<unk>":0,"<s>":1,"</s>":2)";
  for (int i = 0; i < 256; ++i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, ",\"<0x%02X>\":%d", i, 3 + i);
    vocab += buf;
  }
  vocab += ",\"\xE2\x96\x81\":259,\"a\":260,\"b\":261,\"\xE2\x96\x81" "a\":262,\"ab\":263}";
  return R"({"version":"1.0","added_tokens":[{"id":0,"content":"<unk>","special":true,"normalized":false},
    {"id":1,"content":"<s>","special":true,"normalized":false},{"id":2,"content":"</s>","special":true,"normalized":false}],
    "normalizer":)" + normalizer + R"(,"pre_tokenizer":)" + pre + R"(,
    "post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],
      "special_tokens":{"<s>":{"id":"<s>","ids":[1],"tokens":["<s>"]}}},
    "decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"\u2581"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]},
    "model":{"type":"BPE","byte_fallback":true,"fuse_unk":true,"unk_token":"<unk>","vocab":)" + vocab +
         R"(,"merges":[["\u2581","a"],["a","b"]]}})";
}

TEST(ByteFallbackBpe, PrependReplaceNormalizersAndByteTokens) {
  const Tokenizer t = load_tokenizer_json(
      spm_json(R"({"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"\u2581"},{"type":"Replace","pattern":{"String":" "},"content":"\u2581"}]})",
               "null"),
      "spm.json");
  // "ab a" -> "▁ab▁a": ▁+a first (rank 0) -> ▁a, b, ▁a
  EXPECT_EQ(t.encode("ab a"), (Ids{262, 261, 262}));
  EXPECT_EQ(t.encode("ab a", true), (Ids{1, 262, 261, 262}));
  // "€" is not in the vocabulary: its three bytes
  EXPECT_EQ(t.encode("\xE2\x82\xAC"), (Ids{259, 3 + 0xE2, 3 + 0x82, 3 + 0xAC}));
  EXPECT_EQ(t.decode(t.encode("ab a \xE2\x82\xAC")), "ab a \xE2\x82\xAC");
  // an unfinished character from byte tokens decodes as one U+FFFD per byte, as the reference's ByteFallback
  EXPECT_EQ(t.decode(Ids{260, 3 + 0xE2, 3 + 0x82}), "a\xEF\xBF\xBD\xEF\xBF\xBD");
  // after a special token the text piece is normalized on its own: it gets its own "▁"
  EXPECT_EQ(t.encode("<s>a"), (Ids{1, 262}));
}

TEST(ByteFallbackBpe, MetaspaceFirstPrependsOnlyAtTheStart) {
  const auto make = [](const char* scheme) {
    return load_tokenizer_json(
        spm_json("null", std::string(R"({"type":"Metaspace","replacement":"\u2581","prepend_scheme":")") + scheme +
                             R"(","split":false})"),
        "spm.json");
  };
  EXPECT_EQ(make("first").encode("a</s>a"), (Ids{262, 2, 260}));
  EXPECT_EQ(make("always").encode("a</s>a"), (Ids{262, 2, 262}));
  EXPECT_EQ(make("never").encode("a</s>a"), (Ids{260, 2, 260}));
}

TEST(IncrementalDecoder, EmitsOnlyWholeCharacters) {
  const Tokenizer t = load_tokenizer_json(spm_json("null", R"({"type":"Metaspace","prepend_scheme":"first","split":false})"),
                                          "spm.json");
  const Ids ids = {262, 259, 3 + 0xE2, 3 + 0x82, 3 + 0xAC, 261};  // "a €b"
  IncrementalDecoder d = t.incremental_decoder();
  std::vector<std::string> parts;
  for (const int32_t id : ids) parts.push_back(d.push(id));
  parts.push_back(d.flush());
  // a run of byte tokens is held until it ends (one invalid byte would turn the whole run into U+FFFD)
  EXPECT_EQ(parts, (std::vector<std::string>{"a", " ", "", "", "", "\xE2\x82\xAC" "b", ""}));
  std::string all;
  for (const auto& p : parts) all += p;
  EXPECT_EQ(all, t.decode(ids));
}

TEST(IncrementalDecoder, FlushGivesTheUnfinishedTailAndSkipSpecialWorks) {
  const Tokenizer t = load_tokenizer_json(spm_json("null", R"({"type":"Metaspace","prepend_scheme":"first","split":false})"),
                                          "spm.json");
  IncrementalDecoder d = t.incremental_decoder(true);
  EXPECT_EQ(d.push(1), "");  // <s> skipped
  EXPECT_EQ(d.push(262), "a");
  EXPECT_EQ(d.push(3 + 0xE2), "");
  EXPECT_EQ(d.flush(), "\xEF\xBF\xBD");
  EXPECT_EQ(d.push(260), "a");  // flush reset the stream
}

TEST(IncrementalDecoder, ByteLevelStreamMatchesDecode) {
  const Tokenizer t = bl({{"l", "l"}});
  const std::string text = "h\xC3\xA9llo \xF0\x9F\x98\x80!";  // "héllo 😀!"
  const Ids ids = t.encode(text);
  IncrementalDecoder d = t.incremental_decoder();
  std::string all;
  for (const int32_t id : ids) {
    const std::string part = d.push(id);
    EXPECT_TRUE(tokenizer_detail::is_valid_utf8(part)) << part;
    all += part;
  }
  all += d.flush();
  EXPECT_EQ(all, text);
}

// ---- GGUF ------------------------------------------------------------------------------------------------------

GgufValue str(std::string s) { return GgufValue{GgufValueType::STRING, std::move(s)}; }
GgufValue u32(uint64_t v) { return GgufValue{GgufValueType::U32, v}; }
GgufValue boolean(bool v) { return GgufValue{GgufValueType::BOOL, v}; }
template <typename T>
GgufValue array(GgufValueType t, const std::vector<T>& items) {
  auto a = std::make_shared<GgufArray>();
  a->element_type = t;
  for (const auto& i : items) {
    if constexpr (std::is_same_v<T, std::string>)
      a->items.push_back(str(i));
    else if constexpr (std::is_same_v<T, float>)
      a->items.push_back(GgufValue{GgufValueType::F32, static_cast<double>(i)});
    else
      a->items.push_back(GgufValue{GgufValueType::I32, static_cast<int64_t>(i)});
  }
  return GgufValue{GgufValueType::ARRAY, a};
}

TEST(GgufSpm, MergesByScoreAndFallsBackToBytes) {
  GgufHeader h;
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int> types = {2, 3, 3};
  for (int i = 0; i < 256; ++i) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", i);
    tokens.push_back(buf);
    scores.push_back(0);
    types.push_back(6);
  }
  // ids 259.. : ▁ a b ▁a ab ▁ab ; "ab" scores higher than "▁a", so "▁ab" forms as ▁ + ab -> ▁ab
  for (const auto& [tok, score] : std::vector<std::pair<std::string, float>>{
           {"\xE2\x96\x81", -1}, {"a", -2}, {"b", -3}, {"\xE2\x96\x81" "a", -5}, {"ab", -4}, {"\xE2\x96\x81" "ab", -6}}) {
    tokens.push_back(tok);
    scores.push_back(score);
    types.push_back(1);
  }
  h.metadata = {{"tokenizer.ggml.model", str("llama")},
                {"tokenizer.ggml.tokens", array(GgufValueType::STRING, tokens)},
                {"tokenizer.ggml.scores", array(GgufValueType::F32, scores)},
                {"tokenizer.ggml.token_type", array(GgufValueType::I32, types)},
                {"tokenizer.ggml.bos_token_id", u32(1)},
                {"tokenizer.ggml.eos_token_id", u32(2)},
                {"tokenizer.ggml.add_bos_token", boolean(true)}};
  const Tokenizer t = load_tokenizer_gguf(h, "t.gguf");
  EXPECT_EQ(t.model_kind(), "spm");
  EXPECT_EQ(t.encode("ab"), (Ids{264}));  // ▁ab
  EXPECT_EQ(t.encode("ab", true), (Ids{1, 264}));
  EXPECT_EQ(t.encode("b a"), (Ids{259, 261, 262}));  // ▁b? no: "▁b" is not a token -> ▁, b, ▁a
  EXPECT_EQ(t.encode("c"), (Ids{259, 3 + 'c'}));
  EXPECT_EQ(t.encode("</s>"), (Ids{2}));
  EncodeOptions plain;
  plain.parse_special = false;
  EXPECT_NE(t.encode("</s>", plain), (Ids{2}));
  EXPECT_EQ(t.decode(t.encode("ab c")), "ab c");
  EXPECT_EQ(t.bos_id(), 1);
  EXPECT_EQ(t.eos_id(), 2);
}

TEST(GgufErrors, MissingOrBadTokenizerMetadataIsACheckpointError) {
  GgufHeader h;
  try {
    load_tokenizer_gguf(h, "none.gguf");
    FAIL() << "no error";
  } catch (const CheckpointError& e) {
    EXPECT_EQ(e.file(), "none.gguf");
    EXPECT_NE(e.problem().find("tokenizer.ggml.model"), std::string::npos);
  }
  h.metadata = {{"tokenizer.ggml.model", str("gpt2")},
                {"tokenizer.ggml.tokens", array(GgufValueType::STRING, std::vector<std::string>{"a", "b", "ab"})},
                {"tokenizer.ggml.merges", array(GgufValueType::STRING, std::vector<std::string>{"a c"})}};
  EXPECT_THROW(load_tokenizer_gguf(h, "bad.gguf"), CheckpointError);  // "c" is not a token
  h.metadata[2] = {"tokenizer.ggml.merges", array(GgufValueType::STRING, std::vector<std::string>{"a b"})};
  EXPECT_EQ(load_tokenizer_gguf(h, "ok.gguf").encode("ab"), (Ids{2}));
  h.metadata.push_back({"tokenizer.ggml.pre", str("no-such-pre")});
  EXPECT_THROW(load_tokenizer_gguf(h, "bad.gguf"), CheckpointError);
}

TEST(JsonErrors, BadFilesAreCheckpointErrorsNamingTheFile) {
  const std::vector<std::string> bad = {
      "", "{", "[]", R"({"model":{"type":"Unigram","vocab":[]}})",
      R"({"model":{"type":"BPE","vocab":{"a":0},"merges":["a b"]}})",
      R"({"model":{"type":"BPE","vocab":{"a":-1},"merges":[]}})",
      R"({"pre_tokenizer":{"type":"Split","pattern":{"Regex":"(("},"behavior":"Isolated"},"model":{"type":"BPE","vocab":{"a":0},"merges":[]}})",
      R"({"normalizer":{"type":"Nope"},"model":{"type":"BPE","vocab":{"a":0},"merges":[]}})",
      R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[],"unk_token":"<unk>"}})",
  };
  for (const auto& j : bad) {
    try {
      load_tokenizer_json(j, "bad.json");
      ADD_FAILURE() << "accepted: " << j;
    } catch (const CheckpointError& e) {
      EXPECT_EQ(e.file(), "bad.json");
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
  EXPECT_THROW(load_tokenizer("/nonexistent/dir/model.gguf"), CheckpointError);
}

// ---- helpers -----------------------------------------------------------------------------------------------------

TEST(Unicode, LossyConversionReplacesMaximalInvalidSubparts) {
  using tokenizer_detail::utf8_lossy;
  EXPECT_EQ(utf8_lossy("a\xE2\x82" "b"), "a\xEF\xBF\xBD" "b");  // one U+FFFD for an unfinished sequence
  EXPECT_EQ(utf8_lossy("\xC0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // C0 can start nothing
  EXPECT_EQ(utf8_lossy("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  EXPECT_EQ(tokenizer_detail::utf8_incomplete_tail("a\xF0\x9F\x98"), 3u);
  EXPECT_EQ(tokenizer_detail::utf8_incomplete_tail("a\xF0\x9F\x98\x80"), 0u);
  EXPECT_EQ(tokenizer_detail::utf8_incomplete_tail("a\x80"), 0u);
}

TEST(Regex, WhitespaceIsUnicodeWhiteSpaceAndCategoriesAreCurrent) {
  std::vector<std::pair<std::size_t, std::size_t>> m;
  tokenizer_detail::Regex ws("\\s+");
  ws.find_all("a\xE1\xA0\x8E" "b\xE3\x80\x80" "c", m);  // U+180E is not White_Space; U+3000 is
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0], (std::pair<std::size_t, std::size_t>{5, 8}));
  m.clear();
  tokenizer_detail::Regex sym("\\p{S}");
  sym.find_all("\xF0\x9F\xAA\xBF", m);  // U+1FABF (Unicode 15) is a symbol
  EXPECT_EQ(m.size(), 1u);
  m.clear();
  tokenizer_detail::Regex empty("x*");
  empty.find_all("axb", m);  // empty matches are kept, except right after a match
  EXPECT_EQ(m, (std::vector<std::pair<std::size_t, std::size_t>>{{0, 0}, {1, 2}, {3, 3}}));
  EXPECT_THROW(tokenizer_detail::Regex("(("), std::invalid_argument);
}

}  // namespace
}  // namespace tf
