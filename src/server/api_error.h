#pragma once
// Errors a request can meet, as OpenAI reports them: an HTTP status and the envelope
// {"error": {"message", "type", "param", "code"}}. Handlers throw ApiError; the server turns it into a reply.
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

#include "engine/admission_error.h"

namespace tf::server {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string type, const std::string& message, std::optional<std::string> param = {},
           std::optional<std::string> code = {})
      : std::runtime_error(message), status_(status), type_(std::move(type)), param_(std::move(param)),
        code_(std::move(code)) {}

  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::optional<std::string>& param() const { return param_; }
  const std::optional<std::string>& code() const { return code_; }
  // Seconds for a Retry-After header (503 when the server is busy).
  const std::optional<int>& retry_after() const { return retry_after_; }
  ApiError& with_retry_after(int seconds) {
    retry_after_ = seconds;
    return *this;
  }

 private:
  int status_;
  std::string type_;
  std::optional<std::string> param_;
  std::optional<std::string> code_;
  std::optional<int> retry_after_;
};

// 400 invalid_request_error: a field is missing, of the wrong type or out of range.
ApiError invalid_request(const std::string& message, std::optional<std::string> param = {},
                         std::optional<std::string> code = {});
// 400 invalid_request_error for a feature this server does not offer (code "unsupported_parameter").
ApiError unsupported(const std::string& message, const std::string& param);
// 404 model_not_found for a model name that is neither the served id nor an alias.
ApiError model_not_found(const std::string& model);
// 400 context_length_exceeded; the message starts "This server's maximum context length is N tokens".
ApiError context_length_exceeded(std::int64_t context, std::int64_t prompt_tokens, std::int64_t max_tokens,
                                 bool max_tokens_given, const std::string& prompt_param,
                                 const std::string& max_tokens_param);
// What the engine's admission refusal (engine/admission_error.h) means to a client: a request that can never
// fit the memory budget is a 400 context_length_exceeded saying how many tokens would fit; a full queue is a
// 503 (code server_busy) with Retry-After.
ApiError admission_refused(const AdmissionError& e);
// 500 server_error.
ApiError server_error(const std::string& message);

// The "error" object of the envelope (also the payload of an error event on an open stream).
nlohmann::ordered_json error_object(const std::string& message, const std::string& type,
                            const std::optional<std::string>& param = {},
                            const std::optional<std::string>& code = {});
nlohmann::ordered_json error_envelope(const ApiError& e);

// The envelope for a status httplib or the router produced without a handler (404, 405, 413, 400, 500).
nlohmann::ordered_json envelope_for_status(int status);

}  // namespace tf::server
