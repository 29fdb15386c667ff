// `tensorfold pull REPO[@REV][:QUANT]...`: fetches checkpoints from the Hugging Face hub into its cache.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/commands.h"
#include "families/servable.h"
#include "hub/download_progress.h"
#include "hub/hub_error.h"
#include "hub/hub_pull.h"

namespace tf::cli {

namespace {

struct PullFlags {
  std::vector<std::string> repos;
  std::vector<std::string> include, exclude;
  int connections = 8;
  std::uint64_t piece_bytes = 32 << 20;
};

int run_pull(const PullFlags& f) {
  const hub::HubSettings settings = hub::hub_settings_from_env();
  hub::PullOptions opt;
  opt.include = f.include;
  opt.exclude = f.exclude;
  opt.download.connections = f.connections;
  opt.download.piece_bytes = f.piece_bytes;
  for (const auto& text : f.repos) {
    const auto spec = hub::parse_repo_spec(text);
    if (!spec) {
      fmt::print(stderr, "tensorfold pull: '{}' is not a repo id (Org/Name[@REVISION][:QUANT])\n", text);
      return 1;
    }
    try {
      const hub::PullResult r = hub::pull_checkpoint(*spec, opt, settings);
      const auto& c = r.checkpoint;
      if (settings.offline) {
        fmt::print("{} @ {}: in the cache (offline)\n  {}\n", spec->text(), c.commit, c.model_path.string());
        continue;
      }
      fmt::print("{} @ {}: {} files, {} ({} downloaded); {} {}\n  {}\n", spec->text(), c.commit, r.files,
                 hub::human_bytes(r.bytes), hub::human_bytes(r.fetched_bytes),
                 r.architecture.empty() ? std::string("architecture unknown") : "architecture " + r.architecture,
                 family_serves(r.architecture) ? "(served)" : "(not served)", c.model_path.string());
    } catch (const hub::HubError& e) {
      fmt::print(stderr, "tensorfold pull: {}\n", e.what());
      return 1;
    }
  }
  return 0;
}

}  // namespace

Command add_pull_command(CLI::App& app) {
  auto f = std::make_shared<PullFlags>();
  auto* sub = app.add_subcommand(
      "pull",
      "Download checkpoints from the Hugging Face hub into its cache ($HF_HUB_CACHE, $HF_HOME/hub or "
      "~/.cache/huggingface/hub); honours HF_TOKEN, HF_ENDPOINT and HF_HUB_OFFLINE");
  sub->add_option("repo", f->repos, "Org/Name, Org/Name@REVISION, or Org/Name-GGUF:QUANT (picks the GGUF file)")
      ->required();
  sub->add_option("--include", f->include, "Only files matching this glob (repeatable)")->allow_extra_args(false);
  sub->add_option("--exclude", f->exclude, "Not files matching this glob (repeatable)")->allow_extra_args(false);
  sub->add_option("--connections", f->connections, "Connections for one large file")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  sub->add_option("--piece-size", f->piece_bytes,
                  "Bytes per piece when a file is fetched over several connections (a file of two pieces or more is)")
      ->check(CLI::Range(std::uint64_t{1} << 16, std::uint64_t{1} << 34))
      ->capture_default_str();
  return {sub, [f] { return run_pull(*f); }};
}

}  // namespace tf::cli
