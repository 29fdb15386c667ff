#include "hub/hub_api.h"

#include <cctype>
#include <nlohmann/json.hpp>

#include "hub/http_client.h"
#include "hub/hub_cache.h"
#include "hub/hub_error.h"

namespace tf::hub {
namespace {

bool is_redirect(long status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

// A blob name taken from the server becomes a file name: only plain characters.
bool safe_etag(const std::string& etag) {
  if (etag.empty() || etag.size() > 128) return false;
  for (const char ch : etag) {
    const auto c = static_cast<unsigned char>(ch);
    if (!std::isalnum(c) && c != '-' && c != '_') return false;
  }
  return true;
}

std::string escape_path(const std::string& path) {
  std::string out, part;
  for (std::size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      out += (out.empty() ? "" : "/") + url_escape(part);
      part.clear();
    } else {
      part += path[i];
    }
  }
  return out;
}

// The hub's answer to a failed request, as one line that says what to do.
[[noreturn]] void throw_for_status(const HttpResponse& r, const HubSettings& s, const std::string& repo,
                                   const std::string& what) {
  const std::string code = r.header("x-error-code");
  if (r.status == 401 || code == "GatedRepo") {
    if (s.token.empty())
      throw HubError(repo + ": the hub answered " + std::to_string(r.status) +
                     " (gated or private repo): set HF_TOKEN to a token that has access");
    throw HubError(repo + ": the hub answered " + std::to_string(r.status) +
                   " (gated or private repo): the token in HF_TOKEN has no access; request it on the repo's page");
  }
  if (r.status == 403)
    throw HubError(repo +
                   ": the hub answered 403: access to this repo must be requested on its page (HF_TOKEN "
                   "must belong to an account that has it)");
  if (r.status == 404) {
    if (code == "RevisionNotFound") throw HubError(repo + ": revision not found (" + what + ")");
    if (code == "EntryNotFound") throw HubError(repo + ": file not found in the repo (" + what + ")");
    throw HubError(repo + ": repo not found on " + s.endpoint + " (404)");
  }
  throw HubError(repo + ": the hub answered " + std::to_string(r.status) + " for " + what);
}

HttpResponse perform_or_throw(const HttpRequest& req, const std::string& repo) {
  try {
    return http_perform(req);
  } catch (const TransportError& e) {
    throw HubError(repo + ": cannot reach " + url_origin(req.url) + ": " + e.what());
  }
}

}  // namespace

std::string normalize_etag(const std::string& etag) {
  std::string e = etag;
  if (e.rfind("W/", 0) == 0) e = e.substr(2);
  while (!e.empty() && e.front() == '"') e.erase(e.begin());
  while (!e.empty() && e.back() == '"') e.pop_back();
  return e;
}

std::vector<std::string> HubApi::auth_headers() const {
  if (settings_.token.empty()) return {};
  return {"Authorization: Bearer " + settings_.token};
}

RevisionInfo HubApi::revision_info(const std::string& repo, const std::string& revision) const {
  HttpRequest req;
  req.url = settings_.endpoint + "/api/models/" + repo + "/revision/" + url_escape(revision) + "?blobs=true";
  req.headers = auth_headers();
  const HttpResponse r = perform_or_throw(req, repo);
  if (r.status != 200) throw_for_status(r, settings_, repo, "revision " + revision);
  const auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (!j.is_object() || !j.contains("sha") || !j["sha"].is_string())
    throw HubError(repo + ": the hub's answer for revision " + revision + " is not a model description");
  RevisionInfo info;
  info.commit = j["sha"].get<std::string>();
  if (!is_commit_hash(info.commit)) throw HubError(repo + ": the hub named a malformed commit '" + info.commit + "'");
  if (j.contains("siblings") && j["siblings"].is_array()) {
    for (const auto& s : j["siblings"]) {
      if (!s.is_object() || !s.contains("rfilename") || !s["rfilename"].is_string()) continue;
      RepoFile f;
      f.path = s["rfilename"].get<std::string>();
      if (!is_safe_repo_path(f.path)) throw HubError(repo + ": the hub listed an unsafe file name '" + f.path + "'");
      if (s.contains("size") && s["size"].is_number_unsigned()) f.size = s["size"].get<std::uint64_t>();
      if (s.contains("lfs") && s["lfs"].is_object()) {
        const auto& lfs = s["lfs"];
        if (lfs.contains("sha256") && lfs["sha256"].is_string()) f.lfs_sha256 = lfs["sha256"].get<std::string>();
        if (lfs.contains("size") && lfs["size"].is_number_unsigned()) f.size = lfs["size"].get<std::uint64_t>();
      }
      info.files.push_back(std::move(f));
    }
  }
  return info;
}

FileMetadata HubApi::file_metadata(const std::string& repo, const std::string& commit, const std::string& path) const {
  std::string url = settings_.endpoint + "/" + repo + "/resolve/" + commit + "/" + escape_path(path);
  const std::string hub_origin = url_origin(url);
  for (int hop = 0; hop < 5; ++hop) {
    HttpRequest req;
    req.method = "HEAD";
    req.url = url;
    req.headers = auth_headers();
    req.headers.push_back("Accept-Encoding: identity");  // the size must be the file's, not a compressed body's
    const HttpResponse r = perform_or_throw(req, repo);
    const bool redirect = is_redirect(r.status);
    if (!redirect && r.status != 200) throw_for_status(r, settings_, repo, path);
    const std::string location = redirect ? resolve_location(url, r.header("location")) : std::string();
    if (redirect && url_origin(location) == hub_origin && r.header("x-linked-etag").empty()) {
      url = location;  // a renamed repo: the hub points at the new name; ask again there
      continue;
    }
    FileMetadata m;
    m.commit = r.header("x-repo-commit");
    m.etag = normalize_etag(!r.header("x-linked-etag").empty() ? r.header("x-linked-etag") : r.header("etag"));
    std::string size = r.header("x-linked-size");
    if (size.empty() && !redirect) size = r.header("content-length");
    if (!size.empty()) {
      try {
        m.size = std::stoull(size);
        m.size_known = true;
      } catch (const std::exception&) {
        throw HubError(repo + ": the hub gave " + path + " a malformed size '" + size + "'");
      }
    }
    if (m.commit.empty())
      throw HubError(repo + ": " + url_origin(url) + " sent no X-Repo-Commit for " + path +
                     ": is HF_ENDPOINT a Hugging Face hub?");
    if (!safe_etag(m.etag)) throw HubError(repo + ": the hub gave " + path + " no usable etag");
    m.download_url = redirect ? location : url;
    m.send_auth = url_origin(m.download_url) == hub_origin;
    return m;
  }
  throw HubError(repo + ": too many redirects for " + path);
}

}  // namespace tf::hub
