#pragma once
#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace tf::cli {

// Each command adds its subcommand and options to the app and returns how to run it. Running returns the
// process exit code: 0 success, 1 a bad input or a failed download (one clear line on stderr).
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

// The CLI name of MODEL for --name's default: the repo id as typed for a hub checkpoint, else empty.
std::string hub_model_name(const std::string& model);

// MODEL as given when it is a path; a hub repo id (Org/Name[@REV][:QUANT]) as its cached checkpoint, pulled
// first when the cache lacks it; the embedded default when empty. Throws CheckpointError (hub::HubError is
// one) saying what went wrong.
std::string resolve_model_path(const std::string& model);

}  // namespace tf::cli
