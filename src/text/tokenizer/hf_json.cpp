// Builds the tokenizer pipeline from a Hugging Face tokenizer.json (the `tokenizers` serialization, version 1.0).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

#include "checkpoint/checkpoint_error.h"
#include "text/tokenizer/tokenizer.h"
#include "text/tokenizer/tokenizer_impl.h"
#include "text/tokenizer/unicode.h"

namespace tf {

Tokenizer make_tokenizer(std::shared_ptr<const tokenizer_detail::TokenizerImpl>);

namespace tokenizer_detail {
namespace {

using json = nlohmann::json;

// A problem with the file's content; turned into CheckpointError(file, what) by the caller.
struct BadTokenizer : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string type_of(const json& j, const char* what) {
  if (!j.is_object()) throw BadTokenizer(std::string(what) + " is not an object");
  const auto it = j.find("type");
  if (it == j.end() || !it->is_string()) throw BadTokenizer(std::string(what) + " has no \"type\"");
  return it->get<std::string>();
}

std::string get_string(const json& j, const char* key, const char* what, std::optional<std::string> fallback = {}) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (fallback) return *fallback;
    throw BadTokenizer(std::string(what) + " has no \"" + key + "\"");
  }
  if (!it->is_string()) throw BadTokenizer(std::string(what) + ": \"" + key + "\" is not a string");
  return it->get<std::string>();
}

bool get_bool(const json& j, const char* key, bool fallback) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) throw BadTokenizer(std::string("\"") + key + "\" is not a boolean");
  return it->get<bool>();
}

std::size_t get_size(const json& j, const char* key, std::size_t fallback) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<int64_t>() >= 0))
    throw BadTokenizer(std::string("\"") + key + "\" is not a non-negative integer");
  return it->get<std::size_t>();
}

// {"String": "..."} or {"Regex": "..."}
std::pair<std::string, bool> get_pattern(const json& j, const char* what) {
  const auto it = j.find("pattern");
  if (it == j.end() || !it->is_object()) throw BadTokenizer(std::string(what) + " has no \"pattern\" object");
  if (const auto s = it->find("String"); s != it->end() && s->is_string()) return {s->get<std::string>(), false};
  if (const auto r = it->find("Regex"); r != it->end() && r->is_string()) return {r->get<std::string>(), true};
  throw BadTokenizer(std::string(what) + ": \"pattern\" is neither {\"String\": ...} nor {\"Regex\": ...}");
}

SplitBehavior get_behavior(const json& j, SplitBehavior fallback) {
  const auto it = j.find("behavior");
  if (it == j.end() || it->is_null()) return fallback;
  const std::string b = it->is_string() ? it->get<std::string>() : "";
  if (b == "Removed") return SplitBehavior::Removed;
  if (b == "Isolated") return SplitBehavior::Isolated;
  if (b == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (b == "Contiguous") return SplitBehavior::Contiguous;
  throw BadTokenizer("unknown split behavior \"" + b + "\"");
}

// prepend_scheme, or the older add_prefix_space flag: 0 always, 1 first, 2 never
int get_prepend_scheme(const json& j) {
  if (const auto it = j.find("prepend_scheme"); it != j.end() && it->is_string()) {
    const std::string s = it->get<std::string>();
    if (s == "always") return 0;
    if (s == "first") return 1;
    if (s == "never") return 2;
    throw BadTokenizer("unknown Metaspace prepend_scheme \"" + s + "\"");
  }
  return get_bool(j, "add_prefix_space", true) ? 0 : 2;
}

std::unique_ptr<Normalizer> build_normalizer(const json& j) {
  if (j.is_null()) return nullptr;
  const std::string t = type_of(j, "normalizer");
  if (t == "Sequence") {
    std::vector<std::unique_ptr<Normalizer>> parts;
    const auto it = j.find("normalizers");
    if (it == j.end() || !it->is_array()) throw BadTokenizer("Sequence normalizer has no \"normalizers\" array");
    for (const auto& p : *it)
      if (auto n = build_normalizer(p)) parts.push_back(std::move(n));
    return make_sequence_normalizer(std::move(parts));
  }
  if (t == "NFC") return make_unicode_normalizer(static_cast<int>(NormalForm::NFC));
  if (t == "NFD") return make_unicode_normalizer(static_cast<int>(NormalForm::NFD));
  if (t == "NFKC") return make_unicode_normalizer(static_cast<int>(NormalForm::NFKC));
  if (t == "NFKD") return make_unicode_normalizer(static_cast<int>(NormalForm::NFKD));
  if (t == "Prepend") return make_prepend_normalizer(get_string(j, "prepend", "Prepend normalizer"));
  if (t == "Replace") {
    auto [pattern, is_regex] = get_pattern(j, "Replace normalizer");
    return make_replace_normalizer(std::move(pattern), is_regex, get_string(j, "content", "Replace normalizer"));
  }
  if (t == "Lowercase") return make_lowercase_normalizer();
  if (t == "Strip") return make_strip_normalizer(get_bool(j, "strip_left", true), get_bool(j, "strip_right", true));
  if (t == "StripAccents") return make_strip_accents_normalizer();
  if (t == "BertNormalizer") {
    const bool lower = get_bool(j, "lowercase", true);
    return make_bert_normalizer(get_bool(j, "clean_text", true), get_bool(j, "handle_chinese_chars", true),
                                get_bool(j, "strip_accents", lower), lower);
  }
  throw BadTokenizer("normalizer \"" + t + "\" is not supported");
}

std::unique_ptr<PreTokenizer> build_pre_tokenizer(const json& j) {
  if (j.is_null()) return nullptr;
  const std::string t = type_of(j, "pre_tokenizer");
  if (t == "Sequence") {
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    const auto it = j.find("pretokenizers");
    if (it == j.end() || !it->is_array()) throw BadTokenizer("Sequence pre_tokenizer has no \"pretokenizers\" array");
    for (const auto& p : *it)
      if (auto n = build_pre_tokenizer(p)) parts.push_back(std::move(n));
    return make_sequence_pre_tokenizer(std::move(parts));
  }
  if (t == "Split") {
    auto [pattern, is_regex] = get_pattern(j, "Split pre_tokenizer");
    return make_split_pre_tokenizer(std::move(pattern), is_regex, get_behavior(j, SplitBehavior::Isolated),
                                    get_bool(j, "invert", false));
  }
  if (t == "ByteLevel")
    return make_byte_level_pre_tokenizer(get_bool(j, "add_prefix_space", true), get_bool(j, "use_regex", true));
  if (t == "Digits") return make_digits_pre_tokenizer(get_bool(j, "individual_digits", false));
  if (t == "Metaspace")
    return make_metaspace_pre_tokenizer(get_string(j, "replacement", "Metaspace", "\xE2\x96\x81"), get_prepend_scheme(j),
                                        get_bool(j, "split", true));
  if (t == "Whitespace") return make_whitespace_pre_tokenizer();
  if (t == "WhitespaceSplit") return make_whitespace_split_pre_tokenizer();
  if (t == "Punctuation") return make_punctuation_pre_tokenizer(get_behavior(j, SplitBehavior::Isolated));
  if (t == "BertPreTokenizer") return make_bert_pre_tokenizer();
  if (t == "CharDelimiterSplit") return make_char_delimiter_pre_tokenizer(get_string(j, "delimiter", "CharDelimiterSplit"));
  throw BadTokenizer("pre_tokenizer \"" + t + "\" is not supported");
}

std::unique_ptr<Decoder> build_decoder(const json& j) {
  if (j.is_null()) return nullptr;
  const std::string t = type_of(j, "decoder");
  if (t == "Sequence") {
    std::vector<std::unique_ptr<Decoder>> parts;
    const auto it = j.find("decoders");
    if (it == j.end() || !it->is_array()) throw BadTokenizer("Sequence decoder has no \"decoders\" array");
    for (const auto& p : *it)
      if (auto n = build_decoder(p)) parts.push_back(std::move(n));
    return make_sequence_decoder(std::move(parts));
  }
  if (t == "ByteLevel") return make_byte_level_decoder();
  if (t == "Metaspace")
    return make_metaspace_decoder(get_string(j, "replacement", "Metaspace decoder", "\xE2\x96\x81"), get_prepend_scheme(j) != 2);
  if (t == "ByteFallback") return make_byte_fallback_decoder();
  if (t == "Fuse") return make_fuse_decoder();
  if (t == "Strip") return make_strip_decoder(get_string(j, "content", "Strip decoder"), get_size(j, "start", 0), get_size(j, "stop", 0));
  if (t == "Replace") {
    auto [pattern, is_regex] = get_pattern(j, "Replace decoder");
    return make_replace_decoder(std::move(pattern), is_regex, get_string(j, "content", "Replace decoder"));
  }
  if (t == "WordPiece") return make_wordpiece_decoder(get_string(j, "prefix", "WordPiece decoder", "##"), get_bool(j, "cleanup", true));
  if (t == "BPEDecoder") return make_bpe_suffix_decoder(get_string(j, "suffix", "BPEDecoder", "</w>"));
  throw BadTokenizer("decoder \"" + t + "\" is not supported");
}

int32_t token_ref(const json& v, const TokenizerImpl& impl, const char* what) {
  // ["<s>", 1] as Bert/Roberta processors write it
  if (v.is_array() && v.size() == 2 && v[1].is_number_integer()) return v[1].get<int32_t>();
  if (v.is_string()) {
    if (const auto id = impl.vocab.find(v.get<std::string>())) return *id;
  }
  throw BadTokenizer(std::string(what) + " names an unknown token");
}

std::unique_ptr<PostProcessor> build_post_processor(const json& j, const TokenizerImpl& impl) {
  if (j.is_null()) return nullptr;
  const std::string t = type_of(j, "post_processor");
  if (t == "ByteLevel") return nullptr;  // offsets only
  if (t == "Sequence") {
    std::vector<std::unique_ptr<PostProcessor>> parts;
    const auto it = j.find("processors");
    if (it == j.end() || !it->is_array()) throw BadTokenizer("Sequence post_processor has no \"processors\" array");
    for (const auto& p : *it)
      if (auto n = build_post_processor(p, impl)) parts.push_back(std::move(n));
    return make_sequence_processor(std::move(parts));
  }
  if (t == "BertProcessing" || t == "RobertaProcessing") {
    const auto cls = j.find("cls"), sep = j.find("sep");
    if (cls == j.end() || sep == j.end()) throw BadTokenizer(t + " needs \"cls\" and \"sep\"");
    return make_template_processor({{token_ref(*cls, impl, "cls")}}, {{token_ref(*sep, impl, "sep")}});
  }
  if (t == "TemplateProcessing") {
    const auto single = j.find("single");
    if (single == j.end() || !single->is_array()) throw BadTokenizer("TemplateProcessing has no \"single\" array");
    const json specials = j.value("special_tokens", json::object());
    std::vector<std::vector<int32_t>> before, after;
    bool seen_sequence = false;
    for (const auto& item : *single) {
      if (item.contains("Sequence")) {
        seen_sequence = true;
        continue;
      }
      const auto st = item.find("SpecialToken");
      if (st == item.end() || !st->is_object()) throw BadTokenizer("TemplateProcessing has an item of unknown kind");
      const std::string name = get_string(*st, "id", "TemplateProcessing special token");
      std::vector<int32_t> ids;
      const auto spec = specials.find(name);
      if (spec != specials.end() && spec->contains("ids") && (*spec)["ids"].is_array()) {
        for (const auto& v : (*spec)["ids"]) {
          if (!v.is_number_integer()) throw BadTokenizer("TemplateProcessing: ids of \"" + name + "\" are not integers");
          ids.push_back(v.get<int32_t>());
        }
      } else if (const auto id = impl.vocab.find(name)) {
        ids.push_back(*id);
      } else {
        throw BadTokenizer("TemplateProcessing names special token \"" + name + "\" that it does not define");
      }
      (seen_sequence ? after : before).push_back(std::move(ids));
    }
    if (before.empty() && after.empty()) return nullptr;
    return make_template_processor(std::move(before), std::move(after));
  }
  throw BadTokenizer("post_processor \"" + t + "\" is not supported");
}

std::optional<std::string> config_token(const json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) return (*it)["content"].get<std::string>();
  return std::nullopt;
}

void build(TokenizerImpl& impl, const json& root, const json& config) {
  if (!root.is_object()) throw BadTokenizer("the top level is not a JSON object");
  const auto model_it = root.find("model");
  if (model_it == root.end() || !model_it->is_object()) throw BadTokenizer("there is no \"model\" object");
  const json& m = *model_it;
  std::string type = m.contains("type") && m["type"].is_string() ? m["type"].get<std::string>() : "";
  if (type.empty()) type = m.contains("merges") ? "BPE" : m.contains("max_input_chars_per_word") ? "WordPiece" : "";
  if (type != "BPE" && type != "WordPiece")
    throw BadTokenizer("model type \"" + type + "\" is not supported (BPE and WordPiece are)");

  // Vocabulary.
  const auto vocab_it = m.find("vocab");
  if (vocab_it == m.end() || !vocab_it->is_object()) throw BadTokenizer("the model has no \"vocab\" object");
  Vocab& vocab = impl.vocab;
  int64_t max_id = -1;
  for (auto it = vocab_it->begin(); it != vocab_it->end(); ++it) {
    if (!it.value().is_number_integer()) throw BadTokenizer("vocab entry \"" + it.key() + "\" has no integer id");
    const int64_t id = it.value().get<int64_t>();
    if (id < 0 || id >= (int64_t{1} << 31) - 1) throw BadTokenizer("vocab id " + std::to_string(id) + " is out of range");
    max_id = std::max(max_id, id);
  }
  const json added = root.value("added_tokens", json::array());
  if (!added.is_array()) throw BadTokenizer("\"added_tokens\" is not an array");
  for (const auto& a : added) {
    if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer()) throw BadTokenizer("an added token has no integer id");
    const int64_t id = a["id"].get<int64_t>();
    if (id < 0 || id >= (int64_t{1} << 31) - 1) throw BadTokenizer("added token id " + std::to_string(id) + " is out of range");
    max_id = std::max(max_id, id);
  }
  if (max_id > 16 * 1024 * 1024) throw BadTokenizer("token ids go past 16M");
  vocab.id_to_token.assign(static_cast<std::size_t>(max_id + 1), std::string());
  vocab.token_to_id.reserve(vocab_it->size() + added.size());
  for (auto it = vocab_it->begin(); it != vocab_it->end(); ++it) {
    const auto id = static_cast<int32_t>(it.value().get<int64_t>());
    vocab.id_to_token[static_cast<std::size_t>(id)] = it.key();
    vocab.token_to_id[it.key()] = id;
  }
  // The model keeps its own map; added tokens are looked up first (token_to_id) and decode as their content.
  Vocab model_vocab = vocab;  // the BPE/WordPiece model sees only its vocabulary
  for (const auto& a : added) {
    AddedToken t;
    t.id = a["id"].get<int32_t>();
    t.content = get_string(a, "content", "added token");
    t.special = get_bool(a, "special", false);
    t.single_word = get_bool(a, "single_word", false);
    t.lstrip = get_bool(a, "lstrip", false);
    t.rstrip = get_bool(a, "rstrip", false);
    t.normalized = get_bool(a, "normalized", !t.special);
    vocab.id_to_token[static_cast<std::size_t>(t.id)] = t.content;
    vocab.token_to_id[t.content] = t.id;
    impl.added.push_back(std::move(t));
  }

  impl.normalizer = build_normalizer(root.value("normalizer", json()));
  impl.pre_tokenizer = build_pre_tokenizer(root.value("pre_tokenizer", json()));
  impl.decoder = build_decoder(root.value("decoder", json()));

  // The model holds a reference to its vocabulary: keep it alive in a holder owned by the impl.
  auto holder = std::make_shared<Vocab>(std::move(model_vocab));
  if (type == "BPE") {
    BpeOptions opt;
    const std::string unk = get_string(m, "unk_token", "model", std::string());
    if (!unk.empty()) {
      const auto id = holder->find(unk);
      if (!id) throw BadTokenizer("the unk_token \"" + unk + "\" is not in the vocabulary");
      opt.unk = *id;
    }
    opt.continuing_subword_prefix = get_string(m, "continuing_subword_prefix", "model", std::string());
    opt.end_of_word_suffix = get_string(m, "end_of_word_suffix", "model", std::string());
    opt.fuse_unk = get_bool(m, "fuse_unk", false);
    opt.byte_fallback = get_bool(m, "byte_fallback", false);
    opt.ignore_merges = get_bool(m, "ignore_merges", false);
    if (const auto d = m.find("dropout"); d != m.end() && d->is_number() && d->get<double>() > 0.0)
      throw BadTokenizer("BPE dropout is not supported (it makes encoding random)");
    std::vector<std::pair<std::string, std::string>> merges;
    const json merges_json = m.value("merges", json::array());
    if (!merges_json.is_array()) throw BadTokenizer("\"merges\" is not an array");
    merges.reserve(merges_json.size());
    for (const auto& e : merges_json) {
      if (e.is_string()) {
        const std::string s = e.get<std::string>();
        const std::size_t sp = s.find(' ');
        if (sp == std::string::npos) throw BadTokenizer("merge \"" + s + "\" is not two tokens");
        merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
      } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
        merges.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
      } else {
        throw BadTokenizer("a merge is neither \"a b\" nor [\"a\", \"b\"]");
      }
    }
    impl.unk = opt.unk;
    try {
      impl.model = make_bpe_model(*holder, merges, std::move(opt));
    } catch (const std::invalid_argument& e) {
      throw BadTokenizer(e.what());
    }
  } else {
    const std::string unk = get_string(m, "unk_token", "model", "[UNK]");
    const auto id = holder->find(unk);
    if (!id) throw BadTokenizer("the unk_token \"" + unk + "\" is not in the vocabulary");
    impl.unk = *id;
    impl.model = make_wordpiece_model(*holder, *id, get_string(m, "continuing_subword_prefix", "model", "##"),
                                      get_size(m, "max_input_chars_per_word", 100));
  }
  impl.model_vocab = std::move(holder);
  impl.post_processor = build_post_processor(root.value("post_processor", json()), impl);

  // bos/eos/unk/pad from tokenizer_config.json when given.
  if (config.is_object()) {
    auto find = [&](const char* key) -> std::optional<int32_t> {
      if (auto s = config_token(config, key)) return impl.vocab.find(*s);
      return std::nullopt;
    };
    impl.bos = find("bos_token");
    impl.eos = find("eos_token");
    if (auto u = find("unk_token")) impl.unk = u;
    impl.pad = find("pad_token");
  }
  std::vector<int32_t> eog;
  if (impl.eos) eog.push_back(*impl.eos);
  for (const char* name : {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
                           "<|end_of_text|>", "<end_of_utterance>", "</s>",
                           "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"}) {
    if (const auto id = impl.vocab.find(name); id && impl.is_special(*id)) eog.push_back(*id);
  }
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
  impl.eog = std::move(eog);
}

}  // namespace
}  // namespace tokenizer_detail

Tokenizer load_tokenizer_json(std::string_view json_text, const std::string& source, std::string_view config_text) {
  using namespace tokenizer_detail;
  json root, config;
  try {
    root = json::parse(json_text.begin(), json_text.end());
  } catch (const json::exception& e) {
    throw CheckpointError(source, std::string("not valid JSON: ") + e.what());
  }
  if (!config_text.empty()) {
    try {
      config = json::parse(config_text.begin(), config_text.end());
    } catch (const json::exception&) {
      config = json();  // a broken tokenizer_config.json only loses bos/eos names
    }
  }
  auto impl = std::make_shared<TokenizerImpl>();
  impl->source = source;
  try {
    build(*impl, root, config);
    impl->index_added_tokens();
  } catch (const BadTokenizer& e) {
    throw CheckpointError(source, e.what());
  } catch (const std::invalid_argument& e) {  // a regex that does not compile
    throw CheckpointError(source, e.what());
  } catch (const json::exception& e) {
    throw CheckpointError(source, std::string("unexpected JSON shape: ") + e.what());
  }
  return make_tokenizer(std::move(impl));
}

}  // namespace tf
