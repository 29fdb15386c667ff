#include "engine/engine.h"

#include <cstdio>
#include <cstdlib>

#include <algorithm>
#include <filesystem>

#include "backends/backend.h"
#include "checkpoint/checkpoint_error.h"
#include "checkpoint/gguf.h"
#include "checkpoint/hf_checkpoint.h"
#include "engine/decode_loop.h"
#include "engine/drafting/context_copy.h"
#include "engine/row_check.h"
#include "engine/stop_matcher.h"
#include "text/template/chat_template.h"
#include "text/tokenizer/tokenizer.h"
#ifdef TENSORFOLD_HAVE_MLX
#include "backends/mlx/mlx_backend.h"
#endif
#ifdef TENSORFOLD_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#endif

namespace tf {
namespace fs = std::filesystem;

namespace {

std::unique_ptr<Backend> make_backend(const std::string& name) {
  if (name != "auto" && name != "mlx" && name != "cuda")
    throw std::runtime_error("unknown backend '" + name + "' (auto, mlx, cuda)");
#ifdef TENSORFOLD_HAVE_CUDA
  if (name == "cuda" || (name == "auto" && cuda_device_available())) return make_cuda_backend();
#else
  if (name == "cuda") throw std::runtime_error("this build has no CUDA backend (configure with -DTENSORFOLD_CUDA=ON)");
#endif
#ifdef TENSORFOLD_HAVE_MLX
  return make_mlx_backend();
#else
  throw std::runtime_error("this build has no MLX backend (configure with -DTENSORFOLD_MLX=ON)");
#endif
}

// Sampling defaults the checkpoint ships: GGUF general.sampling.*, or generation_config.json.
SamplingParams checkpoint_sampling(const std::string& path, std::vector<std::int32_t>& extra_eos) {
  SamplingParams p;
  p.temperature = 0.7f;  // what most chat checkpoints recommend when they say nothing
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    const auto gc_path = fs::path(path) / "generation_config.json";
    if (!fs::exists(gc_path)) return p;
    const auto gc = read_json_file(gc_path.string());
    if (!gc.is_object()) return p;
    if (auto it = gc.find("temperature"); it != gc.end() && it->is_number()) p.temperature = it->get<float>();
    if (auto it = gc.find("top_p"); it != gc.end() && it->is_number()) p.top_p = it->get<float>();
    if (auto it = gc.find("top_k"); it != gc.end() && it->is_number_integer()) p.top_k = it->get<int>();
    if (auto it = gc.find("min_p"); it != gc.end() && it->is_number()) p.min_p = it->get<float>();
    if (gc.value("do_sample", true) == false) p.temperature = 0.0f;
    if (auto it = gc.find("eos_token_id"); it != gc.end()) {
      if (it->is_number_integer()) extra_eos.push_back(it->get<std::int32_t>());
      if (it->is_array())
        for (const auto& e : *it)
          if (e.is_number_integer()) extra_eos.push_back(e.get<std::int32_t>());
    }
    return p;
  }
  GgufFile f(path);
  const auto& h = f.header();
  if (auto v = h.get_number("general.sampling.temp")) p.temperature = static_cast<float>(*v);
  if (auto v = h.get_number("general.sampling.top_p")) p.top_p = static_cast<float>(*v);
  if (auto v = h.get_uint("general.sampling.top_k")) p.top_k = static_cast<int>(*v);
  if (auto v = h.get_number("general.sampling.min_p")) p.min_p = static_cast<float>(*v);
  return p;
}

}  // namespace

struct Engine::Job {
  GenerationRequest request;
  std::shared_ptr<GenerationStream> stream;
};

Engine::Engine(const EngineOptions& o) {
  backend_ = make_backend(o.backend);
  model_ = load_model(o.model_path, *backend_);
  tokenizer_ = std::make_unique<Tokenizer>(load_tokenizer(o.model_path));
  load_chat_template(o);
  eos_ids_ = tokenizer_->eog_ids();
  default_sampling_ = checkpoint_sampling(o.model_path, eos_ids_);
  std::sort(eos_ids_.begin(), eos_ids_.end());
  eos_ids_.erase(std::unique(eos_ids_.begin(), eos_ids_.end()), eos_ids_.end());
  if (o.temperature) default_sampling_.temperature = *o.temperature;
  if (o.top_p) default_sampling_.top_p = *o.top_p;
  if (o.top_k) default_sampling_.top_k = *o.top_k;
  if (o.min_p) default_sampling_.min_p = *o.min_p;
  context_ = o.context > 0 ? o.context : model_->info().context;
  if (context_ <= 0) context_ = 4096;
  if (o.drafter != "auto" && o.drafter != "none" && o.drafter != "copies")
    throw std::runtime_error("unknown drafter '" + o.drafter + "' (auto, none, copies)");
  drafter_ = o.drafter == "none" ? "none" : "copies";
  if (drafter_ != "none" && o.max_drafts > 0) {
    // Serve only the verify widths whose logits equal serial decoding bit for bit.
    row_check_ = check_verify_rows(*model_, 1 + o.max_drafts);
    max_drafts_ = row_check_.max_window - 1;
    // Where verify windows were timed, serve the width that verifies the most tokens per unit of time if
    // every draft were right (a backend's row tiles make some widths cheap: on CUDA 8 rows share one pass
    // of the weights, 9 need two); where it costs little more than a decode step, every round drafts the
    // most. Otherwise (not timed) the drafts per round follow recent acceptance.
    const auto& costs = row_check_.costs;
    if (!costs.empty()) {
      int best = 2;
      for (int w = 2; w < 2 + static_cast<int>(costs.size()); ++w)
        if (w / costs[static_cast<std::size_t>(w - 2)] >= best / costs[static_cast<std::size_t>(best - 2)]) best = w;
      max_drafts_ = best - 1;
      full_windows_ = costs[static_cast<std::size_t>(best - 2)] <= kFullWindowCost;
    }
    // TF_DRAFT_FULL_WINDOWS=0 or 1 overrides the choice (for A/B measurements; the output is the same).
    if (const char* v = std::getenv("TF_DRAFT_FULL_WINDOWS"); v != nullptr && (v[0] == '0' || v[0] == '1'))
      full_windows_ = v[0] == '1';
  }
  thread_ = std::thread([this] { worker(); });
}

Engine::~Engine() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (auto& job : queue_) job->stream->cancel();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

const ModelInfo& Engine::model_info() const { return model_->info(); }
std::string Engine::backend_name() const { return backend_->name(); }
const Tokenizer& Engine::tokenizer() const { return *tokenizer_; }

std::vector<std::int32_t> Engine::tokenize(const std::string& text, bool add_special) const {
  return tokenizer_->encode(text, add_special);
}

std::shared_ptr<GenerationStream> Engine::submit(GenerationRequest request) {
  auto job = std::make_unique<Job>();
  job->request = std::move(request);
  job->stream = std::make_shared<GenerationStream>();
  auto stream = job->stream;
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(job));
  }
  cv_.notify_all();
  return stream;
}

std::string Engine::drafting_summary() const {
  if (drafter_ == "none") return "off (--drafter none)";
  if (row_check_.widths.empty()) return "off (--max-drafts 0)";
  std::string failed;
  for (const auto& [width, same] : row_check_.widths)
    if (!same) failed += (failed.empty() ? "" : ", ") + std::to_string(width);
  std::string s = max_drafts_ > 0 ? "context copies, up to " + std::to_string(max_drafts_) + " drafts per round"
                                   : std::string("off");
  s += "; row check: verify windows 2.." + std::to_string(row_check_.widths.back().first);
  s += failed.empty() ? " equal serial decoding bit for bit" : ", widths " + failed + " differ (not served)";
  if (!row_check_.costs.empty() && max_drafts_ > 0) {
    char cost[160];
    std::snprintf(cost, sizeof cost, "; a %d-row verify costs %.2fx a decode step (%d rows: %.2fx)", max_drafts_ + 1,
                  row_check_.costs[static_cast<std::size_t>(max_drafts_ - 1)], row_check_.max_window,
                  row_check_.costs.back());
    s += cost;
    s += full_windows_ ? ", so every round drafts the most" : ", so drafts adapt to acceptance";
  } else if (max_drafts_ > 0) {
    s += "; drafts adapt to acceptance";
  }
  return s;
}

EngineStats Engine::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void Engine::worker() {
  for (;;) {
    std::unique_ptr<Job> job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping with nothing left
      job = std::move(queue_.front());
      queue_.pop_front();
      stats_.busy = true;
    }
    run(*job);
    std::lock_guard lock(mu_);
    stats_.busy = false;
  }
}

void Engine::run(Job& job) {
  const auto& req = job.request;
  GenerationResult result;
  result.prompt_tokens = static_cast<std::int64_t>(req.prompt.size());
  try {
    if (req.prompt.empty()) throw std::invalid_argument("empty prompt");
    if (result.prompt_tokens >= context_) throw std::invalid_argument("prompt does not fit the context");
    auto state = model_->new_state();
    // Prefill on the family's fixed chunk grid: boundaries are a pure function of the token sequence.
    const std::int64_t chunk = std::max<std::int64_t>(1, model_->info().prefill_chunk);
    std::vector<float> logits;
    const std::span<const std::int32_t> prompt(req.prompt);
    for (std::int64_t at = 0; at < result.prompt_tokens; at += chunk) {
      if (job.stream->cancelled()) break;
      const auto n = std::min(chunk, result.prompt_tokens - at);
      logits = model_->forward(*state, prompt.subspan(static_cast<std::size_t>(at), static_cast<std::size_t>(n)), 1);
    }
    std::int64_t budget = context_ - result.prompt_tokens;  // positions left for generated tokens
    if (req.max_tokens > 0) budget = std::min(budget, req.max_tokens);
    auto decoder = tokenizer_->incremental_decoder(/*skip_special=*/true);
    StopMatcher stops(req.stop);
    DecodeSettings settings;
    settings.sampling = req.sampling;
    settings.seed = req.seed ? *req.seed : seed_from_prompt(req.prompt);
    settings.budget = budget;
    settings.eos = eos_ids_;
    settings.max_drafts = req.draft ? max_drafts_ : 0;
    settings.full_windows = full_windows_;
    ContextCopyDrafter copies;
    DecodeCounters counters;
    std::vector<std::int32_t> history = req.prompt;
    if (job.stream->cancelled()) {
      result.finish = FinishReason::Cancelled;
    } else {
      result.finish = decode_stream(
          *model_, *state, std::move(logits), history, settings, settings.max_drafts > 0 ? &copies : nullptr,
          [&](std::int32_t token) {
            job.stream->push(stops.feed(decoder.push(token)));
            return !stops.stopped();
          },
          [&] { return job.stream->cancelled(); }, counters);
    }
    result.completion_tokens = counters.emitted;
    result.token_ids.assign(history.begin() + static_cast<std::ptrdiff_t>(req.prompt.size()), history.end());
    result.drafted = counters.drafted;
    result.accepted = counters.accepted;
    result.rounds = counters.rounds;
    if (result.finish != FinishReason::Cancelled && !stops.stopped()) {
      job.stream->push(stops.feed(decoder.flush()) + stops.flush());
      if (stops.stopped()) result.finish = FinishReason::Stop;
    }
  } catch (const std::exception& e) {
    result.finish = FinishReason::Error;
    result.error = e.what();
  }
  {
    std::lock_guard lock(mu_);
    ++stats_.requests_total;
    stats_.prompt_tokens_total += result.prompt_tokens;
    stats_.completion_tokens_total += result.completion_tokens;
    stats_.drafted_total += result.drafted;
    stats_.accepted_total += result.accepted;
    stats_.rounds_total += result.rounds;
  }
  job.stream->close(std::move(result));
}

}  // namespace tf
