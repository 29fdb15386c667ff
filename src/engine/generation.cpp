#include "engine/generation.h"

#include <utility>

namespace tf {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Error: return "error";
  }
  return "error";
}

bool GenerationStream::next(std::string& text) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !pieces_.empty() || closed_; });
  if (!pieces_.empty()) {
    text = std::move(pieces_.front());
    pieces_.pop_front();
    return true;
  }
  return false;
}

void GenerationStream::cancel() {
  std::lock_guard lock(mu_);
  cancel_ = true;
}

bool GenerationStream::cancelled() const {
  std::lock_guard lock(mu_);
  return cancel_;
}

std::vector<TokenLogprob> GenerationStream::take_logprobs() {
  std::lock_guard lock(mu_);
  return std::exchange(logprobs_, {});
}

void GenerationStream::push_logprob(TokenLogprob record) {
  std::lock_guard lock(mu_);
  logprobs_.push_back(std::move(record));
}

std::vector<TokenLogprob> GenerationStream::prompt_logprobs() const {
  std::lock_guard lock(mu_);
  return prompt_logprobs_;
}

void GenerationStream::set_prompt_logprobs(std::vector<TokenLogprob> records) {
  std::lock_guard lock(mu_);
  prompt_logprobs_ = std::move(records);
}

void GenerationStream::push(std::string text) {
  if (text.empty()) return;
  {
    std::lock_guard lock(mu_);
    pieces_.push_back(std::move(text));
  }
  cv_.notify_all();
}

void GenerationStream::close(GenerationResult result) {
  {
    std::lock_guard lock(mu_);
    result_ = std::move(result);
    closed_ = true;
  }
  cv_.notify_all();
}

}  // namespace tf
