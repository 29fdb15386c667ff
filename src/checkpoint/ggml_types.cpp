#include "checkpoint/ggml_types.h"

#include <array>

namespace tf {
namespace {
using T = GgmlType;
constexpr std::array<GgmlTypeInfo, 34> kTypes{{
    {T::F32, "F32", 1, 4, true},         {T::F16, "F16", 1, 2, true},
    {T::Q4_0, "Q4_0", 32, 18, true},     {T::Q4_1, "Q4_1", 32, 20, true},
    {T::Q5_0, "Q5_0", 32, 22, true},     {T::Q5_1, "Q5_1", 32, 24, true},
    {T::Q8_0, "Q8_0", 32, 34, true},     {T::Q8_1, "Q8_1", 32, 40, false},
    {T::Q2_K, "Q2_K", 256, 84, false},   {T::Q3_K, "Q3_K", 256, 110, false},
    {T::Q4_K, "Q4_K", 256, 144, true},   {T::Q5_K, "Q5_K", 256, 176, true},
    {T::Q6_K, "Q6_K", 256, 210, true},   {T::Q8_K, "Q8_K", 256, 292, false},
    {T::IQ2_XXS, "IQ2_XXS", 256, 66, false}, {T::IQ2_XS, "IQ2_XS", 256, 74, false},
    {T::IQ3_XXS, "IQ3_XXS", 256, 98, false}, {T::IQ1_S, "IQ1_S", 256, 50, false},
    {T::IQ4_NL, "IQ4_NL", 32, 18, false},    {T::IQ3_S, "IQ3_S", 256, 110, false},
    {T::IQ2_S, "IQ2_S", 256, 82, false},     {T::IQ4_XS, "IQ4_XS", 256, 136, false},
    {T::I8, "I8", 1, 1, false},          {T::I16, "I16", 1, 2, false},
    {T::I32, "I32", 1, 4, false},        {T::I64, "I64", 1, 8, false},
    {T::F64, "F64", 1, 8, false},        {T::IQ1_M, "IQ1_M", 256, 56, false},
    {T::BF16, "BF16", 1, 2, true},       {T::TQ1_0, "TQ1_0", 256, 54, false},
    {T::TQ2_0, "TQ2_0", 256, 66, false}, {T::MXFP4, "MXFP4", 32, 17, false},
    {T::NVFP4, "NVFP4", 64, 36, false},  {T::Q1_0, "Q1_0", 128, 18, false},
}};
}  // namespace

std::optional<GgmlTypeInfo> ggml_type_info(std::uint32_t raw) {
  for (const auto& t : kTypes)
    if (static_cast<std::uint32_t>(t.type) == raw) return t;
  return std::nullopt;
}

std::string_view ggml_type_name(GgmlType t) {
  auto info = ggml_type_info(static_cast<std::uint32_t>(t));
  return info ? info->name : std::string_view("unknown");
}

}  // namespace tf
