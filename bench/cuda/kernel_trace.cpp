// A kernel tracer to inject into any CUDA program (the device machine has no Nsight Systems): every
// kernel's start and end on the GPU, CUDA-graph nodes included, from CUPTI's activity records, as CSV.
//
//   CUDA_INJECTION64_PATH=/path/libtf_cuda_kernel_trace.so TF_KERNEL_TRACE=out.csv tf_cuda_bench ...
//
// Columns: start_ns,end_ns,grid_x,grid_y,grid_z,block_x,graph_node,name (mangled). bench/cuda/trace_attr.py
// turns a decode benchmark's trace into each kernel kind's share of the step's critical path.
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace {

std::FILE* out = nullptr;
std::mutex mu;
constexpr size_t kBufferBytes = 8u << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  std::lock_guard<std::mutex> lock(mu);
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    if (out != nullptr)
      std::fprintf(out, "%llu,%llu,%d,%d,%d,%d,%llu,%s\n", static_cast<unsigned long long>(k->start),
                   static_cast<unsigned long long>(k->end), k->gridX, k->gridY, k->gridZ, k->blockX,
                   static_cast<unsigned long long>(k->graphNodeId), k->name != nullptr ? k->name : "?");
  }
  std::free(buffer);
}

void finish() {
  cuptiActivityFlushAll(1);
  std::lock_guard<std::mutex> lock(mu);
  if (out != nullptr) std::fclose(out);
  out = nullptr;
}

}  // namespace

extern "C" int InitializeInjection() {
  const char* path = std::getenv("TF_KERNEL_TRACE");
  out = std::fopen(path != nullptr ? path : "kernel_trace.csv", "w");
  if (out == nullptr) return 0;
  std::fprintf(out, "start_ns,end_ns,grid_x,grid_y,grid_z,block_x,graph_node,name\n");
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
    return 0;
  std::atexit(finish);
  return 1;
}
