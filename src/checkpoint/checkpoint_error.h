#pragma once
#include <stdexcept>
#include <string>

namespace tf {

// Every reader reports a bad file through this one type, so the CLI can print one line that names the
// file and the problem and exit 1, and the server can turn it into a 4xx. what() is "<file>: <problem>".
class CheckpointError : public std::runtime_error {
 public:
  CheckpointError(std::string file, std::string problem)
      : std::runtime_error(file + ": " + problem), file_(std::move(file)), problem_(std::move(problem)) {}
  const std::string& file() const { return file_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string file_;
  std::string problem_;
};

}  // namespace tf
