// `tensorfold serve [MODEL]`: binds the HTTP API, loads the engine, prints one startup report, and serves
// until SIGINT or SIGTERM.
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "checkpoint/checkpoint_error.h"
#include "checkpoint/model_summary.h"
#include "cli/commands.h"
#include "cli/malloc_policy.h"
#include "engine/engine.h"
#include "server/engine_service.h"
#include "server/http_server.h"
#include "tensorfold/version.h"

namespace tf::cli {

namespace {

struct ServeFlags {
  std::string model;
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string name;
  std::vector<std::string> aliases;
  std::string model_names = "any";
  std::int64_t context = 0;
  std::int64_t max_tokens = 4096;
  std::optional<double> temperature, top_p, min_p;
  std::optional<int> top_k;
  std::string backend = "auto";
  int tp = 1;
  std::vector<std::string> api_keys;
  std::string chat_template;
  std::string reasoning;  // "on", "off" or "" (the template's own default)
  std::int64_t reasoning_budget = 0;
  bool no_drafts = false;
  std::string drafter = "auto";
  int max_drafts = 8;
  std::string parallel = "auto";
  double decode_share = 0.5;
  int max_queue = 64;
  int header_timeout = 10;
  int timeout = 30;
  int keep_alive = 5;
  std::size_t max_idle_connections = 4096;
  std::vector<std::string> cors_origins;
  double prompt_cache_gib = -1.0;  // negative: auto
  std::string snapshot_dir;        // "": the default under the cache directory
  double max_snapshot_gib = 8.0;
  std::string precision;  // "": the backend's default (CUDA: bf16)
  bool vision = false;
  bool vision_urls = false;
};

// --parallel: "auto" (0 for the engine) or a count of streams.
int parse_parallel(const std::string& v) { return v == "auto" ? 0 : std::stoi(v); }

// Each open connection is a descriptor, and the common soft limit of 1,024 would stop accepting long before
// --max-idle-connections; the soft limit goes up to the hard one, as servers do. Returns the limit now.
rlim_t raise_descriptor_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return 1024;
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit want = lim;
    want.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &want) == 0) lim = want;
  }
  return lim.rlim_cur;
}

// SIGINT/SIGTERM are caught by a handler that only writes the signal number to a pipe (async-signal-safe, and
// whichever thread the kernel picks, including threads libraries started before us); one thread reads the
// pipe and asks for a clean stop.
int g_signal_pipe[2] = {-1, -1};

extern "C" void on_shutdown_signal(int sig) {
  const int saved = errno;
  const unsigned char b = static_cast<unsigned char>(sig);
  [[maybe_unused]] auto n = write(g_signal_pipe[1], &b, 1);
  errno = saved;
}

class ShutdownSignal {
 public:
  ShutdownSignal() {
    signal(SIGPIPE, SIG_IGN);              // a client that leaves mid-write is a failed write, not a dead server
    if (pipe(g_signal_pipe) != 0) return;  // no pipe: the default actions stay (the process just ends)
    fcntl(g_signal_pipe[0], F_SETFD, FD_CLOEXEC);
    fcntl(g_signal_pipe[1], F_SETFD, FD_CLOEXEC);
    struct sigaction sa {};
    sa.sa_handler = on_shutdown_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    std::thread([this] { wait_loop(); }).detach();
  }
  void set_ready() {
    std::lock_guard lock(mu_);
    ready_ = true;
  }
  // Waits until a signal came (true) or `timeout` passed (false).
  bool wait_for(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return requested_; });
  }

 private:
  void wait_loop() {
    for (;;) {
      unsigned char b = 0;
      const auto n = read(g_signal_pipe[0], &b, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      std::lock_guard lock(mu_);
      if (!ready_ || requested_) {
        // Still loading (nothing to finish cleanly), or a second signal while stopping: leave now.
        std::fputs(requested_ ? "tensorfold serve: stopping now\n" : "tensorfold serve: interrupted while loading\n",
                   stderr);
        std::_Exit(130);
      }
      requested_ = true;
      cv_.notify_all();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  bool ready_ = false, requested_ = false;
};

std::string url_host(const std::string& host) { return host.find(':') != std::string::npos ? "[" + host + "]" : host; }

std::string mib(std::size_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string backend_line(const Engine& engine) {
  if (engine.tensor_parallel() == 1) return engine.backend_name();
  return fmt::format("{} (tensor parallel over {} ranks)", engine.backend_name(), engine.tensor_parallel());
}

std::string startup_report(const ServeFlags& f, const std::string& path, const server::HttpServer& srv,
                           const server::ServerOptions& so, const Engine& engine) {
  const auto& info = engine.model_info();
  const auto& s = engine.default_sampling();
  std::string extras;
  if (!so.names.aliases.empty()) extras += "; aliases: " + join(so.names.aliases);
  if (so.names.strict) extras += "; other model names refused";
  if (!so.api_keys.empty()) extras += "; API key required";
  return fmt::format(
      "tensorfold {} serve\n"
      "  model     {} ({})\n"
      "  family    {} (architecture {}, vocabulary {})\n"
      "  backend   {}\n"
      "  prompts   {}\n"
      "  weights   {} bytes ({})\n"
      "  context   {} tokens; a reply without max_tokens stops after {}\n"
      "  sampling  temperature {}, top_p {}, top_k {}, min_p {} (checkpoint defaults, then flags)\n"
      "  drafting  {}\n"
      "  streams   {}\n"
      "  caching   {}\n"
      "  serving   http://{}:{}/v1{}\n",
      kVersion, so.names.id, path, info.family, info.architecture, info.vocab, backend_line(engine),
      engine.prompt_precision_summary(), info.weight_bytes, mib(info.weight_bytes), engine.context_length(),
      f.max_tokens > 0 ? fmt::format("{} tokens", f.max_tokens) : std::string("the context end"), s.temperature,
      s.top_p, s.top_k, s.min_p, engine.drafting_summary(), engine.concurrency_summary(), engine.prompt_cache_summary(),
      url_host(f.host), srv.port(), extras);
}

int run_serve(const ServeFlags& f) {
  std::string path;
  try {
    path = resolve_model_path(f.model);
    summarize_model(path);  // a bad checkpoint fails here, in one line, before anything listens
  } catch (const CheckpointError& e) {
    fmt::print(stderr, "tensorfold serve: {}\n", e.what());
    return 1;
  }

  ShutdownSignal signals;
  return_freed_memory_promptly();  // before the engine's allocations

  server::ServerOptions so;
  so.host = f.host;
  so.port = f.port;
  // A hub checkpoint is called by its repo id as typed (Org/Name-GGUF:Q4_K_M), not by its snapshot's hash.
  so.names = {server::served_model_id(f.name.empty() ? hub_model_name(f.model) : f.name, path), f.aliases,
              f.model_names == "strict"};
  so.api_keys = f.api_keys;
  so.default_max_tokens = f.max_tokens;
  if (!f.reasoning.empty()) so.reasoning = f.reasoning == "on";
  so.reasoning_budget = f.reasoning_budget;
  so.system_fingerprint = fmt::format("fp_tensorfold_{}", kVersion);
  so.header_timeout_s = f.header_timeout;
  so.timeout_s = f.timeout;
  so.keep_alive_s = f.keep_alive;
  so.cors_origins = f.cors_origins;
  so.vision = f.vision;
  so.vision_urls = f.vision_urls;
  // Images come base64 inside the body: the reference's 32 MiB body limit with --vision.
  if (f.vision) so.max_body_bytes = std::max(so.max_body_bytes, std::size_t{32} << 20);
  // Descriptors beyond the idle connections: the checkpoint's files, the working connections, the engine's.
  const rlim_t fds = raise_descriptor_limit();
  so.max_idle_connections =
      std::min<std::size_t>(f.max_idle_connections, fds > 512 ? static_cast<std::size_t>(fds - 256) : fds / 2);
  server::HttpServer srv(so);
  try {
    srv.bind();
  } catch (const std::exception& e) {
    fmt::print(stderr, "tensorfold serve: {}\n", e.what());
    return 1;
  }
  srv.start();  // /health says "loading" and /v1/* answers 503 until the engine is ready

  EngineOptions eo;
  eo.model_path = path;
  eo.backend = f.backend;
  eo.tp = f.tp;
  eo.context = f.context;
  eo.chat_template_file = f.chat_template;
  if (f.temperature) eo.temperature = static_cast<float>(*f.temperature);
  if (f.top_p) eo.top_p = static_cast<float>(*f.top_p);
  if (f.min_p) eo.min_p = static_cast<float>(*f.min_p);
  eo.top_k = f.top_k;
  eo.drafter = f.no_drafts ? "none" : f.drafter;
  eo.max_drafts = f.max_drafts;
  eo.parallel = parse_parallel(f.parallel);
  eo.decode_share = f.decode_share;
  eo.max_queue = static_cast<std::size_t>(f.max_queue);
  eo.prompt_cache_gib = f.prompt_cache_gib;
  eo.snapshot_dir = f.snapshot_dir;
  eo.max_snapshot_gib = f.max_snapshot_gib;
  if (!f.precision.empty()) eo.prompt_precision = parse_prompt_precision(f.precision);
  eo.vision = f.vision;
  std::unique_ptr<Engine> engine;
  try {
    engine = std::make_unique<Engine>(eo);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tensorfold serve: {}\n", e.what());
    srv.stop();
    return 1;
  }
  server::EngineService service(*engine);
  // Every running or queued generation holds its connection's thread; the server keeps spare ones beside.
  srv.set_engine_capacity(static_cast<std::size_t>(engine->parallel()) + eo.max_queue);
  srv.set_service(&service, fmt::format("fp_tensorfold_{}_{}", kVersion, engine->backend_name()));
  signals.set_ready();
  fmt::print("{}", startup_report(f, path, srv, so, *engine));
  std::fflush(stdout);

  int code = 0;
  while (!signals.wait_for(std::chrono::milliseconds(500))) {
    if (!srv.running()) {
      fmt::print(stderr, "tensorfold serve: the HTTP server stopped unexpectedly\n");
      code = 1;
      break;
    }
  }
  srv.stop();      // cancels running generations, closes the listener, joins the connection threads
  engine.reset();  // stops the engine's worker
  if (code == 0) fmt::print(stderr, "tensorfold serve: stopped\n");
  return code;
}

}  // namespace

Command add_serve_command(CLI::App& app) {
  auto f = std::make_shared<ServeFlags>();
  auto* sub = app.add_subcommand("serve",
                                 "Serve MODEL (default: the embedded SmolLM2-135M-Instruct) over an "
                                 "OpenAI-compatible HTTP API on http://127.0.0.1:8080/v1");
  sub->add_option("model", f->model,
                  "GGUF file, checkpoint directory, or hub repo Org/Name[@REV][:QUANT], pulled into the Hugging Face "
                  "cache first when missing (default: the embedded model)");
  sub->add_option("--host", f->host, "Address to listen on")->capture_default_str();
  sub->add_option("--port", f->port, "Port to listen on (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  sub->add_option("--name", f->name, "The model id clients use (default: the checkpoint's file or directory name)");
  sub->add_option("--alias", f->aliases, "Another name clients may use for the model (repeatable)")
      ->allow_extra_args(false);
  sub->add_option("--model-names", f->model_names,
                  "Which request 'model' names are this model: any (any name; replies name the served id) or strict "
                  "(only the id and aliases; others are a 404, as vLLM)")
      ->check(CLI::IsMember({"any", "strict"}))
      ->capture_default_str();
  sub->add_option("--context", f->context, "Context length in tokens (default: the checkpoint's)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--max-tokens", f->max_tokens,
                  "Generation limit for requests that set none (clipped to the context end; 0: the context end)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_option("--temperature", f->temperature, "Default temperature (default: the checkpoint's)")
      ->check(CLI::Range(0.0, 2.0));
  sub->add_option("--top-p", f->top_p, "Default top-p (default: the checkpoint's)")->check(CLI::Range(0.0, 1.0));
  sub->add_option("--top-k", f->top_k, "Default top-k, 0 for off (default: the checkpoint's)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--min-p", f->min_p, "Default min-p (default: the checkpoint's)")->check(CLI::Range(0.0, 1.0));
  sub->add_option("--backend", f->backend, "Compute backend")
      ->check(CLI::IsMember({"auto", "mlx", "cuda"}))
      ->capture_default_str();
  sub->add_option("--tp", f->tp,
                  "Tensor-parallel ranks: each holds a part of every layer's heads and features. CUDA: one device "
                  "each, partial sums over NCCL; MLX: the ranks run in turn on the CPU (a check of the split, not "
                  "faster)")
      ->capture_default_str()
      ->check(CLI::Range(1, 8));
  sub->add_option("--api-key", f->api_keys,
                  "Require 'Authorization: Bearer KEY' on /v1/* (repeatable; /health stays open)")
      ->allow_extra_args(false);
  sub->add_option("--drafter", f->drafter,
                  "Draft source for exact speculative decoding: copies (context copies), mtp (the checkpoint's MTP "
                  "head), auto (mtp where the checkpoint has one, else copies) or none")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "none", "copies", "mtp"}));
  sub->add_option("--max-drafts", f->max_drafts, "Most tokens drafted per round (the load-time row check may lower it)")
      ->capture_default_str()
      ->check(CLI::Range(0, 15));
  sub->add_option("--parallel", f->parallel,
                  "Streams decoded at once: N, or auto (4 on MLX, 16 on CUDA); 1 serves one request at a time")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto"}) | (CLI::TypeValidator<int>() & CLI::Range(1, 256)));
  sub->add_option("--decode-share", f->decode_share,
                  "Share of the time running replies keep decoding while new prompts prefill")
      ->capture_default_str()
      ->check(CLI::Range(0.05, 0.95));
  sub->add_option("--max-queue", f->max_queue,
                  "Requests that may wait for memory or a stream slot; beyond, 503 with Retry-After")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  sub->add_option("--header-timeout", f->header_timeout,
                  "Seconds a client has to send a request's headers, from its first byte (or from connecting)")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  sub->add_option("--timeout", f->timeout,
                  "Seconds the server waits for more of a request's body, or for a client to take more of a reply")
      ->capture_default_str()
      ->check(CLI::Range(1, 86400));
  sub->add_option("--keep-alive", f->keep_alive, "Seconds an idle connection stays open between requests")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  sub->add_option("--max-idle-connections", f->max_idle_connections,
                  "Idle connections kept open at once (beyond, the oldest is closed; at most the descriptor "
                  "limit less 256)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  sub->add_option("--cors-origin", f->cors_origins,
                  "Let browser pages from ORIGIN call the API (e.g. http://localhost:3000; * for any; "
                  "repeatable; default: none)")
      ->allow_extra_args(false);
  sub->add_option("--prompt-cache-gib", f->prompt_cache_gib,
                  "Memory for retained prompt prefixes, so that a conversation's next turn prefills only its new "
                  "tokens (0: off; default: a quarter of the room beside the weights, at most 16 GiB, counted in "
                  "the memory budget; on CUDA off unless given, and held in device memory)")
      ->check(CLI::Range(0.0, 4096.0));
  sub->add_option("--snapshot-dir", f->snapshot_dir,
                  "Directory of prompt-prefix snapshots that survive restarts (none: off; default: "
                  "~/.cache/tensorfold/prefix-snapshots/MODEL-HASH, or under $XDG_CACHE_HOME)");
  sub->add_option("--max-snapshot-gib", f->max_snapshot_gib,
                  "Disk the snapshot directory may hold; the least recently used snapshots go first")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1048576.0));
  sub->add_option("--precision", f->precision,
                  "How CUDA multiplies prompt rows (prefill chunks) by the weights: bf16 (the default: x rounded "
                  "once to bf16, float32 accumulation, one tensor-core pass) or full (x to 16 significant bits, "
                  "two passes, float32-close). Decode and verify rows are the same in both")
      ->check(CLI::IsMember({"bf16", "full"}));
  auto* vision = sub->add_flag("--vision", f->vision,
                               "Take images in chat requests (OpenAI image_url and input_image parts, Anthropic image "
                               "blocks; data: URLs / base64; PNG, JPEG, WebP): loads the checkpoint's vision tower "
                               "(Qwen3.5/3.8 on the MLX CPU backend; docs/vision.md)");
  sub->add_flag("--vision-urls", f->vision_urls,
                "With --vision: fetch https image URLs (port 443, public addresses only, redirects re-checked, at "
                "most 3; 10 MiB and 10 s an image); without it an image URL is a 400")
      ->needs(vision);
  sub->add_flag("--no-drafts", f->no_drafts, "Decode serially: never draft (same output, bit for bit)");
  sub->add_option(
         "--chat-template", f->chat_template,
         "Jinja chat template file replacing the checkpoint's, or builtin:deepseek_v4 (DeepSeek-V4's encoding)")
      ->check(CLI::ExistingFile | CLI::IsMember({"builtin:deepseek_v4"}));
  sub->add_option("--reasoning", f->reasoning,
                  "Thinking for requests that do not say (chat_template_kwargs.enable_thinking): on or off "
                  "(default: the chat template's own default)")
      ->check(CLI::IsMember({"on", "off"}));
  sub->add_option("--reasoning-budget", f->reasoning_budget,
                  "Close a reply's reasoning block after this many of its tokens, exactly (0: no budget); a "
                  "request's thinking_budget overrides it")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 30));
  return {sub, [f] { return run_serve(*f); }};
}

}  // namespace tf::cli
