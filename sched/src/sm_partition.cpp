#include "sm_partition.hpp"

#include <cudaTypedefs.h>

#include <stdexcept>
#include <string>

namespace tessera::detail {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error("tessera GPU backend: SM partition for the urgent stream: " + what);
}

template <class F>
F entry(const char* name, unsigned version) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, version, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess || !fn) {
    cudaGetLastError();
    fail(std::string("the driver has no ") + name + " (CUDA " + std::to_string(version / 1000) + "." +
         std::to_string(version % 1000 / 10) + " or later needed)");
  }
  return reinterpret_cast<F>(fn);
}

void check(CUresult r, const char* call) {
  if (r != CUDA_SUCCESS) fail(std::string(call) + " failed (CUresult " + std::to_string(static_cast<int>(r)) + ")");
}

}  // namespace

sm_partition::sm_partition(int device, unsigned reserved_sms) {
  const auto device_get = entry<PFN_cuDeviceGet_v2000>("cuDeviceGet", 2000);
  const auto get_resource = entry<PFN_cuDeviceGetDevResource_v12040>("cuDeviceGetDevResource", 12040);
  const auto split = entry<PFN_cuDevSmResourceSplitByCount_v12040>("cuDevSmResourceSplitByCount", 12040);
  const auto describe = entry<PFN_cuDevResourceGenerateDesc_v12040>("cuDevResourceGenerateDesc", 12040);
  const auto create = entry<PFN_cuGreenCtxCreate_v12040>("cuGreenCtxCreate", 12040);
  const auto destroy = entry<PFN_cuGreenCtxDestroy_v12040>("cuGreenCtxDestroy", 12040);
  entry<PFN_cuGreenCtxStreamCreate_v12050>("cuGreenCtxStreamCreate", 12050);  // make_stream needs it

  CUdevice dev{};
  check(device_get(&dev, device), "cuDeviceGet");
  CUdevResource all{}, reserved{}, rest{};
  check(get_resource(dev, &all, CU_DEV_RESOURCE_TYPE_SM), "cuDeviceGetDevResource");
  unsigned groups = 1;
  check(split(&reserved, &groups, &all, &rest, 0, reserved_sms), "cuDevSmResourceSplitByCount");
  if (groups != 1 || rest.sm.smCount == 0)
    fail(std::to_string(reserved_sms) + " SMs cannot be split off a device of " + std::to_string(all.sm.smCount));
  CUdevResourceDesc reserved_desc{}, rest_desc{};
  check(describe(&reserved_desc, &reserved, 1), "cuDevResourceGenerateDesc");
  check(describe(&rest_desc, &rest, 1), "cuDevResourceGenerateDesc");
  check(create(&_reserved, reserved_desc, dev, CU_GREEN_CTX_DEFAULT_STREAM), "cuGreenCtxCreate");
  if (CUresult r = create(&_rest, rest_desc, dev, CU_GREEN_CTX_DEFAULT_STREAM); r != CUDA_SUCCESS) {
    destroy(_reserved);
    check(r, "cuGreenCtxCreate");
  }
  _reserved_sms = reserved.sm.smCount;
  _rest_sms = rest.sm.smCount;
}

sm_partition::~sm_partition() {
  const auto destroy = entry<PFN_cuGreenCtxDestroy_v12040>("cuGreenCtxDestroy", 12040);
  destroy(_reserved);
  destroy(_rest);
}

cudaStream_t sm_partition::make_stream(bool reserved, int priority) const {
  const auto create = entry<PFN_cuGreenCtxStreamCreate_v12050>("cuGreenCtxStreamCreate", 12050);
  CUstream s = nullptr;
  check(create(&s, reserved ? _reserved : _rest, CU_STREAM_NON_BLOCKING, priority), "cuGreenCtxStreamCreate");
  return s;
}

}  // namespace tessera::detail
