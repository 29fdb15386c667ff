// Elementwise kernels: add, SwiGLU (silu(gate) * up), x * sigmoid(gate), row and column copies, conversions, random fills for tests and
// benchmarks (weights generated on the device, never stored).
#include <cstdlib>

#include "backends/cuda/kernels/common.cuh"

namespace tf::cuda {
namespace {

__global__ void add_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                           std::int64_t n) {
  pdl_launch();
  pdl_wait();
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = __fadd_rn(a[i], b[i]);
}

__global__ void swiglu_kernel(const float* __restrict__ g, const float* __restrict__ u, float* __restrict__ out,
                              std::int64_t n) {
  pdl_launch();
  pdl_wait();
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float x = g[i];
    const float silu = __fdiv_rn(x, __fadd_rn(1.0f, expf(-x)));  // the decode kernel's epilogue, same steps
    out[i] = __fmul_rn(silu, u[i]);
  }
}

__global__ void copy_kernel(const float* __restrict__ in, float* __restrict__ out, std::int64_t n) {
  pdl_launch();
  pdl_wait();
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = in[i];
}

__global__ void scatter_rows_kernel(const float* __restrict__ values, const std::int32_t* __restrict__ rows,
                                    std::int64_t n, std::int64_t cols, float* __restrict__ out) {
  pdl_launch();
  pdl_wait();
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n * cols;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[static_cast<std::int64_t>(rows[i / cols]) * cols + i % cols] = values[i];
}

__global__ void sigmoid_gate_kernel(const float* __restrict__ x, const float* __restrict__ g, float* __restrict__ out,
                                    std::int64_t n) {
  pdl_launch();
  pdl_wait();
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = __fmul_rn(x[i], __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-g[i]))));
}

// out element i of [rows, heads * width] from x [rows, heads * block].
__global__ void head_columns_kernel(const float* __restrict__ x, float* __restrict__ out, std::int64_t n, int heads,
                                    int block, int offset, int width) {
  pdl_launch();
  pdl_wait();
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t row = i / (static_cast<std::int64_t>(heads) * width);
    const std::int64_t col = i % (static_cast<std::int64_t>(heads) * width);
    const std::int64_t h = col / width, c = col % width;
    out[i] = x[row * heads * block + h * block + offset + c];
  }
}

__global__ void concat_columns_kernel(const float* __restrict__ a, std::int64_t a_cols, const float* __restrict__ b,
                                      std::int64_t b_cols, float* __restrict__ out, std::int64_t n) {
  pdl_launch();
  pdl_wait();
  const std::int64_t cols = a_cols + b_cols;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t row = i / cols, col = i % cols;
    out[i] = col < a_cols ? a[row * a_cols + col] : b[row * b_cols + col - a_cols];
  }
}

template <ElemType E>
__global__ void convert_kernel(const void* in, float* out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = load_elem<E>(in, i);
}

__device__ __forceinline__ std::uint64_t splitmix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

__global__ void fill_bits_kernel(std::uint64_t* p, std::int64_t words, std::uint64_t seed) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    p[i] = splitmix(seed ^ splitmix(static_cast<std::uint64_t>(i)));
}

template <ElemType E>
__global__ void fill_uniform_kernel(void* p, std::int64_t n, float lo, float hi, std::uint64_t seed) {
  using T = typename ElemOf<E>::type;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::uint64_t r = splitmix(seed ^ splitmix(static_cast<std::uint64_t>(i)));
    const float u = static_cast<float>(r >> 40) * (1.0f / 16777216.0f);
    const float v = __fadd_rn(lo, __fmul_rn(u, __fsub_rn(hi, lo)));
    if constexpr (E == ElemType::F32) static_cast<T*>(p)[i] = v;
    else if constexpr (E == ElemType::F16) static_cast<T*>(p)[i] = __float2half_rn(v);
    else static_cast<T*>(p)[i] = __float2bfloat16_rn(v);
  }
}

unsigned int grid_for(std::int64_t n) {
  const std::int64_t b = ceil_div(n, 256);
  return static_cast<unsigned int>(b < 1 ? 1 : (b > 65536 ? 65536 : b));
}

thread_local bool pdl_scope_on = true;  // PdlScope's setting for this thread's launches

}  // namespace

bool pdl_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("TF_CUDA_PDL");
    return v == nullptr || std::string(v) != "0";
  }();
  return on && pdl_scope_on;
}

PdlScope::PdlScope(bool on) : prev_(pdl_scope_on) { pdl_scope_on = on; }
PdlScope::~PdlScope() { pdl_scope_on = prev_; }

void add(const float* a, const float* b, float* out, std::int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  launch_pdl(add_kernel, dim3(grid_for(n)), dim3(256), 0, s, a, b, out, n);
  check_launch("add");
}

void swiglu(const float* gate, const float* up, float* out, std::int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  launch_pdl(swiglu_kernel, dim3(grid_for(n)), dim3(256), 0, s, gate, up, out, n);
  check_launch("swiglu");
}

void copy_rows(const float* x, std::int64_t first, std::int64_t n, std::int64_t cols, float* out, cudaStream_t s) {
  if (n <= 0) return;
  launch_pdl(copy_kernel, dim3(grid_for(n * cols)), dim3(256), 0, s, x + first * cols, out, n * cols);
  check_launch("copy_rows");
}

void scatter_rows(const float* values, const std::int32_t* rows, std::int64_t n, std::int64_t cols, float* out,
                  cudaStream_t s) {
  if (n <= 0 || cols <= 0) return;
  launch_pdl(scatter_rows_kernel, dim3(grid_for(n * cols)), dim3(256), 0, s, values, rows, n, cols, out);
  check_launch("scatter_rows");
}

void sigmoid_gate(const float* x, const float* gate, float* out, std::int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  launch_pdl(sigmoid_gate_kernel, dim3(grid_for(n)), dim3(256), 0, s, x, gate, out, n);
  check_launch("sigmoid_gate");
}

void head_columns(const float* x, float* out, std::int64_t rows, int heads, int block, int offset, int width,
                  cudaStream_t s) {
  const std::int64_t n = rows * heads * width;
  if (n <= 0) return;
  launch_pdl(head_columns_kernel, dim3(grid_for(n)), dim3(256), 0, s, x, out, n, heads, block, offset, width);
  check_launch("head_columns");
}

void concat_columns(const float* a, std::int64_t a_cols, const float* b, std::int64_t b_cols, float* out,
                    std::int64_t rows, cudaStream_t s) {
  const std::int64_t n = rows * (a_cols + b_cols);
  if (n <= 0) return;
  launch_pdl(concat_columns_kernel, dim3(grid_for(n)), dim3(256), 0, s, a, a_cols, b, b_cols, out, n);
  check_launch("concat_columns");
}

void convert_to_f32(const void* in, ElemType t, float* out, std::int64_t n, cudaStream_t s) {
  if (n <= 0) return;
  switch (t) {
    case ElemType::F32: convert_kernel<ElemType::F32><<<grid_for(n), 256, 0, s>>>(in, out, n); break;
    case ElemType::F16: convert_kernel<ElemType::F16><<<grid_for(n), 256, 0, s>>>(in, out, n); break;
    case ElemType::BF16: convert_kernel<ElemType::BF16><<<grid_for(n), 256, 0, s>>>(in, out, n); break;
  }
  check_launch("convert_to_f32");
}

void fill_random_bits(void* p, std::size_t bytes, std::uint64_t seed, cudaStream_t s) {
  if (bytes % 8 != 0) throw std::invalid_argument("fill_random_bits: bytes must be a multiple of 8");
  const auto words = static_cast<std::int64_t>(bytes / 8);
  if (words == 0) return;
  fill_bits_kernel<<<grid_for(words), 256, 0, s>>>(static_cast<std::uint64_t*>(p), words, seed);
  check_launch("fill_random_bits");
}

void fill_random_uniform(void* p, ElemType t, std::int64_t n, float lo, float hi, std::uint64_t seed, cudaStream_t s) {
  if (n <= 0) return;
  switch (t) {
    case ElemType::F32: fill_uniform_kernel<ElemType::F32><<<grid_for(n), 256, 0, s>>>(p, n, lo, hi, seed); break;
    case ElemType::F16: fill_uniform_kernel<ElemType::F16><<<grid_for(n), 256, 0, s>>>(p, n, lo, hi, seed); break;
    case ElemType::BF16: fill_uniform_kernel<ElemType::BF16><<<grid_for(n), 256, 0, s>>>(p, n, lo, hi, seed); break;
  }
  check_launch("fill_random_uniform");
}

}  // namespace tf::cuda
