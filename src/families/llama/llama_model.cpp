#include "families/llama/llama_model.h"

#include <cstring>

#include "backends/backend.h"
#include "checkpoint/checkpoint_error.h"
#include "checkpoint/gguf.h"
#include "checkpoint/hf_checkpoint.h"
#include "checkpoint/weight_reader.h"
#include "families/llama/llama_config.h"
#include "families/greedy_ahead.h"
#include "families/llama/llama_forward.h"

namespace tf {
namespace {

// Weight names in the two layouts we read.
struct Names {
  bool gguf;
  std::string embed() const { return gguf ? "token_embd.weight" : "model.embed_tokens.weight"; }
  std::string final_norm() const { return gguf ? "output_norm.weight" : "model.norm.weight"; }
  std::string output() const { return gguf ? "output.weight" : "lm_head.weight"; }
  std::string layer(std::int64_t i, const char* gguf_name, const char* hf_name) const {
    return gguf ? "blk." + std::to_string(i) + "." + gguf_name + ".weight"
                : "model.layers." + std::to_string(i) + "." + hf_name + ".weight";
  }
};

class LlamaState final : public SequenceState {
 public:
  explicit LlamaState(std::unique_ptr<KvCache> kv) : kv_(std::move(kv)) {}
  ~LlamaState() override {
    try {
      ahead_.settle();  // a queued step writes the cache: it runs before the cache goes
    } catch (...) {     // a destructor must not throw; a device error resurfaces at the next CUDA call
    }
  }
  LlamaState(const LlamaState&) = delete;
  LlamaState& operator=(const LlamaState&) = delete;
  std::int64_t length() const override { return kv_->length() - ahead_.ahead(); }
  // To the length itself (a round whose drafts all failed, or that had none) keeps a queued step.
  void truncate(std::int64_t length) override {
    if (length != this->length()) kv().truncate(length);
  }
  std::size_t bytes() const override { return kv_->bytes(); }
  // The cache at the state's length: a greedy step queued ahead is dropped first.
  KvCache& kv() {
    ahead_.drop(*kv_);
    return *kv_;
  }
  // A greedy round that may use or queue a step ahead.
  std::int32_t greedy_round(Backend& b, std::int32_t token, bool queue_next, const GreedyAhead::Record& record) {
    return ahead_.next(b, *kv_, token, queue_next, record);
  }
  KvCache& raw_kv() { return *kv_; }  // for GreedyAhead's records, which run at the cache's own length

 private:
  std::unique_ptr<KvCache> kv_;
  GreedyAhead ahead_;
};

class LlamaModel final : public Model {
 public:
  LlamaModel(const std::string& path, bool is_gguf, Backend& backend) : backend_(backend) {
    std::unique_ptr<WeightReader> reader;
    if (is_gguf) {
      GgufFile f(path);
      cfg_ = llama_config_from_gguf(f.header(), path);
      info_.architecture = f.header().get_string("general.architecture").value_or("llama");
      reader = open_gguf_weights(path);
      if (reader->has("rope_freqs.weight")) {
        auto rf = reader->read("rope_freqs.weight");
        cfg_.rope_freq_factors.resize(rf.data.size() / 4);
        std::memcpy(cfg_.rope_freq_factors.data(), rf.data.data(), rf.data.size());
      }
    } else {
      HfCheckpoint ck(path);
      cfg_ = llama_config_from_json(ck.config(), path);
      info_.architecture = ck.config().value("model_type", std::string("llama"));
      reader = open_hf_weights(path);
    }
    const Names n{is_gguf};
    auto load = [&](const std::string& name) {
      auto w = backend_.upload(reader->read(name));
      info_.weight_bytes += device_weight_bytes(w);
      return w;
    };
    auto& embed = w_.embed;
    embed = load(n.embed());
    if (embed.rows != cfg_.vocab || embed.cols != cfg_.hidden)
      throw CheckpointError(path, "embedding is " + std::to_string(embed.rows) + "x" + std::to_string(embed.cols) +
                                      ", expected vocab x hidden " + std::to_string(cfg_.vocab) + "x" +
                                      std::to_string(cfg_.hidden));
    for (std::int64_t i = 0; i < cfg_.layers; ++i) {
      LlamaLayerWeights l;
      l.attn_norm = load(n.layer(i, "attn_norm", "input_layernorm"));
      l.q = load(n.layer(i, "attn_q", "self_attn.q_proj"));
      l.k = load(n.layer(i, "attn_k", "self_attn.k_proj"));
      l.v = load(n.layer(i, "attn_v", "self_attn.v_proj"));
      l.o = load(n.layer(i, "attn_output", "self_attn.o_proj"));
      l.mlp_norm = load(n.layer(i, "ffn_norm", "post_attention_layernorm"));
      l.gate = load(n.layer(i, "ffn_gate", "mlp.gate_proj"));
      l.up = load(n.layer(i, "ffn_up", "mlp.up_proj"));
      l.down = load(n.layer(i, "ffn_down", "mlp.down_proj"));
      check_shape(path, l.q, cfg_.heads * cfg_.head_dim, cfg_.hidden, i, "q");
      check_shape(path, l.k, cfg_.kv_heads * cfg_.head_dim, cfg_.hidden, i, "k");
      check_shape(path, l.v, cfg_.kv_heads * cfg_.head_dim, cfg_.hidden, i, "v");
      check_shape(path, l.o, cfg_.hidden, cfg_.heads * cfg_.head_dim, i, "o");
      check_shape(path, l.gate, cfg_.ffn, cfg_.hidden, i, "gate");
      check_shape(path, l.up, cfg_.ffn, cfg_.hidden, i, "up");
      check_shape(path, l.down, cfg_.hidden, cfg_.ffn, i, "down");
      w_.layers.push_back(std::move(l));
    }
    w_.final_norm = load(n.final_norm());
    if (!cfg_.tied_embeddings && reader->has(n.output())) {
      w_.output = load(n.output());
    } else {
      w_.output = embed;  // tied: the embedding table is the output projection
    }
    info_.family = "llama";
    info_.vocab = cfg_.vocab;
    info_.context = cfg_.context;
    info_.state_bytes_per_token = static_cast<std::size_t>(2 * cfg_.layers * cfg_.kv_heads * cfg_.head_dim * 4);
    w_.rope.base = cfg_.rope_base;
    w_.rope.interleaved = cfg_.rope_interleaved;
    w_.rope.freq_factors = cfg_.rope_freq_factors;
    w_.attn = llama_attention(cfg_.heads, cfg_.kv_heads, cfg_.head_dim);
    w_.rms_eps = cfg_.rms_eps;
  }

  const ModelInfo& info() const override { return info_; }

  std::unique_ptr<SequenceState> new_state() const override {
    return std::make_unique<LlamaState>(
        backend_.new_kv_cache(static_cast<int>(cfg_.layers), w_.attn.kv_heads, w_.attn.head_dim));
  }

  std::vector<float> forward(SequenceState& state, std::span<const std::int32_t> tokens,
                             std::int64_t logit_rows) override {
    return backend_.to_host(logits(state, tokens, logit_rows));
  }

  bool greedy_on_backend() const override { return backend_.has_argmax_rows(); }
  std::vector<std::int32_t> forward_greedy(SequenceState& state, std::span<const std::int32_t> tokens,
                                           std::int64_t rows) override {
    return backend_.argmax_rows(logits(state, tokens, rows));
  }

  std::int64_t shared_round_rows() const override { return backend_.invariant_rows(); }

  std::vector<ForwardResult> forward_parts(std::span<const ForwardPart> parts) override {
    // Before anything asks a state for its cache (LlamaState::kv() drops a queued step).
    if (parts.size() == 1 && parts[0].greedy_ids && parts[0].tokens.size() == 1 && backend_.has_device_ids())
      return {greedy_round(*parts[0].state, parts[0].tokens[0], parts[0].ahead)};
    std::vector<LlamaPart> lp;
    std::int64_t rows = 0;
    bool any_ids = false, any_logits = false;
    for (const auto& p : parts) {
      lp.push_back({&dynamic_cast<LlamaState&>(*p.state).kv(), p.tokens, nullptr});
      rows += static_cast<std::int64_t>(p.tokens.size());
      (p.greedy_ids ? any_ids : any_logits) = true;
    }
    if (parts.size() < 2 || rows > shared_round_rows() || (any_ids && !greedy_on_backend()))
      return Model::forward_parts(parts);
    for (std::size_t i = 0; i < lp.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (lp[i].cache == lp[j].cache) throw std::invalid_argument("forward_parts: one stream twice in a round");
    const Tensor all = llama_logits(backend_, w_, lp, rows);
    std::vector<std::int32_t> ids;
    std::vector<float> logits;
    if (any_ids) ids = backend_.argmax_rows(all);
    if (any_logits) logits = backend_.to_host(all);
    const auto vocab = static_cast<std::size_t>(cfg_.vocab);
    std::vector<ForwardResult> out(parts.size());
    std::size_t row = 0;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const std::size_t n = parts[i].tokens.size();
      if (parts[i].greedy_ids) out[i].ids.assign(ids.begin() + static_cast<std::ptrdiff_t>(row), ids.begin() + static_cast<std::ptrdiff_t>(row + n));
      else
        out[i].logits.assign(logits.begin() + static_cast<std::ptrdiff_t>(row * vocab),
                             logits.begin() + static_cast<std::ptrdiff_t>((row + n) * vocab));
      row += n;
    }
    return out;
  }

 private:
  // One greedy token through GreedyAhead: a step queued by the last round is used when its token is this
  // one, and with `queue_next` the next step is queued before the token comes back.
  ForwardResult greedy_round(SequenceState& state, std::int32_t token, bool queue_next) {
    auto& st = dynamic_cast<LlamaState&>(state);
    const auto record = [&](std::span<const std::int32_t> tokens, const std::shared_ptr<DeviceIds>& fed) {
      const LlamaPart part{&st.raw_kv(), tokens, fed};
      return llama_logits(backend_, w_, std::span<const LlamaPart>(&part, 1), 1);
    };
    ForwardResult r;
    r.ids.push_back(st.greedy_round(backend_, token, queue_next, record));
    return r;
  }

  // The forward pass of one stream: the logits of the last `logit_rows` positions, left on the backend.
  Tensor logits(SequenceState& state, std::span<const std::int32_t> tokens, std::int64_t logit_rows) {
    const LlamaPart part{&dynamic_cast<LlamaState&>(state).kv(), tokens, nullptr};
    return llama_logits(backend_, w_, std::span<const LlamaPart>(&part, 1), logit_rows);
  }

  static void check_shape(const std::string& path, const DeviceWeight& w, std::int64_t rows, std::int64_t cols,
                          std::int64_t layer, const char* what) {
    if (w.rows != rows || w.cols != cols)
      throw CheckpointError(path, "layer " + std::to_string(layer) + " " + what + " weight is " +
                                      std::to_string(w.rows) + "x" + std::to_string(w.cols) + ", expected " +
                                      std::to_string(rows) + "x" + std::to_string(cols));
  }

  Backend& backend_;
  LlamaConfig cfg_;
  ModelInfo info_;
  LlamaWeights w_;
};

}  // namespace

std::unique_ptr<Model> load_llama(const std::string& path, bool is_gguf, Backend& backend) {
  return std::make_unique<LlamaModel>(path, is_gguf, backend);
}

}  // namespace tf
