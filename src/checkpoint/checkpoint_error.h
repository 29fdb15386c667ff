#pragma once
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tf {

// Messages quote names, keys and paths taken from untrusted files; control characters in them (a
// newline in a tensor name, say) are written as \xNN so that a message always stays one line.
inline std::string escape_control_chars(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

// Every reader reports a bad file through this one type, so the CLI can print one line that names the
// file and the problem and exit 1, and the server can turn it into a 4xx. what() is "<file>: <problem>",
// with control characters escaped in both.
class CheckpointError : public std::runtime_error {
 public:
  CheckpointError(std::string file, std::string problem)
      : std::runtime_error(escape_control_chars(file) + ": " + escape_control_chars(problem)),
        file_(std::move(file)),
        problem_(escape_control_chars(problem)) {}
  const std::string& file() const { return file_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string file_;
  std::string problem_;
};

}  // namespace tf
