#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "hub/hub_settings.h"

namespace tf::hub {

struct RepoFile {
  std::string path;        // as listed, e.g. "model-00001-of-00002.safetensors"
  std::uint64_t size = 0;  // 0 when the listing did not say
  std::string lfs_sha256;  // for LFS files, when the listing said
};

struct RevisionInfo {
  std::string commit;  // the 40-hex commit the revision names now
  std::vector<RepoFile> files;
};

// What the hub says about one file at a commit (a HEAD on /{repo}/resolve/{commit}/{path}).
struct FileMetadata {
  std::string commit;      // X-Repo-Commit
  std::string etag;        // X-Linked-Etag, else ETag, unquoted: the blob's name in the cache
  std::uint64_t size = 0;  // X-Linked-Size, else Content-Length
  bool size_known = false;
  std::string download_url;  // where the bytes are (the blob host's URL after a redirect)
  bool send_auth = true;     // false when the bytes live on another host: the token stays with the hub
};

// The hub's HTTP API, as huggingface_hub speaks it. Errors are HubErrors that say what to do (401: set
// HF_TOKEN; 404: which of repo, revision or file is missing).
class HubApi {
 public:
  explicit HubApi(HubSettings settings) : settings_(std::move(settings)) {}
  const HubSettings& settings() const { return settings_; }

  // GET /api/models/{repo}/revision/{revision}?blobs=true: the commit and the file list with sizes.
  RevisionInfo revision_info(const std::string& repo, const std::string& revision) const;
  FileMetadata file_metadata(const std::string& repo, const std::string& commit, const std::string& path) const;
  // "Authorization: Bearer ..." when a token is set.
  std::vector<std::string> auth_headers() const;

 private:
  HubSettings settings_;
};

// ETag header value -> the bare tag (W/ and quotes removed), as huggingface_hub normalizes it.
std::string normalize_etag(const std::string& etag);

}  // namespace tf::hub
