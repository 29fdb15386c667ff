#include "server/http_reply.h"

#include "server/generation_runner.h"
#include "server/json_fields.h"

namespace tf::server {

void send_json(httplib::Response& res, int status, const nlohmann::ordered_json& body) {
  res.status = status;
  res.set_content(dump_json(body), "application/json");
}

void send_error(httplib::Response& res, const ApiError& error) {
  if (error.status() == 401) res.set_header("WWW-Authenticate", "Bearer");
  if (error.retry_after()) res.set_header("Retry-After", std::to_string(*error.retry_after()));
  send_json(res, error.status(), error_envelope(error));
}

void send_anthropic_error(httplib::Response& res, const ApiError& error) {
  if (error.retry_after()) res.set_header("Retry-After", std::to_string(*error.retry_after()));
  const int s = error.status();
  const char* type = s == 401   ? "authentication_error"
                     : s == 403 ? "permission_error"
                     : s == 404 ? "not_found_error"
                     : s == 413 ? "request_too_large"
                     : s == 429 ? "rate_limit_error"
                     : s == 503 ? "overloaded_error"
                     : s >= 500 ? "api_error"
                                : "invalid_request_error";
  nlohmann::ordered_json detail = {{"type", type}, {"message", error.what()}};
  if (error.param()) detail["param"] = *error.param();  // not in Anthropic's envelope; names the field
  send_json(res, s, {{"type", "error"}, {"error", std::move(detail)}});
}

namespace {

struct StreamState {
  std::shared_ptr<Generation> generation;
  std::unique_ptr<SseFormatter> formatter;
};

// Runs the whole stream inside one provider call: httplib calls it on the connection's thread after the
// headers went out, and writing blocks there, which is what paces the engine's pieces onto the wire.
bool pump(StreamState& s, httplib::DataSink& sink) {
  auto write = [&](const std::string& text) { return text.empty() || sink.write(text.data(), text.size()); };
  auto& stream = s.generation->stream();
  if (!write(s.formatter->opening())) return false;
  std::string piece, all;
  while (stream.next(piece)) {
    all += piece;
    if (!write(s.formatter->text(piece))) return false;
  }
  const auto& result = stream.result();
  std::string tail;
  if (result.finish == FinishReason::Error)
    tail = s.formatter->failure("The generation failed: " + (result.error.empty() ? std::string("unknown error")
                                                                                  : result.error));
  else if (result.finish == FinishReason::Cancelled)
    tail = s.formatter->failure("The generation was cancelled (the server is shutting down).");
  else
    tail = s.formatter->closing(all, result);
  if (!write(tail)) return false;
  s.generation->stop_watching();
  sink.done();
  return true;
}

}  // namespace

void send_stream(httplib::Response& res, std::shared_ptr<Generation> generation,
                 std::unique_ptr<SseFormatter> formatter) {
  auto state = std::make_shared<StreamState>(StreamState{std::move(generation), std::move(formatter)});
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [state](std::size_t /*offset*/, httplib::DataSink& sink) {
        bool ok = false;
        try {
          ok = pump(*state, sink);
        } catch (...) {
          ok = false;  // nothing may escape into httplib's writer
        }
        if (!ok) state->generation->cancel();
        return ok;
      },
      [state](bool success) {
        if (!success) state->generation->cancel();
        state->generation->stop_watching();
      });
}

}  // namespace tf::server
