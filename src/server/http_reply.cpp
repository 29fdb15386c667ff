#include "server/http_reply.h"

#include "server/generation_runner.h"
#include "server/json_fields.h"
#include "server/logprobs_json.h"

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
  std::vector<std::shared_ptr<Generation>> generations;
  std::vector<std::unique_ptr<SseFormatter>> formatters;
};

// Runs the whole stream inside one provider call: httplib calls it on the connection's thread after the
// headers went out, and writing blocks there, which is what paces the engine's pieces onto the wire. Several
// choices go one after the other (all run in the engine at once); the last closing sees every choice's counts.
bool pump(StreamState& s, httplib::DataSink& sink) {
  auto write = [&](const std::string& text) { return text.empty() || sink.write(text.data(), text.size()); };
  std::vector<GenerationResult> results;
  for (std::size_t i = 0; i < s.generations.size(); ++i) {
    auto& stream = s.generations[i]->stream();
    auto& formatter = *s.formatters[i];
    if (!write(formatter.opening())) return false;
    std::string piece, all;
    while (stream.next(piece)) {
      all += piece;
      if (!write(formatter.text(piece))) return false;
    }
    results.push_back(stream.result());
    const auto& result = results.back();
    std::string tail;
    if (result.finish == FinishReason::Error) {
      tail = formatter.failure("The generation failed: " +
                               (result.error.empty() ? std::string("unknown error") : result.error));
    } else if (result.finish == FinishReason::Cancelled) {
      tail = formatter.failure("The generation was cancelled (the server is shutting down).");
    } else if (i + 1 < s.generations.size()) {
      tail = formatter.closing(all, result);
    } else {
      GenerationResult shown = result;
      if (results.size() > 1) {
        std::vector<bool> counts;
        for (const auto& f : s.formatters) counts.push_back(f->counts_prompt);
        shown = sum_results(results, counts);
      }
      tail = formatter.closing(all, shown);
    }
    if (!write(tail)) return false;
    if (result.finish == FinishReason::Error || result.finish == FinishReason::Cancelled) break;
  }
  for (auto& g : s.generations) g->stop_watching();
  sink.done();
  return true;
}

}  // namespace

void send_stream(httplib::Response& res, std::shared_ptr<Generation> generation,
                 std::unique_ptr<SseFormatter> formatter) {
  std::vector<std::shared_ptr<Generation>> g;
  g.push_back(std::move(generation));
  std::vector<std::unique_ptr<SseFormatter>> f;
  f.push_back(std::move(formatter));
  send_streams(res, std::move(g), std::move(f));
}

void send_streams(httplib::Response& res, std::vector<std::shared_ptr<Generation>> generations,
                  std::vector<std::unique_ptr<SseFormatter>> formatters) {
  auto state = std::make_shared<StreamState>(StreamState{std::move(generations), std::move(formatters)});
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
        if (!ok)
          for (auto& g : state->generations) g->cancel();
        return ok;
      },
      [state](bool success) {
        for (auto& g : state->generations) {
          if (!success) g->cancel();
          g->stop_watching();
        }
      });
}

}  // namespace tf::server
