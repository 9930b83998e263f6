/* A stand-in for libnvidia-ml.so.1 that replays scripted readings, so the real dlopen path of
 * `stepscope watch` can be tested without a GPU. The tests compile it into a shared library.
 *
 * The script ($STEPSCOPE_FAKE_NVML_SCRIPT) holds one directive per line:
 *   init_error CODE                      nvmlInit fails with CODE
 *   device NAME MAX_SM_MHZ LIMIT_W TOTAL_MIB
 *   tick DEV UTIL MEMUTIL SM_MHZ MEM_MHZ POWER_W TEMP_C USED_MIB RX_KBPS TX_KBPS THROTTLE PIDS
 *   unsupported power                    nvmlDeviceGetPowerUsage answers NOT_SUPPORTED
 * PIDS is a comma-separated list or "-". Each nvmlDeviceGetUtilizationRates call on a device
 * moves that device to its next tick; the last tick repeats. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEV 8
#define MAX_TICK 256
#define MAX_PIDS 8

typedef struct {
  unsigned util, memutil, sm, mem, power_w, temp, used_mib, rx, tx;
  unsigned long long throttle;
  unsigned pids[MAX_PIDS];
  unsigned npids;
} tick_t;

typedef struct {
  char name[64];
  unsigned max_sm, limit_w, total_mib;
  tick_t ticks[MAX_TICK];
  int nticks;
  int cursor; /* -1 before the first utilisation call */
} dev_t_;

static dev_t_ devs[MAX_DEV];
static int ndev;
static int init_error;
static int power_unsupported;
static int loaded;

static void load(void) {
  if (loaded) return;
  loaded = 1;
  const char* path = getenv("STEPSCOPE_FAKE_NVML_SCRIPT");
  FILE* f = path ? fopen(path, "r") : NULL;
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    char word[32] = {0};
    if (sscanf(line, "%31s", word) != 1) continue;
    if (!strcmp(word, "init_error")) {
      sscanf(line, "%*s %d", &init_error);
    } else if (!strcmp(word, "unsupported")) {
      power_unsupported = 1;
    } else if (!strcmp(word, "device") && ndev < MAX_DEV) {
      dev_t_* d = &devs[ndev++];
      sscanf(line, "%*s %63s %u %u %u", d->name, &d->max_sm, &d->limit_w, &d->total_mib);
      d->cursor = -1;
    } else if (!strcmp(word, "tick")) {
      int dev = 0;
      tick_t t;
      char pids[128] = {0};
      memset(&t, 0, sizeof t);
      if (sscanf(line, "%*s %d %u %u %u %u %u %u %u %u %u %llx %127s", &dev, &t.util, &t.memutil,
                 &t.sm, &t.mem, &t.power_w, &t.temp, &t.used_mib, &t.rx, &t.tx, &t.throttle,
                 pids) < 11)
        continue;
      if (dev < 0 || dev >= ndev || devs[dev].nticks >= MAX_TICK) continue;
      for (char* p = strtok(pids, ","); p && t.npids < MAX_PIDS; p = strtok(NULL, ","))
        if (strcmp(p, "-")) t.pids[t.npids++] = (unsigned)atoi(p);
      devs[dev].ticks[devs[dev].nticks++] = t;
    }
  }
  fclose(f);
}

typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct { unsigned gpu, memory; } nvmlUtilization_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct {
  unsigned pid;
  unsigned long long usedGpuMemory;
  unsigned gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

static dev_t_* dev_of(nvmlDevice_t h) {
  long i = (long)(size_t)h - 1;
  return (i >= 0 && i < ndev) ? &devs[i] : NULL;
}
static const tick_t* now_of(dev_t_* d) {
  if (!d || d->nticks == 0) return NULL;
  return &d->ticks[d->cursor < 0 ? 0 : d->cursor];
}

int nvmlInit_v2(void) { load(); return init_error; }
int nvmlShutdown(void) { return 0; }
const char* nvmlErrorString(int rc) { return rc == 9 ? "Driver Not Loaded" : "Fake Error"; }
int nvmlSystemGetDriverVersion(char* buf, unsigned len) { snprintf(buf, len, "fake-1.0"); return 0; }
int nvmlDeviceGetCount_v2(unsigned* n) { *n = (unsigned)ndev; return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t* h) {
  if (i >= (unsigned)ndev) return 2;
  *h = (nvmlDevice_t)(size_t)(i + 1);
  return 0;
}
int nvmlDeviceGetName(nvmlDevice_t h, char* buf, unsigned len) {
  dev_t_* d = dev_of(h);
  if (!d) return 2;
  snprintf(buf, len, "%s", d->name);
  return 0;
}
int nvmlDeviceGetUtilizationRates(nvmlDevice_t h, nvmlUtilization_t* u) {
  dev_t_* d = dev_of(h);
  if (!d || d->nticks == 0) return 3;
  if (d->cursor < d->nticks - 1) d->cursor++;
  u->gpu = d->ticks[d->cursor].util;
  u->memory = d->ticks[d->cursor].memutil;
  return 0;
}
int nvmlDeviceGetClockInfo(nvmlDevice_t h, unsigned type, unsigned* v) {
  const tick_t* t = now_of(dev_of(h));
  if (!t) return 3;
  *v = type == 2 ? t->mem : t->sm;
  return 0;
}
int nvmlDeviceGetMaxClockInfo(nvmlDevice_t h, unsigned type, unsigned* v) {
  dev_t_* d = dev_of(h);
  if (!d) return 2;
  *v = type == 2 ? 1593 : d->max_sm;
  return 0;
}
int nvmlDeviceGetPowerUsage(nvmlDevice_t h, unsigned* mw) {
  const tick_t* t = now_of(dev_of(h));
  if (!t || power_unsupported) return 3;
  *mw = t->power_w * 1000;
  return 0;
}
int nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t h, unsigned* mw) {
  dev_t_* d = dev_of(h);
  if (!d) return 2;
  *mw = d->limit_w * 1000;
  return 0;
}
int nvmlDeviceGetTemperature(nvmlDevice_t h, unsigned sensor, unsigned* c) {
  const tick_t* t = now_of(dev_of(h));
  if (!t) return 3;
  *c = t->temp;
  return 0;
}
int nvmlDeviceGetMemoryInfo(nvmlDevice_t h, nvmlMemory_t* m) {
  dev_t_* d = dev_of(h);
  const tick_t* t = now_of(d);
  if (!t) return 3;
  m->total = (unsigned long long)d->total_mib << 20;
  m->used = (unsigned long long)t->used_mib << 20;
  m->free = m->total - m->used;
  return 0;
}
int nvmlDeviceGetPcieThroughput(nvmlDevice_t h, unsigned counter, unsigned* kbps) {
  const tick_t* t = now_of(dev_of(h));
  if (!t) return 3;
  *kbps = counter == 1 ? t->rx : t->tx;
  return 0;
}
int nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t h, unsigned long long* r) {
  const tick_t* t = now_of(dev_of(h));
  if (!t) return 3;
  *r = t->throttle;
  return 0;
}
int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t h, unsigned* n, nvmlProcessInfo_t* out) {
  const tick_t* t = now_of(dev_of(h));
  if (!t) { *n = 0; return 0; }
  if (*n < t->npids) { *n = t->npids; return 7; }
  for (unsigned i = 0; i < t->npids; ++i) {
    out[i].pid = t->pids[i];
    out[i].usedGpuMemory = 1024ull << 20;
    out[i].gpuInstanceId = out[i].computeInstanceId = 0xFFFFFFFFu;
  }
  *n = t->npids;
  return 0;
}
