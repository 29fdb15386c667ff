#pragma once
#include <string>
#include <vector>

namespace tf {

// Whether a family serves checkpoints of this architecture (GGUF general.architecture or config.json
// model_type). `pull`, `serve REPO` and `models` ask only this, before any weight is downloaded, so a
// family added here (or, later, to the registry behind it) is picked up by all of them.
bool family_serves(const std::string& architecture);

// The architectures served today, for messages.
std::vector<std::string> served_architectures();

}  // namespace tf
