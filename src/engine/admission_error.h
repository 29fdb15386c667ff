#pragma once
// Why the engine refused a request at submit (ARCHITECTURE §5). The server turns NeverFits into a 400
// (context_length_exceeded: the request would not fit the memory budget even alone) and QueueFull into a
// 503 with Retry-After.
#include <cstdint>
#include <stdexcept>
#include <string>

namespace tf {

class AdmissionError : public std::runtime_error {
 public:
  enum class Kind { NeverFits, QueueFull };

  AdmissionError(Kind kind, const std::string& message, std::int64_t fits_tokens = 0, int retry_after_s = 0)
      : std::runtime_error(message), kind_(kind), fits_tokens_(fits_tokens), retry_after_s_(retry_after_s) {}

  Kind kind() const { return kind_; }
  // NeverFits: the most tokens (prompt plus completion) one request may hold in this budget.
  std::int64_t fits_tokens() const { return fits_tokens_; }
  // QueueFull: the seconds after which a retry is likely to be queued.
  int retry_after_s() const { return retry_after_s_; }

 private:
  Kind kind_;
  std::int64_t fits_tokens_;
  int retry_after_s_;
};

}  // namespace tf
