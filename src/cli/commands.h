#pragma once
#include <string>

namespace tf::cli {

// Each command returns the process exit code: 0 success, 1 a bad input (one clear line on stderr),
// 2 a command or feature that is not implemented yet.
int run_info(const std::string& model);  // empty: the embedded default model
int run_models();
int run_serve(const std::string& model);  // checks the model, then says serving is not implemented
int run_not_implemented(const std::string& what, const std::string& issue);

// MODEL as given, or the embedded default when empty; says how to fetch the default when it is missing.
std::string resolve_model_path(const std::string& model);

}  // namespace tf::cli
