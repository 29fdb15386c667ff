#include "backends/cuda/nccl_collective.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_support.h"

namespace tf {
namespace {

// NCCL's C API as its nccl.h declares it (a stable ABI since 2.0), the part used here: communicators are
// opaque pointers, results are 0 on success, float32 is data type 7 and sum is reduction 0.
using NcclComm = struct NcclCommOpaque*;
constexpr int kNcclSuccess = 0, kNcclFloat32 = 7, kNcclSum = 0;

struct NcclApi {
  int (*comm_init_all)(NcclComm* comms, int ndev, const int* devices) = nullptr;
  int (*all_reduce)(const void* in, void* out, std::size_t count, int type, int op, NcclComm comm,
                    cudaStream_t stream) = nullptr;
  int (*comm_destroy)(NcclComm comm) = nullptr;
  int (*comm_abort)(NcclComm comm) = nullptr;
  int (*group_start)() = nullptr;
  int (*group_end)() = nullptr;
  int (*get_version)(int* version) = nullptr;
  const char* (*error_string)(int result) = nullptr;

  static const NcclApi& load() {
    static const NcclApi api = [] {
      const char* env = std::getenv("TF_NCCL_LIBRARY");
      const std::string path = env != nullptr && *env != '\0' ? env : "libnccl.so.2";
      void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib == nullptr)
        throw std::runtime_error("--tp on CUDA needs NCCL: " + path + " could not be loaded (" + dlerror() +
                                 "); install it (pip install nvidia-nccl-cu13, or your distribution's libnccl2) "
                                 "and put its lib folder on LD_LIBRARY_PATH, or set TF_NCCL_LIBRARY to the file");
      NcclApi a;
      auto sym = [&](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
        if (fn == nullptr) throw std::runtime_error(path + " has no " + name + ": not an NCCL library");
      };
      sym(a.comm_init_all, "ncclCommInitAll");
      sym(a.all_reduce, "ncclAllReduce");
      sym(a.comm_destroy, "ncclCommDestroy");
      sym(a.comm_abort, "ncclCommAbort");
      sym(a.group_start, "ncclGroupStart");
      sym(a.group_end, "ncclGroupEnd");
      sym(a.get_version, "ncclGetVersion");
      sym(a.error_string, "ncclGetErrorString");
      return a;
    }();
    return api;
  }
  void check(int result, const char* what) const {
    if (result != kNcclSuccess) throw std::runtime_error(std::string("NCCL ") + what + ": " + error_string(result));
  }
};

// One rank's sum: NCCL's all-reduce of its communicator on its stream.
class NcclSum final : public StreamReduce {
 public:
  NcclSum(const NcclApi& api, NcclComm comm) : api_(api), comm_(comm) {}
  void sum(const float* in, float* out, std::size_t count, cudaStream_t stream) const override {
    api_.check(api_.all_reduce(in, out, count, kNcclFloat32, kNcclSum, comm_, stream), "all-reduce");
  }

 private:
  const NcclApi& api_;
  NcclComm comm_;
};

class NcclCollective final : public Collective {
 public:
  explicit NcclCollective(const std::vector<int>& devices)
      : api_(NcclApi::load()), threads_(static_cast<int>(devices.size())), comms_(devices.size(), nullptr) {
    // NVLink multicast (NVLS) stays off (the device notes: it is not set up on the lent machines); every
    // connection is made here rather than at a first sum, which could fall inside a graph capture.
    setenv("NCCL_NVLS_ENABLE", "0", 0);
    setenv("NCCL_RUNTIME_CONNECT", "0", 0);
    api_.check(api_.comm_init_all(comms_.data(), static_cast<int>(devices.size()), devices.data()), "init");
    for (NcclComm c : comms_) sums_.push_back(std::make_shared<NcclSum>(api_, c));
    warm_up(devices);
  }
  ~NcclCollective() override {
    if (aborted_) return;  // each_rank's failure path aborted (and freed) them
    for (NcclComm c : comms_) api_.comm_destroy(c);
  }

  std::string name() const override {
    int v = 0;
    api_.get_version(&v);
    return "nccl " + std::to_string(v);
  }
  bool apart() const override { return true; }
  Tensor all_reduce_rank(std::size_t r, Backend& rank, const Tensor& partial, std::int64_t /*cols*/) override {
    return dynamic_cast<CudaBackend&>(rank).all_reduce_sum(partial, sums_[r]);
  }
  // A rank that fails aborts the communicators (its peers' sums return instead of waiting for it) and ends the
  // process with one line: NCCL's state after an abort serves no further request.
  void each_rank(int /*ranks*/, const std::function<void(int)>& f) override {
    try {
      threads_.run(f, [this] {
        aborted_ = true;
        for (NcclComm c : comms_) api_.comm_abort(c);
      });
    } catch (const std::exception& e) {
      if (!aborted_) throw;
      std::fprintf(stderr, "tensorfold: a tensor-parallel rank failed, stopping: %s\n", e.what());
      std::fflush(stderr);
      std::_Exit(1);
    }
  }

 private:
  // One sum on every device outside any graph, so that NCCL's first-use setup is done before a capture.
  void warm_up(const std::vector<int>& devices) {
    std::vector<float*> bufs(devices.size(), nullptr);
    for (std::size_t r = 0; r < devices.size(); ++r) {
      TF_CK(cudaSetDevice(devices[r]));
      TF_CK(cudaMalloc(reinterpret_cast<void**>(&bufs[r]), 256));
      TF_CK(cudaMemset(bufs[r], 0, 256));
    }
    api_.check(api_.group_start(), "group start");
    for (std::size_t r = 0; r < devices.size(); ++r) {
      TF_CK(cudaSetDevice(devices[r]));
      api_.check(api_.all_reduce(bufs[r], bufs[r], 64, kNcclFloat32, kNcclSum, comms_[r], nullptr), "all-reduce");
    }
    api_.check(api_.group_end(), "group end");
    for (std::size_t r = 0; r < devices.size(); ++r) {
      TF_CK(cudaSetDevice(devices[r]));
      TF_CK(cudaDeviceSynchronize());
      cudaFree(bufs[r]);
    }
  }

  const NcclApi& api_;
  RankThreads threads_;
  std::vector<NcclComm> comms_;
  std::vector<std::shared_ptr<const StreamReduce>> sums_;
  std::atomic<bool> aborted_{false};
};

}  // namespace

std::unique_ptr<Collective> make_nccl_collective(const std::vector<int>& devices) {
  return std::make_unique<NcclCollective>(devices);
}

}  // namespace tf
