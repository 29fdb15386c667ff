#include "backends/tensor_parallel/tp_backend.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <numeric>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "backends/tensor_parallel/tp_state.h"
#include "checkpoint/weight_forms.h"
#include "checkpoint/weight_slice.h"

namespace tf {
namespace {

// A tensor as the ranks hold it: all of it on every rank (the residual stream, norms' outputs, logits), or
// divided: each rank its own heads' (or features') columns. Each rank's tensor sits in a box of its own, which
// that rank's queued ops hold until they have run: so what holds a rank's tensor (which a CUDA tape reads as
// "the caller still needs it") never depends on how far another rank has got.
struct Shards final : Tensor::Impl {
  std::vector<std::shared_ptr<Tensor>> rank;
  bool divided = false;
};

// A weight as the ranks hold it: each rank's part (or copy) and how it was divided.
struct RankWeights final : Tensor::Impl {
  std::vector<DeviceWeight> rank;
  WeightSplit::Kind kind = WeightSplit::Kind::Whole;
};

// Greedy ids every rank finds from its own copy of the logits (so each rank embeds its own, with no copy
// between them); get() checks that they agree.
class RankIds final : public DeviceIds {
 public:
  explicit RankIds(std::vector<std::shared_ptr<DeviceIds>> ranks) : rank(std::move(ranks)) {}
  std::int64_t rows() const override { return rank.front()->rows(); }
  const std::vector<std::int32_t>& get() override {
    const auto& first = rank.front()->get();
    for (std::size_t r = 1; r < rank.size(); ++r)
      if (rank[r]->get() != first)
        throw std::runtime_error("tensor parallel: rank " + std::to_string(r) + "'s greedy ids differ from rank 0's");
    return first;
  }
  std::vector<std::shared_ptr<DeviceIds>> rank;
};

std::size_t held_bytes(const DeviceWeight& w) {
  if (w.bytes != 0) return w.bytes;
  const auto elems = static_cast<std::size_t>(w.rows * w.cols);
  if (!w.quantized()) return elems * 4;
  return elems * static_cast<std::size_t>(w.bits) / 8 + elems / static_cast<std::size_t>(w.group_size) * 8;
}

// Rank r's tensor of t, and rank r's part of w.
const Tensor& rank_of(const Tensor& t, std::size_t r) { return *static_cast<const Shards&>(*t.impl()).rank[r]; }
const DeviceWeight& at(const DeviceWeight& w, std::size_t r) {
  return static_cast<const RankWeights&>(*w.data.impl()).rank[r];
}

// The runs with rank r's stores in place of the streams'.
std::vector<StreamRows> rank_runs(std::span<const StreamRows> runs, std::size_t r) {
  std::vector<StreamRows> out(runs.begin(), runs.end());
  for (auto& run : out) {
    if (run.cache != nullptr) run.cache = dynamic_cast<RankStates<KvCache>&>(*run.cache).rank(r);
    if (run.recurrent != nullptr) run.recurrent = dynamic_cast<RankStates<RecurrentState>&>(*run.recurrent).rank(r);
  }
  return out;
}

class TpBackend final : public Backend {
 public:
  TpBackend(std::vector<std::unique_ptr<Backend>> ranks, std::unique_ptr<Collective> collective, bool shared_memory)
      : collective_(std::move(collective)), ranks_(std::move(ranks)), shared_memory_(shared_memory) {
    // One rank is allowed: the benchmarks time the tensor-parallel path itself against the plain backend.
    if (ranks_.empty() || !collective_) throw std::logic_error("tensor parallel: ranks and a collective");
    for (const auto& b : ranks_) raw_.push_back(b.get());
    n_ = static_cast<int>(ranks_.size());
    apart_ = collective_->apart();
    queue_.resize(ranks_.size());
  }
  ~TpBackend() override {
    try {
      drain();
    } catch (...) {
    }
  }

  std::string name() const override { return ranks_.front()->name(); }
  const std::vector<Backend*>& ranks() const { return raw_; }

  DeviceWeight upload(const HostWeight& w) override { return upload_split(w, {}); }

  DeviceWeight upload_split(const HostWeight& given, const WeightSplit& split) override {
    std::vector<DeviceWeight> parts;
    for (std::size_t r = 0; r < ranks_.size(); ++r)
      parts.push_back(ranks_[r]->upload(part_of(given, split, static_cast<int>(r))));
    return rank_weight(std::move(parts), split.kind, given.rows, given.cols);
  }

  std::unique_ptr<KvCache> new_kv_cache(int layers, int kv_heads, int head_dim) override {
    std::vector<std::unique_ptr<KvCache>> parts;
    for (auto& b : ranks_) parts.push_back(b->new_kv_cache(layers, part(kv_heads, "key/value heads"), head_dim));
    return std::make_unique<RankStates<KvCache>>(std::move(parts), [this] { drain(); });
  }
  bool has_linear_attention() const override {
    return std::all_of(ranks_.begin(), ranks_.end(), [](const auto& b) { return b->has_linear_attention(); });
  }
  std::unique_ptr<RecurrentState> new_recurrent_state(int layers, const GatedDeltaSpec& spec) override {
    std::vector<std::unique_ptr<RecurrentState>> parts;
    for (auto& b : ranks_) parts.push_back(b->new_recurrent_state(layers, rank_spec(spec)));
    return std::make_unique<RankStates<RecurrentState>>(std::move(parts), [this] { drain(); });
  }

  // ---- ops: each rank's own, run now (ranks in turn) or queued for its thread (apart). An op's function gets
  // rank r's input tensors (`in`, in the order given to each()) and holds no tensor itself.
  Tensor embed(const DeviceWeight& table, std::span<const std::int32_t> ids) override {
    return each(false, {},
                [table, ids = std::vector<std::int32_t>(ids.begin(), ids.end())](
                    Backend& b, std::size_t r, const Ins&) { return b.embed(at(table, r), ids); });
  }
  Tensor rms_norm(const Tensor& x, const DeviceWeight& weight, float eps) override {
    whole(x, "rms_norm");
    return each(false, {x}, [weight, eps](Backend& b, std::size_t r, const Ins& in) {
      return b.rms_norm(in[0], at(weight, r), eps);
    });
  }
  Tensor linear(const Tensor& x, const DeviceWeight& w) override {
    const bool d = shards(x).divided;
    const WeightSplit::Kind kind = parts(w).kind;
    if (kind == WeightSplit::Kind::Inputs) {
      if (!d) throw std::logic_error("tensor parallel: a weight divided by its inputs times an undivided x");
      const std::int64_t cols = w.rows;
      if (apart_)
        return each(false, {x}, [w, cols, c = collective_.get()](Backend& b, std::size_t r, const Ins& in) {
          return c->all_reduce_rank(r, b, b.linear(in[0], at(w, r)), cols);
        });
      std::vector<Tensor> partial;
      for (std::size_t r = 0; r < ranks_.size(); ++r) partial.push_back(ranks_[r]->linear(rank_of(x, r), at(w, r)));
      auto out = std::make_shared<Shards>();
      for (Tensor& t : collective_->all_reduce(raw_, partial, cols))
        out->rank.push_back(std::make_shared<Tensor>(std::move(t)));
      return Tensor(std::move(out));
    }
    if (d) throw std::logic_error("tensor parallel: a divided x times a weight not divided by its inputs");
    return each(kind == WeightSplit::Kind::Outputs, {x},
                [w](Backend& b, std::size_t r, const Ins& in) { return b.linear(in[0], at(w, r)); });
  }
  Tensor add(const Tensor& x, const Tensor& y) override {
    return each(alike(x, y, "add"), {x, y}, [](Backend& b, std::size_t, const Ins& in) { return b.add(in[0], in[1]); });
  }
  Tensor swiglu(const Tensor& gate, const Tensor& up) override {
    return each(alike(gate, up, "swiglu"), {gate, up},
                [](Backend& b, std::size_t, const Ins& in) { return b.swiglu(in[0], in[1]); });
  }
  Tensor rms_norm_heads(const Tensor& x, const DeviceWeight& weight, int heads, float eps) override {
    const bool d = shards(x).divided;
    const int h = d ? part(heads, "heads") : heads;
    return each(d, {x}, [weight, h, eps](Backend& b, std::size_t r, const Ins& in) {
      return b.rms_norm_heads(in[0], at(weight, r), h, eps);
    });
  }
  Tensor head_columns(const Tensor& x, int heads, int block, int offset, int width) override {
    const bool d = shards(x).divided;
    const int h = d ? part(heads, "heads") : heads;
    return each(d, {x}, [h, block, offset, width](Backend& b, std::size_t, const Ins& in) {
      return b.head_columns(in[0], h, block, offset, width);
    });
  }
  Tensor sigmoid_gate(const Tensor& x, const Tensor& gate) override {
    return each(alike(x, gate, "sigmoid_gate"), {x, gate},
                [](Backend& b, std::size_t, const Ins& in) { return b.sigmoid_gate(in[0], in[1]); });
  }
  Tensor from_host(std::span<const float> values, std::int64_t rows, std::int64_t cols) override {
    return each(false, {},
                [v = std::vector<float>(values.begin(), values.end()), rows, cols](
                    Backend& b, std::size_t, const Ins&) { return b.from_host(v, rows, cols); });
  }
  Tensor concat_columns(const Tensor& x, const Tensor& y) override {
    whole(x, "concat_columns");
    whole(y, "concat_columns");
    return each(false, {x, y}, [](Backend& b, std::size_t, const Ins& in) { return b.concat_columns(in[0], in[1]); });
  }
  Tensor gated_delta(std::span<const StreamRows> runs, int layer, const Tensor& qkv, const Tensor& a, const Tensor& bt,
                     const DeviceWeight& conv_weight, const DeviceWeight& a_log, const DeviceWeight& dt_bias,
                     const GatedDeltaSpec& spec) override {
    for (const Tensor* t : {&qkv, &a, &bt}) divided(*t, "gated_delta");
    return each(true, {qkv, a, bt},
                [rs = std::vector<StreamRows>(runs.begin(), runs.end()), layer, conv_weight, a_log, dt_bias,
                 mine = rank_spec(spec)](Backend& b, std::size_t r, const Ins& in) {
                  return b.gated_delta(rank_runs(rs, r), layer, in[0], in[1], in[2], at(conv_weight, r), at(a_log, r),
                                       at(dt_bias, r), mine);
                });
  }
  Tensor rms_norm_gated(const Tensor& x, const DeviceWeight& weight, const Tensor& z, int heads, float eps) override {
    const bool d = alike(x, z, "rms_norm_gated");
    const int h = d ? part(heads, "value heads") : heads;
    return each(d, {x, z}, [weight, h, eps](Backend& b, std::size_t r, const Ins& in) {
      return b.rms_norm_gated(in[0], at(weight, r), in[1], h, eps);
    });
  }
  Tensor rope(const Tensor& x, int heads, int head_dim, std::span<const StreamRows> runs,
              const RopeSpec& spec) override {
    const bool d = shards(x).divided;
    const int h = d ? part(heads, "heads") : heads;
    return each(
        d, {x},
        [h, head_dim, rs = std::vector<StreamRows>(runs.begin(), runs.end()), spec](
            Backend& b, std::size_t r, const Ins& in) { return b.rope(in[0], h, head_dim, rank_runs(rs, r), spec); });
  }
  Tensor attend(std::span<const StreamRows> runs, int layer, const Tensor& q, const Tensor& k, const Tensor& v,
                const AttentionSpec& spec) override {
    for (const Tensor* t : {&q, &k, &v}) divided(*t, "attend");
    AttentionSpec mine = spec;
    mine.heads = part(spec.heads, "heads");
    mine.kv_heads = part(spec.kv_heads, "key/value heads");
    return each(true, {q, k, v},
                [rs = std::vector<StreamRows>(runs.begin(), runs.end()), layer, mine](Backend& b, std::size_t r,
                                                                                      const Ins& in) {
                  return b.attend(rank_runs(rs, r), layer, in[0], in[1], in[2], mine);
                });
  }
  std::int64_t invariant_rows() const override {
    std::int64_t n = ranks_.front()->invariant_rows();
    for (const auto& b : ranks_) n = std::min(n, b->invariant_rows());
    return n;
  }
  // Every rank computes its part of a prompt row the same way (set before the ranks run anything).
  bool has_prompt_precision() const override { return ranks_.front()->has_prompt_precision(); }
  void set_prompt_precision(PromptPrecision p) override {
    for (auto& b : ranks_) b->set_prompt_precision(p);
  }
  PromptPrecision prompt_precision() const override { return ranks_.front()->prompt_precision(); }
  Tensor last_rows(const Tensor& x, std::int64_t n) override {
    return each(shards(x).divided, {x}, [n](Backend& b, std::size_t, const Ins& in) { return b.last_rows(in[0], n); });
  }

  // ---- results: every rank runs what is queued for it and evaluates its copy (together: a rank's sums wait
  // for the others'), and every copy must equal rank 0's bit for bit: the check that the ranks stay in step.
  std::vector<float> to_host(const Tensor& x) override {
    auto out = on_every_rank(x, "to_host", [](Backend& b, const Tensor& t) { return b.to_host(t); });
    for (std::size_t r = 1; r < out.size(); ++r)
      if (out[r].size() != out[0].size() || std::memcmp(out[r].data(), out[0].data(), out[0].size() * 4) != 0)
        throw std::runtime_error("tensor parallel: rank " + std::to_string(r) + "'s values differ from rank 0's");
    return std::move(out[0]);
  }
  bool has_argmax_rows() const override {
    return std::all_of(ranks_.begin(), ranks_.end(), [](const auto& b) { return b->has_argmax_rows(); });
  }
  std::vector<std::int32_t> argmax_rows(const Tensor& x) override {
    auto out = on_every_rank(x, "argmax_rows", [](Backend& b, const Tensor& t) { return b.argmax_rows(t); });
    for (std::size_t r = 1; r < out.size(); ++r)
      if (out[r] != out[0])
        throw std::runtime_error("tensor parallel: rank " + std::to_string(r) + "'s greedy ids differ from rank 0's");
    return std::move(out[0]);
  }
  bool has_device_ids() const override {
    return std::all_of(ranks_.begin(), ranks_.end(), [](const auto& b) { return b->has_device_ids(); });
  }
  std::shared_ptr<DeviceIds> argmax_rows_async(const Tensor& x) override {
    return std::make_shared<RankIds>(
        on_every_rank(x, "argmax_rows_async", [](Backend& b, const Tensor& t) { return b.argmax_rows_async(t); }));
  }
  Tensor embed(const DeviceWeight& table, const std::shared_ptr<DeviceIds>& ids) override {
    auto mine = std::dynamic_pointer_cast<RankIds>(ids);
    if (!mine) throw std::logic_error("tensor parallel: device ids of another backend");
    return each(false, {},
                [table, mine](Backend& b, std::size_t r, const Ins&) { return b.embed(at(table, r), mine->rank[r]); });
  }
  void release_cached_memory() override {
    drain();
    for (auto& b : ranks_) b->release_cached_memory();
  }
  // Weights and streams are counted over every rank (their bytes are the sum of the ranks'), so the budget is
  // the sum of the ranks' memories, or one memory where they share it.
  std::size_t memory_budget_bytes() const override {
    if (shared_memory_) return ranks_.front()->memory_budget_bytes();
    std::size_t n = 0;
    for (const auto& b : ranks_) n += b->memory_budget_bytes();
    return n;
  }

 private:
  using Ins = std::vector<Tensor>;
  using RankOp = std::function<Tensor(Backend&, std::size_t, const Ins&)>;
  static std::size_t idx(int r) { return static_cast<std::size_t>(r); }

  // A tensor with each rank's f(rank, r, rank r's inputs): computed now (in turn) or queued for each rank's
  // thread (apart), where the queued op holds only its rank's boxes of the inputs and of the output.
  Tensor each(bool divided, std::initializer_list<Tensor> inputs, RankOp f) {
    auto out = std::make_shared<Shards>();
    out->divided = divided;
    for (std::size_t r = 0; r < ranks_.size(); ++r) out->rank.push_back(std::make_shared<Tensor>());
    auto shared = std::make_shared<const RankOp>(std::move(f));
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      std::vector<std::shared_ptr<Tensor>> in;
      for (const Tensor& t : inputs) in.push_back(shards(t).rank[r]);
      auto run = [in = std::move(in), box = out->rank[r], shared](Backend& b, std::size_t rr) {
        Ins values;
        for (const auto& i : in) values.push_back(*i);
        *box = (*shared)(b, rr, values);
      };
      if (apart_)
        queue_[r].push_back(std::move(run));
      else
        run(*ranks_[r], r);
    }
    return Tensor(std::move(out));
  }
  // f(rank, its copy of x) on every rank, after what is queued for it (together: a rank's sums wait for the
  // others'); each rank's result, in rank order.
  template <class F>
  std::vector<std::invoke_result_t<F, Backend&, const Tensor&>> on_every_rank(const Tensor& x, const char* op, F f) {
    whole(x, op);
    std::vector<std::invoke_result_t<F, Backend&, const Tensor&>> out(ranks_.size());
    collective_->each_rank(n_, [&](int r) {
      run_queue(idx(r));
      out[idx(r)] = f(*ranks_[idx(r)], rank_of(x, idx(r)));
    });
    return out;
  }
  // Runs rank r's queued ops (on the thread that runs rank r), each let go of as soon as it has run.
  void run_queue(std::size_t r) {
    auto ops = std::move(queue_[r]);
    queue_[r].clear();
    for (auto& op : ops) {
      op(*ranks_[r], r);
      op = nullptr;
    }
  }
  // Runs every rank's queued ops, each on its thread.
  void drain() {
    if (!apart_) return;
    if (std::all_of(queue_.begin(), queue_.end(), [](const auto& q) { return q.empty(); })) return;
    collective_->each_rank(n_, [&](int r) { run_queue(idx(r)); });
  }

  // count / ranks, refused where the ranks would not hold whole heads alike.
  int part(int count, const char* what) const {
    if (count % n_ != 0)
      throw std::invalid_argument("tensor parallel: " + std::to_string(count) + " " + what + " do not divide among " +
                                  std::to_string(n_) + " ranks");
    return count / n_;
  }
  GatedDeltaSpec rank_spec(const GatedDeltaSpec& spec) const {
    // A rank holds consecutive value heads with their key heads, which tiled value heads do not keep together.
    if (spec.tiled_value_heads)
      throw std::invalid_argument("tensor parallel: Gated DeltaNet value heads tiled over the key heads do not divide");
    GatedDeltaSpec s = spec;
    s.k_heads = part(spec.k_heads, "key heads");
    s.v_heads = part(spec.v_heads, "value heads");
    return s;
  }

  // Rank r's part of `w` as `split` divides it.
  HostWeight part_of(const HostWeight& w, const WeightSplit& split, int r) const {
    using Kind = WeightSplit::Kind;
    if (split.kind == Kind::Whole) return w;
    if (split.kind == Kind::Inputs) {
      if (w.shape.size() == 1) throw std::logic_error("tensor parallel: a vector divided by its inputs");
      if (w.cols % n_ != 0)
        throw std::invalid_argument("cannot divide tensor '" + w.name + "' among " + std::to_string(n_) +
                                    " ranks: " + std::to_string(w.cols) + " columns");
      const std::int64_t c = w.cols / n_;
      if (w.group_size == 0 || c % w.group_size == 0) return take_columns(w, r * c, (r + 1) * c);
      // A cut inside a group: GGUF blocks are cut in their portable (affine or dense) form; affine groups are
      // cut into smaller groups of the same scale and bias (the same values), down to 32.
      const HostWeight portable = w.ggml_blocks() ? portable_weight(w) : w;
      if (portable.bits == 0 || c % portable.group_size == 0) return take_columns(portable, r * c, (r + 1) * c);
      const auto group = static_cast<int>(std::gcd<std::int64_t>(c, portable.group_size));
      if (group < 32)
        throw std::invalid_argument("cannot divide tensor '" + w.name + "' among " + std::to_string(n_) +
                                    " ranks: " + std::to_string(c) + " columns each, groups of " +
                                    std::to_string(portable.group_size));
      return take_columns(regroup(portable, group), r * c, (r + 1) * c);
    }
    const std::int64_t total = w.shape.size() == 1 ? w.cols : w.rows;
    std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
    std::int64_t start = 0;
    for (const auto& sec : split.sections) {
      const std::int64_t rows = sec.rows == 0 ? total : sec.rows;
      if (rows % (sec.unit * n_) != 0)
        throw std::invalid_argument("cannot divide tensor '" + w.name + "' among " + std::to_string(n_) +
                                    " ranks: " + std::to_string(rows / std::max<std::int64_t>(sec.unit, 1)) +
                                    " heads of " + std::to_string(sec.unit) + " rows");
      const std::int64_t p = rows / n_;
      ranges.emplace_back(start + r * p, start + (r + 1) * p);
      start += rows;
    }
    if (start != total) throw std::logic_error("tensor parallel: the sections of '" + w.name + "' miss rows");
    return take_rows(w, ranges);
  }

  const Shards& shards(const Tensor& t) const {
    const auto* s = dynamic_cast<const Shards*>(t.impl());
    if (s == nullptr) throw std::logic_error("tensor parallel: a tensor of another backend");
    return *s;
  }
  void whole(const Tensor& t, const char* op) const {
    if (shards(t).divided) throw std::logic_error(std::string("tensor parallel: ") + op + " of a divided tensor");
  }
  void divided(const Tensor& t, const char* op) const {
    if (!shards(t).divided) throw std::logic_error(std::string("tensor parallel: ") + op + " of an undivided tensor");
  }
  // Whether both are divided (an error where one is and the other is not).
  bool alike(const Tensor& a, const Tensor& b, const char* op) const {
    const bool d = shards(a).divided;
    if (d != shards(b).divided)
      throw std::logic_error(std::string("tensor parallel: ") + op + " of a divided and an undivided tensor");
    return d;
  }
  const RankWeights& parts(const DeviceWeight& w) const {
    const auto* p = dynamic_cast<const RankWeights*>(w.data.impl());
    if (p == nullptr) throw std::logic_error("tensor parallel: a weight of another backend");
    return *p;
  }

  // The collective first: the ranks (their graphs, which may hold the collective's sums) go before it does.
  std::unique_ptr<Collective> collective_;
  std::vector<std::unique_ptr<Backend>> ranks_;
  std::vector<Backend*> raw_;
  bool shared_memory_ = false;
  int n_ = 0;
  bool apart_ = false;
  // Apart: each rank's ops recorded but not yet run, in order (run on its thread by to_host and the like).
  std::vector<std::vector<std::function<void(Backend&, std::size_t)>>> queue_;
};

}  // namespace

DeviceWeight rank_weight(std::vector<DeviceWeight> parts, WeightSplit::Kind kind, std::int64_t rows,
                         std::int64_t cols) {
  if (parts.empty()) throw std::logic_error("rank_weight: no parts");
  auto held = std::make_shared<RankWeights>();
  held->kind = kind;
  DeviceWeight d;
  d.bits = parts.front().bits;
  d.group_size = parts.front().group_size;
  d.rows = rows;
  d.cols = cols;
  for (const auto& p : parts) d.bytes += held_bytes(p);
  held->rank = std::move(parts);
  d.data = Tensor(std::move(held));
  return d;
}

std::vector<Backend*> tensor_parallel_ranks(Backend& tp) {
  auto* mine = dynamic_cast<TpBackend*>(&tp);
  if (mine == nullptr) throw std::invalid_argument("tensor_parallel_ranks: not a tensor-parallel backend");
  return mine->ranks();
}

std::unique_ptr<Backend> make_tensor_parallel_backend(std::vector<std::unique_ptr<Backend>> ranks,
                                                      std::unique_ptr<Collective> collective, bool shared_memory) {
  return std::make_unique<TpBackend>(std::move(ranks), std::move(collective), shared_memory);
}

}  // namespace tf
