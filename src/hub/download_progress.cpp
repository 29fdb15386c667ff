#include "hub/download_progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace tf::hub {

std::string human_bytes(std::uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
  if (b >= 1024.0) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", bytes);
}

namespace {
std::string clock_text(double seconds) {
  const auto s = static_cast<long>(seconds + 0.5);
  return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
                   : fmt::format("{}:{:02}", s / 60, s % 60);
}
}  // namespace

DownloadProgress::DownloadProgress(std::string name, std::uint64_t total, std::uint64_t already_have)
    : name_(std::move(name)),
      total_(total),
      start_bytes_(already_have),
      done_(already_have),
      started_(std::chrono::steady_clock::now()),
      tty_(isatty(STDERR_FILENO) == 1) {
  if (!tty_) {
    fmt::print(stderr, "fetching {} ({}{})\n", name_, human_bytes(total_),
               already_have > 0 ? fmt::format(", resuming at {}", human_bytes(already_have)) : std::string());
    return;
  }
  painter_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(200), [this] { return finished_; })) draw(false);
  });
}

DownloadProgress::~DownloadProgress() { finish(false); }

void DownloadProgress::finish(bool ok) {
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
    finished_ = true;
  }
  cv_.notify_all();
  if (painter_.joinable()) painter_.join();
  if (tty_) {
    draw(true);
    return;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  const std::uint64_t got = done_.load() - start_bytes_;
  if (ok)
    fmt::print(stderr, "fetched {} ({} in {:.1f} s, {}/s)\n", name_, human_bytes(got), secs,
               human_bytes(static_cast<std::uint64_t>(static_cast<double>(got) / std::max(secs, 1e-3))));
}

void DownloadProgress::draw(bool final_line) {
  const std::uint64_t done = done_.load(std::memory_order_relaxed);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  const double speed = secs > 0.05 ? static_cast<double>(done - start_bytes_) / secs : 0.0;
  const double frac = total_ > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total_)) : 0.0;
  constexpr int kWidth = 24;
  const int filled = static_cast<int>(frac * kWidth);
  std::string bar(static_cast<std::size_t>(filled), '=');
  if (filled < kWidth) bar += '>' + std::string(static_cast<std::size_t>(kWidth - filled - 1), ' ');
  const std::string eta = speed > 0 && total_ > done ? clock_text(static_cast<double>(total_ - done) / speed)
                                                     : std::string(final_line ? "done" : "--:--");
  const std::string name = name_.size() > 32 ? "..." + name_.substr(name_.size() - 29) : name_;
  fmt::print(stderr, "\r{:<32} [{}] {:>3.0f}% {:>10} / {:<10} {:>10}/s ETA {}\x1b[K{}", name, bar, frac * 100,
             human_bytes(done), human_bytes(total_), human_bytes(static_cast<std::uint64_t>(speed)), eta,
             final_line ? "\n" : "");
  std::fflush(stderr);
}

}  // namespace tf::hub
