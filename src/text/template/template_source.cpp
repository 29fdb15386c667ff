// Where a model's chat template and special tokens come from: GGUF metadata or a Hugging Face
// tokenizer directory.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "checkpoint/gguf.h"
#include "text/template/chat_template.h"

namespace tf {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void input_error(const std::string& msg) { throw TemplateError(TemplateError::Kind::Input, msg); }

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) input_error("cannot read " + p.string());
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

nlohmann::ordered_json read_json(const fs::path& p) {
  auto j = nlohmann::ordered_json::parse(read_text(p), nullptr, false);
  if (j.is_discarded()) input_error(p.string() + ": not valid JSON");
  return j;
}

// A special token in tokenizer_config.json: a string or an AddedToken object {"content": ...}.
std::optional<nlohmann::ordered_json> token_string(const nlohmann::ordered_json& v) {
  if (v.is_string()) return v;
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"];
  return std::nullopt;
}

constexpr const char* kSpecialTokenKeys[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                             "pad_token", "cls_token", "mask_token"};

nlohmann::ordered_json hf_special_tokens(const nlohmann::ordered_json& cfg) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  if (!cfg.is_object()) return out;
  for (const char* key : kSpecialTokenKeys)
    if (cfg.contains(key))
      if (auto s = token_string(cfg[key]); s && !s->get<std::string>().empty()) out[key] = *s;
  if (cfg.contains("additional_special_tokens") && cfg["additional_special_tokens"].is_array()) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& t : cfg["additional_special_tokens"])
      if (auto s = token_string(t)) list.push_back(*s);
    if (!list.empty()) out["additional_special_tokens"] = list;
  }
  return out;
}

struct Found {
  std::vector<std::pair<std::string, std::string>> named;  // empty name list: none found
  nlohmann::ordered_json special_tokens = nlohmann::ordered_json::object();
  std::string architecture;  // config.json model_type or GGUF general.architecture
};

Found from_gguf(const std::string& path) {
  GgufFile file(path);
  const GgufHeader& h = file.header();
  Found f;
  if (auto a = h.get_string("general.architecture")) f.architecture = *a;
  if (auto t = h.get_string("tokenizer.chat_template")) f.named.emplace_back("default", *t);
  const std::string prefix = "tokenizer.chat_template.";
  for (const auto& [key, value] : h.metadata)
    if (key.rfind(prefix, 0) == 0 && value.as_string())
      f.named.emplace_back(key.substr(prefix.size()), *value.as_string());
  const GgufArray* tokens = h.get_array("tokenizer.ggml.tokens");
  const std::pair<const char*, const char*> ids[] = {
      {"tokenizer.ggml.bos_token_id", "bos_token"},     {"tokenizer.ggml.eos_token_id", "eos_token"},
      {"tokenizer.ggml.unknown_token_id", "unk_token"}, {"tokenizer.ggml.seperator_token_id", "sep_token"},
      {"tokenizer.ggml.padding_token_id", "pad_token"}, {"tokenizer.ggml.cls_token_id", "cls_token"},
      {"tokenizer.ggml.mask_token_id", "mask_token"},
  };
  if (tokens) {
    for (const auto& [key, name] : ids) {
      const auto id = h.get_uint(key);
      if (!id || *id >= tokens->items.size()) continue;
      if (const std::string* s = tokens->items[*id].as_string()) f.special_tokens[name] = *s;
    }
  }
  return f;
}

Found from_directory(const fs::path& dir) {
  Found f;
  nlohmann::ordered_json cfg;
  if (fs::exists(dir / "tokenizer_config.json")) cfg = read_json(dir / "tokenizer_config.json");
  f.special_tokens = hf_special_tokens(cfg);
  // The architecture picks a builtin encoding for a model without a template; a config that does not read is
  // the checkpoint loader's to report, not the template's.
  if (fs::exists(dir / "config.json")) {
    const auto config = nlohmann::ordered_json::parse(read_text(dir / "config.json"), nullptr, false);
    if (config.is_object() && config.contains("model_type") && config["model_type"].is_string())
      f.architecture = config["model_type"].get<std::string>();
  }
  if (f.special_tokens.empty() && fs::exists(dir / "special_tokens_map.json"))
    f.special_tokens = hf_special_tokens(read_json(dir / "special_tokens_map.json"));
  if (fs::exists(dir / "chat_template.jinja")) {
    f.named.emplace_back("default", read_text(dir / "chat_template.jinja"));
  } else if (cfg.is_object() && cfg.contains("chat_template")) {
    const auto& ct = cfg["chat_template"];
    if (ct.is_string()) {
      f.named.emplace_back("default", ct.get<std::string>());
    } else if (ct.is_array()) {
      for (const auto& e : ct)
        if (e.is_object() && e.contains("name") && e.contains("template") && e["name"].is_string() &&
            e["template"].is_string())
          f.named.emplace_back(e["name"].get<std::string>(), e["template"].get<std::string>());
    }
  } else if (fs::exists(dir / "chat_template.json")) {
    const auto j = read_json(dir / "chat_template.json");
    if (j.is_object() && j.contains("chat_template") && j["chat_template"].is_string())
      f.named.emplace_back("default", j["chat_template"].get<std::string>());
  }
  const fs::path extra = dir / "additional_chat_templates";
  if (fs::is_directory(extra)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(extra))
      if (e.path().extension() == ".jinja") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& p : files) f.named.emplace_back(p.stem().string(), read_text(p));
  }
  return f;
}

}  // namespace

ChatTemplate load_chat_template(const std::string& model_path, const std::string& override_file) {
  Found f;
  if (!model_path.empty()) {
    const fs::path p(model_path);
    if (fs::is_directory(p))
      f = from_directory(p);
    else if (fs::exists(p))
      f = from_gguf(model_path);
    else
      input_error(model_path + ": no such file or directory");
  }
  constexpr std::string_view kBuiltin = "builtin:";
  if (override_file.rfind(kBuiltin, 0) == 0) {
    const auto name = std::string_view(override_file).substr(kBuiltin.size());
    if (const auto e = builtin_encoding_from_name(name)) return ChatTemplate::builtin(*e, f.special_tokens);
    input_error("--chat-template " + override_file + ": no such builtin encoding (known: builtin:deepseek_v4)");
  }
  if (!override_file.empty()) return ChatTemplate(read_text(override_file), f.special_tokens);
  // A model that ships no template but whose prompts are built by code we reproduce (DeepSeek-V4).
  if (f.named.empty())
    if (const auto e = builtin_encoding_for_architecture(f.architecture))
      return ChatTemplate::builtin(*e, f.special_tokens);
  if (f.named.empty()) input_error(model_path + ": the model has no chat template (give one with --chat-template)");
  if (f.named.size() == 1 && f.named[0].first == "default") return ChatTemplate(f.named[0].second, f.special_tokens);
  return ChatTemplate(f.named, f.special_tokens);
}

}  // namespace tf
