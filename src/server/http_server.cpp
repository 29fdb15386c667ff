#include "server/http_server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <sys/socket.h>

#include "server/api_error.h"
#include "server/handlers.h"
#include "server/http_reply.h"
#include "server/json_fields.h"
#include "text/template/template_error.h"

namespace tf::server {

namespace {

// httplib deletes the task queue it made when it stops listening; the server keeps the pool (to change its
// limit once the engine has loaded), so httplib gets this handle to it.
class PoolQueue final : public httplib::TaskQueue {
 public:
  explicit PoolQueue(std::shared_ptr<ConnectionPool> pool) : pool_(std::move(pool)) {}
  void enqueue(std::function<void()> fn) override { pool_->enqueue(std::move(fn)); }
  void shutdown() override { pool_->shutdown(); }

 private:
  std::shared_ptr<ConnectionPool> pool_;
};

}  // namespace

HttpServer::HttpServer(ServerOptions options)
    : context_(std::move(options)),
      pool_(std::make_shared<ConnectionPool>(context_.options().connection_threads)),
      http_(std::make_unique<httplib::Server>()) {
  auto& ctx = context_;
  route("GET", "/health", [&ctx](auto& req, auto& res, auto&) { handle_health(ctx, req, res); });
  route("GET", "/metrics", [&ctx](auto& req, auto& res, auto&) { handle_metrics(ctx, req, res); });
  route("GET", "/v1/models", [&ctx](auto& req, auto& res, auto&) { handle_list_models(ctx, req, res); });
  route("GET", "/models", [&ctx](auto& req, auto& res, auto&) { handle_list_models(ctx, req, res); });
  route("GET", "/v1/models/{id}", [&ctx](auto&, auto& res, auto& p) { handle_get_model(ctx, p[0], res); });
  route("GET", "/v1/models/{owner}/{name}",
        [&ctx](auto&, auto& res, auto& p) { handle_get_model(ctx, p[0] + "/" + p[1], res); });
  route("POST", "/v1/chat/completions", [&ctx](auto& req, auto& res, auto&) { handle_chat_completions(ctx, req, res); });
  for (const char* path : {"/tokenize", "/v1/tokenize"})
    route("POST", path, [&ctx](auto& req, auto& res, auto&) { handle_tokenize(ctx, req, res); });
  for (const char* path : {"/detokenize", "/v1/detokenize"})
    route("POST", path, [&ctx](auto& req, auto& res, auto&) { handle_detokenize(ctx, req, res); });
  route("POST", "/v1/messages", [&ctx](auto& req, auto& res, auto&) { handle_messages(ctx, req, res); });
  route("POST", "/v1/messages/count_tokens", [&ctx](auto& req, auto& res, auto&) { handle_count_tokens(ctx, req, res); });
  route("POST", "/v1/completions", [&ctx](auto& req, auto& res, auto&) { handle_completions(ctx, req, res); });
  route("POST", "/v1/responses", [&ctx](auto& req, auto& res, auto&) { handle_create_response(ctx, req, res); });
  route("GET", "/v1/responses/{id}", [&ctx](auto&, auto& res, auto& p) { handle_get_response(ctx, p[0], res); });
  route("DELETE", "/v1/responses/{id}", [&ctx](auto&, auto& res, auto& p) { handle_delete_response(ctx, p[0], res); });

  auto& http = *http_;
  http.new_task_queue = [pool = pool_] { return new PoolQueue(pool); };
  http.set_payload_max_length(context_.options().max_body_bytes);
  http.set_read_timeout(30, 0);
  http.set_write_timeout(30, 0);
  http.set_keep_alive_max_count(1000);
  http.set_tcp_nodelay(true);
  // httplib's default sets SO_REUSEPORT, which lets a second server bind the same port and silently share
  // its connections. SO_REUSEADDR alone allows a quick restart and makes a taken port an error.
  // The last socket it configures is the one that bound (httplib closes one that fails and tries the next).
  http.set_socket_options([this](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<const char*>(&yes), sizeof yes);
    listen_fd_ = sock;
  });

  // Every method on every path goes through dispatch(): our router decides 404 and 405.
  auto all = [this](const httplib::Request& req, httplib::Response& res) { dispatch(req, res); };
  http.Get(".*", all);
  http.Post(".*", all);
  http.Put(".*", all);
  http.Patch(".*", all);
  http.Delete(".*", all);
  http.Options(".*", all);

  // Statuses httplib sets itself (413 over the size limit, 400 unreadable requests) get the envelope too;
  // replies our handlers wrote keep their bodies.
  http.set_error_handler(httplib::Server::HandlerWithResponse(
      [](const httplib::Request&, httplib::Response& res) {
        if (!res.body.empty() || res.content_provider_) return httplib::Server::HandlerResponse::Unhandled;
        send_json(res, res.status, envelope_for_status(res.status));
        return httplib::Server::HandlerResponse::Handled;
      }));
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    send_error(res, server_error("The server failed to handle the request."));
  });
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::route(const char* method, const char* pattern, Handler handler) {
  router_.add(method, pattern);
  handlers_.push_back(std::move(handler));
}

void HttpServer::dispatch(const httplib::Request& req, httplib::Response& res) {
  // Anthropic's routes answer errors in Anthropic's envelope and take the key in x-api-key too.
  const bool anthropic = req.path.rfind("/v1/messages", 0) == 0;
  const auto reply_error = [&](httplib::Response& r, const ApiError& e) {
    if (anthropic) send_anthropic_error(r, e);
    else send_error(r, e);
  };
  try {
    const auto match = router_.match(req.method, req.path);
    const bool open = match.kind == RouteMatch::Kind::Found && req.path.rfind("/health", 0) == 0;
    const bool x_api_key = anthropic && req.has_header("x-api-key") &&
                           context_.keys().allows("Bearer " + req.get_header_value("x-api-key"));
    if (!open && !x_api_key && !context_.keys().allows(req.get_header_value("Authorization"))) {
      const bool given = req.has_header("Authorization");
      throw ApiError(401, "invalid_request_error",
                     given ? "Incorrect API key provided. Send 'Authorization: Bearer <key>' with a key this server "
                             "was started with (--api-key)."
                           : "You didn't provide an API key. Send 'Authorization: Bearer <key>' with a key this "
                             "server was started with (--api-key).",
                     std::nullopt, "invalid_api_key");
    }
    switch (match.kind) {
      case RouteMatch::Kind::NotFound:
        send_json(res, 404,
                  {{"error", error_object(fmt::format("Unknown route: {} {}", req.method, req.path),
                                          "invalid_request_error", std::nullopt, "not_found")}});
        return;
      case RouteMatch::Kind::MethodNotAllowed:
        res.set_header("Allow", match.allow);
        send_json(res, 405,
                  {{"error", error_object(fmt::format("Method {} is not allowed on {}; use {}.", req.method, req.path,
                                                      match.allow),
                                          "invalid_request_error", std::nullopt, "method_not_allowed")}});
        return;
      case RouteMatch::Kind::Found:
        handlers_[static_cast<std::size_t>(match.route)](req, res, match.params);
        return;
    }
  } catch (const ApiError& e) {
    reply_error(res, e);
  } catch (const TemplateError& e) {
    reply_error(res, invalid_request(fmt::format("The chat template failed: {}", e.what()), "messages",
                                    "chat_template_error"));
  } catch (const std::bad_alloc&) {
    reply_error(res, server_error("The server ran out of memory handling the request."));
  } catch (const std::exception& e) {
    reply_error(res, server_error(fmt::format("The server failed to handle the request: {}", e.what())));
  } catch (...) {
    reply_error(res, server_error("The server failed to handle the request."));
  }
}

void HttpServer::bind() {
  const auto& o = context_.options();
  if (o.port == 0) {
    port_ = http_->bind_to_any_port(o.host);
    if (port_ <= 0) throw std::runtime_error(fmt::format("cannot listen on {} (any port)", o.host));
  } else {
    if (!http_->bind_to_port(o.host, o.port))
      throw std::runtime_error(fmt::format("cannot listen on {}:{} (is the address valid and the port free?)",
                                           o.host, o.port));
    port_ = o.port;
  }
  // httplib 0.11 listens with a backlog of 5: a burst of clients overflows it while the accept thread waits
  // for a core, the kernel drops their SYNs, and each client retries a second later, then 2 s, 4 s after that
  // (a /health probe with a short timeout fails). Listening again on a listening socket only sets its backlog.
  if (listen_fd_ >= 0) ::listen(listen_fd_, SOMAXCONN);
}

void HttpServer::start() {
  serving_ended_ = false;
  thread_ = std::thread([this] {
    http_->listen_after_bind();
    serving_ended_ = true;
  });
  // Wait until the accept loop runs (or failed), so stop() cannot race its start.
  while (!http_->is_running() && !serving_ended_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

bool HttpServer::running() const { return http_->is_running() && !serving_ended_; }

void HttpServer::stop() {
  if (stopped_) return;
  stopped_ = true;
  context_.active().cancel_all();
  http_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace tf::server
