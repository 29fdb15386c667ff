#pragma once
#include <string>

#include "checkpoint/checkpoint_error.h"

namespace tf::hub {

// Everything that stops a pull (the hub said no, the network failed, the disk is full, a checksum is wrong)
// is one HubError whose what() is one line meant for the user. It is a CheckpointError, so every command
// that takes a MODEL (serve, info, tokenize, template) reports it as it reports a bad file: one line, exit 1.
class HubError : public CheckpointError {
 public:
  explicit HubError(const std::string& message)
      : CheckpointError("hub", message), line_(escape_control_chars(message)) {}
  const char* what() const noexcept override { return line_.c_str(); }

 private:
  std::string line_;
};

}  // namespace tf::hub
