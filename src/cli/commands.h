#pragma once
#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace tf::cli {

// Each command adds its subcommand and options to the app and returns how to run it. Running returns the
// process exit code: 0 success, 1 a bad input (one clear line on stderr), 2 not implemented yet.
struct Command {
  CLI::App* sub = nullptr;
  std::function<int()> run;
};

Command add_serve_command(CLI::App& app);
Command add_info_command(CLI::App& app);
Command add_models_command(CLI::App& app);
Command add_pull_command(CLI::App& app);
Command add_update_command(CLI::App& app);
Command add_tokenize_command(CLI::App& app);
Command add_detokenize_command(CLI::App& app);
Command add_template_command(CLI::App& app);

// MODEL as given, or the embedded default when empty; throws CheckpointError saying how to fetch the
// default when it is missing.
std::string resolve_model_path(const std::string& model);

}  // namespace tf::cli
