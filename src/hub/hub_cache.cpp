#include "hub/hub_cache.h"

#include <unistd.h>

#include <cctype>
#include <fstream>
#include <sstream>
#include <system_error>

#include "hub/hub_error.h"

namespace tf::hub {
namespace fs = std::filesystem;

std::string repo_folder_name(const std::string& repo) {
  std::string name = "models--";
  for (const char c : repo) name += c == '/' ? std::string("--") : std::string(1, c);
  return name;
}

bool is_commit_hash(const std::string& s) {
  if (s.size() != 40) return false;
  for (const char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c)) || std::isupper(static_cast<unsigned char>(c))) return false;
  return true;
}

bool is_safe_repo_path(const std::string& path) {
  if (path.empty() || path.size() > 1024 || path.front() == '/' || path.back() == '/') return false;
  std::stringstream parts(path);
  std::string part;
  while (std::getline(parts, part, '/')) {
    if (part.empty() || part == "." || part == "..") return false;
    for (const char c : part)
      if (static_cast<unsigned char>(c) < 0x20 || c == '\\') return false;
  }
  return true;
}

RepoCache::RepoCache(const std::string& cache_dir, const std::string& repo)
    : root_(fs::path(cache_dir) / repo_folder_name(repo)) {}

fs::path RepoCache::blob(const std::string& etag) const { return root_ / "blobs" / etag; }

fs::path RepoCache::snapshot(const std::string& commit) const { return root_ / "snapshots" / commit; }

fs::path RepoCache::snapshot_file(const std::string& commit, const std::string& repo_path) const {
  return snapshot(commit) / fs::path(repo_path);
}

std::optional<std::string> RepoCache::cached_commit(const std::string& revision) const {
  if (is_commit_hash(revision)) return revision;
  std::ifstream in(root_ / "refs" / revision);
  std::string commit;
  if (!in || !std::getline(in, commit)) return std::nullopt;
  if (!is_commit_hash(commit)) return std::nullopt;
  return commit;
}

void RepoCache::write_ref(const std::string& revision, const std::string& commit) const {
  if (revision == commit) return;
  if (cached_commit(revision) == commit) return;
  const fs::path ref = root_ / "refs" / revision;
  std::error_code ec;
  fs::create_directories(ref.parent_path(), ec);
  const fs::path tmp = ref.string() + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << commit;  // no newline: huggingface_hub reads the whole file as the hash
    if (!out.flush()) throw HubError("cannot write " + tmp.string());
  }
  fs::rename(tmp, ref, ec);
  if (ec) throw HubError("cannot write " + ref.string() + ": " + ec.message());
}

void RepoCache::link_snapshot_file(const std::string& commit, const std::string& repo_path,
                                   const std::string& etag) const {
  const fs::path link = snapshot_file(commit, repo_path);
  std::error_code ec;
  fs::create_directories(link.parent_path(), ec);
  if (ec) throw HubError("cannot create " + link.parent_path().string() + ": " + ec.message());
  // Relative, as huggingface_hub makes them: the cache still works when moved or mounted elsewhere.
  const fs::path target = fs::relative(blob(etag), link.parent_path(), ec);
  if (ec) throw HubError("cannot link " + link.string() + ": " + ec.message());
  const fs::path tmp = link.string() + ".tmp" + std::to_string(getpid());
  fs::remove(tmp, ec);
  fs::create_symlink(target, tmp, ec);
  if (!ec) fs::rename(tmp, link, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw HubError("cannot link " + link.string() + " to its blob: " + ec.message());
  }
}

}  // namespace tf::hub
