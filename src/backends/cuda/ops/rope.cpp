// Rope: rotary position embedding of each head at each row's position (a dyn value). A rope(q) and a rope(k)
// read only by an attend are fused into it (attend.cpp: the RopeAttend step).
#include <algorithm>

#include "backends/cuda/cuda_launches.h"
#include "backends/cuda/ops/op_descriptor.h"

namespace tf::cuda_internal {
namespace {

OpShape out_shape(const Op& op) { return {op.a->rows, op.a->cols}; }

void put_dyn(const Op& op, DynWriter& dyn, DynRefs& ref) {
  if (!op.mrope.empty()) {
    ref.pos = dyn.put(op.mrope.data(), op.mrope.size() * 8);
    return;
  }
  std::int64_t pos[cuda::kMaxDecodeRows];
  std::vector<std::int64_t> big;
  std::int64_t* p = pos;
  if (op.out->rows > cuda::kMaxDecodeRows) {
    big.resize(static_cast<std::size_t>(op.out->rows));
    p = big.data();
  }
  const auto positions = op.positions();
  std::copy(positions.begin(), positions.end(), p);
  ref.pos = dyn.put(p, static_cast<std::size_t>(op.out->rows) * 8);
}

void launch(const LaunchContext& c, const Step& st) {
  const int i = st.ops.front();
  const Op& op = c.ops[static_cast<std::size_t>(i)];
  const float* a = c.in_ptr(op.a);
  float* out = op.out->ptr;
  const std::int64_t rows = op.out->rows;
  const int heads = op.heads, hd = op.head_dim;
  const auto* pos = reinterpret_cast<const std::int64_t*>(c.dyn_dev + c.dref[static_cast<std::size_t>(i)].pos);
  const float* inv = op.inv_freq;
  const bool il = op.interleaved;
  const int rotary = op.rotary != 0 ? op.rotary : hd;
  const cuda::MropeSections mrope = op.mrope.empty() ? cuda::MropeSections{} : op.mrope_sections;
  c.launches.push_back({[=](cudaStream_t s) { cuda::rope(a, out, rows, heads, hd, rotary, pos, inv, il, s, mrope); }});
}

// M-RoPE takes three positions a row from the dyn block, and its sections.
std::uint64_t signature_word(const Op& op) {
  if (op.mrope.empty()) return 0;
  return 1u | static_cast<std::uint64_t>(op.mrope_sections.h) << 8 |
         static_cast<std::uint64_t>(op.mrope_sections.w) << 24;
}

}  // namespace

constinit const OpDescriptor rope_op{.kind = Kind::Rope,
                                     .name = "rope",
                                     .out_shape = out_shape,
                                     .put_dyn = put_dyn,
                                     .signature_word = signature_word,
                                     .launch = launch};

}  // namespace tf::cuda_internal
