#include "backends/cuda/ops/op_descriptor.h"

#include <array>
#include <cstddef>

namespace tf::cuda_internal {

const OpDescriptor& op_descriptor(Kind kind) {
  // In Kind's order (tests/unit/cuda/op_descriptor_test.cpp checks that each entry is its kind's).
  static constexpr std::array<const OpDescriptor*, static_cast<std::size_t>(Kind::Count)> kTable{
      &embed_op,          &rms_norm_op,        &linear_op,        &add_op,
      &swiglu_op,         &rope_op,            &attend_op,        &last_rows_op,
      &upload_op,         &rms_norm_heads_op,  &head_columns_op,  &sigmoid_gate_op,
      &concat_columns_op, &gdn_conv_op,        &gdn_recurrence_op, &all_reduce_op,
      &replace_rows_op};
  return *kTable[static_cast<std::size_t>(kind)];
}

}  // namespace tf::cuda_internal
