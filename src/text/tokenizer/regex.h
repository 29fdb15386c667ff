#pragma once
// Regular expressions for pre-tokenizer patterns, through PCRE2 (UTF + Unicode properties, JIT when available).
// Patterns are read as the Oniguruma engine of the `tokenizers` library reads them: \s and \S are rewritten to
// Unicode White_Space (PCRE2's \s would also take U+180E).
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tf::tokenizer_detail {

class Regex {
 public:
  // Throws std::invalid_argument with PCRE2's message when the pattern does not compile.
  explicit Regex(std::string_view pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Every match in `subject` (valid UTF-8), left to right, as [start, end) byte offsets. After an empty match
  // the search resumes one character later; an empty match right after the previous match is dropped (the
  // iteration rule of the Rust regex crates). Throws std::runtime_error if matching fails (resource limits).
  void find_all(std::string_view subject, std::vector<std::pair<std::size_t, std::size_t>>& out) const;

  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8
  bool jit_ = false;
};

// The rewrite applied before compiling (exposed for tests).
std::string translate_pattern(std::string_view pattern);

}  // namespace tf::tokenizer_detail
