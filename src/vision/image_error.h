#pragma once
#include <stdexcept>
#include <string>

#include "checkpoint/checkpoint_error.h"

namespace tf::vision {

// Every refusal of an image (corrupt bytes, an unsupported kind, a limit) is this one type: the server turns
// it into a 400 whose message names the request field; what() is one line (control characters escaped).
class ImageError : public std::runtime_error {
 public:
  explicit ImageError(const std::string& problem) : std::runtime_error(escape_control_chars(problem)) {}
};

}  // namespace tf::vision
