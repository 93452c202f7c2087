/*
 * A test double of the CUDA driver (libcuda.so.1) for cargo-gpumem's tests.
 *
 * It exports the driver entry points that cargo-gpumem and cudarc's safe API call, with the
 * driver's signatures and error codes, so that tests exercise the real dynamic-loading path
 * (dlopen of "libcuda.so.1", symbol lookup, error mapping) on machines without a GPU.
 * Device memory is host memory (an anonymous mapping per allocation, so that writes through
 * cuMemsetD8 and host-to-device copies really touch pages) with a capacity per device. Nothing
 * else of a GPU exists: no kernels, streams are not ordered, events and synchronisation are
 * no-ops.
 *
 * Configuration, read once at cuInit:
 *   GPUMEM_FAKE_CUDA_DEVICES        number of devices (default 1; 0 makes cuInit fail with
 *                                   CUDA_ERROR_NO_DEVICE, as a driver without a card does)
 *   GPUMEM_FAKE_CUDA_CAPACITY       bytes per device (default 1 GiB)
 *   GPUMEM_FAKE_CUDA_CONTEXT_BYTES  memory a primary context takes from its device when first
 *                                   retained (default 0; real contexts take a few hundred MiB)
 *   GPUMEM_FAKE_CUDA_LOG            a file to which every allocation, free, memset and
 *                                   out-of-memory refusal is appended, one line each
 *   GPUMEM_FAKE_CUDA_BACKING        "host" (default): allocations are host memory;
 *                                   "none": accounting only (addresses from a counter, writes
 *                                   and copies only checked), for benchmarks of the caller
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct fake_context *CUcontext;
typedef void *CUstream;
typedef void *CUevent;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_CONTEXT = 201,
};

#define MAX_DEVICES 8
#define DRIVER_VERSION 12080

struct fake_context {
    int device;
    int retained;
};

struct allocation {
    CUdeviceptr address;
    size_t size;
    int device;
    struct allocation *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int initialized;
static int device_count = 1;
static size_t capacity = (size_t)1 << 30;
static size_t context_bytes;
static size_t used[MAX_DEVICES];
static struct fake_context contexts[MAX_DEVICES];
static struct allocation *live;
static FILE *log_file;
static int host_backing = 1;
static CUdeviceptr next_unbacked = (CUdeviceptr)1 << 44;
static __thread CUcontext current;

static size_t env_size(const char *name, size_t fallback) {
    const char *text = getenv(name);
    if (text == NULL || *text == '\0') {
        return fallback;
    }
    return (size_t)strtoull(text, NULL, 10);
}

static void log_line(const char *format, unsigned long long a, unsigned long long b) {
    if (log_file != NULL) {
        fprintf(log_file, format, a, b);
        fflush(log_file);
    }
}

CUresult cuInit(unsigned int flags) {
    if (flags != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_lock(&lock);
    if (!initialized) {
        size_t devices = env_size("GPUMEM_FAKE_CUDA_DEVICES", 1);
        device_count = devices > MAX_DEVICES ? MAX_DEVICES : (int)devices;
        capacity = env_size("GPUMEM_FAKE_CUDA_CAPACITY", capacity);
        context_bytes = env_size("GPUMEM_FAKE_CUDA_CONTEXT_BYTES", 0);
        const char *backing = getenv("GPUMEM_FAKE_CUDA_BACKING");
        host_backing = backing == NULL || strcmp(backing, "none") != 0;
        const char *path = getenv("GPUMEM_FAKE_CUDA_LOG");
        if (path != NULL && *path != '\0') {
            log_file = fopen(path, "a");
        }
        initialized = 1;
    }
    pthread_mutex_unlock(&lock);
    return device_count == 0 ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
}

static CUresult ready(void) {
    if (!initialized) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    return device_count == 0 ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
}

static CUresult valid_device(CUdevice device) {
    CUresult status = ready();
    if (status != CUDA_SUCCESS) {
        return status;
    }
    return device >= 0 && device < device_count ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuDriverGetVersion(int *version) {
    if (version == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *version = DRIVER_VERSION;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
    CUresult status = ready();
    if (status == CUDA_ERROR_NOT_INITIALIZED) {
        return status;
    }
    if (count == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *count = device_count;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    CUresult status = valid_device(ordinal);
    if (status != CUDA_SUCCESS) {
        return status;
    }
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int length, CUdevice device) {
    CUresult status = valid_device(device);
    if (status != CUDA_SUCCESS) {
        return status;
    }
    if (name == NULL || length <= 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    snprintf(name, (size_t)length, "gpumem fake CUDA device %d", device);
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice device) {
    CUresult status = valid_device(device);
    if (status != CUDA_SUCCESS) {
        return status;
    }
    *bytes = capacity;
    return CUDA_SUCCESS;
}

/* Every attribute reads 0 (no memory pools, so cudarc uses cuMemAlloc / cuMemFree), except
 * the compute capability, which reads 9.0. */
CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice device) {
    CUresult status = valid_device(device);
    if (status != CUDA_SUCCESS) {
        return status;
    }
    *value = attribute == 75 ? 9 : 0;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
    CUresult status = valid_device(device);
    if (status != CUDA_SUCCESS) {
        return status;
    }
    pthread_mutex_lock(&lock);
    struct fake_context *ctx = &contexts[device];
    if (ctx->retained == 0) {
        if (used[device] + context_bytes > capacity) {
            pthread_mutex_unlock(&lock);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        used[device] += context_bytes;
    }
    ctx->device = device;
    ctx->retained += 1;
    pthread_mutex_unlock(&lock);
    *context = ctx;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
    CUresult status = valid_device(device);
    if (status != CUDA_SUCCESS) {
        return status;
    }
    pthread_mutex_lock(&lock);
    struct fake_context *ctx = &contexts[device];
    if (ctx->retained > 0) {
        ctx->retained -= 1;
        if (ctx->retained == 0) {
            used[device] -= context_bytes;
        }
    }
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext context) {
    current = context;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *context) {
    *context = current;
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
    return current == NULL ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream stream) {
    (void)stream;
    return current == NULL ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
}

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes) {
    if (current == NULL) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    pthread_mutex_lock(&lock);
    *free_bytes = capacity - used[current->device];
    *total_bytes = capacity;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *address, size_t size) {
    if (current == NULL) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (address == NULL || size == 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    int device = current->device;
    pthread_mutex_lock(&lock);
    if (size > capacity - used[device]) {
        pthread_mutex_unlock(&lock);
        log_line("oom %llu %llu\n", size, (unsigned long long)device);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    struct allocation *a = malloc(sizeof *a);
    void *host;
    if (host_backing) {
        host = mmap(NULL, size, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    } else {
        host = (void *)(uintptr_t)next_unbacked;
        next_unbacked += (size + 511) / 512 * 512;
    }
    if (a == NULL || host == MAP_FAILED) {
        free(a);
        if (host != MAP_FAILED) {
            munmap(host, size);
        }
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    a->address = (CUdeviceptr)(uintptr_t)host;
    a->size = size;
    a->device = device;
    a->next = live;
    live = a;
    used[device] += size;
    pthread_mutex_unlock(&lock);
    *address = a->address;
    log_line("alloc %llu %llu\n", size, (unsigned long long)device);
    return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr address) {
    pthread_mutex_lock(&lock);
    struct allocation **link = &live;
    while (*link != NULL && (*link)->address != address) {
        link = &(*link)->next;
    }
    struct allocation *a = *link;
    if (a == NULL) {
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    *link = a->next;
    used[a->device] -= a->size;
    pthread_mutex_unlock(&lock);
    if (host_backing) {
        munmap((void *)(uintptr_t)a->address, a->size);
    }
    log_line("free %llu %llu\n", a->size, (unsigned long long)a->device);
    free(a);
    return CUDA_SUCCESS;
}

/* The allocation that contains [address, address + size), or NULL. */
static struct allocation *containing(CUdeviceptr address, size_t size) {
    for (struct allocation *a = live; a != NULL; a = a->next) {
        if (address >= a->address && size <= a->size && address - a->address <= a->size - size) {
            return a;
        }
    }
    return NULL;
}

CUresult cuMemsetD8_v2(CUdeviceptr address, unsigned char value, size_t size) {
    pthread_mutex_lock(&lock);
    struct allocation *a = containing(address, size);
    pthread_mutex_unlock(&lock);
    if (a == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (host_backing) {
        memset((void *)(uintptr_t)address, value, size);
    }
    log_line("memset %llu %llu\n", size, (unsigned long long)a->device);
    return CUDA_SUCCESS;
}

CUresult cuMemsetD8Async(CUdeviceptr address, unsigned char value, size_t size, CUstream stream) {
    (void)stream;
    return cuMemsetD8_v2(address, value, size);
}

/* Copies between host memory and a live allocation (device memory is host memory here). */
static CUresult copy(void *to, const void *from, CUdeviceptr device_side, size_t size) {
    pthread_mutex_lock(&lock);
    struct allocation *a = containing(device_side, size);
    pthread_mutex_unlock(&lock);
    if (a == NULL || from == NULL || to == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (host_backing) {
        memcpy(to, from, size);
    }
    return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t size) {
    return copy((void *)(uintptr_t)dst, src, dst, size);
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t size, CUstream stream) {
    (void)stream;
    return cuMemcpyHtoD_v2(dst, src, size);
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t size) {
    return copy(dst, (const void *)(uintptr_t)src, src, size);
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t size, CUstream stream) {
    (void)stream;
    return cuMemcpyDtoH_v2(dst, src, size);
}

CUresult cuEventCreate(CUevent *event, unsigned int flags) {
    static char events;
    (void)flags;
    *event = &events;
    return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent event) {
    (void)event;
    return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent event, CUstream stream) {
    (void)event;
    (void)stream;
    return CUDA_SUCCESS;
}

CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
    (void)stream;
    (void)event;
    (void)flags;
    return CUDA_SUCCESS;
}

static const char *error_name(CUresult error) {
    switch (error) {
    case CUDA_SUCCESS: return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
    case CUDA_ERROR_INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
    default: return NULL;
    }
}

CUresult cuGetErrorName(CUresult error, const char **name) {
    *name = error_name(error);
    return *name == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

/* The driver's own wording for the errors above. */
CUresult cuGetErrorString(CUresult error, const char **text) {
    switch (error) {
    case CUDA_SUCCESS: *text = "no error"; break;
    case CUDA_ERROR_INVALID_VALUE: *text = "invalid argument"; break;
    case CUDA_ERROR_OUT_OF_MEMORY: *text = "out of memory"; break;
    case CUDA_ERROR_NOT_INITIALIZED: *text = "initialization error"; break;
    case CUDA_ERROR_NO_DEVICE: *text = "no CUDA-capable device is detected"; break;
    case CUDA_ERROR_INVALID_DEVICE: *text = "invalid device ordinal"; break;
    case CUDA_ERROR_INVALID_CONTEXT: *text = "invalid device context"; break;
    default: *text = NULL; return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}
