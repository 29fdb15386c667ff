#include "hub/blob_download.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "hub/download_progress.h"
#include "hub/file_digest.h"
#include "hub/http_client.h"
#include "hub/hub_error.h"

namespace tf::hub {
namespace fs = std::filesystem;

fs::path incomplete_path(const fs::path& blob) { return fs::path(blob.string() + ".incomplete"); }

namespace {

// The blob host answered a piece's Range request with the whole file: pieces cannot work there.
struct NoRangeSupport : std::runtime_error {
  NoRangeSupport() : std::runtime_error("no Range support") {}
};

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::uint64_t size_or_zero(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : n;
}

std::string write_failure(const fs::path& file, int err, std::uint64_t kept, std::uint64_t size) {
  const std::string what = err == ENOSPC || err == EDQUOT ? "disk full" : std::strerror(err);
  return fmt::format("{} writing {} ({} of {} kept; run the same command again to resume)", what, file.string(),
                     human_bytes(kept), human_bytes(size));
}

// Appends bytes [base + have, end) of the source to `file`, where `have` is the file's current size, with
// up to `attempts` tries; each try resumes where the last one stopped. `end` 0: to the end of the file.
// Throws HubError, or NoRangeSupport when `piece` and the server ignores the Range.
void fetch_range(const BlobSource& src, const fs::path& file, std::uint64_t base, std::uint64_t end, bool piece,
                 const DownloadOptions& opt, DownloadProgress& progress) {
  for (int attempt = 1;; ++attempt) {
    const std::uint64_t have = size_or_zero(file);
    const std::uint64_t from = base + have;
    if (end != 0 && from >= end) return;
    Fd fd(open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    if (fd.get() < 0) throw HubError(fmt::format("cannot write {}: {}", file.string(), std::strerror(errno)));

    HttpRequest req;
    req.url = src.url;
    req.headers = src.headers;
    req.headers.push_back("Accept-Encoding: identity");
    if (from > 0 || end != 0)
      req.headers.push_back(end != 0 ? fmt::format("Range: bytes={}-{}", from, end - 1)
                                     : fmt::format("Range: bytes={}-", from));
    int write_errno = 0;
    bool range_ignored = false;
    const bool ranged = from > 0 || end != 0;
    req.on_body_start = [&](long status) {
      if (!ranged || status != 200) return true;
      // The server ignored the Range and sends the whole file. A piece cannot use that; a single stream
      // starts the file over rather than appending byte 0 after the prefix.
      range_ignored = true;
      if (piece) return false;
      return ftruncate(fd.get(), 0) == 0;
    };
    req.body_sink = [&](const char* data, std::size_t n) {
      std::size_t off = 0;
      while (off < n) {
        const auto w = write(fd.get(), data + off, n - off);
        if (w < 0) {
          if (errno == EINTR) continue;
          write_errno = errno;
          return false;
        }
        off += static_cast<std::size_t>(w);
      }
      progress.add(n);
      return true;
    };
    std::optional<std::string> transport_error;
    HttpResponse r;
    try {
      r = http_perform(req);
    } catch (const TransportError& e) {
      if (write_errno != 0) throw HubError(write_failure(file, write_errno, size_or_zero(file), src.size));
      if (range_ignored && piece) throw NoRangeSupport();
      transport_error = e.what();
    }
    if (!transport_error) {
      if (r.status == 416 && end == 0 && src.size_known && from == src.size) return;  // had it all
      if (r.status != 200 && r.status != 206) {
        if (r.status == 401 || r.status == 403)
          throw HubError(fmt::format("{}: the blob host answered {} (gated or private: set HF_TOKEN)", src.display_name,
                                     r.status));
        if (r.status == 404) throw HubError(fmt::format("{}: the blob host answered 404", src.display_name));
        transport_error = fmt::format("the blob host answered {}", r.status);
      } else {
        return;  // complete; the caller checks size and digest
      }
    }
    if (attempt >= opt.attempts) {
      const std::uint64_t kept = size_or_zero(file);
      throw HubError(fmt::format("{}: connection dropped ({}); {} kept, run the same command again to resume",
                                 src.display_name, *transport_error, human_bytes(kept)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300 * attempt));
  }
}

// Holds huggingface_hub's lock for this blob (.locks/<repo folder>/<etag>.lock, flock), so that neither tool
// writes a blob the other is writing.
class BlobLock {
 public:
  explicit BlobLock(const fs::path& blob) {
    const fs::path repo_root = blob.parent_path().parent_path();
    const fs::path lock =
        repo_root.parent_path() / ".locks" / repo_root.filename() / (blob.filename().string() + ".lock");
    std::error_code ec;
    fs::create_directories(lock.parent_path(), ec);
    fd_ = open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ >= 0) flock(fd_, LOCK_EX);
  }
  ~BlobLock() {
    if (fd_ >= 0) {
      flock(fd_, LOCK_UN);
      close(fd_);
    }
  }
  BlobLock(const BlobLock&) = delete;
  BlobLock& operator=(const BlobLock&) = delete;

 private:
  int fd_ = -1;
};

void append_file(const fs::path& to, const fs::path& from, std::uint64_t kept_before, std::uint64_t size) {
  Fd in(open(from.c_str(), O_RDONLY | O_CLOEXEC));
  Fd out(open(to.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (in.get() < 0 || out.get() < 0) throw HubError("cannot join the pieces of " + to.string());
  std::vector<char> buf(1 << 20);
  for (;;) {
    const auto n = read(in.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw HubError("cannot read " + from.string());
    if (n == 0) break;
    if (write(out.get(), buf.data(), static_cast<std::size_t>(n)) != n) {
      const int err = errno;
      // Undo the partial append so the prefix stays exact; the piece file is kept for the next run.
      if (truncate(to.c_str(), static_cast<off_t>(kept_before)) != 0) {
      }
      throw HubError(write_failure(to, err, kept_before, size));
    }
  }
}

// Fetches [prefix, size) as pieces on a grid of `piece_bytes` over several connections, each piece into its
// own file; then appends the finished pieces, in order, to the prefix. A piece left unfinished (and those
// after it) stays on disk for the next run, which picks it up where it stopped.
void fetch_pieces(const BlobSource& src, const fs::path& part, const DownloadOptions& opt, DownloadProgress& progress) {
  const std::uint64_t prefix = size_or_zero(part);
  struct Piece {
    std::uint64_t start, end;
    fs::path file;
  };
  std::vector<Piece> pieces;
  for (std::uint64_t s = prefix; s < src.size;) {
    const std::uint64_t e = std::min(src.size, (s / opt.piece_bytes + 1) * opt.piece_bytes);
    pieces.push_back({s, e, fs::path(part.string() + "." + std::to_string(s))});
    s = e;
  }
  // Piece files from an earlier run on another grid are of no use.
  std::error_code ec;
  const std::string stem = part.filename().string() + ".";
  for (const auto& entry : fs::directory_iterator(part.parent_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(stem, 0) != 0) continue;
    bool ours = false;
    for (const auto& p : pieces) ours = ours || p.file.filename() == entry.path().filename();
    if (!ours) fs::remove(entry.path(), ec);
  }
  for (const auto& p : pieces) {
    const std::uint64_t have = size_or_zero(p.file);
    if (have > p.end - p.start)
      fs::remove(p.file, ec);  // longer than its piece: not ours, start over
    else
      progress.add(have);
  }

  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::atomic<bool> no_range{false};
  std::mutex mu;
  std::optional<std::string> first_error;
  const int workers = std::max(1, std::min<int>(opt.connections, static_cast<int>(pieces.size())));
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&] {
      for (;;) {
        if (failed.load()) return;
        const std::size_t i = next.fetch_add(1);
        if (i >= pieces.size()) return;
        try {
          fetch_range(src, pieces[i].file, pieces[i].start, pieces[i].end, true, opt, progress);
        } catch (const NoRangeSupport&) {
          no_range = true;
          failed = true;
        } catch (const std::exception& e) {
          std::lock_guard lock(mu);
          if (!first_error) first_error = e.what();
          failed = true;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& p : pieces) {
    if (size_or_zero(p.file) != p.end - p.start) break;
    append_file(part, p.file, size_or_zero(part), src.size);
    fs::remove(p.file, ec);
  }
  if (no_range) throw NoRangeSupport();
  if (first_error) throw HubError(*first_error);
}

}  // namespace

void fetch_blob_prefix(const fs::path& blob, const BlobSource& source, std::uint64_t bytes,
                       const DownloadOptions& options) {
  std::error_code ec;
  if (fs::exists(blob, ec)) return;
  fs::create_directories(blob.parent_path(), ec);
  BlobLock lock(blob);
  const fs::path part = incomplete_path(blob);
  const std::uint64_t want = source.size_known ? std::min(bytes, source.size) : bytes;
  if (size_or_zero(part) >= want) return;
  DownloadProgress progress(source.display_name + " (header)", want, size_or_zero(part));
  fetch_range(source, part, 0, want, false, options, progress);
  progress.finish(true);
}

void download_blob(const fs::path& blob, const BlobSource& source, const DownloadOptions& options) {
  std::error_code ec;
  if (fs::exists(blob, ec)) return;
  fs::create_directories(blob.parent_path(), ec);
  if (ec) throw HubError("cannot create " + blob.parent_path().string() + ": " + ec.message());
  BlobLock lock(blob);
  if (fs::exists(blob, ec)) return;  // another process finished it while we waited
  const fs::path part = incomplete_path(blob);
  if (source.size_known && size_or_zero(part) > source.size) fs::remove(part, ec);  // not a prefix of this file

  DownloadProgress progress(source.display_name, source.size, size_or_zero(part));
  const bool use_pieces =
      source.size_known && options.connections > 1 && source.size - size_or_zero(part) >= 2 * options.piece_bytes;
  try {
    if (use_pieces) {
      try {
        fetch_pieces(source, part, options, progress);
      } catch (const NoRangeSupport&) {
        fetch_range(source, part, 0, 0, false, options, progress);  // one connection, from the prefix
      }
    } else {
      fetch_range(source, part, 0, 0, false, options, progress);
    }
  } catch (...) {
    progress.finish(false);
    throw;
  }
  progress.finish(true);

  const std::uint64_t got = size_or_zero(part);
  if (source.size_known && got != source.size) {
    if (got > source.size) fs::remove(part, ec);
    throw HubError(fmt::format("{}: got {} bytes, the hub said {}; run the same command again to resume",
                               source.display_name, got, source.size));
  }
  const EtagKind kind = etag_kind(source.etag);
  if (kind != EtagKind::unknown) {
    const std::string digest = file_digest(part, kind);
    if (digest != source.etag) {
      fs::remove(part, ec);
      throw HubError(fmt::format("{}: {} mismatch (the hub said {}, the download is {}); the file was discarded",
                                 source.display_name, kind == EtagKind::sha256 ? "sha256" : "git blob sha1",
                                 source.etag, digest));
    }
  }
  fs::permissions(part, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read,
                  ec);
  fs::rename(part, blob, ec);
  if (ec) throw HubError("cannot move " + part.string() + " into place: " + ec.message());
}

}  // namespace tf::hub
