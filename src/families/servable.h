#pragma once
#include <string>
#include <vector>

namespace tf {

// Which family serves which architecture (GGUF general.architecture or config.json model_type), and what
// serves today, from the one list in registry.cpp (which load_model() dispatches on). `pull`, `serve REPO`,
// `models` and `info` ask it before any weight is read or downloaded.

// Our folder under src/families/ that serves `architecture`, or nullptr.
const char* serving_family(const std::string& architecture);

// Whether some family serves checkpoints of this architecture.
bool family_serves(const std::string& architecture);

// What serves today ("serves on MLX and CUDA", ...), or "not supported yet" (tensorfold models).
std::string serving_status(const std::string& architecture);

// "FAMILY: what serves today", or "not served yet" (tensorfold info).
std::string serving_summary(const std::string& architecture);

// The architectures served today, for messages.
std::vector<std::string> served_architectures();

}  // namespace tf
