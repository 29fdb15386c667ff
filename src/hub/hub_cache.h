#pragma once
#include <filesystem>
#include <optional>
#include <string>

namespace tf::hub {

// One repo's folder in the Hugging Face cache, laid out as huggingface_hub lays it out, so each tool reuses
// what the other fetched:
//   <cache>/models--Org--Name/blobs/<etag>                file contents, named by the hub's etag
//                                                         (sha256 for LFS files, git blob sha1 otherwise)
//   <cache>/models--Org--Name/blobs/<etag>.incomplete     a download in progress (a prefix of the file)
//   <cache>/models--Org--Name/snapshots/<commit>/<path>   relative symlink to ../../blobs/<etag>
//   <cache>/models--Org--Name/refs/<revision>             the commit the revision named when last fetched
class RepoCache {
 public:
  RepoCache(const std::string& cache_dir, const std::string& repo);

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path blob(const std::string& etag) const;
  std::filesystem::path snapshot(const std::string& commit) const;
  std::filesystem::path snapshot_file(const std::string& commit, const std::string& repo_path) const;

  // The commit a revision resolves to from the cache alone: a full commit hash is itself, a branch or tag
  // is what refs/<revision> recorded.
  std::optional<std::string> cached_commit(const std::string& revision) const;
  // Records refs/<revision> = commit (atomically: a reader never sees half a hash); nothing for a hash.
  void write_ref(const std::string& revision, const std::string& commit) const;
  // snapshots/<commit>/<path> -> relative symlink to the blob (replacing what was there).
  void link_snapshot_file(const std::string& commit, const std::string& repo_path, const std::string& etag) const;

 private:
  std::filesystem::path root_;
};

// "models--Org--Name", huggingface_hub's folder name for a model repo.
std::string repo_folder_name(const std::string& repo);
// A 40-hex-digit commit hash.
bool is_commit_hash(const std::string& s);
// A path inside a repo as the hub lists it: relative, '/'-separated, no "." or ".." parts. Paths from the
// server are untrusted: anything else is refused rather than written outside the snapshot.
bool is_safe_repo_path(const std::string& path);

}  // namespace tf::hub
