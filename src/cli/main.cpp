// Entry point of the `tensorfold` command. Each subcommand lives in its own src/cli/*_command.cpp and is
// registered in the list below.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <vector>

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
  CLI::App app{"TensorFold: a local LLM inference server with exact decoding and an OpenAI-compatible HTTP API."};
  app.set_version_flag("--version", version_line());
  app.require_subcommand(1);

  std::vector<tf::cli::Command> commands = {
      tf::cli::add_serve_command(app),
      tf::cli::add_models_command(app),
      tf::cli::add_info_command(app),
      tf::cli::add_pull_command(app),
      tf::cli::add_update_command(app),
      tf::cli::add_tokenize_command(app),
      tf::cli::add_detokenize_command(app),
      tf::cli::add_template_command(app),
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (const auto& c : commands)
    if (c.sub->parsed()) return c.run();
  return 2;
}
