// NVML by dlopen: the few entry points ckptmon calls, declared here with the
// ABI of nvml.h (no build-time NVIDIA dependency). Utilisation comes from
// nvmlDeviceGetSamples(NVML_GPU_UTILIZATION_SAMPLES) with the last-seen
// timestamp, so no sample between two polls is lost; where the driver does
// not support it, from nvmlDeviceGetUtilizationRates.

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <vector>

#include "collectors/gpu_source.hpp"

namespace ckptmon {
namespace {

using nvmlReturn_t = int;
constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kNotSupported = 3;
constexpr nvmlReturn_t kNotFound = 6;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
union nvmlValue_t {
  double dVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
};
struct nvmlSample_t {
  unsigned long long timeStamp;
  nvmlValue_t sampleValue;
};
constexpr int kGpuUtilizationSamples = 1;  // NVML_GPU_UTILIZATION_SAMPLES
enum ValueType { kDouble = 0, kUInt = 1, kULong = 2, kULongLong = 3, kSLongLong = 4 };
// Samples asked for at once; the driver's buffer holds far fewer.
constexpr unsigned kMaxSamples = 16384;
constexpr unsigned kTextBytes = 96;

struct Api {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*count)(unsigned int*) = nullptr;
  nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*rates)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*samples)(nvmlDevice_t, int, unsigned long long, int*, unsigned int*,
                          nvmlSample_t*) = nullptr;
};

template <typename F>
void bind(void* lib, const char* symbol, F& out) {
  out = reinterpret_cast<F>(::dlsym(lib, symbol));
}

class NvmlSource final : public GpuSource {
 public:
  explicit NvmlSource(std::string library) : library_(std::move(library)) {}
  ~NvmlSource() override {
    // The library stays mapped: unloading NVML while a driver thread it
    // started still runs is a known way to crash.
    if (initialised_ && api_.shutdown != nullptr) api_.shutdown();
  }
  std::string_view name() const override { return "nvml"; }

  GpuPoll poll(double now) override {
    GpuPoll out;
    if (!initialised_ && !open(&out.error)) return out;
    unsigned int count = 0;
    if (nvmlReturn_t r = api_.count(&count); r != kSuccess) {
      out.error = call_error("nvmlDeviceGetCount_v2", r);
      return out;
    }
    if (count > 64) {
      out.call_errors.push_back("nvmlDeviceGetCount_v2 reported " + std::to_string(count) +
                                " GPUs; the first 64 are watched");
      count = 64;
    }
    for (unsigned int i = 0; i < count; ++i) {
      nvmlDevice_t dev = nullptr;
      if (nvmlReturn_t r = api_.handle(i, &dev); r != kSuccess) {
        out.call_errors.push_back(
            call_error("nvmlDeviceGetHandleByIndex_v2", r, static_cast<int>(i)));
        continue;
      }
      GpuReading g;
      g.index = i;
      Known& k = known_[i];
      if (k.uuid.empty()) k.uuid = text(api_.uuid, dev, "nvmlDeviceGetUUID", i, out);
      if (k.model.empty()) k.model = text(api_.name, dev, "nvmlDeviceGetName", i, out);
      g.uuid = k.uuid;
      g.model = k.model;
      if (api_.memory != nullptr) {
        nvmlMemory_t m{};
        if (nvmlReturn_t r = api_.memory(dev, &m); r == kSuccess) {
          g.memory_used_bytes = static_cast<double>(m.used);
        } else if (r != kNotSupported) {
          out.call_errors.push_back(call_error("nvmlDeviceGetMemoryInfo", r, static_cast<int>(i)));
        }
      }
      read_utilization(dev, i, now, k, g, out);
      out.gpus.push_back(std::move(g));
    }
    out.ok = true;
    return out;
  }

 private:
  struct Known {
    std::string uuid;
    std::string model;
    unsigned long long last_seen = 0;  // newest sample timestamp taken, microseconds
    bool samples_unsupported = false;
  };

  bool open(std::string* error) {
    if (lib_ == nullptr) {
      lib_ = ::dlopen(library_.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib_ == nullptr) {
        const char* e = ::dlerror();
        *error = "cannot load " + library_ + ": " + (e != nullptr ? e : "unknown error");
        return false;
      }
      bind(lib_, "nvmlInit_v2", api_.init);
      bind(lib_, "nvmlShutdown", api_.shutdown);
      bind(lib_, "nvmlErrorString", api_.error_string);
      bind(lib_, "nvmlDeviceGetCount_v2", api_.count);
      bind(lib_, "nvmlDeviceGetHandleByIndex_v2", api_.handle);
      bind(lib_, "nvmlDeviceGetName", api_.name);
      bind(lib_, "nvmlDeviceGetUUID", api_.uuid);
      bind(lib_, "nvmlDeviceGetMemoryInfo", api_.memory);
      bind(lib_, "nvmlDeviceGetUtilizationRates", api_.rates);
      bind(lib_, "nvmlDeviceGetSamples", api_.samples);
      std::string missing;
      auto need = [&](const void* p, const char* symbol) {
        if (p == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
      };
      need(reinterpret_cast<const void*>(api_.init), "nvmlInit_v2");
      need(reinterpret_cast<const void*>(api_.shutdown), "nvmlShutdown");
      need(reinterpret_cast<const void*>(api_.count), "nvmlDeviceGetCount_v2");
      need(reinterpret_cast<const void*>(api_.handle), "nvmlDeviceGetHandleByIndex_v2");
      if (api_.rates == nullptr && api_.samples == nullptr) {
        need(nullptr, "nvmlDeviceGetUtilizationRates or nvmlDeviceGetSamples");
      }
      if (!missing.empty()) {
        *error = library_ + " lacks " + missing + " (an NVML older than driver 325, or not NVML)";
        api_ = Api{};
        ::dlclose(lib_);  // nothing was started from it
        lib_ = nullptr;
        return false;
      }
    }
    if (nvmlReturn_t r = api_.init(); r != kSuccess) {
      *error = call_error("nvmlInit_v2", r);
      return false;
    }
    initialised_ = true;
    return true;
  }

  std::string call_error(const char* call, nvmlReturn_t r, int gpu = -1) const {
    const char* e = api_.error_string != nullptr ? api_.error_string(r) : nullptr;
    std::string s = std::string(call) + (gpu >= 0 ? " (GPU " + std::to_string(gpu) + ")" : "") +
                    ": " + gpu_label_value(e != nullptr ? e : "error") + " (NVML error " +
                    std::to_string(r) + ")";
    return s;
  }

  std::string text(nvmlReturn_t (*fn)(nvmlDevice_t, char*, unsigned int), nvmlDevice_t dev,
                   const char* call, unsigned i, GpuPoll& out) {
    if (fn == nullptr) return {};
    char buf[kTextBytes] = {};
    if (nvmlReturn_t r = fn(dev, buf, sizeof buf); r != kSuccess) {
      out.call_errors.push_back(call_error(call, r, static_cast<int>(i)));
      return {};
    }
    buf[sizeof buf - 1] = '\0';
    return gpu_label_value(std::string_view(buf, ::strnlen(buf, sizeof buf)));
  }

  static std::optional<double> value_of(int type, const nvmlValue_t& v) {
    switch (type) {
      case kDouble:
        return v.dVal;
      case kUInt:
        return static_cast<double>(v.uiVal);
      case kULong:
        return static_cast<double>(v.ulVal);
      case kULongLong:
        return static_cast<double>(v.ullVal);
      case kSLongLong:
        return static_cast<double>(v.sllVal);
      default:
        return std::nullopt;
    }
  }

  void read_utilization(nvmlDevice_t dev, unsigned i, double now, Known& k, GpuReading& g,
                        GpuPoll& out) {
    if (api_.samples != nullptr && !k.samples_unsupported) {
      int type = 0;
      unsigned int n = 0;
      nvmlReturn_t r = api_.samples(dev, kGpuUtilizationSamples, k.last_seen, &type, &n, nullptr);
      if (r == kSuccess && n > 0) {
        n = std::min(n, kMaxSamples);
        buf_.resize(n);
        r = api_.samples(dev, kGpuUtilizationSamples, k.last_seen, &type, &n, buf_.data());
      }
      if (r == kSuccess) {
        for (unsigned int s = 0; s < n && s < buf_.size(); ++s) {
          auto v = value_of(type, buf_[s].sampleValue);
          if (!v || buf_[s].timeStamp <= k.last_seen) continue;
          k.last_seen = buf_[s].timeStamp;
          const double ratio = std::clamp(*v / 100.0, 0.0, 1.0);
          g.samples.emplace_back(static_cast<double>(buf_[s].timeStamp) * 1e-6, ratio);
          g.utilization = ratio;
        }
        if (!g.utilization && last_util_.contains(i)) g.utilization = last_util_[i];
        if (g.utilization) last_util_[i] = *g.utilization;
        return;
      }
      if (r == kNotFound) {  // nothing new since last_seen
        if (last_util_.contains(i)) g.utilization = last_util_[i];
        return;
      }
      if (r == kNotSupported) {
        k.samples_unsupported = true;
      } else {
        out.call_errors.push_back(call_error("nvmlDeviceGetSamples", r, static_cast<int>(i)));
      }
    }
    if (api_.rates == nullptr) return;
    nvmlUtilization_t u{};
    if (nvmlReturn_t r = api_.rates(dev, &u); r != kSuccess) {
      out.call_errors.push_back(
          call_error("nvmlDeviceGetUtilizationRates", r, static_cast<int>(i)));
      return;
    }
    const double ratio = std::clamp(static_cast<double>(u.gpu) / 100.0, 0.0, 1.0);
    g.utilization = ratio;
    g.samples.emplace_back(now, ratio);
    last_util_[i] = ratio;
  }

  std::string library_;
  void* lib_ = nullptr;
  Api api_;
  bool initialised_ = false;
  std::map<unsigned, Known> known_;
  std::map<unsigned, double> last_util_;
  std::vector<nvmlSample_t> buf_;
};

}  // namespace

std::shared_ptr<GpuSource> make_nvml_source(const std::string& library) {
  return std::make_shared<NvmlSource>(library);
}

}  // namespace ckptmon
