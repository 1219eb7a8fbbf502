/* Tensor maps from NVIDIA's CUDA driver for matmul_wgmma.cl's TMA loads (tensor_map.h). */
#include "tensor_map.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "dynlib.h"

/* The driver entry points, loaded once per process; the CUresult of each is an int, 0 for success. */
static struct {
    int (*Init)(unsigned);
    int (*DeviceGetByPCIBusId)(int *, const char *);
    int (*PrimaryCtxRetain)(void **, int);
    int (*PrimaryCtxRelease)(int);
    int (*CtxPush)(void *);
    int (*CtxPop)(void **);
    int (*Encode)(void *, int, unsigned, void *, const uint64_t *, const uint64_t *, const unsigned *,
                  const unsigned *, int, int, int, int);
    char reason[160]; /* why not, where Encode is NULL */
} cu;
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;

/* a function pointer stored by its bytes: ISO C has no conversion from the object pointer dlsym returns */
#define STORE_SYM(field, lib, name)                                                                            \
    do {                                                                                                       \
        void *sym_ = trr_dynlib_sym(lib, name, cu.reason, sizeof cu.reason);                                   \
        if (!sym_) return;                                                                                     \
        memcpy(&(field), &sym_, sizeof sym_);                                                                  \
    } while (0)

static void load_driver(void) {
    static const char *const names[] = {"libcuda.so.1", "libcuda.so", NULL};
    void *lib = trr_dynlib_open(names, cu.reason, sizeof cu.reason);
    if (!lib) return;
    int (*encode)(void *, int, unsigned, void *, const uint64_t *, const uint64_t *, const unsigned *,
                  const unsigned *, int, int, int, int) = NULL;
    STORE_SYM(cu.Init, lib, "cuInit");
    STORE_SYM(cu.DeviceGetByPCIBusId, lib, "cuDeviceGetByPCIBusId");
    STORE_SYM(cu.PrimaryCtxRetain, lib, "cuDevicePrimaryCtxRetain");
    STORE_SYM(cu.PrimaryCtxRelease, lib, "cuDevicePrimaryCtxRelease_v2");
    STORE_SYM(cu.CtxPush, lib, "cuCtxPushCurrent_v2");
    STORE_SYM(cu.CtxPop, lib, "cuCtxPopCurrent_v2");
    STORE_SYM(encode, lib, "cuTensorMapEncodeTiled");
    const int r = cu.Init(0);
    if (r != 0) {
        snprintf(cu.reason, sizeof cu.reason, "cuInit failed (CUresult %d)", r);
        return;
    }
    cu.Encode = encode;
}

void trr_cl_tma_geometry(int64_t rows, int64_t k, int64_t ld, int64_t bs, int64_t batch, int box, uint64_t dims[3],
                         uint64_t strides[2], unsigned boxes[3]) {
    const int batched = bs != 0 && batch > 1;
    dims[0] = (uint64_t)k;
    dims[1] = (uint64_t)rows;
    dims[2] = batched ? (uint64_t)batch : 1u;
    strides[0] = (uint64_t)ld;
    strides[1] = batched ? (uint64_t)bs : (uint64_t)(ld * rows);
    boxes[0] = 64u;
    boxes[1] = (unsigned)box;
    boxes[2] = 1u;
}

/* The first use on a device: the driver, the CUDA device of the same PCI address, its primary context. */
static int start(trr_cl_tma *tma, const char *pci_bus_id) {
    pthread_once(&cu_once, load_driver);
    int r;
    if (!cu.Encode)
        snprintf(tma->reason, sizeof tma->reason, "no CUDA driver to encode tensor maps: %s", cu.reason);
    else if (!pci_bus_id || !pci_bus_id[0])
        snprintf(tma->reason, sizeof tma->reason, "the OpenCL device reports no PCI address to find it in CUDA by");
    else if ((r = cu.DeviceGetByPCIBusId(&tma->device, pci_bus_id)) != 0)
        snprintf(tma->reason, sizeof tma->reason, "no CUDA device at %s (CUresult %d)", pci_bus_id, r);
    else if ((r = cu.PrimaryCtxRetain(&tma->context, tma->device)) != 0)
        snprintf(tma->reason, sizeof tma->reason, "cuDevicePrimaryCtxRetain failed (CUresult %d)", r);
    else
        return 1;
    tma->context = NULL;
    return 0;
}

int trr_cl_tma_encode(trr_cl_tma *tma, const char *pci_bus_id, uint64_t map[16], int64_t rows, int64_t k, int64_t ld,
                      int64_t bs, int64_t batch, int box) {
    if (tma->state == 0) tma->state = start(tma, pci_bus_id) ? 1 : -1;
    if (tma->state < 0) return 0;
    uint64_t dims[3], strides[2];
    unsigned boxes[3];
    const unsigned ones[3] = {1u, 1u, 1u};
    trr_cl_tma_geometry(rows, k, ld, bs, batch, box, dims, strides, boxes);
    int r = cu.CtxPush(tma->context);
    if (r != 0) {
        snprintf(tma->reason, sizeof tma->reason, "cuCtxPushCurrent failed (CUresult %d)", r);
        return 0;
    }
    /* uint8 elements, no interleave, 64-byte swizzle, L2 promotion of 128 bytes, zeros out of bounds; any
     * 16-byte aligned address stands in for the buffer's (tmap_fill sets it) */
    r = cu.Encode(map, 0, 3, (void *)(uintptr_t)0x10000, dims, strides, boxes, ones, 0, 2, 2, 0);
    void *popped;
    cu.CtxPop(&popped);
    if (r != 0) {
        /* this call's geometry only (e.g. batch strides that overlap): the next call may encode */
        snprintf(tma->reason, sizeof tma->reason, "cuTensorMapEncodeTiled refused the operand (CUresult %d)", r);
        return 0;
    }
    return 1;
}

void trr_cl_tma_release(trr_cl_tma *tma) {
    if (tma->context) cu.PrimaryCtxRelease(tma->device);
    tma->context = NULL;
    tma->state = 0;
}
