// Commands that exist so the CLI's shape is settled, and say plainly that they do nothing yet.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"

namespace tf::cli {
namespace {
int not_implemented(const char* what, const char* why) {
  fmt::print(stderr, "tensorfold {}: not implemented yet ({}).\n", what, why);
  return 2;
}
}  // namespace

Command add_pull_command(CLI::App& app) {
  auto* sub = app.add_subcommand("pull", "Download checkpoints into the Hugging Face cache (not implemented yet)");
  sub->allow_extras();
  return {sub, [] { return not_implemented("pull", "no model hub download yet"); }};
}

Command add_update_command(CLI::App& app) {
  auto* sub = app.add_subcommand("update", "Update tensorfold (not implemented yet)");
  sub->allow_extras();
  return {sub, [] { return not_implemented("update", "no release channel yet"); }};
}

}  // namespace tf::cli
