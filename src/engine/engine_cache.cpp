// The engine's prompt caching: the chunk plan's rule from the chat template, the identity snapshot headers
// carry, and the cache itself with its memory and disk bounds.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "backends/backend.h"
#include "engine/engine.h"
#include "tensorfold/version.h"
#include "text/template/chat_template.h"
#include "text/tokenizer/tokenizer.h"
#ifdef TENSORFOLD_HAVE_MLX
#include "backends/mlx/mlx_runtime.h"
#endif
#ifdef TENSORFOLD_HAVE_CUDA
#include "backends/cuda/cuda_runtime_info.h"
#endif

namespace tf {
namespace fs = std::filesystem;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Names, sizes and modification times of the checkpoint's files: a re-downloaded or edited checkpoint is
// another model (hashing gigabytes of weights at every start would cost more than the cache saves).
nlohmann::json checkpoint_files(const std::string& path) {
  nlohmann::json files = nlohmann::json::array();
  std::error_code ec;
  std::vector<fs::path> paths;
  if (fs::is_directory(path, ec)) {
    for (const auto& de : fs::directory_iterator(path, ec))
      if (de.is_regular_file(ec)) paths.push_back(de.path());
  } else {
    paths.push_back(path);
  }
  std::sort(paths.begin(), paths.end());
  for (const auto& p : paths) {
    const auto size = fs::file_size(p, ec);
    const auto mtime = fs::last_write_time(p, ec).time_since_epoch().count();
    files.push_back({p.filename().string(), static_cast<std::uint64_t>(size), static_cast<std::int64_t>(mtime)});
  }
  return files;
}

std::string default_snapshot_root() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const fs::path base =
      xdg != nullptr && *xdg != '\0' ? fs::path(xdg) : fs::path(home != nullptr ? home : ".") / ".cache";
  return (base / "tensorfold" / "prefix-snapshots").string();
}

}  // namespace

ChunkPlanRule Engine::chunk_plan_rule() const {
  ChunkPlanRule rule;
  rule.chunk = std::max<std::int64_t>(1, model_->info().prefill_chunk);
  // The token that opens a message: the first of the generation prompt (the text add_generation_prompt adds
  // after the last message), when it is a special token ("<|im_start|>", "<|start_header_id|>"). A template
  // whose generation prompt starts otherwise gets fixed chunks only.
  try {
    ChatInput in;
    in.messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", "x"}}});
    const std::string without = render_chat(in);
    in.add_generation_prompt = true;
    const std::string with = render_chat(in);
    if (with.size() > without.size() && with.starts_with(without)) {
      const auto ids = tokenizer_->encode(with.substr(without.size()), false);
      if (!ids.empty() && tokenizer_->is_special(ids.front())) rule.message_start = ids.front();
    }
  } catch (const std::exception&) {  // a template that cannot render this: fixed chunks
  }
  return rule;
}

std::string Engine::state_identity(const std::string& model_path, const ChunkPlanRule& rule) const {
  const auto& info = model_->info();
  nlohmann::json id = {{"format", 1},
                       {"model", fs::weakly_canonical(model_path).string()},
                       {"files", checkpoint_files(model_path)},
                       {"family", info.family},
                       {"tensorfold", kVersion},
                       {"backend", backend_->name()},
                       {"tp", tp_},
                       {"plan", rule.identity()},
                       {"dtype", "f32"},
                       {"state_bytes_per_token", info.state_bytes_per_token},
                       {"state_bytes_per_stream", info.state_bytes_per_stream}};
  // Prompt rows' bits depend on it (the kernels' hash below sees it too where the short prefill reaches a weight
  // the prefill GEMM takes; this says it for every model).
  if (backend_->has_prompt_precision()) id["prompt_precision"] = prompt_precision();
#ifdef TENSORFOLD_HAVE_MLX
  if (backend_->name() == "mlx") id["runtime"] = mlx_runtime_version();
#endif
#ifdef TENSORFOLD_HAVE_CUDA
  if (backend_->name() == "cuda") id["runtime"] = "cuda " + cuda_runtime_version();
#endif
  // The kernels' own identity: the bits of a short prefill (one chunk past the row-invariant windows, one
  // inside them) and of the state it leaves. A build whose kernels compute other bits writes other headers,
  // so its snapshots are never restored into this one, nor this one's into it.
  auto state = model_->new_state();
  const std::int64_t vocab = std::max<std::int64_t>(info.vocab, 1);
  std::vector<std::int32_t> tokens(40);
  for (std::size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = static_cast<std::int32_t>((static_cast<std::int64_t>(i) * 7919 + 13) % vocab);
  const auto a = model_->forward(*state, std::span<const std::int32_t>(tokens).first(24), 1);
  const auto b = model_->forward(*state, std::span<const std::int32_t>(tokens).subspan(24), 1);
  const auto bytes = state->snapshot();
  std::uint64_t h = payload_checksum(bytes);
  h = payload_checksum({reinterpret_cast<const std::uint8_t*>(a.data()), a.size() * 4}, h);
  h = payload_checksum({reinterpret_cast<const std::uint8_t*>(b.data()), b.size() * 4}, h);
  id["kernels"] = fmt::format("{:016x}", h);
  return id.dump();
}

void Engine::open_prompt_cache(const EngineOptions& o, MemoryPlan& memory, const ChunkPlanRule& rule) {
  // Entries are state images (StateImage) kept where the streams compute: host memory on MLX, device memory on
  // CUDA; either way they come out of the streams' room, which the memory plan counts.
  // On CUDA the cache is opt-in until the whole GPU suite has run with it on. Its device check
  // (bench/prompt_cache/equality.py) had one 2k-token turn in 30 differ (sessions 24-26); session 26 traced it to
  // a race in the decode attention (cache loads before the PDL wait) that made two fresh servers differ too, and
  // with the loads after the wait every turn was equal (docs/benchmarks.md).
  if (backend_->name() == "cuda" && o.prompt_cache_gib < 0) {
    prompt_cache_off_ = "off by default on CUDA until the GPU suite runs with it on (--prompt-cache-gib N turns it on)";
    return;
  }
  const std::size_t room = memory.stream_room();
  const std::size_t bytes = o.prompt_cache_gib < 0 ? std::min<std::size_t>(std::size_t{16} << 30, room / 4)
                                                   : static_cast<std::size_t>(o.prompt_cache_gib * kGiB);
  if (bytes == 0) {
    prompt_cache_off_ = "off (--prompt-cache-gib 0)";
    return;
  }
  PromptCacheOptions pc;
  pc.memory_bytes = bytes;
  if (o.snapshot_dir != "none" && o.max_snapshot_gib > 0) {
    pc.snapshot_dir = o.snapshot_dir;
    if (pc.snapshot_dir.empty()) {
      // One directory per checkpoint (and rank count: --tp) under the default root, so that two models, or
      // one model on one and on two ranks, served in turn do not refuse (and remove) each other's snapshots.
      auto name = fs::path(o.model_path).filename().string();
      if (tp_ > 1) name += "-tp" + std::to_string(tp_);
      // --precision full's snapshots apart from the default's, likewise (their prompt rows differ).
      if (backend_->has_prompt_precision() && backend_->prompt_precision() != PromptPrecision::Bf16)
        name += "-" + prompt_precision();
      pc.snapshot_dir =
          (fs::path(default_snapshot_root()) /
           fmt::format("{}-{:08x}", name,
                       std::hash<std::string>{}(fs::weakly_canonical(o.model_path).string()) & 0xffffffffu))
              .string();
    }
    pc.disk_bytes = static_cast<std::size_t>(o.max_snapshot_gib * kGiB);
  }
  pc.identity = state_identity(o.model_path, rule);
  memory.prompt_cache_bytes = bytes;
  prompt_cache_ = std::make_unique<PromptCache>(std::move(pc));
}

std::string Engine::prompt_cache_summary() const {
  const auto& plan = scheduler_->options().plan;
  const std::string grid =
      plan.message_start >= 0
          ? fmt::format("prefill cuts at each message start (token {}) and every {} tokens", plan.message_start,
                        plan.chunk)
          : fmt::format("prefill cuts every {} tokens (no message-start token found in the template)", plan.chunk);
  if (!prompt_cache_) return prompt_cache_off_ + "; " + grid;
  const auto& pc = prompt_cache_->options();
  const auto c = prompt_cache_->stats();
  const std::string disk = pc.snapshot_dir.empty()
                               ? std::string("no snapshots")
                               : fmt::format("snapshots in {} (up to {:.2f} GiB; {} found)", pc.snapshot_dir,
                                             static_cast<double>(pc.disk_bytes) / kGiB, c.disk_files);
  // An MTP head's state follows every prompt row's hidden state, which a restored prefix never had
  // (Scheduler::start_prefill): streams it drafts for prefill from the start.
  const std::string mtp = drafter_ == "mtp" && max_drafts_ > 0
                              ? "; not for streams the MTP head drafts for (its state is not in a snapshot: "
                                "\"draft\": false or --drafter copies caches)"
                              : "";
  return fmt::format("retained prefixes up to {:.2f} GiB in memory, {}{}; {}",
                     static_cast<double>(pc.memory_bytes) / kGiB, disk, mtp, grid);
}

}  // namespace tf
