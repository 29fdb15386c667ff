#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace tf::hub {

// One blob to bring into the cache. The bytes go to `<blob>.incomplete` (always a prefix of the file, so
// a later run resumes with an HTTP Range where this one stopped) and, for a large file fetched over several
// connections, to `<blob>.incomplete.<offset>` pieces appended to it in order. The finished file is checked
// against its etag (sha256 for LFS files, git's blob sha1 otherwise) before it is renamed to `<blob>`: a
// file that fails the check is deleted, never kept.
struct BlobSource {
  std::string url;
  std::vector<std::string> headers;  // the token only when the URL is on the hub itself
  std::string etag;
  std::uint64_t size = 0;
  bool size_known = false;
  std::string display_name;  // the file's path in the repo
};

struct DownloadOptions {
  int connections = 8;                   // most connections for one large file
  std::uint64_t piece_bytes = 32 << 20;  // a file of at least two pieces is fetched piece by piece in parallel
  int attempts = 3;                      // a dropped connection is resumed this many times before giving up
};

// Fetches the blob unless it is already there. Throws HubError (a drop, the disk full, a wrong checksum).
void download_blob(const std::filesystem::path& blob, const BlobSource& source, const DownloadOptions& options);

// Makes sure `<blob>.incomplete` holds at least the first `bytes` bytes (or the whole file if smaller), for
// reading a header before deciding to fetch the rest; the rest then resumes from there.
void fetch_blob_prefix(const std::filesystem::path& blob, const BlobSource& source, std::uint64_t bytes,
                       const DownloadOptions& options);

std::filesystem::path incomplete_path(const std::filesystem::path& blob);

}  // namespace tf::hub
