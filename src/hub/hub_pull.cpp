#include "hub/hub_pull.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint_error.h"
#include "families/servable.h"
#include "hub/download_progress.h"
#include "hub/file_selection.h"
#include "hub/gguf_architecture.h"
#include "hub/hub_api.h"
#include "hub/hub_cache.h"
#include "hub/hub_error.h"

namespace tf::hub {
namespace fs = std::filesystem;
namespace {

std::string served_list() {
  std::string s;
  for (const auto& a : served_architectures()) s += (s.empty() ? "" : ", ") + a;
  return s;
}

BlobSource source_for(const HubApi& api, const FileMetadata& m, const RepoFile& f) {
  BlobSource src;
  src.url = m.download_url;
  if (m.send_auth) src.headers = api.auth_headers();
  src.etag = m.etag;
  src.size = m.size_known ? m.size : f.size;
  src.size_known = m.size_known || f.size > 0;
  src.display_name = f.path;
  return src;
}

std::string read_prefix(const fs::path& file, std::uint64_t n) {
  std::ifstream in(file, std::ios::binary);
  std::string bytes(static_cast<std::size_t>(n), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(n));
  bytes.resize(static_cast<std::size_t>(in.gcount()));
  return bytes;
}

// general.architecture of the GGUF, from the blob or from its first bytes fetched into the .incomplete file
// (which the full download then continues).
std::string gguf_architecture(const fs::path& blob, const BlobSource& src, const DownloadOptions& opt) {
  for (const std::uint64_t bytes : {std::uint64_t{256} << 10, std::uint64_t{16} << 20}) {
    fs::path file = blob;
    std::error_code ec;
    if (!fs::exists(blob, ec)) {
      fetch_blob_prefix(blob, src, bytes, opt);
      file = incomplete_path(blob);
    }
    const std::string prefix = read_prefix(file, bytes);
    const auto arch = gguf_architecture_from_prefix(
        {reinterpret_cast<const std::uint8_t*>(prefix.data()), prefix.size()}, src.display_name);
    if (arch) return *arch;
    if (src.size_known && prefix.size() >= src.size) break;
  }
  throw HubError(src.display_name + ": general.architecture is not within the GGUF file's first 16 MiB");
}

}  // namespace

PullResult pull_checkpoint(const RepoSpec& spec, const PullOptions& options, const HubSettings& settings) {
  if (settings.offline) {
    const auto cached = find_cached_checkpoint(spec, settings.cache_dir);
    if (!cached)
      throw HubError(fmt::format("{}: HF_HUB_OFFLINE is set and the cache ({}) holds no complete copy of it",
                                 spec.text(), settings.cache_dir));
    PullResult r;
    r.checkpoint = *cached;
    return r;
  }
  const HubApi api(settings);
  const RevisionInfo info = api.revision_info(spec.repo, spec.revision);
  const FileSelection sel = select_files(info.files, spec, options.include, options.exclude);
  const RepoCache cache(settings.cache_dir, spec.repo);

  PullResult result;
  result.checkpoint = {spec.repo, info.commit, cache.snapshot(info.commit), cache.snapshot(info.commit)};
  if (sel.gguf && !sel.weights_entry.empty())
    result.checkpoint.model_path = cache.snapshot_file(info.commit, sel.weights_entry);

  // What family reads this checkpoint, asked before any weight is fetched.
  // (A GGUF repo pulled with --include that leaves out its GGUF file fetches no weights: nothing to check.)
  if (sel.gguf && !sel.weights_entry.empty()) {
    const std::string& entry = sel.weights_entry;
    const auto it =
        std::find_if(sel.files.begin(), sel.files.end(), [&](const RepoFile& f) { return f.path == entry; });
    if (it != sel.files.end()) {
      const FileMetadata m = api.file_metadata(spec.repo, info.commit, it->path);
      const fs::path blob = cache.blob(m.etag);
      std::string arch;
      try {
        arch = gguf_architecture(blob, source_for(api, m, *it), options.download);
      } catch (const HubError&) {
        throw;  // the network or the disk: the prefix stays for the next run
      } catch (const CheckpointError& e) {
        std::error_code ec;
        fs::remove(incomplete_path(blob), ec);
        throw HubError(e.what());
      }
      if (!family_serves(arch)) {
        std::error_code ec;
        fs::remove(incomplete_path(blob), ec);  // only its header was fetched; nothing half-done stays
        throw HubError(
            fmt::format("{}: GGUF architecture '{}' is not served by any family (served: {}); only the file's "
                        "header was read",
                        spec.text(), arch, served_list()));
      }
      result.architecture = arch;
    }
  } else if (!sel.gguf && sel.has_config) {
    RepoFile config{"config.json", 0, ""};
    for (const auto& f : info.files)
      if (f.path == "config.json") config = f;
    const FileMetadata m = api.file_metadata(spec.repo, info.commit, config.path);
    download_blob(cache.blob(m.etag), source_for(api, m, config), options.download);
    cache.link_snapshot_file(info.commit, config.path, m.etag);
    std::ifstream in(cache.blob(m.etag));
    const auto j = nlohmann::json::parse(in, nullptr, false);
    const std::string model_type = j.is_object() && j.contains("model_type") && j["model_type"].is_string()
                                       ? j["model_type"].get<std::string>()
                                       : std::string();
    if (!family_serves(model_type))
      throw HubError(
          fmt::format("{}: model_type '{}' is not served by any family (served: {}); no weights were "
                      "downloaded",
                      spec.text(), model_type, served_list()));
    result.architecture = model_type;
  }

  for (const auto& f : sel.files) {
    result.bytes += f.size;
    ++result.files;
    const fs::path link = cache.snapshot_file(info.commit, f.path);
    std::error_code ec;
    if (fs::is_regular_file(link, ec)) continue;  // in the snapshot already (this tool's or huggingface_hub's)
    const FileMetadata m = api.file_metadata(spec.repo, info.commit, f.path);
    const fs::path blob = cache.blob(m.etag);
    if (!fs::exists(blob, ec)) {
      const BlobSource src = source_for(api, m, f);
      const std::uint64_t before = fs::exists(incomplete_path(blob), ec) ? fs::file_size(incomplete_path(blob), ec) : 0;
      download_blob(blob, src, options.download);
      result.fetched_bytes += src.size - std::min(before, src.size);
    }
    cache.link_snapshot_file(info.commit, f.path, m.etag);
  }
  cache.write_ref(spec.revision, info.commit);
  return result;
}

CachedCheckpoint cached_or_pull(const RepoSpec& spec, const PullOptions& options, const HubSettings& settings) {
  if (auto cached = find_cached_checkpoint(spec, settings.cache_dir)) return *cached;
  return pull_checkpoint(spec, options, settings).checkpoint;
}

}  // namespace tf::hub
