// Builds the tokenizer pipeline from a GGUF file's tokenizer.ggml.* metadata, the way llama.cpp reads it:
//   gpt2   byte-level BPE; tokenizer.ggml.pre names the pre-tokenizer regexes (each splits, keeping the matches)
//   llama  SentencePiece BPE by scores with <0xNN> byte tokens; " " -> "▁", and "▁" prepended when
//          tokenizer.ggml.add_space_prefix (default true)
//   gemma4 BPE with merges over raw UTF-8 with <0xNN> byte tokens; " " -> "▁", split at runs of newlines
//   bert   WordPiece with BERT normalization (lowercase, accents stripped)
// Token types decide matching: control and unknown tokens are special tokens, user-defined tokens are added
// tokens that are always matched.
#include <algorithm>
#include <map>
#include <stdexcept>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/gguf.h"
#include "text/tokenizer/tokenizer.h"
#include "text/tokenizer/tokenizer_impl.h"

namespace tf {

Tokenizer make_tokenizer(std::shared_ptr<const tokenizer_detail::TokenizerImpl>);

namespace tokenizer_detail {
namespace {

// ---- pre-tokenizer regexes by tokenizer.ggml.pre ----------------------------------------------------------------

constexpr const char* kGpt2 = R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))re";
constexpr const char* kLlama3 =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kQwen2 =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kQwen35 =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kDeepseek3Main =
    R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kGpt4o =
    R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kBloom = R"re( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{964}\x{6D4}\x{60C})]+)re";

struct PreSpec {
  std::vector<std::string> regexes;
  bool ignore_merges = false;
  bool add_bos = false;
};

PreSpec pre_spec(const std::string& pre, const std::string& file) {
  auto is = [&](std::initializer_list<const char*> names) {
    return std::any_of(names.begin(), names.end(), [&](const char* n) { return pre == n; });
  };
  if (pre.empty() || pre == "default")
    return {{R"re([\p{P}\$\+<=>\^~\|]+)re", kGpt2, R"re(\p{N}+)re", "[0-9][0-9][0-9]"}};
  if (is({"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"}))
    return {{kLlama3}, true, true};
  if (is({"dbrx", "smaug-bpe"})) return {{kLlama3}};
  if (is({"jais-2"}))
    return {{R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1})re"}};
  if (is({"deepseek-llm"}))
    return {{"[\r\n]",
             "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+",
             "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+", "\\s+$", "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+", "\\p{N}+"}};
  if (is({"deepseek-coder"}))
    return {{"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+", "\\p{N}"}};
  if (is({"deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4"}))
    return {{R"re(\p{N}{1,3})re", R"re([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)re", kDeepseek3Main}};
  if (is({"falcon"}))
    return {{R"re([\p{P}\$\+<=>\^~\|`]+)re", kGpt2, "[0-9][0-9][0-9]"}};
  if (is({"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2"}))
    return {{R"re(\p{N})re", kGpt2}};
  if (is({"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
          "modern-bert", "mpt", "olmo", "jais", "trillion", "granite-docling", "exaone4", "jina-v1-en",
          "jina-v2-code", "roberta-bpe"}))
    return {{kGpt2}};
  if (is({"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "stablelm2", "hunyuan", "solar-open", "megrez", "grok-2"}))
    return {{kQwen2}};
  if (is({"qwen35"})) return {{kQwen35}};
  if (is({"poro-chat", "bloom", "gpt3-finnish"})) return {{kBloom}};
  if (is({"viking"})) return {{kBloom, R"re(\p{N})re"}};
  if (is({"chatglm-bpe"})) return {{kLlama3}};
  if (is({"glm4", "glm5"})) return {{kLlama3}, true};
  if (is({"tekken"}))
    return {{R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"},
            true, true};
  if (is({"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"})) return {{kGpt4o}};
  if (is({"seed-coder"}))
    return {{R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)re"}};
  if (is({"ufakzeka"}))
    return {{R"re([^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"}};
  if (is({"bailingmoe", "bailingmoe2", "llada-moe"}))
    return {{R"re('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)re"}};
  if (is({"minicpm5"}))
    return {{R"re(\p{N}{1,3})re",
             R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"},
            true};
  if (is({"laguna"})) return {{R"re([^\n]+|[\n]+)re", kQwen2}};
  if (is({"exaone-moe"}))
    return {{R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+)re"}};
  if (is({"tiny_aya", "cohere2moe"}))
    return {{R"re(\d{1,3}(?=(?:\d{3})*\b))re",
             R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re"}};
  if (is({"chameleon"}))
    return {{"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", R"re(\p{N})re",
             R"re([\p{P}!-/:-@\[-`{-~])re", kGpt2},
            false, true};
  throw CheckpointError(file, "tokenizer.ggml.pre '" + pre + "' is a pre-tokenizer this build does not know");
}

// ---- metadata access ------------------------------------------------------------------------------------------

const GgufArray* string_array(const GgufHeader& h, const char* key, const std::string& file, bool required) {
  const GgufArray* a = h.get_array(key);
  if (!a) {
    if (required) throw CheckpointError(file, std::string(key) + " is missing (the file has no usable tokenizer)");
    return nullptr;
  }
  if (a->element_type != GgufValueType::STRING)
    throw CheckpointError(file, std::string(key) + " is not an array of strings");
  return a;
}

std::optional<int32_t> token_id_key(const GgufHeader& h, const char* key, std::size_t n, const std::string& file) {
  const GgufValue* v = h.get(key);
  if (!v) return std::nullopt;
  const auto u = v->as_uint();
  if (!u) {
    // some converters write -1 for "none"
    if (const auto d = v->as_number(); d && *d < 0) return std::nullopt;
    throw CheckpointError(file, std::string(key) + " is not a token id");
  }
  if (*u >= n) return std::nullopt;  // out of range: ignored, as llama.cpp does
  return static_cast<int32_t>(*u);
}

std::optional<bool> bool_key(const GgufHeader& h, const char* key) {
  const GgufValue* v = h.get(key);
  if (!v) return std::nullopt;
  if (const bool* b = std::get_if<bool>(&v->v)) return *b;
  if (const auto u = v->as_uint()) return *u != 0;
  return std::nullopt;
}

enum TokenType { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

}  // namespace

}  // namespace tokenizer_detail

Tokenizer load_tokenizer_gguf(const GgufHeader& h, const std::string& file) {
  using namespace tokenizer_detail;
  auto impl = std::make_shared<TokenizerImpl>();
  impl->source = file;
  const std::optional<std::string> model = h.get_string("tokenizer.ggml.model");
  if (!model) throw CheckpointError(file, "tokenizer.ggml.model is missing (the file has no tokenizer)");
  if (*model == "no_vocab" || *model == "none") throw CheckpointError(file, "the file has no vocabulary (tokenizer.ggml.model is '" + *model + "')");
  if (*model != "gpt2" && *model != "llama" && *model != "bert" && *model != "gemma4")
    throw CheckpointError(file, "tokenizer.ggml.model '" + *model + "' is not supported (gpt2, llama, gemma4 and bert are)");

  const GgufArray* tokens = string_array(h, "tokenizer.ggml.tokens", file, true);
  const std::size_t n = tokens->items.size();
  if (n == 0) throw CheckpointError(file, "tokenizer.ggml.tokens is empty");
  if (n > 0x7fffffff) throw CheckpointError(file, "tokenizer.ggml.tokens has too many entries");

  std::vector<int> types(n, kNormal);
  if (const GgufArray* tt = h.get_array("tokenizer.ggml.token_type")) {
    if (tt->items.size() < n) throw CheckpointError(file, "tokenizer.ggml.token_type has fewer entries than tokens");
    for (std::size_t i = 0; i < n; ++i) {
      const auto num = tt->items[i].as_number();
      if (!num) throw CheckpointError(file, "tokenizer.ggml.token_type is not an array of integers");
      types[i] = static_cast<int>(*num);
    }
  }
  std::vector<float> scores;
  if (const GgufArray* sc = h.get_array("tokenizer.ggml.scores")) {
    if (sc->items.size() < n) throw CheckpointError(file, "tokenizer.ggml.scores has fewer entries than tokens");
    scores.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto num = sc->items[i].as_number();
      if (!num) throw CheckpointError(file, "tokenizer.ggml.scores is not an array of numbers");
      scores.push_back(static_cast<float>(*num));
    }
  }

  Vocab& vocab = impl->vocab;
  vocab.id_to_token.resize(n);
  vocab.token_to_id.reserve(n * 2);
  for (std::size_t i = 0; i < n; ++i) {
    const std::string* s = tokens->items[i].as_string();
    if (!s) throw CheckpointError(file, "tokenizer.ggml.tokens has an entry that is not a string");
    vocab.id_to_token[i] = *s;
    if (!s->empty()) vocab.token_to_id[*s] = static_cast<int32_t>(i);  // a later duplicate wins, as in llama.cpp
  }

  // Special ids.
  const bool is_bert = *model == "bert";
  impl->bos = token_id_key(h, "tokenizer.ggml.bos_token_id", n, file);
  impl->eos = token_id_key(h, "tokenizer.ggml.eos_token_id", n, file);
  impl->unk = token_id_key(h, "tokenizer.ggml.unknown_token_id", n, file);
  impl->pad = token_id_key(h, "tokenizer.ggml.padding_token_id", n, file);
  const auto cls = token_id_key(h, "tokenizer.ggml.cls_token_id", n, file);
  const auto sep = token_id_key(h, "tokenizer.ggml.seperator_token_id", n, file);
  if (*model == "llama") {
    if (!impl->bos && !h.get("tokenizer.ggml.bos_token_id") && n > 1) impl->bos = 1;
    if (!impl->eos && !h.get("tokenizer.ggml.eos_token_id") && n > 2) impl->eos = 2;
    if (!impl->unk && !h.get("tokenizer.ggml.unknown_token_id")) impl->unk = 0;
  }
  if (is_bert) {
    if (!impl->unk && n > 100) impl->unk = 100;
    if (cls) impl->bos = cls;
    if (!impl->bos && n > 101) impl->bos = 101;
  }

  // Added tokens: control and unknown tokens are special; user-defined ones are matched too.
  for (std::size_t i = 0; i < n; ++i) {
    const int t = types[i];
    if (t != kControl && t != kUnknown && t != kUserDefined) continue;
    if (vocab.id_to_token[i].empty()) continue;
    AddedToken a;
    a.content = vocab.id_to_token[i];
    a.id = static_cast<int32_t>(i);
    a.special = t != kUserDefined;
    impl->added.push_back(std::move(a));
  }

  std::string pre = h.get_string("tokenizer.ggml.pre").value_or("");
  bool add_bos = false, add_eos = false;
  try {
    if (*model == "gpt2" || *model == "gemma4") {
      const GgufArray* merges = string_array(h, "tokenizer.ggml.merges", file, true);
      std::vector<std::pair<std::string, std::string>> pairs;
      pairs.reserve(merges->items.size());
      for (const auto& m : merges->items) {
        const std::string* s = m.as_string();
        const std::size_t sp = (s && s->size() > 1) ? s->find(' ', 1) : std::string::npos;
        if (sp == std::string::npos) throw CheckpointError(file, "tokenizer.ggml.merges has an entry that is not 'a b'");
        pairs.emplace_back(s->substr(0, sp), s->substr(sp + 1));
      }
      BpeOptions opt;
      std::vector<std::unique_ptr<PreTokenizer>> pre_parts;
      if (*model == "gemma4") {
        impl->normalizer = make_replace_normalizer(" ", false, "\xE2\x96\x81");
        pre_parts.push_back(make_split_pre_tokenizer("[^\\n]+|[\\n]+", true, SplitBehavior::Isolated, false));
        opt.byte_fallback = true;
        opt.newline_words_whole = true;
        add_bos = true;
        std::vector<std::unique_ptr<Decoder>> dec;
        dec.push_back(make_replace_decoder("\xE2\x96\x81", false, " "));
        dec.push_back(make_byte_fallback_decoder());
        dec.push_back(make_fuse_decoder());
        impl->decoder = make_sequence_decoder(std::move(dec));
      } else {
        const PreSpec spec = pre_spec(pre, file);
        for (const auto& re : spec.regexes)
          pre_parts.push_back(make_split_pre_tokenizer(re, true, SplitBehavior::Isolated, false));
        pre_parts.push_back(make_byte_level_pre_tokenizer(false, false));
        opt.ignore_merges = spec.ignore_merges;
        add_bos = spec.add_bos;
        impl->decoder = make_byte_level_decoder();
      }
      impl->pre_tokenizer = make_sequence_pre_tokenizer(std::move(pre_parts));
      impl->model = make_bpe_model(impl->vocab, pairs, std::move(opt));
    } else if (*model == "llama") {
      if (scores.empty()) scores.assign(n, 0.0f);
      const bool space_prefix = bool_key(h, "tokenizer.ggml.add_space_prefix").value_or(true);
      std::vector<std::unique_ptr<Normalizer>> norm;
      if (space_prefix) norm.push_back(make_prepend_normalizer("\xE2\x96\x81"));
      norm.push_back(make_replace_normalizer(" ", false, "\xE2\x96\x81"));
      impl->normalizer = make_sequence_normalizer(std::move(norm));
      impl->model = make_spm_model(impl->vocab, std::move(scores), impl->unk);
      std::vector<std::unique_ptr<Decoder>> dec;
      dec.push_back(make_replace_decoder("\xE2\x96\x81", false, " "));
      dec.push_back(make_byte_fallback_decoder());
      dec.push_back(make_fuse_decoder());
      if (space_prefix) dec.push_back(make_strip_decoder(" ", 1, 0));
      impl->decoder = make_sequence_decoder(std::move(dec));
      add_bos = true;
    } else {  // bert
      if (!impl->unk) throw CheckpointError(file, "a WordPiece vocabulary needs an unknown token");
      const bool lower = bool_key(h, "tokenizer.ggml.normalizer.lowercase").value_or(true);
      const bool strip = bool_key(h, "tokenizer.ggml.normalizer.strip_accents").value_or(lower);
      impl->normalizer = make_bert_normalizer(true, true, strip, lower);
      impl->pre_tokenizer = make_bert_pre_tokenizer();
      // llama.cpp's conversion marks word starts with "\u2581" and drops the "##" of continuations.
      impl->model = make_wordpiece_model(impl->vocab, *impl->unk, "", 100, "\xE2\x96\x81");
      std::vector<std::unique_ptr<Decoder>> dec;
      dec.push_back(make_replace_decoder("\xE2\x96\x81", false, " "));
      dec.push_back(make_fuse_decoder());
      dec.push_back(make_strip_decoder(" ", 1, 0));
      impl->decoder = make_sequence_decoder(std::move(dec));
      add_bos = true;
    }
  } catch (const std::invalid_argument& e) {
    throw CheckpointError(file, e.what());
  }
  add_bos = bool_key(h, "tokenizer.ggml.add_bos_token").value_or(add_bos);
  add_eos = bool_key(h, "tokenizer.ggml.add_eos_token").value_or(add_eos);
  if (*model == "gemma4") add_bos = true;  // llama.cpp forces it for Gemma 4
  std::vector<std::vector<int32_t>> before, after;
  if (add_bos && impl->bos) before.push_back({*impl->bos});
  if (is_bert) {
    const bool add_sep = bool_key(h, "tokenizer.ggml.add_sep_token").value_or(true);
    if (add_sep && sep) after.push_back({*sep});
  } else if (add_eos && impl->eos) {
    after.push_back({*impl->eos});
  }
  if (!before.empty() || !after.empty()) impl->post_processor = make_template_processor(before, after);

  // End of generation: eos, the end-of-turn key, and end-of-turn tokens known by name.
  std::vector<int32_t> eog;
  if (impl->eos) eog.push_back(*impl->eos);
  if (auto eot = token_id_key(h, "tokenizer.ggml.eot_token_id", n, file)) eog.push_back(*eot);
  if (auto eom = token_id_key(h, "tokenizer.ggml.eom_token_id", n, file)) eog.push_back(*eom);
  for (const char* name : {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
                           "<EOT>", "<|end_of_text|>", "<end_of_utterance>", "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
                           "<turn|>"}) {
    if (const auto id = vocab.find(name)) eog.push_back(*id);
  }
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
  impl->eog = std::move(eog);

  impl->index_added_tokens();
  return make_tokenizer(std::move(impl));
}

}  // namespace tf
