#pragma once
#include <filesystem>
#include <string>

namespace tf::hub {

// How a blob's etag names its contents: LFS files by their sha256 (64 hex digits), other files by git's
// blob id, sha1("blob <size>\0" + contents) (40 hex digits). Anything else cannot be checked.
enum class EtagKind { sha256, git_blob_sha1, unknown };
EtagKind etag_kind(const std::string& etag);

// The file's digest of that kind, in lower-case hex (empty for unknown). Reads the file once.
std::string file_digest(const std::filesystem::path& file, EtagKind kind);

}  // namespace tf::hub
