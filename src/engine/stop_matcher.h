#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace tf {

// Finds stop strings in streamed text. Text that could still be the start of a stop string is held back,
// so a client never sees part of a stop string; the stop string itself is never emitted.
class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);
  // Adds generated text; returns what is now safe to send. After a stop string completes, returns the text
  // before it and stopped() turns true; later calls return nothing.
  std::string feed(std::string_view text);
  // At the end of generation: whatever was held back (it can no longer become a stop string).
  std::string flush();
  bool stopped() const { return stopped_; }
  // The stop string that ended the text (the earliest in it; of two at one place, the first listed).
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace tf
