#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <memory>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/model_summary.h"
#include "cli/commands.h"

namespace tf::cli {

Command add_serve_command(CLI::App& app) {
  auto model = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("serve", "Serve MODEL (default: the embedded SmolLM2-135M-Instruct) on "
                                          "http://127.0.0.1:8080/v1 (not implemented yet)");
  sub->add_option("model", *model, "GGUF file or checkpoint directory");
  return {sub, [model] {
            try {
              const ModelSummary s = summarize_model(resolve_model_path(*model));
              fmt::print(stderr,
                         "tensorfold serve: {} ({}, {} layers, {}) is readable, but serving is not implemented "
                         "yet (the vertical-slice issue #4 brings the engine and the HTTP API).\n",
                         s.path, s.architecture, s.layers, s.quantization);
              return 2;
            } catch (const CheckpointError& e) {
              fmt::print(stderr, "tensorfold serve: {}\n", e.what());
              return 1;
            }
          }};
}

}  // namespace tf::cli
