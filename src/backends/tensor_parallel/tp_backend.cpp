#include "backends/tensor_parallel/tp_backend.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

#include "backends/tensor_parallel/tp_state.h"
#include "checkpoint/weight_forms.h"
#include "checkpoint/weight_slice.h"

namespace tf {
namespace {

// A tensor as the ranks hold it: all of it on every rank (the residual stream, norms' outputs, logits), or
// divided: each rank its own heads' (or features') columns.
struct Shards final : Tensor::Impl {
  std::vector<Tensor> rank;
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

class TpBackend final : public Backend {
 public:
  TpBackend(std::vector<std::unique_ptr<Backend>> ranks, std::unique_ptr<Collective> collective)
      : ranks_(std::move(ranks)), collective_(std::move(collective)) {
    if (ranks_.size() < 2 || !collective_)
      throw std::logic_error("tensor parallel: two or more ranks and a collective");
    for (const auto& b : ranks_) raw_.push_back(b.get());
    n_ = static_cast<int>(ranks_.size());
  }

  std::string name() const override { return ranks_.front()->name(); }

  DeviceWeight upload(const HostWeight& w) override { return upload_split(w, {}); }

  DeviceWeight upload_split(const HostWeight& given, const WeightSplit& split) override {
    auto held = std::make_shared<RankWeights>();
    held->kind = split.kind;
    for (int r = 0; r < n_; ++r)
      held->rank.push_back(ranks_[static_cast<std::size_t>(r)]->upload(part_of(given, split, r)));
    DeviceWeight d;
    d.bits = held->rank.front().bits;
    d.group_size = held->rank.front().group_size;
    d.rows = given.rows;
    d.cols = given.cols;
    for (const auto& p : held->rank) d.bytes += held_bytes(p);
    d.data = Tensor(std::move(held));
    return d;
  }

  std::unique_ptr<KvCache> new_kv_cache(int layers, int kv_heads, int head_dim) override {
    std::vector<std::unique_ptr<KvCache>> parts;
    for (auto& b : ranks_) parts.push_back(b->new_kv_cache(layers, part(kv_heads, "key/value heads"), head_dim));
    return std::make_unique<RankStates<KvCache>>(std::move(parts));
  }
  bool has_linear_attention() const override {
    return std::all_of(ranks_.begin(), ranks_.end(), [](const auto& b) { return b->has_linear_attention(); });
  }
  std::unique_ptr<RecurrentState> new_recurrent_state(int layers, const GatedDeltaSpec& spec) override {
    std::vector<std::unique_ptr<RecurrentState>> parts;
    for (auto& b : ranks_) parts.push_back(b->new_recurrent_state(layers, rank_spec(spec)));
    return std::make_unique<RankStates<RecurrentState>>(std::move(parts));
  }

  Tensor embed(const DeviceWeight& table, std::span<const std::int32_t> ids) override {
    return each(false, [&](std::size_t r) { return ranks_[r]->embed(at(table, r), ids); });
  }
  Tensor rms_norm(const Tensor& x, const DeviceWeight& weight, float eps) override {
    const Shards& s = whole(x, "rms_norm");
    return each(false, [&](std::size_t r) { return ranks_[r]->rms_norm(s.rank[r], at(weight, r), eps); });
  }
  Tensor linear(const Tensor& x, const DeviceWeight& w) override {
    const Shards& s = shards(x);
    const RankWeights& p = parts(w);
    if (p.kind == WeightSplit::Kind::Inputs) {
      if (!s.divided) throw std::logic_error("tensor parallel: a weight divided by its inputs times an undivided x");
      std::vector<Tensor> partial;
      for (std::size_t r = 0; r < ranks_.size(); ++r) partial.push_back(ranks_[r]->linear(s.rank[r], p.rank[r]));
      auto out = std::make_shared<Shards>();
      out->rank = collective_->all_reduce(raw_, partial, w.rows);
      return Tensor(std::move(out));
    }
    if (s.divided) throw std::logic_error("tensor parallel: a divided x times a weight not divided by its inputs");
    return each(p.kind == WeightSplit::Kind::Outputs,
                [&](std::size_t r) { return ranks_[r]->linear(s.rank[r], p.rank[r]); });
  }
  Tensor add(const Tensor& a, const Tensor& b) override {
    const auto& [sa, sb] = alike(a, b, "add");
    return each(sa.divided, [&](std::size_t r) { return ranks_[r]->add(sa.rank[r], sb.rank[r]); });
  }
  Tensor swiglu(const Tensor& gate, const Tensor& up) override {
    const auto& [sg, su] = alike(gate, up, "swiglu");
    return each(sg.divided, [&](std::size_t r) { return ranks_[r]->swiglu(sg.rank[r], su.rank[r]); });
  }
  Tensor rms_norm_heads(const Tensor& x, const DeviceWeight& weight, int heads, float eps) override {
    const Shards& s = shards(x);
    const int h = s.divided ? part(heads, "heads") : heads;
    return each(s.divided, [&](std::size_t r) { return ranks_[r]->rms_norm_heads(s.rank[r], at(weight, r), h, eps); });
  }
  Tensor head_columns(const Tensor& x, int heads, int block, int offset, int width) override {
    const Shards& s = shards(x);
    const int h = s.divided ? part(heads, "heads") : heads;
    return each(s.divided, [&](std::size_t r) { return ranks_[r]->head_columns(s.rank[r], h, block, offset, width); });
  }
  Tensor sigmoid_gate(const Tensor& x, const Tensor& gate) override {
    const auto& [sx, sg] = alike(x, gate, "sigmoid_gate");
    return each(sx.divided, [&](std::size_t r) { return ranks_[r]->sigmoid_gate(sx.rank[r], sg.rank[r]); });
  }
  Tensor from_host(std::span<const float> values, std::int64_t rows, std::int64_t cols) override {
    return each(false, [&](std::size_t r) { return ranks_[r]->from_host(values, rows, cols); });
  }
  Tensor concat_columns(const Tensor& a, const Tensor& b) override {
    const Shards& sa = whole(a, "concat_columns");
    const Shards& sb = whole(b, "concat_columns");
    return each(false, [&](std::size_t r) { return ranks_[r]->concat_columns(sa.rank[r], sb.rank[r]); });
  }
  Tensor gated_delta(std::span<const StreamRows> runs, int layer, const Tensor& qkv, const Tensor& a, const Tensor& b,
                     const DeviceWeight& conv_weight, const DeviceWeight& a_log, const DeviceWeight& dt_bias,
                     const GatedDeltaSpec& spec) override {
    const Shards& sq = divided(qkv, "gated_delta");
    const Shards& sa = divided(a, "gated_delta");
    const Shards& sb = divided(b, "gated_delta");
    const GatedDeltaSpec mine = rank_spec(spec);
    return each(true, [&](std::size_t r) {
      const auto rr = rank_runs(runs, r);
      return ranks_[r]->gated_delta(rr, layer, sq.rank[r], sa.rank[r], sb.rank[r], at(conv_weight, r), at(a_log, r),
                                    at(dt_bias, r), mine);
    });
  }
  Tensor rms_norm_gated(const Tensor& x, const DeviceWeight& weight, const Tensor& z, int heads, float eps) override {
    const auto& [sx, sz] = alike(x, z, "rms_norm_gated");
    const int h = sx.divided ? part(heads, "value heads") : heads;
    return each(sx.divided, [&](std::size_t r) {
      return ranks_[r]->rms_norm_gated(sx.rank[r], at(weight, r), sz.rank[r], h, eps);
    });
  }
  Tensor rope(const Tensor& x, int heads, int head_dim, std::span<const StreamRows> runs,
              const RopeSpec& spec) override {
    const Shards& s = shards(x);
    const int h = s.divided ? part(heads, "heads") : heads;
    return each(s.divided, [&](std::size_t r) {
      const auto rr = rank_runs(runs, r);
      return ranks_[r]->rope(s.rank[r], h, head_dim, rr, spec);
    });
  }
  Tensor attend(std::span<const StreamRows> runs, int layer, const Tensor& q, const Tensor& k, const Tensor& v,
                const AttentionSpec& spec) override {
    const Shards& sq = divided(q, "attend");
    const Shards& sk = divided(k, "attend");
    const Shards& sv = divided(v, "attend");
    AttentionSpec mine = spec;
    mine.heads = part(spec.heads, "heads");
    mine.kv_heads = part(spec.kv_heads, "key/value heads");
    return each(true, [&](std::size_t r) {
      const auto rr = rank_runs(runs, r);
      return ranks_[r]->attend(rr, layer, sq.rank[r], sk.rank[r], sv.rank[r], mine);
    });
  }
  std::int64_t invariant_rows() const override {
    std::int64_t n = ranks_.front()->invariant_rows();
    for (const auto& b : ranks_) n = std::min(n, b->invariant_rows());
    return n;
  }
  Tensor last_rows(const Tensor& x, std::int64_t n) override {
    const Shards& s = shards(x);
    return each(s.divided, [&](std::size_t r) { return ranks_[r]->last_rows(s.rank[r], n); });
  }
  // Every rank evaluates its copy (together: a rank's collectives wait for the others'), and every copy must
  // equal rank 0's bit for bit: the check that the ranks stay in step.
  std::vector<float> to_host(const Tensor& x) override {
    const Shards& s = whole(x, "to_host");
    std::vector<std::vector<float>> out(ranks_.size());
    collective_->each_rank(n_, [&](int r) { out[idx(r)] = ranks_[idx(r)]->to_host(s.rank[idx(r)]); });
    for (std::size_t r = 1; r < out.size(); ++r)
      if (out[r].size() != out[0].size() || std::memcmp(out[r].data(), out[0].data(), out[0].size() * 4) != 0)
        throw std::runtime_error("tensor parallel: rank " + std::to_string(r) + "'s values differ from rank 0's");
    return std::move(out[0]);
  }
  bool has_argmax_rows() const override {
    return std::all_of(ranks_.begin(), ranks_.end(), [](const auto& b) { return b->has_argmax_rows(); });
  }
  std::vector<std::int32_t> argmax_rows(const Tensor& x) override {
    const Shards& s = whole(x, "argmax_rows");
    std::vector<std::vector<std::int32_t>> out(ranks_.size());
    collective_->each_rank(n_, [&](int r) { out[idx(r)] = ranks_[idx(r)]->argmax_rows(s.rank[idx(r)]); });
    for (std::size_t r = 1; r < out.size(); ++r)
      if (out[r] != out[0])
        throw std::runtime_error("tensor parallel: rank " + std::to_string(r) + "'s greedy ids differ from rank 0's");
    return std::move(out[0]);
  }
  bool has_device_ids() const override {
    return std::all_of(ranks_.begin(), ranks_.end(), [](const auto& b) { return b->has_device_ids(); });
  }
  std::shared_ptr<DeviceIds> argmax_rows_async(const Tensor& x) override {
    const Shards& s = whole(x, "argmax_rows_async");
    std::vector<std::shared_ptr<DeviceIds>> ids(ranks_.size());
    collective_->each_rank(n_, [&](int r) { ids[idx(r)] = ranks_[idx(r)]->argmax_rows_async(s.rank[idx(r)]); });
    return std::make_shared<RankIds>(std::move(ids));
  }
  Tensor embed(const DeviceWeight& table, const std::shared_ptr<DeviceIds>& ids) override {
    const auto* mine = dynamic_cast<const RankIds*>(ids.get());
    if (mine == nullptr) throw std::logic_error("tensor parallel: device ids of another backend");
    return each(false, [&](std::size_t r) { return ranks_[r]->embed(at(table, r), mine->rank[r]); });
  }
  void release_cached_memory() override {
    for (auto& b : ranks_) b->release_cached_memory();
  }
  std::size_t memory_budget_bytes() const override {
    std::size_t n = 0;
    for (const auto& b : ranks_) n += b->memory_budget_bytes();
    return n;
  }

 private:
  static std::size_t idx(int r) { return static_cast<std::size_t>(r); }

  // count / ranks, refused where the ranks would not hold whole heads alike.
  int part(int count, const char* what) const {
    if (count % n_ != 0)
      throw std::invalid_argument("tensor parallel: " + std::to_string(count) + " " + what + " do not divide among " +
                                  std::to_string(n_) + " ranks");
    return count / n_;
  }
  GatedDeltaSpec rank_spec(const GatedDeltaSpec& spec) const {
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
  const Shards& whole(const Tensor& t, const char* op) const {
    const Shards& s = shards(t);
    if (s.divided) throw std::logic_error(std::string("tensor parallel: ") + op + " of a divided tensor");
    return s;
  }
  const Shards& divided(const Tensor& t, const char* op) const {
    const Shards& s = shards(t);
    if (!s.divided) throw std::logic_error(std::string("tensor parallel: ") + op + " of an undivided tensor");
    return s;
  }
  std::pair<const Shards&, const Shards&> alike(const Tensor& a, const Tensor& b, const char* op) const {
    const Shards& sa = shards(a);
    const Shards& sb = shards(b);
    if (sa.divided != sb.divided)
      throw std::logic_error(std::string("tensor parallel: ") + op + " of a divided and an undivided tensor");
    return {sa, sb};
  }
  const RankWeights& parts(const DeviceWeight& w) const {
    const auto* p = dynamic_cast<const RankWeights*>(w.data.impl());
    if (p == nullptr) throw std::logic_error("tensor parallel: a weight of another backend");
    return *p;
  }
  const DeviceWeight& at(const DeviceWeight& w, std::size_t r) const { return parts(w).rank[r]; }

  // The runs with rank r's stores in place of the streams'.
  static std::vector<StreamRows> rank_runs(std::span<const StreamRows> runs, std::size_t r) {
    std::vector<StreamRows> out(runs.begin(), runs.end());
    for (auto& run : out) {
      if (run.cache != nullptr) run.cache = dynamic_cast<RankStates<KvCache>&>(*run.cache).rank(r);
      if (run.recurrent != nullptr) run.recurrent = dynamic_cast<RankStates<RecurrentState>&>(*run.recurrent).rank(r);
    }
    return out;
  }

  template <class F>
  Tensor each(bool divided, F f) {
    auto out = std::make_shared<Shards>();
    out->divided = divided;
    for (std::size_t r = 0; r < ranks_.size(); ++r) out->rank.push_back(f(r));
    return Tensor(std::move(out));
  }

  std::vector<std::unique_ptr<Backend>> ranks_;
  std::vector<Backend*> raw_;
  std::unique_ptr<Collective> collective_;
  int n_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_tensor_parallel_backend(std::vector<std::unique_ptr<Backend>> ranks,
                                                      std::unique_ptr<Collective> collective) {
  return std::make_unique<TpBackend>(std::move(ranks), std::move(collective));
}

}  // namespace tf
