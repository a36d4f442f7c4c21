/* A fake libnvidia-ml.so.1 for tests and `ckptmon demo`: the handful of NVML
 * entry points ckptmon calls, with devices, utilisation and errors scripted
 * from a text file. The format is documented in README.md beside this file.
 * Thread-safe enough for one caller at a time (ckptmon polls from one worker).
 *
 * Built twice by CMake: libnvidia-ml.so.1 (the current ABI, *_v2 entry points)
 * and, with FAKE_NVML_OLD, a library lacking nvmlInit_v2 and the *_v2 device
 * calls, as an old driver would, to test "wrong symbol versions". */

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

typedef int nvmlReturn_t;
enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_UNKNOWN = 999
};

typedef struct fake_device* nvmlDevice_t;
typedef struct {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;
typedef struct {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;
typedef union {
  double dVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
} nvmlValue_t;
typedef struct {
  unsigned long long timeStamp;
  nvmlValue_t sampleValue;
} nvmlSample_t;
typedef int nvmlSamplingType_t;
typedef int nvmlValueType_t;
#define NVML_GPU_UTILIZATION_SAMPLES 1
#define NVML_VALUE_TYPE_UNSIGNED_INT 1

#define MAX_GPUS 64
#define MAX_SEGMENTS 4096
#define MAX_DIPS 64
#define MAX_FAILS 32

struct segment {
  int gpu; /* -1: every GPU */
  double from;
  double percent;
};
struct dip {
  int gpu;
  double start, period, length, percent;
};
struct fail {
  char symbol[64];
  int code;
};
struct fake_device {
  unsigned index;
};

static struct {
  unsigned gpus;
  char name[MAX_GPUS][96];
  char uuid[MAX_GPUS][96];
  unsigned long long mem_total[MAX_GPUS], mem_used[MAX_GPUS];
  double period_ms, buffer_s, epoch;
  struct segment seg[MAX_SEGMENTS];
  int nseg;
  struct dip dips[MAX_DIPS];
  int ndips;
  struct fail fails[MAX_FAILS];
  int nfails;
  int init_error;
  int no_samples;
} S;
static struct fake_device devices[MAX_GPUS];
static int initialised;

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double parse_time(const char* s) {
  if (s[0] == '+' || s[0] == '-') return S.epoch + strtod(s, NULL);
  return strtod(s, NULL);
}

static int parse_gpu(const char* s) { return strcmp(s, "*") == 0 ? -1 : atoi(s); }

/* Re-reads the script named by FAKE_NVML_SCRIPT; keeps defaults without one. */
static void load_script(void) {
  memset(&S, 0, sizeof S);
  S.gpus = 1;
  S.period_ms = 167;
  S.buffer_s = 1;
  for (unsigned i = 0; i < MAX_GPUS; ++i) {
    snprintf(S.name[i], sizeof S.name[i], "Fake GPU");
    snprintf(S.uuid[i], sizeof S.uuid[i], "GPU-fake-%04u", i);
    S.mem_total[i] = 80ull << 30;
  }
  const char* path = getenv("FAKE_NVML_SCRIPT");
  if (path == NULL) return;
  FILE* f = fopen(path, "r");
  if (f == NULL) return;
  char line[512];
  while (fgets(line, sizeof line, f) != NULL) {
    char* hash = strchr(line, '#');
    if (hash != NULL) *hash = '\0';
    char a[128] = "", b[128] = "", c[128] = "", d[128] = "", e[128] = "";
    int n = sscanf(line, "%127s %127s %127s %127s %127s", a, b, c, d, e);
    if (n <= 0) continue;
    if (strcmp(a, "gpus") == 0 && n >= 2) {
      S.gpus = (unsigned)atoi(b);
      if (S.gpus > MAX_GPUS) S.gpus = MAX_GPUS;
    } else if (strcmp(a, "epoch") == 0 && n >= 2) {
      S.epoch = strtod(b, NULL);
    } else if (strcmp(a, "period_ms") == 0 && n >= 2) {
      S.period_ms = strtod(b, NULL);
      if (S.period_ms < 1) S.period_ms = 1;
    } else if (strcmp(a, "buffer_s") == 0 && n >= 2) {
      S.buffer_s = strtod(b, NULL);
    } else if ((strcmp(a, "name") == 0 || strcmp(a, "uuid") == 0) && n >= 3) {
      unsigned i = (unsigned)atoi(b);
      if (i >= MAX_GPUS) continue;
      /* The rest of the line after the index. */
      const char* rest = strstr(line, b) + strlen(b);
      while (*rest == ' ' || *rest == '\t') ++rest;
      char* dst = a[0] == 'n' ? S.name[i] : S.uuid[i];
      snprintf(dst, 96, "%s", rest);
      dst[strcspn(dst, "\r\n")] = '\0';
    } else if (strcmp(a, "memory") == 0 && n >= 4) {
      unsigned i = (unsigned)atoi(b);
      if (i >= MAX_GPUS) continue;
      S.mem_total[i] = strtoull(c, NULL, 10);
      S.mem_used[i] = strtoull(d, NULL, 10);
    } else if (strcmp(a, "util") == 0 && n >= 4 && S.nseg < MAX_SEGMENTS) {
      S.seg[S.nseg++] = (struct segment){parse_gpu(b), parse_time(c), strtod(d, NULL)};
    } else if (strcmp(a, "dip") == 0 && n >= 5 && S.ndips < MAX_DIPS) {
      /* dip <gpu|*> <period_s> <length_s> <percent>: from epoch on, every period. */
      S.dips[S.ndips++] =
          (struct dip){parse_gpu(b), S.epoch, strtod(c, NULL), strtod(d, NULL), strtod(e, NULL)};
    } else if (strcmp(a, "fail") == 0 && n >= 3 && S.nfails < MAX_FAILS) {
      snprintf(S.fails[S.nfails].symbol, sizeof S.fails[S.nfails].symbol, "%.63s",
               b); /* symbol[64] */
      S.fails[S.nfails++].code = atoi(c);
    } else if (strcmp(a, "no_samples") == 0) {
      S.no_samples = 1;
    }
  }
  fclose(f);
}

static int failure(const char* symbol) {
  for (int i = 0; i < S.nfails; ++i) {
    if (strcmp(S.fails[i].symbol, symbol) == 0) return S.fails[i].code;
  }
  return NVML_SUCCESS;
}

/* Utilisation percent of `gpu` at time t: the last `util` line at or before t
 * (0 before the first), overridden by a periodic dip that covers t. */
static double percent_at(unsigned gpu, double t) {
  double v = 0, from = -1;
  for (int i = 0; i < S.nseg; ++i) {
    const struct segment* s = &S.seg[i];
    if ((s->gpu == -1 || (unsigned)s->gpu == gpu) && s->from <= t && s->from >= from) {
      v = s->percent;
      from = s->from;
    }
  }
  for (int i = 0; i < S.ndips; ++i) {
    const struct dip* d = &S.dips[i];
    if (d->gpu != -1 && (unsigned)d->gpu != gpu) continue;
    if (d->period <= 0 || t < d->start) continue;
    double into = t - d->start - d->period * (double)(long long)((t - d->start) / d->period);
    if (into < d->length) v = d->percent;
  }
  return v;
}

#define CHECK_INIT()                                   \
  do {                                                 \
    if (!initialised) return NVML_ERROR_UNINITIALIZED; \
  } while (0)
#define SCRIPTED(symbol)          \
  do {                            \
    int code_ = failure(symbol);  \
    if (code_ != 0) return code_; \
  } while (0)

static nvmlReturn_t do_init(const char* symbol) {
  load_script();
  SCRIPTED(symbol);
  for (unsigned i = 0; i < MAX_GPUS; ++i) devices[i].index = i;
  initialised = 1;
  return NVML_SUCCESS;
}

#ifdef FAKE_NVML_OLD
EXPORT nvmlReturn_t nvmlInit(void) { return do_init("nvmlInit"); }
#else
EXPORT nvmlReturn_t nvmlInit_v2(void) { return do_init("nvmlInit_v2"); }
#endif

EXPORT nvmlReturn_t nvmlShutdown(void) {
  initialised = 0;
  return NVML_SUCCESS;
}

EXPORT const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    default:
      return "Unknown Error";
  }
}

static nvmlReturn_t get_count(unsigned int* count, const char* symbol) {
  CHECK_INIT();
  load_script();
  SCRIPTED(symbol);
  if (count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *count = S.gpus;
  return NVML_SUCCESS;
}

static nvmlReturn_t get_handle(unsigned int index, nvmlDevice_t* device, const char* symbol) {
  CHECK_INIT();
  SCRIPTED(symbol);
  if (device == NULL || index >= S.gpus) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &devices[index];
  return NVML_SUCCESS;
}

#ifdef FAKE_NVML_OLD
EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int* count) {
  return get_count(count, "nvmlDeviceGetCount");
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return get_handle(index, device, "nvmlDeviceGetHandleByIndex");
}
#else
EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  return get_count(count, "nvmlDeviceGetCount_v2");
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  return get_handle(index, device, "nvmlDeviceGetHandleByIndex_v2");
}
#endif

static nvmlReturn_t copy_text(const char* src, char* dst, unsigned int length) {
  if (dst == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  if (strlen(src) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(dst, src, strlen(src) + 1);
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  CHECK_INIT();
  SCRIPTED("nvmlDeviceGetName");
  return copy_text(S.name[device->index], name, length);
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  CHECK_INIT();
  SCRIPTED("nvmlDeviceGetUUID");
  return copy_text(S.uuid[device->index], uuid, length);
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  CHECK_INIT();
  SCRIPTED("nvmlDeviceGetMemoryInfo");
  if (memory == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  memory->total = S.mem_total[device->index];
  memory->used = S.mem_used[device->index];
  memory->free = memory->total > memory->used ? memory->total - memory->used : 0;
  return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                  nvmlUtilization_t* utilization) {
  CHECK_INIT();
  load_script();
  SCRIPTED("nvmlDeviceGetUtilizationRates");
  if (utilization == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  /* Like the driver: the share of the last period the GPU was busy. */
  const double t = now_seconds() - S.period_ms / 2000.0;
  utilization->gpu = (unsigned)(percent_at(device->index, t) + 0.5);
  utilization->memory = 0;
  return NVML_SUCCESS;
}

/* Samples on a grid of period_ms (timestamps in microseconds since the
 * epoch), newer than lastSeenTimeStamp and at most buffer_s old; each holds
 * the scripted utilisation at the middle of the period it ends. */
EXPORT nvmlReturn_t nvmlDeviceGetSamples(nvmlDevice_t device, nvmlSamplingType_t type,
                                         unsigned long long lastSeenTimeStamp,
                                         nvmlValueType_t* sampleValType, unsigned int* sampleCount,
                                         nvmlSample_t* samples) {
  CHECK_INIT();
  load_script();
  SCRIPTED("nvmlDeviceGetSamples");
  if (S.no_samples) return NVML_ERROR_NOT_SUPPORTED;
  if (type != NVML_GPU_UTILIZATION_SAMPLES || sampleCount == NULL || sampleValType == NULL) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const double now = now_seconds();
  const unsigned long long period_us = (unsigned long long)(S.period_ms * 1000.0);
  unsigned long long oldest = (unsigned long long)((now - S.buffer_s) * 1e6);
  if (lastSeenTimeStamp + 1 > oldest) oldest = lastSeenTimeStamp + 1;
  const unsigned long long newest = (unsigned long long)(now * 1e6);
  unsigned long long first = (oldest + period_us - 1) / period_us * period_us;
  unsigned int n = 0;
  for (unsigned long long t = first; t <= newest; t += period_us) ++n;
  if (n == 0) return NVML_ERROR_NOT_FOUND;
  *sampleValType = NVML_VALUE_TYPE_UNSIGNED_INT;
  if (samples == NULL) {
    *sampleCount = n;
    return NVML_SUCCESS;
  }
  if (*sampleCount < n) n = *sampleCount; /* the oldest that fit, as a full buffer would */
  for (unsigned int i = 0; i < n; ++i) {
    const unsigned long long t = first + (unsigned long long)i * period_us;
    const double mid = ((double)t - (double)period_us / 2.0) * 1e-6;
    samples[i].timeStamp = t;
    samples[i].sampleValue.uiVal = (unsigned)(percent_at(device->index, mid) + 0.5);
  }
  *sampleCount = n;
  return NVML_SUCCESS;
}
