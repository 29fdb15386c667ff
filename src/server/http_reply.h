#pragma once
// Writing replies into httplib's Response: JSON bodies, error envelopes, and SSE streams fed by a generation.
#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/generation.h"
#include "server/api_error.h"

namespace tf::server {

class Generation;

void send_json(httplib::Response& res, int status, const nlohmann::ordered_json& body);
// The error envelope with the error's status (and WWW-Authenticate: Bearer on 401).
void send_error(httplib::Response& res, const ApiError& error);

// Anthropic's error envelope {"type": "error", "error": {"type", "message"}} with the error's status; the type
// follows the status (invalid_request_error, authentication_error, not_found_error, request_too_large,
// api_error, overloaded_error).
void send_anthropic_error(httplib::Response& res, const ApiError& error);

// How one endpoint's stream looks. Each method returns the SSE text to send (possibly empty).
class SseFormatter {
 public:
  virtual ~SseFormatter() = default;
  virtual std::string opening() = 0;                           // before any text
  virtual std::string text(const std::string& piece) = 0;      // one piece of generated text
  virtual std::string closing(const std::string& full_text, const GenerationResult& result) = 0;
  virtual std::string failure(const std::string& message) = 0;  // an error after the stream opened
  // Several choices (send_streams): closing() of every choice but the last writes only that choice's end; the
  // last one's result carries the whole request's counts: completion tokens of every choice, prompt tokens of
  // the choices that count their prompt (false for the second and later choices of one prompt).
  bool counts_prompt = true;
};

// Answers with text/event-stream, pumping `generation` through `formatter` on httplib's writer thread. A
// failed write (the client left) cancels the generation; so does the reply being dropped unsent.
void send_stream(httplib::Response& res, std::shared_ptr<Generation> generation,
                 std::unique_ptr<SseFormatter> formatter);
// Several choices of one request, streamed one after the other, `formatters[i]` for `generations[i]`.
void send_streams(httplib::Response& res, std::vector<std::shared_ptr<Generation>> generations,
                  std::vector<std::unique_ptr<SseFormatter>> formatters);

}  // namespace tf::server
