#include "server/http_server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "server/api_error.h"
#include "server/framed_stream.h"
#include "server/handlers.h"
#include "server/http_reply.h"
#include "server/json_fields.h"
#include "text/template/template_error.h"

namespace tf::server {

// httplib::Server serves here only as the parser and writer of one framed request: process_request() is
// protected, and the front already did what its listen loop would (accept, wait for the bytes).
class HttpServer::RequestCore : public httplib::Server {
 public:
  // httplib ends a streamed reply when its listening socket is gone (svr_sock_ invalid); this one never
  // listens, so the socket it would have is marked present until the server stops.
  RequestCore() { svr_sock_ = 0; }
  void stopping() { svr_sock_ = INVALID_SOCKET; }
  bool serve(httplib::Stream& stream, bool close_connection, bool& connection_closed) {
    return process_request(stream, close_connection, connection_closed, nullptr);
  }
};

namespace {

// A connection answers this many requests at most, then closes (as httplib's own keep-alive limit did).
constexpr std::size_t kMaxRequestsPerConnection = 1000;

const char* reason_phrase(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

// The reply to a request the front refuses before any worker sees it; the connection closes after it.
std::string refusal_response(int status, const std::string& reason) {
  const char* code = status == 413 ? "request_too_large" : status == 408 ? "request_timeout" : nullptr;
  const auto body =
      dump_json({{"error", error_object(reason, status >= 500 ? "server_error" : "invalid_request_error", std::nullopt,
                                        code ? std::optional<std::string>(code) : std::nullopt)}});
  return fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}", status,
      reason_phrase(status), body.size(), body);
}

}  // namespace

HttpServer::HttpServer(ServerOptions options)
    : context_(std::move(options)),
      cors_(context_.options().cors_origins),
      pool_(std::make_shared<ConnectionPool>(context_.options().connection_threads)),
      http_(std::make_unique<RequestCore>()) {
  auto& ctx = context_;
  route("GET", "/health", [&ctx](auto& req, auto& res, auto&) { handle_health(ctx, req, res); });
  route("GET", "/openapi.json", [](auto& req, auto& res, auto&) { handle_openapi(req, res); });
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
  http.set_payload_max_length(context_.options().max_body_bytes);
  // Said in the Keep-Alive header of each reply; the front enforces it.
  http.set_keep_alive_timeout(context_.options().keep_alive_s);
  http.set_keep_alive_max_count(kMaxRequestsPerConnection);

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
  // Anthropic's routes answer errors in Anthropic's envelope.
  const bool anthropic = req.path.rfind("/v1/messages", 0) == 0;
  const auto reply_error = [&](httplib::Response& r, const ApiError& e) {
    if (anthropic) send_anthropic_error(r, e);
    else send_error(r, e);
  };
  try {
    cors_.apply(req, res);
    if (CorsPolicy::is_preflight(req)) {
      const auto target = router_.match(req.get_header_value("Access-Control-Request-Method"), req.path);
      if (target.kind != RouteMatch::Kind::NotFound) {
        cors_.preflight(req, res,
                        target.kind == RouteMatch::Kind::Found ? req.get_header_value("Access-Control-Request-Method")
                                                               : target.allow);
        return;
      }
    }
    const auto match = router_.match(req.method, req.path);
    // /health (for probes) and /openapi.json (the API's public shape) need no key.
    const bool open = match.kind == RouteMatch::Kind::Found &&
                      (req.path.rfind("/health", 0) == 0 || req.path.rfind("/openapi.json", 0) == 0);
    // The key in X-Api-Key (Anthropic's header) is taken on every route, as in Authorization.
    const bool x_api_key =
        req.has_header("x-api-key") && context_.keys().allows("Bearer " + req.get_header_value("x-api-key"));
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
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const auto port = std::to_string(o.port);
  if (getaddrinfo(o.host.c_str(), port.c_str(), &hints, &found) != 0 || !found)
    throw std::runtime_error(fmt::format("cannot listen on {}:{} (the address is not valid)", o.host, o.port));
  int fd = -1;
  for (auto* ai = found; ai && fd < 0; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) continue;
    // SO_REUSEADDR alone allows a quick restart; SO_REUSEPORT (httplib's default) would let a second server
    // bind the same port and silently share its connections, so a taken port stays an error.
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    // A burst of clients must not overflow the backlog while the front waits for a core: the kernel would
    // drop their SYNs and each client retry a second later (a /health probe with a short timeout fails).
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0)
    throw std::runtime_error(
        o.port == 0 ? fmt::format("cannot listen on {} (any port)", o.host)
                    : fmt::format("cannot listen on {}:{} (is the address valid and the port free?)", o.host, o.port));
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(bound).sin6_port
                                            : reinterpret_cast<sockaddr_in&>(bound).sin_port);
  listen_fd_ = fd;
}

void HttpServer::start() {
  const auto& o = context_.options();
  FrontOptions fo;
  fo.header_timeout = std::chrono::seconds(o.header_timeout_s);
  fo.body_timeout = std::chrono::seconds(o.timeout_s);
  fo.keep_alive = std::chrono::seconds(o.keep_alive_s);
  fo.max_idle = std::max<std::size_t>(1, o.max_idle_connections);
  fo.limits.max_body_bytes = o.max_body_bytes;
  front_ = std::make_unique<ConnectionFront>(
      listen_fd_, fo, [this](std::shared_ptr<Connection> c) { pool_->enqueue([this, c] { serve(c); }); },
      refusal_response);
  listen_fd_ = -1;
  front_->start();
}

void HttpServer::serve(std::shared_ptr<Connection> c) {
  const auto write_timeout = std::chrono::milliseconds(std::int64_t{context_.options().timeout_s} * 1000);
  for (;;) {
    bool closed = false;
    bool ok = false;
    bool write_failed = false;
    {
      FramedStream stream(c->fd, c->buffer, 0, c->frame.end, write_timeout, c->continue_sent);
      const bool last = stopping_ || c->served + 1 >= kMaxRequestsPerConnection;
      ok = http_->serve(stream, last, closed) && !last;
      write_failed = stream.write_failed();
    }
    ++c->served;
    c->buffer.erase(0, c->frame.end);
    if (!ok || closed || write_failed || stopping_) return;  // dropping the last reference closes it
    // A pipelined request already received whole is answered here; anything else waits in the front.
    c->frame = frame_request(c->buffer, FrameLimits{64 * 1024, context_.options().max_body_bytes});
    c->continue_sent = false;
    if (c->frame.state != Frame::State::Complete) break;
  }
  if (front_) front_->give_back(std::move(c));
}

bool HttpServer::running() const { return front_ && front_->running(); }

void HttpServer::stop() {
  if (stopped_) return;
  stopped_ = true;
  stopping_ = true;
  context_.active().cancel_all();
  http_->stopping();
  if (front_) front_->stop();  // stops accepting and closes the connections it holds
  pool_->shutdown();           // answers what was handed off, then waits for the workers
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

}  // namespace tf::server
