#include "engine/engine.h"

#include <fmt/format.h>
#include <malloc.h>

#include <cstdio>
#include <cstdlib>

#include <algorithm>
#include <filesystem>

#include "backends/backend.h"
#include "backends/compiled_backends.h"
#include "checkpoint/checkpoint_error.h"
#include "checkpoint/gguf.h"
#include "checkpoint/hf_checkpoint.h"
#include "engine/row_check.h"
#include "text/template/chat_template.h"
#include "text/tokenizer/tokenizer.h"
#ifdef TENSORFOLD_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#endif

namespace tf {
namespace fs = std::filesystem;

namespace {

double gib(std::size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }

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

// The tokenizer's incremental decoder as the scheduler's per-stream text.
class TokenizerText final : public TokenText {
 public:
  explicit TokenizerText(IncrementalDecoder d) : d_(std::move(d)) {}
  std::string push(std::int32_t token) override { return d_.push(token); }
  std::string flush() override { return d_.flush(); }

 private:
  IncrementalDecoder d_;
};

}  // namespace

Engine::Engine(const EngineOptions& o) {
  backend_ = make_backend(o.backend, o.tp);
  tp_ = o.tp;
  if (backend_->has_prompt_precision())
    backend_->set_prompt_precision(o.prompt_precision.value_or(PromptPrecision::Bf16));
  else if (o.prompt_precision)
    throw std::runtime_error("--precision chooses how CUDA computes prompt rows; the " + backend_->name() +
                             " backend has no such choice");
  model_ = load_model(o.model_path, *backend_);
  if (o.vision) {
    image_encoder_ = load_image_encoder(o.model_path, *backend_);
    if (!image_encoder_)
      throw std::runtime_error("--vision: " + o.model_path +
                               " has no vision tower this server reads (config.json vision_config of a qwen3_5 "
                               "checkpoint in Hugging Face's layout)");
  }
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
  if (o.drafter != "auto" && o.drafter != "none" && o.drafter != "copies" && o.drafter != "mtp")
    throw std::runtime_error("unknown drafter '" + o.drafter + "' (auto, none, copies, mtp)");
  const bool has_mtp = model_->draft_head() != nullptr;
  if (o.drafter == "mtp" && !has_mtp)
    throw std::runtime_error("--drafter mtp: " + o.model_path +
                             " has no MTP head (no mtp.* weights); use --drafter "
                             "copies or auto");
  drafter_ = o.drafter == "auto" ? (has_mtp ? "mtp" : "copies") : o.drafter;
  const int parallel = o.parallel > 0 ? o.parallel : (backend_->name() == "cuda" ? 16 : 4);
  // Serve only the verify widths whose logits equal serial decoding bit for bit, and share rounds of several
  // streams in one forward pass only where every row of a shared round equals serial decoding.
  const int window = drafter_ != "none" && o.max_drafts > 0 ? 1 + o.max_drafts : 0;
  const std::int64_t shared = parallel > 1 ? model_->shared_round_rows() : 0;
  if (window >= 2 || shared >= 2) row_check_ = check_rows(*model_, window, shared);
  if (window >= 2) {
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
  SchedulerOptions so;
  so.parallel = parallel;
  so.decode_share = o.decode_share;
  so.max_queue = o.max_queue;
  so.context = context_;
  so.eos = eos_ids_;
  so.max_drafts = max_drafts_;
  so.full_windows = full_windows_;
  so.mtp_drafts = drafter_ == "mtp" && max_drafts_ > 0;
  so.memory = plan_memory();
  so.shared_rows = row_check_.shared_rows;
  so.plan = chunk_plan_rule();
  open_prompt_cache(o, so.memory, so.plan);
  so.prompt_cache = prompt_cache_.get();
  // Idle again: freed caches and activations go back to the system (MLX keeps freed buffers for reuse, and
  // glibc keeps freed heap in its arenas), so that a server's resident memory returns to its idle level.
  Backend* backend = backend_.get();
  so.on_idle = [backend] {
    backend->release_cached_memory();
    malloc_trim(0);
  };
  if (so.memory.weight_bytes > so.memory.budget_bytes)
    throw std::runtime_error(
        fmt::format("the weights ({:.2f} GiB) exceed the memory budget ({:.2f} GiB, {}); raise "
                    "TENSORFOLD_MEMORY_LIMIT_GB or serve a smaller model",
                    gib(so.memory.weight_bytes), gib(so.memory.budget_bytes), so.memory.budget_source));
  if (so.memory.max_tokens_alone() < 2)
    throw std::runtime_error(
        fmt::format("the memory budget ({:.2f} GiB, {}) leaves no room for a stream beside the "
                    "weights ({:.2f} GiB); raise TENSORFOLD_MEMORY_LIMIT_GB",
                    gib(so.memory.budget_bytes), so.memory.budget_source, gib(so.memory.weight_bytes)));
  const Tokenizer* tok = tokenizer_.get();
  scheduler_ = std::make_unique<Scheduler>(*model_, std::move(so), [tok] {
    return std::make_unique<TokenizerText>(tok->incremental_decoder(/*skip_special=*/true));
  });
}

Engine::~Engine() { scheduler_.reset(); }

MemoryPlan Engine::plan_memory() const {
  MemoryPlan m;
  const auto& info = model_->info();
  if (const auto limit = memory_limit_from_env(); limit > 0) {
    m.budget_bytes = limit;
    m.budget_source = "TENSORFOLD_MEMORY_LIMIT_GB";
  } else {
    m.budget_bytes = backend_->memory_budget_bytes();
    m.budget_source = backend_->name() == "cuda" ? "free device memory less a 1 GiB floor, plus the weights"
                                                 : "70% of physical memory";
  }
  m.weight_bytes = info.weight_bytes;
  m.mapped_bytes = info.mapped_bytes;
  m.state_bytes_per_token = info.state_bytes_per_token;
  // MTP drafts keep the head's own KV cache beside the stream's, one row per position.
  if (drafter_ == "mtp" && max_drafts_ > 0) m.state_bytes_per_token += model_->draft_head()->state_bytes_per_token();
  m.state_bytes_per_stream = info.state_bytes_per_stream;
  m.workspace_bytes =
      prefill_workspace_bytes(info.prefill_chunk, info.state_bytes_per_token, info.vocab, 1 + max_drafts_);
  if (image_encoder_) {
    m.vision_bytes = image_encoder_->bytes();
    m.vision_workspace_bytes = image_encoder_->workspace_bytes();
    m.image_embedding_bytes = image_encoder_->embedding_bytes();
    m.workspace_bytes += m.image_embedding_bytes;
  }
  return m;
}

int Engine::parallel() const { return scheduler_->options().parallel; }
const MemoryPlan& Engine::memory_plan() const { return scheduler_->options().memory; }

std::string Engine::concurrency_summary() const {
  const auto& o = scheduler_->options();
  const auto& m = o.memory;
  const std::string sharing =
      o.shared_rows > 0 ? fmt::format(
                              "rounds shared: one forward pass of up to {} rows; row check: shared rounds "
                              "equal serial decoding bit for bit",
                              o.shared_rows)
      : row_check_.shared_checked
          ? "one forward per stream: the row check found shared rounds differing from serial decoding"
          : "one forward per stream";
  return fmt::format(
      "up to {} streams at once ({}; decode keeps {:.0f}% of the time while prompts fill), {} more queued\n"
      "  memory    budget {} bytes ({:.2f} GiB, {}); weights {} bytes{}{}; a request reserves {} bytes per token "
      "(prompt plus completion) + {} bytes of fixed state + {} bytes of prefill workspace{}; one request fits up to {} "
      "tokens",
      o.parallel, sharing, o.decode_share * 100.0, o.max_queue, m.budget_bytes, gib(m.budget_bytes), m.budget_source,
      m.weight_bytes,
      m.mapped_bytes > 0 ? fmt::format(" (and {} bytes of tables read from the mapped file as tokens need them, "
                                       "outside the budget)",
                                       m.mapped_bytes)
                         : std::string(),
      m.vision_bytes > 0 ? fmt::format("; vision tower {} bytes + {} bytes to encode the largest image (one at a time)",
                                       m.vision_bytes, m.vision_workspace_bytes)
                         : std::string(),
      m.state_bytes_per_token, m.state_bytes_per_stream, m.workspace_bytes,
      m.image_embedding_bytes > 0 ? fmt::format(" (of which {} bytes for {} visual tokens' embeddings)",
                                                m.image_embedding_bytes, kMaxVisualTokens)
                                  : std::string(),
      std::min(m.max_tokens_alone(), context_));
}

std::string Engine::prompt_precision() const {
  return backend_->has_prompt_precision() ? prompt_precision_name(backend_->prompt_precision()) : "";
}

std::string Engine::prompt_precision_summary() const {
  if (!backend_->has_prompt_precision())
    return fmt::format("the {} backend's own arithmetic, as for decode rows (--precision is a CUDA setting)",
                       backend_->name());
  const auto rows = backend_->invariant_rows();
  if (backend_->prompt_precision() == PromptPrecision::Full)
    return fmt::format(
        "full: prefill chunks (more than {} rows) multiply the exact weights by x to 16 significant "
        "bits (two bf16 terms, float32-close); --precision bf16, the default, takes one pass; decode "
        "and verify rows are the same in both",
        rows);
  return fmt::format(
      "bf16: prefill chunks (more than {} rows) multiply the exact weights by x rounded once to bf16, "
      "float32 accumulation, one tensor-core pass (--precision full: x to 16 significant bits, two "
      "passes); decode and verify rows are the same in both",
      rows);
}

const ModelInfo& Engine::model_info() const { return model_->info(); }
std::string Engine::backend_name() const { return backend_->name(); }
const Tokenizer& Engine::tokenizer() const { return *tokenizer_; }

std::vector<std::int32_t> Engine::tokenize(const std::string& text, bool add_special) const {
  return tokenizer_->encode(text, add_special);
}

std::shared_ptr<GenerationStream> Engine::submit(GenerationRequest request) {
  return scheduler_->submit(std::move(request));
}

std::string Engine::drafting_summary() const {
  if (drafter_ == "none") return "off (--drafter none)";
  if (row_check_.widths.empty()) return "off (--max-drafts 0)";
  std::string failed;
  for (const auto& [width, same] : row_check_.widths)
    if (!same) failed += (failed.empty() ? "" : ", ") + std::to_string(width);
  const std::string source = drafter_ == "mtp" ? "the checkpoint's MTP head" : "context copies";
  std::string s =
      max_drafts_ > 0 ? source + ", up to " + std::to_string(max_drafts_) + " drafts per round" : std::string("off");
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
  EngineStats s = scheduler_->stats();
  if (prompt_cache_) {
    const auto c = prompt_cache_->stats();
    s.prompt_cache = true;
    s.prefix_cache_queries = c.queries;
    s.prefix_cache_hits = c.hits;
    s.prefix_cache_query_tokens = c.query_tokens;
    s.prefix_cache_hit_tokens = c.hit_tokens;
    s.prefix_cache_entries = c.entries;
    s.prefix_cache_bytes = c.bytes;
    s.prefix_cache_budget_bytes = prompt_cache_->options().memory_bytes;
    s.snapshot_files = c.disk_files;
    s.snapshot_bytes = c.disk_bytes;
    s.snapshots_loaded = c.disk_loads;
    s.snapshots_refused = c.disk_refused;
  }
  s.drafter = max_drafts_ > 0 ? drafter_ : "none";
  s.prompt_precision = prompt_precision();
  return s;
}

}  // namespace tf
