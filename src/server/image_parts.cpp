#include "server/image_parts.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

#include "server/api_error.h"

namespace tf::server {
namespace {

// OpenAI's detail levels: accepted, then ignored (the checkpoint's processor sizes the image).
void check_detail(const JsonFields& f, const std::string& detail_param) {
  const auto* d = f.get("detail");
  if (d == nullptr) return;
  static constexpr std::string_view kLevels[] = {"auto", "low", "high", "original"};
  if (!d->is_string() || std::find(std::begin(kLevels), std::end(kLevels), d->get<std::string>()) == std::end(kLevels))
    throw invalid_request(
        fmt::format("Invalid value for '{}': expected 'auto', 'low', 'high' or 'original'.", detail_param),
        detail_param, "invalid_value");
}

}  // namespace

ImagePart chat_image_part(const JsonFields& f, const std::string& p) {
  const auto* iu = f.get("image_url");
  const std::string param = p + ".image_url";
  if (iu != nullptr && iu->is_string()) return {param, iu->get<std::string>()};
  if (iu == nullptr || !iu->is_object())
    throw invalid_request(fmt::format("Missing required parameter: '{}.url'.", param), param + ".url");
  const JsonFields u(*iu, param + ".");
  const auto url = u.string("url");
  if (!url) throw invalid_request(fmt::format("Missing required parameter: '{}.url'.", param), param + ".url");
  check_detail(u, param + ".detail");
  return {param, *url};
}

ImagePart responses_image_part(const JsonFields& f, const std::string& p) {
  check_detail(f, p + ".detail");
  if (const auto url = f.string("image_url")) return {p + ".image_url", *url};
  if (f.get("file_id") != nullptr)
    throw unsupported(fmt::format("Invalid '{}.file_id': this server has no files API; send the image as a data: "
                                  "URL in 'image_url'.",
                                  p),
                      p + ".file_id");
  throw invalid_request(fmt::format("Missing required parameter: '{}.image_url'.", p), p + ".image_url");
}

ImagePart anthropic_image_part(const JsonFields& f, const std::string& p) {
  const std::string param = p + ".source";
  const auto* source = f.object("source");
  if (source == nullptr) throw invalid_request(fmt::format("Missing required parameter: '{}'.", param), param);
  const JsonFields s(*source, param + ".");
  const auto type = s.string("type");
  if (type == "base64") {
    const auto media = s.string("media_type");
    if (!media)
      throw invalid_request(fmt::format("Missing required parameter: '{}.media_type'.", param), param + ".media_type");
    if (*media != "image/png" && *media != "image/jpeg" && *media != "image/webp")
      throw invalid_request(fmt::format("Invalid '{}.media_type': '{}'; this server reads image/png, image/jpeg and "
                                        "image/webp.",
                                        param, *media),
                            param + ".media_type", "invalid_value");
    const auto data = s.string("data");
    if (!data) throw invalid_request(fmt::format("Missing required parameter: '{}.data'.", param), param + ".data");
    return {param, "data:" + *media + ";base64," + *data};
  }
  if (type == "url") {
    const auto url = s.string("url");
    if (!url) throw invalid_request(fmt::format("Missing required parameter: '{}.url'.", param), param + ".url");
    return {param, *url};
  }
  if (type == "file")
    throw unsupported(fmt::format("Invalid '{}.type': 'file' sources need a files API this server does not have; "
                                  "send the image as base64.",
                                  param),
                      param + ".type");
  throw invalid_request(fmt::format("Invalid '{}.type': expected 'base64' or 'url'.", param), param + ".type",
                        "invalid_value");
}

}  // namespace tf::server
