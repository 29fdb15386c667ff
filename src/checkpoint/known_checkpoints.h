#pragma once
#include <span>
#include <string_view>

namespace tf {

// The table behind `tensorfold models`: the families we are building and checkpoints known to fit them.
// What serves today is not kept here: `tensorfold models` asks the families' registry (families/servable.h).
struct KnownCheckpoint {
  std::string_view family;      // our family folder under src/families/
  std::string_view model_type;  // config.json model_type or GGUF general.architecture
  std::string_view checkpoint;  // a checkpoint of that family
  std::string_view format;
};
std::span<const KnownCheckpoint> known_checkpoints();

}  // namespace tf
