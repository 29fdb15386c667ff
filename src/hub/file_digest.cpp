#include "hub/file_digest.h"

#include <openssl/evp.h>

#include <cctype>
#include <fstream>
#include <memory>
#include <vector>

#include "hub/hub_error.h"

namespace tf::hub {

EtagKind etag_kind(const std::string& etag) {
  for (const char c : etag)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return EtagKind::unknown;
  if (etag.size() == 64) return EtagKind::sha256;
  if (etag.size() == 40) return EtagKind::git_blob_sha1;
  return EtagKind::unknown;
}

std::string file_digest(const std::filesystem::path& file, EtagKind kind) {
  if (kind == EtagKind::unknown) return std::string();
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), kind == EtagKind::sha256 ? EVP_sha256() : EVP_sha1(), nullptr) != 1)
    throw HubError("cannot start a digest (OpenSSL)");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw HubError("cannot read " + file.string());
  if (kind == EtagKind::git_blob_sha1) {
    const std::string head = "blob " + std::to_string(std::filesystem::file_size(file)) + std::string(1, '\0');
    EVP_DigestUpdate(ctx.get(), head.data(), head.size());
  }
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) throw HubError("cannot read " + file.string());
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  static const char* kHex = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex += kHex[md[i] >> 4];
    hex += kHex[md[i] & 15];
  }
  return hex;
}

}  // namespace tf::hub
