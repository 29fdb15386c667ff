#include "checkpoint/weight_slice.h"

#include <stdexcept>
#include <string>

namespace tf {
namespace {

std::size_t dtype_bytes(HostDType t) { return t == HostDType::F32 ? 4 : 2; }

[[noreturn]] void refuse(const HostWeight& w, const std::string& why) {
  throw std::invalid_argument("cannot divide tensor '" + w.name + "' among ranks: " + why);
}

void append(std::vector<std::uint8_t>& to, const std::vector<std::uint8_t>& from, std::size_t offset, std::size_t n) {
  if (offset + n > from.size()) throw std::logic_error("weight slice: a cut past the stored bytes");
  to.insert(to.end(), from.begin() + static_cast<std::ptrdiff_t>(offset),
            from.begin() + static_cast<std::ptrdiff_t>(offset + n));
}

// Appends columns [b, e) of `row` to out's stored bytes, in w's form.
void append_columns(const HostWeight& w, std::int64_t row, std::int64_t b, std::int64_t e, HostWeight& out) {
  if (b < 0 || e > w.cols || b >= e)
    refuse(w, "columns " + std::to_string(b) + ".." + std::to_string(e) + " of " + std::to_string(w.cols));
  const auto r = static_cast<std::size_t>(row), cols = static_cast<std::size_t>(w.cols);
  const auto ub = static_cast<std::size_t>(b), ue = static_cast<std::size_t>(e);
  if (w.ggml_blocks()) {
    const auto info = ggml_type_info(static_cast<std::uint32_t>(w.block_type));
    const auto g = static_cast<std::size_t>(w.group_size);
    if (!info || ub % g != 0 || ue % g != 0)
      refuse(w, "a cut at column " + std::to_string(ub % g != 0 ? b : e) + " falls inside a block of " +
                    std::to_string(g));
    const std::size_t block = info->block_bytes, per_row = cols / g * block;
    append(out.data, w.data, r * per_row + ub / g * block, (ue - ub) / g * block);
    return;
  }
  const std::size_t es = dtype_bytes(w.dtype);
  if (w.bits == 0) {
    append(out.data, w.data, (r * cols + ub) * es, (ue - ub) * es);
    return;
  }
  const auto g = static_cast<std::size_t>(w.group_size), bits = static_cast<std::size_t>(w.bits);
  if (ub % g != 0 || ue % g != 0 || ub * bits % 32 != 0 || ue * bits % 32 != 0)
    refuse(w,
           "a cut at column " + std::to_string(ub % g != 0 ? b : e) + " falls inside a group of " + std::to_string(g));
  const std::size_t row_code_bytes = cols * bits / 8, groups = cols / g;
  append(out.data, w.data, r * row_code_bytes + ub * bits / 8, (ue - ub) * bits / 8);
  append(out.scales, w.scales, (r * groups + ub / g) * es, (ue - ub) / g * es);
  append(out.biases, w.biases, (r * groups + ub / g) * es, (ue - ub) / g * es);
}

HostWeight empty_like(const HostWeight& w) {
  HostWeight out;
  out.name = w.name;
  out.dtype = w.dtype;
  out.bits = w.bits;
  out.group_size = w.group_size;
  out.block_type = w.block_type;
  return out;
}

}  // namespace

HostWeight take_rows(const HostWeight& w, std::span<const std::pair<std::int64_t, std::int64_t>> ranges) {
  HostWeight out = empty_like(w);
  std::int64_t n = 0;
  const bool one_d = w.shape.size() == 1;
  for (const auto& [b, e] : ranges) {
    if (b < 0 || b >= e || e > (one_d ? w.cols : w.rows))
      refuse(w,
             "rows " + std::to_string(b) + ".." + std::to_string(e) + " of " + std::to_string(one_d ? w.cols : w.rows));
    if (one_d)
      append_columns(w, 0, b, e, out);
    else
      for (std::int64_t r = b; r < e; ++r) append_columns(w, r, 0, w.cols, out);
    n += e - b;
  }
  if (one_d) {
    out.rows = 1;
    out.cols = n;
    out.shape = {n};
  } else {
    out.rows = n;
    out.cols = w.cols;
    out.shape = {n, w.cols};
  }
  return out;
}

HostWeight take_columns(const HostWeight& w, std::int64_t begin, std::int64_t end) {
  HostWeight out = empty_like(w);
  for (std::int64_t r = 0; r < w.rows; ++r) append_columns(w, r, begin, end, out);
  out.rows = w.rows;
  out.cols = end - begin;
  out.shape = w.shape.size() == 1 ? std::vector<std::int64_t>{out.cols} : std::vector<std::int64_t>{w.rows, out.cols};
  return out;
}

HostWeight regroup(const HostWeight& w, int group) {
  if (w.bits == 0 || w.ggml_blocks() || group <= 0 || w.group_size % group != 0)
    throw std::logic_error("regroup: an affine weight and a divisor of its group size");
  const std::size_t es = dtype_bytes(w.dtype), repeat = static_cast<std::size_t>(w.group_size / group);
  HostWeight out = w;
  out.group_size = group;
  for (auto [from, to] : {std::pair{&w.scales, &out.scales}, std::pair{&w.biases, &out.biases}}) {
    to->clear();
    to->reserve(from->size() * repeat);
    for (std::size_t at = 0; at < from->size(); at += es)
      for (std::size_t k = 0; k < repeat; ++k)
        to->insert(to->end(), from->begin() + static_cast<std::ptrdiff_t>(at),
                   from->begin() + static_cast<std::ptrdiff_t>(at + es));
  }
  return out;
}

}  // namespace tf
