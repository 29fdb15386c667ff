#include "hub/remote_info.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "hub/blob_download.h"
#include "hub/file_selection.h"
#include "hub/gguf_architecture.h"
#include "hub/hub_api.h"
#include "hub/hub_cache.h"
#include "hub/hub_error.h"

namespace tf::hub {
namespace fs = std::filesystem;

RemoteInfo remote_info(const RepoSpec& spec, const HubSettings& settings) {
  if (settings.offline)
    throw HubError(spec.text() + ": HF_HUB_OFFLINE is set and the cache holds no complete copy of it");
  const HubApi api(settings);
  const RevisionInfo rev = api.revision_info(spec.repo, spec.revision);
  const FileSelection sel = select_files(rev.files, spec, {}, {});
  const RepoCache cache(settings.cache_dir, spec.repo);
  RemoteInfo info;
  info.repo = spec.repo;
  info.commit = rev.commit;
  info.format = sel.gguf ? "gguf" : "safetensors";
  for (const auto& f : sel.files) info.bytes += f.size, ++info.files;

  const std::string first = sel.gguf ? sel.weights_entry : std::string("config.json");
  const FileMetadata m = api.file_metadata(spec.repo, rev.commit, first);
  BlobSource src;
  src.url = m.download_url;
  if (m.send_auth) src.headers = api.auth_headers();
  src.etag = m.etag;
  src.size = m.size;
  src.size_known = m.size_known;
  src.display_name = first;
  const fs::path blob = cache.blob(m.etag);
  if (sel.gguf) {
    info.weights_file = first;
    for (const std::uint64_t n : {std::uint64_t{256} << 10, std::uint64_t{16} << 20}) {
      std::error_code ec;
      fs::path file = blob;
      if (!fs::exists(blob, ec)) {
        fetch_blob_prefix(blob, src, n, {});
        file = incomplete_path(blob);
      }
      std::ifstream in(file, std::ios::binary);
      std::string bytes(static_cast<std::size_t>(n), '\0');
      in.read(bytes.data(), static_cast<std::streamsize>(n));
      bytes.resize(static_cast<std::size_t>(in.gcount()));
      if (auto arch = gguf_architecture_from_prefix({reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()},
                                                    first)) {
        info.architecture = *arch;
        break;
      }
    }
    return info;
  }
  download_blob(blob, src, {});
  cache.link_snapshot_file(rev.commit, first, m.etag);
  std::ifstream in(blob);
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object()) throw HubError(spec.text() + ": config.json is not a JSON object");
  if (j.contains("model_type") && j["model_type"].is_string()) info.architecture = j["model_type"].get<std::string>();
  for (const char* key : {"num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads",
                          "num_key_value_heads", "vocab_size", "max_position_embeddings", "torch_dtype"}) {
    if (j.contains(key)) info.config_text += fmt::format("  {:<26} {}\n", key, j[key].dump());
  }
  return info;
}

}  // namespace tf::hub
