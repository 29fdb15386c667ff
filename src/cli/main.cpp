// Entry point of the `tensorfold` command: parses the command line and hands each subcommand to its
// run_* function in src/cli/.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "backends/compiled_backends.h"
#include "cli/commands.h"
#include "tensorfold/version.h"

namespace {

std::string version_line() {
  std::string backends;
  for (const auto& b : tf::compiled_backends())
    backends += fmt::format("{}{} ({})", backends.empty() ? "" : ", ", b.name, b.version);
  return fmt::format("tensorfold {}\nbackends: {}", tf::kVersion, backends.empty() ? "none" : backends);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"TensorFold: a local LLM inference server with exact decoding, OpenAI-compatible HTTP API."};
  app.set_version_flag("--version", version_line());
  app.require_subcommand(1);

  std::string serve_model;
  auto* serve = app.add_subcommand("serve", "Serve MODEL (default: the embedded SmolLM2-135M-Instruct) on "
                                            "http://127.0.0.1:8080/v1");
  serve->add_option("model", serve_model, "GGUF file or checkpoint directory");
  serve->allow_extras();  // serve flags arrive with the HTTP server; refuse nothing before it exists

  std::vector<std::string> pull_repos;
  auto* pull = app.add_subcommand("pull", "Download checkpoints into the Hugging Face cache");
  pull->add_option("repos", pull_repos, "owner/name");

  auto* models = app.add_subcommand("models", "List model families and known checkpoints");

  std::string info_model;
  auto* info = app.add_subcommand("info", "Describe a checkpoint from its metadata (weights are not read)");
  info->add_option("model", info_model, "GGUF file or checkpoint directory (default: the embedded model)");

  auto* update = app.add_subcommand("update", "Update tensorfold");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  if (*serve) return tf::cli::run_serve(serve_model);
  if (*pull) return tf::cli::run_not_implemented("pull", "no model hub download yet");
  if (*models) return tf::cli::run_models();
  if (*info) return tf::cli::run_info(info_model);
  if (*update) return tf::cli::run_not_implemented("update", "no release channel yet");
  return 2;
}
