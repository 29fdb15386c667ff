#pragma once
// The HTTP server: our ConnectionFront accepts connections and reads each request whole; a ConnectionPool
// worker then runs it through httplib's request parser and response writer, our router for paths and
// methods, bearer auth, the error envelope for every failure, and the handlers. It binds before the engine
// loads and answers /v1/* with 503 until set_service() says the engine is ready. The pool is sized from the
// engine's capacity (set_engine_capacity()), so that /health and /metrics never wait behind generations,
// and no connection holds a worker while it is idle or still sending.
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/api_context.h"
#include "server/connection_front.h"
#include "server/connection_pool.h"
#include "server/cors.h"
#include "server/router.h"
#include "server/server_options.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace tf::server {

class HttpServer {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds options.host:options.port; throws std::runtime_error when it cannot.
  void bind();
  int port() const { return port_; }
  // Serves on a background thread until stop().
  void start();
  // The engine is loaded: /v1/* is served from now on. The service must outlive the server's serving.
  void set_service(InferenceService* service, std::string system_fingerprint = {}) {
    context_.set_service(service, std::move(system_fingerprint));
  }
  // The engine holds up to `requests` generations at once, running and queued. Each holds a worker until it
  // ends, so the server answers that many requests plus kSpareConnections at once (for /health, /metrics,
  // the models routes and refusals); more wait for a worker. Idle and sending connections hold none.
  void set_engine_capacity(std::size_t requests) { pool_->set_limit(requests + kSpareConnections); }
  static constexpr std::size_t kSpareConnections = 16;
  // Cancels running generations, stops accepting, closes idle connections and waits for the workers.
  void stop();
  // True while the connection front runs (false after stop(), or when it failed).
  bool running() const;

  ApiContext& context() { return context_; }
  const Router& router() const { return router_; }
  // One request through CORS, auth, routing and the handlers, as httplib calls it (also used by tests).
  void dispatch(const httplib::Request& req, httplib::Response& res);

 private:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&, const std::vector<std::string>&)>;
  void route(const char* method, const char* pattern, Handler handler);
  // A worker's job: answers the connection's framed request (and any whole one pipelined behind it), then
  // gives the connection back to the front or closes it.
  void serve(std::shared_ptr<Connection> connection);

  class RequestCore;  // httplib::Server, used only for its request parser and response writer

  ApiContext context_;
  CorsPolicy cors_;
  Router router_;
  std::vector<Handler> handlers_;
  std::shared_ptr<ConnectionPool> pool_;
  std::unique_ptr<RequestCore> http_;
  std::unique_ptr<ConnectionFront> front_;
  int port_ = -1;
  int listen_fd_ = -1;  // until start() gives it to the front
  bool stopped_ = false;
  std::atomic<bool> stopping_{false};
};

}  // namespace tf::server
