#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace tf::hub {

// general.architecture from the first bytes of a GGUF file (the key comes early in the metadata), so that a
// GGUF no family reads is refused after a small Range request instead of the whole download. nullopt when
// the key is not within `bytes`; throws CheckpointError when the bytes are not GGUF.
std::optional<std::string> gguf_architecture_from_prefix(std::span<const std::uint8_t> bytes, const std::string& name);

}  // namespace tf::hub
