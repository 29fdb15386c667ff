#include "server/api_error.h"

#include <fmt/format.h>

namespace tf::server {

ApiError invalid_request(const std::string& message, std::optional<std::string> param,
                         std::optional<std::string> code) {
  return ApiError(400, "invalid_request_error", message, std::move(param), std::move(code));
}

ApiError unsupported(const std::string& message, const std::string& param) {
  return ApiError(400, "invalid_request_error", message, param, "unsupported_parameter");
}

ApiError model_not_found(const std::string& model) {
  return ApiError(404, "invalid_request_error",
                  fmt::format("The model `{}` does not exist or you do not have access to it.", model), "model",
                  "model_not_found");
}

ApiError context_length_exceeded(std::int64_t context, std::int64_t prompt_tokens, std::int64_t max_tokens,
                                 bool max_tokens_given, const std::string& prompt_param,
                                 const std::string& max_tokens_param) {
  std::string message;
  if (max_tokens_given && prompt_tokens < context) {
    message = fmt::format(
        "This server's maximum context length is {} tokens. However, you requested {} tokens ({} in the {}, {} "
        "for the completion). Please reduce the length of the {} or of {}.",
        context, prompt_tokens + max_tokens, prompt_tokens, prompt_param, max_tokens, prompt_param,
        max_tokens_param);
    return ApiError(400, "invalid_request_error", message, max_tokens_param, "context_length_exceeded");
  }
  message = fmt::format(
      "This server's maximum context length is {} tokens. However, your {} resulted in {} tokens, which leaves "
      "no room for the completion. Please reduce the length of the {}.",
      context, prompt_param, prompt_tokens, prompt_param);
  return ApiError(400, "invalid_request_error", message, prompt_param, "context_length_exceeded");
}

ApiError admission_refused(const AdmissionError& e) {
  if (e.kind() == AdmissionError::Kind::NeverFits)
    return ApiError(400, "invalid_request_error", e.what(), std::nullopt, "context_length_exceeded");
  return ApiError(503, "server_error", e.what(), std::nullopt, "server_busy").with_retry_after(e.retry_after_s());
}

ApiError server_error(const std::string& message) { return ApiError(500, "server_error", message); }

nlohmann::ordered_json error_object(const std::string& message, const std::string& type,
                            const std::optional<std::string>& param, const std::optional<std::string>& code) {
  nlohmann::ordered_json e = {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}};
  if (param) e["param"] = *param;
  if (code) e["code"] = *code;
  return e;
}

nlohmann::ordered_json error_envelope(const ApiError& e) {
  return {{"error", error_object(e.what(), e.type(), e.param(), e.code())}};
}

nlohmann::ordered_json envelope_for_status(int status) {
  switch (status) {
    case 400:
      return {{"error", error_object("The request could not be read as HTTP.", "invalid_request_error")}};
    case 404:
      return {{"error", error_object("Unknown route. This server offers /v1/models, /v1/chat/completions, "
                                     "/v1/completions, /v1/responses, /health and /metrics.",
                                     "invalid_request_error", std::nullopt, "not_found")}};
    case 405:
      return {{"error", error_object("This route does not accept that method.", "invalid_request_error",
                                     std::nullopt, "method_not_allowed")}};
    case 413:
      return {{"error", error_object("The request body is larger than this server accepts.",
                                     "invalid_request_error", std::nullopt, "request_too_large")}};
    case 414:
      return {{"error", error_object("The request URI is too long.", "invalid_request_error")}};
    case 503:
      return {{"error", error_object("The model is still loading; try again shortly.", "server_error",
                                     std::nullopt, "model_loading")}};
    default:
      if (status >= 500)
        return {{"error", error_object("The server failed to handle the request.", "server_error")}};
      return {{"error", error_object(fmt::format("The request failed with HTTP status {}.", status),
                                     "invalid_request_error")}};
  }
}

}  // namespace tf::server
