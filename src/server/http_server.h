#pragma once
// The HTTP server: httplib for the wire, our router for paths and methods, bearer auth, the error envelope
// for every failure, and the handlers. It binds before the engine loads and answers /v1/* with 503 until
// set_service() says the engine is ready. Connections are served by a ConnectionPool sized from the engine's
// capacity (set_engine_capacity()), so that /health and /metrics never wait behind generations.
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/api_context.h"
#include "server/connection_pool.h"
#include "server/router.h"
#include "server/server_options.h"

namespace httplib {
class Server;
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
  // The engine holds up to `requests` generations at once, running and queued. Each holds its connection's
  // thread until it ends, so the server serves that many connections plus kSpareConnections at once (for
  // /health, /metrics, the models routes, refusals and idle keep-alive connections); more wait for a thread.
  void set_engine_capacity(std::size_t requests) { pool_->set_limit(requests + kSpareConnections); }
  static constexpr std::size_t kSpareConnections = 16;
  // Cancels running generations, stops accepting, and waits for the serving thread. Idempotent.
  void stop();
  // True while the serving thread runs (false after stop(), or when serving failed).
  bool running() const;

  ApiContext& context() { return context_; }
  // One request through auth, routing and the handlers, as httplib calls it (also used by tests).
  void dispatch(const httplib::Request& req, httplib::Response& res);

 private:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&, const std::vector<std::string>&)>;
  void route(const char* method, const char* pattern, Handler handler);

  ApiContext context_;
  Router router_;
  std::vector<Handler> handlers_;
  std::shared_ptr<ConnectionPool> pool_;  // shared with the task queue httplib owns while it listens
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = -1;
  int listen_fd_ = -1;  // the listening socket httplib made, to raise its backlog
  bool stopped_ = false;
  std::atomic<bool> serving_ended_{false};
};

}  // namespace tf::server
