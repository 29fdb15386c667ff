// `tensorfold tokenize` and `tensorfold detokenize`: the model's tokenizer from the command line.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "checkpoint/checkpoint_error.h"
#include "cli/commands.h"
#include "text/tokenizer/tokenizer.h"

namespace tf::cli {

namespace {

// A bad argument (not a bad model file): one line on stderr, exit 1.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(fmt::format("cannot read {}", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ids_json(const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(ids[i]);
  }
  out += ']';
  return out;
}

std::vector<int32_t> parse_ids(const std::string& text, const std::string& where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    throw UsageError(fmt::format("{}: not a JSON array of token ids", where));
  }
  if (!j.is_array()) throw UsageError(fmt::format("{}: not a JSON array of token ids", where));
  std::vector<int32_t> ids;
  ids.reserve(j.size());
  for (const auto& v : j) {
    if (!v.is_number_integer() || v.get<int64_t>() < INT32_MIN || v.get<int64_t>() > INT32_MAX)
      throw UsageError(fmt::format("{}: token ids must be integers", where));
    ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  return ids;
}

// Calls f(line, line_number) for each line of a file (a final line without '\n' counts; a trailing '\r' stays).
template <typename F>
void for_each_line(const std::string& path, F&& f) {
  const std::string data = read_all(path);
  std::size_t pos = 0, number = 0;
  while (pos < data.size()) {
    std::size_t end = data.find('\n', pos);
    if (end == std::string::npos) end = data.size();
    f(std::string_view(data).substr(pos, end - pos), ++number);
    pos = end + 1;
  }
}

int report(const char* command, const std::exception& e) {
  fmt::print(stderr, "tensorfold {}: {}\n", command, e.what());
  return 1;
}

}  // namespace

Command add_tokenize_command(CLI::App& app) {
  struct Options {
    std::string model, text, file, jsonl;
    bool add_special = false, no_parse_special = false;
  };
  auto o = std::make_shared<Options>();
  auto* sub = app.add_subcommand("tokenize", "Print the token ids of a text as a JSON array");
  sub->add_option("model", o->model, "GGUF file, tokenizer.json, or a directory with one (default: the embedded model)");
  auto* text = sub->add_option("--text", o->text, "the text to tokenize");
  auto* file = sub->add_option("--file", o->file, "tokenize the whole content of this file");
  auto* jsonl = sub->add_option("--jsonl", o->jsonl, "one JSON string per line in; one JSON array per line out");
  text->excludes(file)->excludes(jsonl);
  file->excludes(jsonl);
  sub->add_flag("--add-special", o->add_special, "add BOS/EOS and the like, as the tokenizer's post-processor says");
  sub->add_flag("--no-parse-special", o->no_parse_special,
                "read special-token strings in the text as plain text (llama.cpp's parse_special=false)");
  return {sub, [o, text, file, jsonl] {
            try {
              if (!text->count() && !file->count() && !jsonl->count())
                throw UsageError("give one of --text, --file or --jsonl");
              const Tokenizer tok = load_tokenizer(resolve_model_path(o->model));
              EncodeOptions opt;
              opt.add_special = o->add_special;
              opt.parse_special = !o->no_parse_special;
              if (jsonl->count()) {
                std::string out;
                for_each_line(o->jsonl, [&](std::string_view line, std::size_t number) {
                  nlohmann::json j;
                  try {
                    j = nlohmann::json::parse(line);
                  } catch (const nlohmann::json::exception&) {
                    throw UsageError(fmt::format("{} line {}: not a JSON string", o->jsonl, number));
                  }
                  if (!j.is_string()) throw UsageError(fmt::format("{} line {}: not a JSON string", o->jsonl, number));
                  out += ids_json(tok.encode(j.get<std::string>(), opt));
                  out += '\n';
                });
                std::fwrite(out.data(), 1, out.size(), stdout);
                return 0;
              }
              const std::string input = file->count() ? read_all(o->file) : o->text;
              fmt::print("{}\n", ids_json(tok.encode(input, opt)));
              return 0;
            } catch (const CheckpointError& e) {
              return report("tokenize", e);
            } catch (const UsageError& e) {
              return report("tokenize", e);
            }
          }};
}

Command add_detokenize_command(CLI::App& app) {
  struct Options {
    std::string model, ids, jsonl;
    bool skip_special = false;
  };
  auto o = std::make_shared<Options>();
  auto* sub = app.add_subcommand("detokenize", "Print the text of token ids (exactly, with no added newline)");
  sub->add_option("model", o->model, "GGUF file, tokenizer.json, or a directory with one (default: the embedded model)");
  auto* ids = sub->add_option("--ids", o->ids, "a JSON array of token ids");
  auto* jsonl = sub->add_option("--jsonl", o->jsonl, "one JSON array per line in; one JSON string per line out");
  ids->excludes(jsonl);
  sub->add_flag("--skip-special", o->skip_special, "leave special tokens out");
  return {sub, [o, ids, jsonl] {
            try {
              if (!ids->count() && !jsonl->count()) throw UsageError("give --ids or --jsonl");
              const Tokenizer tok = load_tokenizer(resolve_model_path(o->model));
              if (jsonl->count()) {
                std::string out;
                for_each_line(o->jsonl, [&](std::string_view line, std::size_t number) {
                  const auto v = parse_ids(std::string(line), fmt::format("{} line {}", o->jsonl, number));
                  out += nlohmann::json(tok.decode(v, o->skip_special)).dump(-1, ' ', false);
                  out += '\n';
                });
                std::fwrite(out.data(), 1, out.size(), stdout);
                return 0;
              }
              const std::string text = tok.decode(parse_ids(o->ids, "--ids"), o->skip_special);
              std::fwrite(text.data(), 1, text.size(), stdout);
              return 0;
            } catch (const CheckpointError& e) {
              return report("detokenize", e);
            } catch (const UsageError& e) {
              return report("detokenize", e);
            }
          }};
}

}  // namespace tf::cli
