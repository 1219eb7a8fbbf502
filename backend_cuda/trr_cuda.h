/* Internal to the CUDA backend: the run-time loaded driver and NVRTC tables (our own minimal declarations, so
 * the backend builds with no CUDA toolkit), the per-device state, and the helpers the op files share. */
#ifndef TRR_CUDA_H
#define TRR_CUDA_H

#include "backend.h"
#include "op_table.h"
#include "embedded.h"

#include <stddef.h>
#include <stdint.h>

/* ---- driver API types: the few the backend touches, with the values cuda.h gives them ---- */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUgraphNode_st *CUgraphNode;
/* cuda.h's CUDA_KERNEL_NODE_PARAMS_v2; the v1 entry points read the same fields up to `extra`. */
typedef struct trr_cu_kernel_node_params {
    CUfunction func;
    unsigned grid_x, grid_y, grid_z, block_x, block_y, block_z, smem_bytes;
    void **kernel_params;
    void **extra;
    void *kern;   /* CUkernel: NULL, func is used */
    CUcontext ctx; /* ignored when func is set */
} trr_cu_kernel_node_params;
/* cuda.h's CUlaunchConfig (CUDA 12.0+); the backend passes no launch attributes. */
typedef struct trr_cu_launch_config {
    unsigned grid_x, grid_y, grid_z, block_x, block_y, block_z, smem_bytes;
    CUstream stream;
    void *attrs;
    unsigned num_attrs;
} trr_cu_launch_config;

enum {
    TRR_CUDA_SUCCESS = 0,
    TRR_CUDA_ERROR_OUT_OF_MEMORY = 2,
    TRR_CU_ATTR_MAX_THREADS_PER_BLOCK = 1,
    TRR_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK = 8,
    TRR_CU_ATTR_WARP_SIZE = 10,
    TRR_CU_ATTR_MULTIPROCESSOR_COUNT = 16,
    TRR_CU_ATTR_L2_CACHE_SIZE = 38,
    TRR_CU_ATTR_CC_MAJOR = 75,
    TRR_CU_ATTR_CC_MINOR = 76,
    TRR_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
    TRR_CU_FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
    TRR_CU_STREAM_NON_BLOCKING = 1,
    TRR_CU_EVENT_DEFAULT = 0
};

/* Every driver entry point used: X(name as exported by libcuda, field, parameter list). Versioned exports
 * (_v2) are the ones cuda.h maps the plain names to. */
#define TRR_CU_FUNCTIONS(X)                                                                                    \
    X("cuInit", Init, (unsigned))                                                                              \
    X("cuDriverGetVersion", DriverGetVersion, (int *))                                                         \
    X("cuDeviceGetCount", DeviceGetCount, (int *))                                                             \
    X("cuDeviceGet", DeviceGet, (CUdevice *, int))                                                             \
    X("cuDeviceGetName", DeviceGetName, (char *, int, CUdevice))                                               \
    X("cuDeviceTotalMem_v2", DeviceTotalMem, (size_t *, CUdevice))                                             \
    X("cuDeviceGetAttribute", DeviceGetAttribute, (int *, int, CUdevice))                                      \
    X("cuDevicePrimaryCtxRetain", DevicePrimaryCtxRetain, (CUcontext *, CUdevice))                             \
    X("cuDevicePrimaryCtxRelease_v2", DevicePrimaryCtxRelease, (CUdevice))                                     \
    X("cuCtxSetCurrent", CtxSetCurrent, (CUcontext))                                                           \
    X("cuStreamCreate", StreamCreate, (CUstream *, unsigned))                                                  \
    X("cuStreamDestroy_v2", StreamDestroy, (CUstream))                                                         \
    X("cuStreamSynchronize", StreamSynchronize, (CUstream))                                                    \
    X("cuMemAlloc_v2", MemAlloc, (CUdeviceptr *, size_t))                                                      \
    X("cuMemFree_v2", MemFree, (CUdeviceptr))                                                                  \
    X("cuMemGetAddressRange_v2", MemGetAddressRange, (CUdeviceptr *, size_t *, CUdeviceptr))                   \
    X("cuMemcpyHtoDAsync_v2", MemcpyHtoDAsync, (CUdeviceptr, const void *, size_t, CUstream))                  \
    X("cuMemcpyDtoHAsync_v2", MemcpyDtoHAsync, (void *, CUdeviceptr, size_t, CUstream))                        \
    X("cuMemcpyDtoDAsync_v2", MemcpyDtoDAsync, (CUdeviceptr, CUdeviceptr, size_t, CUstream))                   \
    X("cuMemsetD8Async", MemsetD8Async, (CUdeviceptr, unsigned char, size_t, CUstream))                        \
    X("cuEventCreate", EventCreate, (CUevent *, unsigned))                                                     \
    X("cuEventDestroy_v2", EventDestroy, (CUevent))                                                            \
    X("cuEventRecord", EventRecord, (CUevent, CUstream))                                                       \
    X("cuEventSynchronize", EventSynchronize, (CUevent))                                                       \
    X("cuStreamWaitEvent", StreamWaitEvent, (CUstream, CUevent, unsigned))                                     \
    X("cuModuleLoadData", ModuleLoadData, (CUmodule *, const void *))                                          \
    X("cuModuleUnload", ModuleUnload, (CUmodule))                                                              \
    X("cuModuleGetFunction", ModuleGetFunction, (CUfunction *, CUmodule, const char *))                        \
    X("cuFuncSetAttribute", FuncSetAttribute, (CUfunction, int, int))                                          \
    X("cuLaunchKernel", LaunchKernel,                                                                          \
      (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void **,    \
       void **))                                                                                               \
    X("cuGetErrorName", GetErrorName, (CUresult, const char **))

typedef struct trr_cu_api {
#define TRR_CU_MEMBER(sym, name, params) CUresult (*name) params;
    TRR_CU_FUNCTIONS(TRR_CU_MEMBER)
#undef TRR_CU_MEMBER
    /* cuEventElapsedTime_v2 where the driver has it (CUDA 12.8+), else the original; same signature. */
    CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
    /* cuTensorMapEncodeTiled (CUDA 12.0+, for Hopper's TMA); NULL on older drivers, which then never take the
     * wgmma matmul path. The enums travel as int: (map, data type, rank, address, dims, strides in bytes of
     * dims 1.., box, element strides, interleave, swizzle, L2 promotion, out-of-bounds fill). */
    CUresult (*TensorMapEncodeTiled)(void *, int, unsigned, void *, const uint64_t *, const uint64_t *,
                                     const unsigned *, const unsigned *, int, int, int, int);
    /* Device identity (optional): cuDeviceGetUuid_v2 or cuDeviceGetUuid (16 bytes), cuDeviceGetPCIBusId. */
    CUresult (*DeviceGetUuid)(unsigned char *, CUdevice);
    CUresult (*DeviceGetPCIBusId)(char *, int, CUdevice);
    /* cuOccupancyMaxActiveClusters (CUDA 12.0+, optional): how many clusters of a kernel fit on the device at
     * once, which a persistent clustered grid must not exceed. */
    CUresult (*OccupancyMaxActiveClusters)(int *, CUfunction, const trr_cu_launch_config *);
    /* CUDA graphs (optional; all or none): the queued launches of batch.c. */
    CUresult (*GraphCreate)(CUgraph *, unsigned);
    CUresult (*GraphAddKernelNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                   const trr_cu_kernel_node_params *);
    CUresult (*GraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*GraphExecKernelNodeSetParams)(CUgraphExec, CUgraphNode, const trr_cu_kernel_node_params *);
    CUresult (*GraphNodeSetEnabled)(CUgraphExec, CUgraphNode, unsigned);
    CUresult (*GraphLaunch)(CUgraphExec, CUstream);
    CUresult (*GraphExecDestroy)(CUgraphExec);
    CUresult (*GraphDestroy)(CUgraph);
    /* Mapped host memory and the stream's 32-bit write (optional; all or none): wait.c's flag. */
    CUresult (*MemHostAlloc)(void **, size_t, unsigned);
    CUresult (*MemHostGetDevicePointer)(CUdeviceptr *, void *, unsigned);
    CUresult (*MemFreeHost)(void *);
    CUresult (*StreamWriteValue32)(CUstream, CUdeviceptr, uint32_t, unsigned);
} trr_cu_api;

#define TRR_CU_MEMHOSTALLOC_DEVICEMAP 0x02 /* cuMemHostAlloc: the memory also has a device address */

/* The driver's CUtensorMap: 128 opaque bytes, 64-byte aligned. */
typedef struct trr_cu_tensor_map {
    _Alignas(64) uint64_t opaque[16];
} trr_cu_tensor_map;
enum {
    TRR_CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0,
    TRR_CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6,
    TRR_CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7,
    TRR_CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9,
    TRR_CU_TENSOR_MAP_SWIZZLE_32B = 1,
    TRR_CU_TENSOR_MAP_SWIZZLE_64B = 2,
    TRR_CU_TENSOR_MAP_SWIZZLE_128B = 3,
    TRR_CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3
};

/* ---- NVRTC ---- */
typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

#define TRR_NVRTC_FUNCTIONS(X)                                                                                 \
    X(Version, (int *, int *))                                                                                 \
    X(CreateProgram, (nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *)) \
    X(DestroyProgram, (nvrtcProgram *))                                                                        \
    X(CompileProgram, (nvrtcProgram, int, const char *const *))                                                \
    X(GetProgramLogSize, (nvrtcProgram, size_t *))                                                             \
    X(GetProgramLog, (nvrtcProgram, char *))                                                                   \
    X(GetPTXSize, (nvrtcProgram, size_t *))                                                                    \
    X(GetPTX, (nvrtcProgram, char *))                                                                          \
    X(GetCUBINSize, (nvrtcProgram, size_t *))                                                                  \
    X(GetCUBIN, (nvrtcProgram, char *))

typedef struct trr_nvrtc_api {
#define TRR_NVRTC_MEMBER(name, params) nvrtcResult (*name) params;
    TRR_NVRTC_FUNCTIONS(TRR_NVRTC_MEMBER)
#undef TRR_NVRTC_MEMBER
    const char *(*GetErrorString)(nvrtcResult);
} trr_nvrtc_api;

/* ---- loader.c: both tables are filled once and read-only afterwards ---- */
extern trr_cu_api trr_cu;
extern trr_nvrtc_api trr_nvrtc;

/* Loads libcuda.so.1 and every symbol, then cuInit(0); idempotent and thread-safe. */
trr_status trr_cuda_load_driver(char *reason, size_t reason_cap);
/* Loads NVRTC (libnvrtc.so.13, .so.12, .so, then $CUDA_HOME/lib64, /usr/local/cuda/lib64); idempotent and
 * thread-safe. Needs no driver: the CI test compiles every kernel with NVRTC alone. */
trr_status trr_cuda_load_nvrtc(char *reason, size_t reason_cap);
/* NVRTC's version as major * 1000 + minor * 10 (0 before loading). */
int trr_cuda_nvrtc_version(void);
/* "CUDA_ERROR_OUT_OF_MEMORY" (cuGetErrorName), or "CUresult 999" when the driver does not know the code. */
const char *trr_cuda_result_name(CUresult r);
/* Records a failed driver call on ctx: "<function>: <CUresult name>"; out-of-memory maps to
 * TRR_ERR_OUT_OF_MEMORY, everything else to TRR_ERR_DEVICE. */
trr_status trr_cuda_fail(trr_context *ctx, const char *function, CUresult r);
#define TRR_CU_CHECK(ctx, call, fname)                                                                         \
    do {                                                                                                       \
        CUresult trr_cu_r_ = (call);                                                                           \
        if (trr_cu_r_ != TRR_CUDA_SUCCESS) return trr_cuda_fail((ctx), (fname), trr_cu_r_);                   \
    } while (0)

/* ---- device.c: an open device ---- */
typedef struct trr_cuda_module trr_cuda_module; /* module.c */

/* One slot of the launch-path function cache (module.c): an op file's own key for a kernel of a variant. */
typedef struct trr_cuda_fast_fn {
    uint64_t key; /* 0: empty */
    CUfunction fn;
} trr_cuda_fast_fn;
#define TRR_CUDA_FAST_SLOTS 64

typedef struct trr_cuda_batch trr_cuda_batch; /* batch.c */

/* Device memory a kernel family keeps for its partial results between calls (memory.c, trr_cuda_scratch_get). */
typedef struct trr_cuda_scratch {
    CUdeviceptr ptr; /* 0: none yet */
    size_t bytes;
} trr_cuda_scratch;

typedef struct trr_cuda_dev {
    CUdevice device;
    CUcontext context; /* the device's primary context, retained */
    CUstream stream;   /* one non-blocking stream: every command of the context is ordered on it */
    CUevent timer_begin, timer_end;
    CUevent interop_event; /* interop.c: hand-overs with another library's stream (NULL until the first) */
    int timing;
    int cc_major, cc_minor;
    int sm_count;
    int max_threads;
    int smem_optin; /* bytes of shared memory a block may use after opting in */
    int driver_version;
    char arch[16]; /* NVRTC target: "sm_80", "sm_90a", ... */
    trr_cuda_module *modules; /* in-memory module cache: a context loads a handful */
    trr_cuda_fast_fn fast[TRR_CUDA_FAST_SLOTS]; /* direct-mapped: a hit costs no formatting, hashing or search */
    unsigned cluster_smem; /* the clustered kernel's shared memory last asked about (0: none yet), and how many */
    int cluster_fit;       /* of its clusters fit on the device at once */
    trr_cuda_batch *batch; /* the queued launches (batch.c); NULL until the first is queued */
    int batch_off;         /* launches go straight to the stream from now on: no graph API, or the caller took
                              the native stream */
    int busy;              /* the stream has commands the host has not waited for */
    int native;            /* the caller has the stream (trr_context_native) */
    volatile uint32_t *flag; /* wait.c: mapped host memory the stream writes flag_seq to (NULL: none) */
    CUdeviceptr flag_dev;
    uint32_t flag_seq;
    uint32_t flag_kernel; /* the value the stream's last command, a kernel, writes to the flag itself (0: none) */
    trr_cuda_scratch attn_scratch;   /* attention's split over the keys: partial results (ops_attention.c) */
    trr_cuda_scratch matmul_scratch; /* matmul's split-K partials (ops_matmul.c) */
    trr_cuda_scratch matmul_flags;   /* mma.sync's split-K counters, one a tile, 0 between launches (ops_matmul.c) */
    trr_cuda_scratch matmul_pack;    /* operands copied into the tensor cores' layout (matmul_pack.c) */
} trr_cuda_dev;

trr_status trr_cuda_probe(int *out_device_count, char *reason, size_t reason_cap);
trr_status trr_cuda_device_info(int index, trr_device_info *out_info);
trr_status trr_cuda_open(trr_context *ctx, int index, void **out_dev);
void trr_cuda_close(void *dev);
/* Makes ctx's CUDA context current on the calling thread (a trireme context may move between threads). */
trr_status trr_cuda_bind(trr_context *ctx);
/* The NVRTC target for compute capability major.minor: sm_90a for 9.0 (Hopper's own instructions), else
 * sm_XY. Writes into out (cap >= 16). */
void trr_cuda_arch_for(int major, int minor, char *out, size_t cap);

/* ---- memory.c ---- */
trr_status trr_cuda_alloc(trr_context *ctx, size_t bytes, void **out_mem);
void trr_cuda_free(void *dev, void *mem);
trr_status trr_cuda_wrap(trr_context *ctx, uint64_t native, size_t bytes, void **out_mem);
void trr_cuda_unwrap(void *dev, void *mem);
trr_status trr_cuda_write(trr_context *ctx, void *mem, size_t offset, const void *src, size_t bytes);
trr_status trr_cuda_read(trr_context *ctx, void *mem, size_t offset, void *dst, size_t bytes);
trr_status trr_cuda_copy(trr_context *ctx, void *dst, size_t dst_offset, void *src, size_t src_offset,
                         size_t bytes);
trr_status trr_cuda_fill(trr_context *ctx, void *mem, size_t offset, size_t bytes, uint8_t value);
trr_status trr_cuda_synchronize(trr_context *ctx);

/* ---- interop.c: ordering with another library's stream ---- */
trr_status trr_cuda_order_native(trr_context *ctx, uint64_t native, int native_waits);
trr_status trr_cuda_native_stream(trr_context *ctx, uint64_t *out_stream);

/* ---- wait.c: the stream's wait through a flag in mapped host memory ---- */
void trr_cuda_flag_open(trr_cuda_dev *dev); /* no flag (and the plain wait) where the driver refuses */
void trr_cuda_flag_close(trr_cuda_dev *dev);
/* For a kernel that writes the flag itself: the flag's device address and the value to write (*out_seq), or 0
 * when it should not (no flag, the caller has the stream, the stream is busy or timed). */
CUdeviceptr trr_cuda_flag_for_kernel(const trr_cuda_dev *dev, uint32_t *out_seq);
/* That kernel is now the stream's last command (only a launch on an idle stream writes the flag: never queued). */
void trr_cuda_flag_kernel_enqueued(trr_cuda_dev *dev, uint32_t seq);
/* Waits until the stream's work so far has finished; cuStreamSynchronize's result. */
CUresult trr_cuda_wait_stream(trr_cuda_dev *dev);
trr_status trr_cuda_timer_start(trr_context *ctx);
trr_status trr_cuda_timer_stop(trr_context *ctx, double *out_ms);
/* The device address of element `offset` of an operand. */
CUdeviceptr trr_cuda_operand_ptr(const trr_operand *op);

/* ---- variants.c: what gets compiled ---- */
/* One compiled unit: a kernel file plus its -D options. Everything about a kernel that is fixed at compile
 * time lives here; the op files fill one in, module.c compiles and caches it. */
typedef struct trr_cuda_variant {
    const char *file; /* in kernels/cuda */
    char defines[256]; /* "-DOP=1 -DDT=0", space separated */
    int sm90a_only;    /* uses Hopper's arch-specific instructions (wgmma, setmaxnreg): compiled for sm_90a alone */
    int min_sm;        /* the oldest architecture it compiles for (89: the 8-bit float mma.sync); 0: any */
    const char *text;  /* a user op's source (core/user_op.h), compiled alone in place of file, which then names it
                          uniquely ("user#<op>") for the memory cache; NULL for kernels/cuda files */
} trr_cuda_variant;
/* A user op's kernel (user.c); its checks and launch (trr_user_prepare) within the device's block size. */
trr_status trr_cuda_run_user(trr_context *ctx, const trr_call *call);
trr_status trr_cuda_user_prepare(trr_context *ctx, const trr_call *call, int64_t groups[3], int *threads);

/* Appends a printf-style -D option; returns 0 when it did not fit. */
int trr_cuda_define(trr_cuda_variant *v, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The hash of everything that decides what NVRTC makes of v for arch: the whole source, the options, the arch
 * and the versions text given. 0 when the source is not embedded. */
uint64_t trr_cuda_variant_key(const trr_cuda_variant *v, const char *arch, const char *versions);
/* Compiles one variant with NVRTC for arch into a cubin (malloc'd), the PTX (malloc'd, may be NULL when not
 * wanted) and the log (malloc'd, always set when the compiler ran). ctx may be NULL (errors then go to this
 * thread's slot). TRR_ERR_COMPILE with the log appended on failure. */
trr_status trr_cuda_compile(trr_context *ctx, const trr_cuda_variant *v, const char *arch, void **out_cubin,
                            size_t *out_cubin_size, char **out_ptx, char **out_log);
/* The same with NVRTC options besides the variant's (space separated; NULL for none). */
trr_status trr_cuda_compile_with(trr_context *ctx, const trr_cuda_variant *v, const char *arch, const char *options,
                                 void **out_cubin, size_t *out_cubin_size, char **out_ptx, char **out_log);

/* Every variant the backend can choose (all ops, dtypes, layouts, tile configs), for the CI test; those with
 * sm90a_only set are compiled only for sm_90a, those with min_sm for that architecture and later. */
typedef void (*trr_cuda_variant_fn)(const trr_cuda_variant *v, void *user);
void trr_cuda_for_each_variant(trr_cuda_variant_fn fn, void *user);
/* The compile-everything check with NVRTC alone (no driver), for each of archs: every variant in NVRTC's
 * fast-compile mode, and one representative of each group that shares a register allocation and tensor-core
 * schedule at the default optimisation instead (variants.c says which and why). part (0 <= part < parts <= 64)
 * of the compiles, cut by estimated cost, so separate processes can share the work (NVRTC compiles one program
 * at a time within a process). Returns the first failure (TRR_ERR_COMPILE also when the log holds what the
 * mode fails on) and writes what failed and the log into report; counts the compiles checked into *out_done. */
trr_status trr_cuda_compile_check(const char *const *archs, int n_archs, int part, int parts, int *out_done,
                                  char *report, size_t report_cap);
/* The check for one architecture, in part of parts. */
trr_status trr_cuda_compile_part(const char *arch, int part, int parts, int *out_done, char *report,
                                 size_t report_cap);
/* The whole check for one architecture. */
trr_status trr_cuda_compile_all(const char *arch, int *out_done, char *report, size_t report_cap);

/* ---- module.c: compile, cache (memory and disk), load ---- */
/* The function `kernel` of variant v on ctx's device: compiled at most once per device (memory cache), and
 * loaded from the disk cache when an intact entry for the same source, options, arch, driver and NVRTC
 * exists. */
trr_status trr_cuda_get_function(trr_context *ctx, const trr_cuda_variant *v, const char *kernel,
                                 CUfunction *out_fn);
void trr_cuda_modules_release(trr_cuda_dev *dev);
/* The launch path's cache in front of trr_cuda_get_function: an op file packs what selects a kernel (which
 * kernel, op, dtype, compile-time sizes) into a non-zero key of its own, so a repeated call finds the function
 * without building the variant's options. fast_get gives NULL on a miss; fast_put may evict another key. */
CUfunction trr_cuda_fast_get(const trr_cuda_dev *dev, uint64_t key);
void trr_cuda_fast_put(trr_cuda_dev *dev, uint64_t key, CUfunction fn);

/* ---- launch.c ---- */
/* A kernel of the memory-bound ops (no dynamic shared memory). A small one goes through batch.c: queued while
 * the stream is busy, else launched at once as a graph of one node; others are launched. */
trr_status trr_cuda_launch(trr_context *ctx, CUfunction fn, unsigned gx, unsigned gy, unsigned block, void **args);
/* A launch after the queued ones, through batch.c's one-node graph where the stream is idle (matmul: gz = the
 * batch, blockIdx.z). */
trr_status trr_cuda_launch_3d(trr_context *ctx, CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned block,
                              unsigned smem_bytes, void **args);

/* ---- batch.c: queued launches ---- */
/* Small kernels launched within TRR_CUDA_BATCH_NODES of each other, while the stream has work the host has not
 * waited for, go to the device as one CUDA graph (batch.c says why and how). */
#define TRR_CUDA_BATCH_NODES 64
/* Grids of at most this many threads count as small: a few microseconds of work, so that queueing them delays
 * little (a full batch of them is well under a millisecond). */
#define TRR_CUDA_BATCH_MAX_THREADS 32768
/* Queues the launch behind work on the stream (*out_queued 1), or leaves it to the caller to launch (0: an idle
 * stream, no graphs now, or the driver refused the node's parameters, which the launch then reports). */
trr_status trr_cuda_batch_add(trr_context *ctx, const trr_cu_kernel_node_params *p, int *out_queued);
/* Any kernel on an idle stream, outside timed spans: launched at once as its function's graph of one node
 * (*out_launched 1), or left to the caller (0). */
trr_status trr_cuda_batch_launch_now(trr_context *ctx, const trr_cu_kernel_node_params *p, int *out_launched);
/* Launches what is queued. Every command that goes on the stream, or waits for it, comes after this. */
/* The scratch memory s, grown to at least bytes (with room to grow, in whole MiB); what for names it in errors.
 * Growing first waits for the stream: kernels queued or running may still read the old memory. Freed with the
 * context (device.c). */
trr_status trr_cuda_scratch_get(trr_context *ctx, trr_cuda_scratch *s, size_t bytes, const char *what,
                                CUdeviceptr *out);
trr_status trr_cuda_batch_flush(trr_context *ctx);
/* The same for the teardown paths that have no context to report to; returns the driver's result. */
CUresult trr_cuda_batch_flush_dev(trr_cuda_dev *dev);
/* The host has waited for the stream (synchronize, a host transfer, the timer's end, a free), has put a command
 * on it (a transfer, a fill, an event, a kernel launched or queued: every one clears the flag a kernel wrote,
 * which the caller of a flag-writing kernel sets after), or has launched kernels it had queued (which leaves the
 * stream's last command what it was). */
static inline void trr_cuda_waited(trr_cuda_dev *dev) { dev->busy = 0; }
static inline void trr_cuda_enqueued(trr_cuda_dev *dev) {
    dev->busy = 1;
    dev->flag_kernel = 0;
}
static inline void trr_cuda_flushed(trr_cuda_dev *dev) { dev->busy = 1; }
void trr_cuda_batch_release(trr_cuda_dev *dev);
/* Kernels queued now (for the tests). */
int trr_cuda_batch_queued(const trr_cuda_dev *dev);

/* ---- config.c (config_matmul.c for matmul): tiling heuristics and limits ---- */
void trr_cuda_choose_config(trr_context *ctx, trr_call *call);
trr_status trr_cuda_check_config(trr_context *ctx, const trr_call *call);
/* The fields of c still zero taken from the heuristic's h (what an override or the tuning data left open). */
void trr_cuda_config_fill(trr_config *c, const trr_config *h);
/* Bytes an element of the types the heuristics size vectors and boxes by: f32 4, f16 and bf16 2, 8-bit floats 1. */
static inline int trr_cuda_elem_size(trr_dtype d) { return d == TRR_F32 ? 4 : d == TRR_F16 || d == TRR_BF16 ? 2 : 1; }

/* softmax: the (threads, items per thread) ladder; a row of n fits in registers when n <= threads * items. */
typedef struct trr_cuda_softmax_step {
    int threads, items;
} trr_cuda_softmax_step;
/* The ladder for dtype (f32 or f16) and its length. */
const trr_cuda_softmax_step *trr_cuda_softmax_ladder(trr_dtype dtype, int *out_count);
/* Items per thread of the online kernel for rows longer than the ladder's last step. */
int trr_cuda_softmax_online_items(trr_dtype dtype);
#define TRR_CUDA_SOFTMAX_ONLINE_THREADS 1024
/* The subgroup variant (a warp per row, threads / 32 rows per block) for rows of up to this many columns, with
 * the fewest elements per lane (a multiple of the vector, at most 32) that hold the row. */
#define TRR_CUDA_SOFTMAX_WARP_MAX_COLS 1024
#define TRR_CUDA_SOFTMAX_WARP_THREADS 256
int trr_cuda_softmax_warp_items(trr_dtype dtype, int64_t cols);

/* Row norms (the row-norm shape rule, ops_norm.c), from block_n, threads and vector_width (16 bytes of elements):
 * block_n <= TRR_CUDA_NORM_WARP_MAX_COLS is a warp per row, threads / 32 rows a block, each lane holding
 * block_n / (32 * vector_width) vectors (rows of at most block_n columns); a larger block_n is a block per row,
 * each thread holding block_n / (threads * vector_width) vectors (its VPT): rows of up to block_n columns stay in
 * registers, longer ones loop over chunks of block_n (then VPT must be TRR_CUDA_NORM_LOOP_VPT). */
#define TRR_CUDA_NORM_WARP_MAX_COLS 1024
#define TRR_CUDA_NORM_MAX_VPT 8
#define TRR_CUDA_NORM_LOOP_VPT 4
enum { TRR_CUDA_NORM_WARP = 0, TRR_CUDA_NORM_BLOCK = 1, TRR_CUDA_NORM_LOOP = 2 }; /* the kernels' KIND */
/* The kernel kind and vectors per thread a call's config asks for: 1, or 0 with the reason in why. */
int trr_cuda_norm_plan(const trr_call *call, int *out_kind, int *out_vpt, char *why, size_t cap);
/* The heuristic's row-norm config (config.c); fields already set are kept and the others follow from them. */
void trr_cuda_choose_norm(trr_call *call);

/* matmul kernel families (trr_variant): simt (CUDA cores, any call), mma (mma.m16n8k16 tensor cores with
 * cp.async: f16 on compute capability 8.0 and later, A row-major, lda and ldb multiples of 8, 16-byte aligned
 * operands), wgmma (the Hopper kernel, wgmma + TMA, matmul_wgmma.cu: the same calls on sm_90a with the driver's
 * tensor-map encoder). 1 when variant can run call on dev, else 0 with the reason in why. dev may be NULL (then
 * the device is assumed able to run mma.sync, and not wgmma). */
int trr_cuda_matmul_variant_runs(const trr_cuda_dev *dev, const trr_call *call, int variant, char *why, size_t cap);
/* The heuristic's family for a call whose config names none: wgmma where it runs and the config is one of its
 * own (threads 384, or threads not chosen and a tile that is 0 or its own, 128 x 128|256 x 64, in each field)
 * unless the product has at most 64 rows (16-bit inputs: mma's few-row tiles); else mma where it runs; else simt. */
int trr_cuda_matmul_auto_variant(const trr_cuda_dev *dev, const trr_call *call);
/* Whether a 16-bit product with A stored [K,M] runs on wgmma reading A as stored (M-major: the variant asked for,
 * or the heuristic's choice for it), so A needs no copy (matmul_pack.c). */
int trr_cuda_matmul_reads_a_mn_major(const trr_cuda_dev *dev, const trr_call *call);
/* Whether dev can run the wgmma kernel at all: compute capability 9.0 with the sm_90a target and the driver's
 * cuTensorMapEncodeTiled. */
int trr_cuda_wgmma_device(const trr_cuda_dev *dev);
/* The wgmma kernel's shape: 3 warpgroups (a TMA producer and two consumers of 64 rows each) for 128-row blocks;
 * the narrow form, 64-row blocks, has 2 (one consumer), the tall form, 192-row blocks, 4 (three consumers, whose
 * registers hold tiles up to TRR_CUDA_WGMMA_TALL_MAX_N wide: past 192 columns a K step as two instructions). */
#define TRR_CUDA_WGMMA_THREADS 384
#define TRR_CUDA_WGMMA_BM 128
#define TRR_CUDA_WGMMA_BK 64
#define TRR_CUDA_WGMMA_NARROW_THREADS 256
#define TRR_CUDA_WGMMA_NARROW_BM 64
#define TRR_CUDA_WGMMA_TALL_THREADS 512
#define TRR_CUDA_WGMMA_TALL_BM 192
#define TRR_CUDA_WGMMA_TALL_MAX_N 224
/* A 192-row tile asked for without stages gets as many as fit beside its store slots, up to this: a 96-column
 * tile of 16-bit outputs (one slot a consumer) holds 5, and ran ahead of 4 on NVIDIA H100 (docs/performance.md). */
#define TRR_CUDA_WGMMA_TALL_MAX_STAGES 5
/* 16-bit products of more rows than this (and no more than TRR_CUDA_SPLIT_SMALL_M) take the narrow tile rather than
 * mma.sync's few-row tiles (config_matmul.c, narrow_choice). */
#define TRR_CUDA_WGMMA_NARROW_MIN_M 32
/* Whether the heuristic runs a wgmma config's tile in every schedule (clustered, split, stream-K: 128 rows by
 * 128, 192 or 256); the configs' other tiles run plain, for the tile counts between those tiles' waves. */
int trr_cuda_wgmma_every_schedule(const trr_config *cfg);
/* A wgmma config's consumer warpgroups: one for each 64 rows of a block. */
int trr_cuda_wgmma_consumers(const trr_config *cfg);
/* The rows of one block of a wgmma config: block_m, or 128 for a cluster of two (block_m 256). */
int trr_cuda_wgmma_block_rows(const trr_config *cfg);
/* The last columns of B [K,N] a wgmma tile loads as one narrow box (16 or 32: the rest of block_n after whole
 * 64-column boxes, under the 32- or 64-byte swizzle), else 0 (whole boxes only). */
int trr_cuda_wgmma_b_tail(const trr_config *cfg);
/* The columns of B a stage of the ring holds room for: block_n in whole 64-column boxes and the narrow tail (B
 * [K,N] is loaded so; B stored [N,K] takes block_n of them). */
int trr_cuda_wgmma_b_stage_cols(const trr_config *cfg);
/* Dynamic shared memory of the wgmma kernel storing c_type: the stage ring, the epilogue's store slots, and 1 KB
 * to align the ring to 1024 bytes. */
size_t trr_cuda_wgmma_smem(const trr_config *cfg, trr_dtype c_type);
/* The wgmma kernel's epilogue store slots per consumer warpgroup (its C_SLOTS) for a config storing c_type: the
 * 128-byte boxes a tile stores, at most 4, or 2 where the ring leaves no room for 4. */
int trr_cuda_wgmma_c_slots(const trr_config *cfg, trr_dtype c_type);
/* The type the wgmma kernel of a chosen config stores: C's, or f32 for a split's partials. */
trr_dtype trr_cuda_wgmma_c_type(const trr_call *call);
/* The wgmma configs the heuristic and the tuner pick from (block_n, stages; the rest fixed above). */
extern const trr_config trr_cuda_wgmma_configs[];
extern const int trr_cuda_wgmma_config_count;
/* The narrow (64-row) wgmma configs, 16-bit inputs in single blocks: for grids of too few 128-row tiles. */
extern const trr_config trr_cuda_wgmma_narrow_configs[];
extern const int trr_cuda_wgmma_narrow_config_count;
/* The warp grid the tensor-core kernel uses for a tile: WARPS_M x WARPS_N with warp tiles multiples of 16,
 * as square as the tile allows. 0 when no grid fits. */
int trr_cuda_mma_warp_grid(int bm, int bn, int warps, int *out_wm, int *out_wn);
/* Dynamic shared memory of the tensor-core kernel for a config. */
size_t trr_cuda_mma_smem(const trr_config *cfg);
/* The same for operands of es bytes an element (2: f16 and bf16, 1: the 8-bit floats). */
size_t trr_cuda_mma_smem_es(const trr_config *cfg, int es);
/* The mma.sync configs of 8-bit float products, large to small (block_k in elements: 64 = 64 bytes a row); the
 * partial each K tile is summed into doubles the accumulator registers, so the warp tiles are at most 64 x 32. */
extern const trr_config trr_cuda_mma_f8_configs[];
extern const int trr_cuda_mma_f8_config_count;
/* The wgmma configs of 8-bit float products (block_n 128: the partial doubles the accumulator registers). */
extern const trr_config trr_cuda_wgmma_f8_configs[];
extern const int trr_cuda_wgmma_f8_config_count;
/* The mma.sync tiles of products of few rows (TRR_CUDA_SPLIT_SMALL_M at most), by block_m: 16, 32, 64. */
extern const trr_config trr_cuda_mma_small_configs[];
extern const int trr_cuda_mma_small_config_count;
/* A few-row tile with as many of its stages as fit smem_optin bytes of shared memory a block (sm_86 and sm_89
 * allow 99 KiB). */
trr_config trr_cuda_mma_small_fit(const trr_config *c, size_t smem_optin);
/* The least shared memory a block of an sm_80-or-later device may opt in to (sm_86, sm_89). */
#define TRR_CUDA_SMEM_OPTIN_MIN (99u * 1024u)
/* The SIMT tile configs (block_m, block_n, block_k; threads: 16 x 8 or 8 x 8 outputs each) the heuristic picks from. */
extern const trr_config trr_cuda_simt_configs[];
extern const int trr_cuda_simt_config_count;

/* variant builders shared by the op files and the variant list */
void trr_cuda_variant_matmul_mma(trr_cuda_variant *v, const trr_config *cfg, int trans_b, trr_dtype in, trr_dtype out);
/* The same with B's dtype apart from A's (an 8-bit float pair, e5m2 x e4m3). */
void trr_cuda_variant_matmul_mma_ab(trr_cuda_variant *v, const trr_config *cfg, int trans_b, trr_dtype a, trr_dtype b,
                                    trr_dtype out);
void trr_cuda_variant_matmul_wgmma_ab(trr_cuda_variant *v, const trr_config *cfg, int trans_b, trr_dtype a,
                                      trr_dtype b, trr_dtype out);
/* the same with A stored [K,M] (trans_a: 16-bit inputs), read M-major */
void trr_cuda_variant_matmul_wgmma_layout(trr_cuda_variant *v, const trr_config *cfg, int trans_a, int trans_b,
                                          trr_dtype in, trr_dtype b, trr_dtype out);
/* matmul split-K (ops_matmul.c, config_matmul.c): the most splits a config may ask for, the fewest block_k steps and
 * elements of K the heuristic leaves a split, and the largest workspace (batch x splits x M x N f32) it chooses
 * to need. */
#define TRR_CUDA_SPLIT_K_MAX 32
#define TRR_CUDA_SPLIT_MIN_STEPS 4
#define TRR_CUDA_SPLIT_MIN_K 256
/* ... and of K per split past TRR_CUDA_SPLIT_SMALL_M rows (config_matmul.c, choose_split) */
#define TRR_CUDA_SPLIT_MIN_K_WIDE 1024
#define TRR_CUDA_SPLIT_MAX_BYTES ((int64_t)256 << 20)
/* Products of more rows than this split only grids that fill at most TRR_CUDA_SPLIT_WIDE_FILL tenths of the SMs
 * (config_matmul.c, choose_split, says why); products of at most this many 16-bit rows take mma.sync's few-row tiles
 * or, past TRR_CUDA_WGMMA_NARROW_MIN_M rows on Hopper, the narrow wgmma tile. */
#define TRR_CUDA_SPLIT_SMALL_M 64
#define TRR_CUDA_SPLIT_WIDE_FILL 4
/* Variant streamk below a wave: blocks enough for about this many K tiles each (ops_matmul.c, streamk_grid) */
#define TRR_CUDA_STREAMK_MIN_RUN 8
/* split-K's second pass (matmul_reduce.cu): the partials summed into C of type out */
void trr_cuda_variant_matmul_reduce(trr_cuda_variant *v, trr_dtype out);
/* matmul_pack.cu: an operand copied into K-major 16-byte rows */
void trr_cuda_variant_matmul_pack(trr_cuda_variant *v);
void trr_cuda_variant_matmul_simt(trr_cuda_variant *v, const trr_config *cfg, trr_dtype in, trr_dtype out,
                                  int trans_a, int trans_b, int aligned);
void trr_cuda_variant_matmul_wgmma(trr_cuda_variant *v, const trr_config *cfg, int trans_b, trr_dtype in, trr_dtype out);
/* The kernels a checked matmul call's config runs (ops_matmul.c: run_wgmma, run_matmul): the main kernel, and a wgmma
 * split's second pass or the SIMT kernel's other alignment (its vector loads depend on the buffers); the count
 * written, at most 2. */
int trr_cuda_matmul_call_variants(const trr_call *call, trr_cuda_variant out[2]);
/* A kernel of the generic row-rule path: kernels/cuda/<stem>.cu with DT, KIND and VPT; 0 when no such file is
 * embedded. */
int trr_cuda_variant_rule(trr_cuda_variant *v, const char *stem, trr_dtype dt, int kind, int vpt);
/* The module of the element-wise rule's kernels whose input and output dtypes differ (the op table's stem, e.g.
 * cast.cu, with -DENTRY_<entry>; every dtype pair's kernels in it); 0 when no such file is embedded (ops_cast.c). */
int trr_cuda_variant_convert(trr_cuda_variant *v, const char *stem, const char *entry);
/* The kernel file of an op's definition (kernels/cuda/<stem>.cu), no options yet; 0 when it is not embedded. The
 * memory-bound rules' variants add their options to it (ops_stream.c): the element-wise rule's ES (element bytes)
 * for an op that moves bytes or ENTRY_<name> and DT, with UNROLL; the rows rule's DT, THREADS, ITEMS; the
 * row-reduce rule's DT, LOADS, LOAD_KIND. */
int trr_cuda_variant_of(trr_cuda_variant *v, const trr_op_desc *d);
int trr_cuda_variant_elementwise(trr_cuda_variant *v, const trr_op_desc *d, int dt_or_bytes, int unroll);
int trr_cuda_variant_rows(trr_cuda_variant *v, const trr_op_desc *d, trr_dtype dt, int threads, int items);
int trr_cuda_variant_row_reduce(trr_cuda_variant *v, const trr_op_desc *d, trr_dtype dt, int loads, int kind);
/* The rows rule's kernels per op: entry points <name><kind> (softmax_warp, softmax_rows, softmax_online). */
#define TRR_CUDA_ROWS_KINDS 3
extern const char *const trr_cuda_rows_kinds[TRR_CUDA_ROWS_KINDS];

/* ---- the ops, by shape rule (rules.c) ---- */
/* One shape rule's path: its heuristic, its limits and its launch. own_files: the rule's host code picks its
 * kernel files itself (matmul, by variant); the others run the file the op's definition names. */
typedef struct trr_cuda_rule {
    trr_op_shape shape;
    int own_files;
    void (*choose)(const trr_cuda_dev *dev, trr_call *call);
    trr_status (*check)(trr_context *ctx, const trr_cuda_dev *dev, const trr_call *call);
    trr_status (*run)(trr_context *ctx, const trr_call *call);
} trr_cuda_rule;
/* The rule of an op's shape rule, NULL where the backend has none. */
const trr_cuda_rule *trr_cuda_rule_for(const trr_op_desc *d);
/* Whether the backend runs the call's op: a path for its shape rule and, in the kernel file its definition names,
 * its entry; else TRR_ERR_UNSUPPORTED with the reason. The one place that decides. */
trr_status trr_cuda_supports(trr_context *ctx, const trr_call *call);
trr_status trr_cuda_run(trr_context *ctx, const trr_call *call);

/* each rule's pieces (config.c, config_matmul.c, ops_stream.c, ops_norm.c, ops_matmul.c) */
void trr_cuda_choose_elementwise(const trr_cuda_dev *dev, trr_call *call);
void trr_cuda_choose_planes(const trr_cuda_dev *dev, trr_call *call);
void trr_cuda_choose_rows(const trr_cuda_dev *dev, trr_call *call);
void trr_cuda_choose_row_reduce(const trr_cuda_dev *dev, trr_call *call);
void trr_cuda_choose_matmul(const trr_cuda_dev *dev, trr_call *call);
void trr_cuda_choose_row_norm(const trr_cuda_dev *dev, trr_call *call);
trr_status trr_cuda_check_stream(trr_context *ctx, const trr_cuda_dev *dev, const trr_call *call);
trr_status trr_cuda_check_rows(trr_context *ctx, const trr_cuda_dev *dev, const trr_call *call);
trr_status trr_cuda_check_row_reduce(trr_context *ctx, const trr_cuda_dev *dev, const trr_call *call);
trr_status trr_cuda_check_matmul(trr_context *ctx, const trr_cuda_dev *dev, const trr_call *call);
trr_status trr_cuda_check_row_norm(trr_context *ctx, const trr_cuda_dev *dev, const trr_call *call);
trr_status trr_cuda_run_elementwise(trr_context *ctx, const trr_call *call);
trr_status trr_cuda_run_rgb_to_grey(trr_context *ctx, const trr_call *call);
trr_status trr_cuda_run_softmax(trr_context *ctx, const trr_call *call);
trr_status trr_cuda_run_row_sum(trr_context *ctx, const trr_call *call);
trr_status trr_cuda_run_matmul(trr_context *ctx, const trr_call *call);
/* matmul_pack.c: a product whose A or B the tensor cores cannot read as stored (8-bit floats: layout, alignment;
 * f16 and bf16 off the CUDA-core kernel: A stored [K,M], alignment) runs on K-major copies of them.
 * trr_cuda_matmul_view: 1 and the product as it will run (the copies' layout, their addresses 0) where that is so
 * and dev has those tensor cores (or is NULL), else 0. trr_cuda_matmul_pack: queues the copies into
 * dev->matmul_pack and sets view's addresses to them. */
int trr_cuda_matmul_view(const trr_cuda_dev *dev, const trr_call *call, trr_call *out_view);
trr_status trr_cuda_matmul_pack(trr_context *ctx, const trr_call *call, trr_call *view);
/* attention (ops_attention.c): the heuristic (fills what the config leaves at 0), the limits, the launch. */
void trr_cuda_choose_attention(const trr_cuda_dev *dev, trr_call *call);
trr_status trr_cuda_check_attention(trr_context *ctx, const trr_cuda_dev *dev, const trr_call *call);
trr_status trr_cuda_run_attention(trr_context *ctx, const trr_call *call);
/* The head dimension the kernels are compiled for: D rounded up to a bucket (a multiple of 16, at most 256). */
int trr_cuda_attention_dp(int64_t d);
/* Dynamic shared memory of an attention kernel of the variant at bucket dp. */
size_t trr_cuda_attention_smem(int variant, int dp, const trr_config *c);
/* The attention kernel of the variant (mma or simt) for dtype dt at bucket dp with the config's tile. */
void trr_cuda_variant_attention(trr_cuda_variant *v, int variant, trr_dtype dt, int dp, const trr_config *c);
/* Every attention variant the heuristic can choose, for the NVRTC check. */
void trr_cuda_attention_variants(trr_cuda_variant_fn fn, void *user);
trr_status trr_cuda_run_row_norm(trr_context *ctx, const trr_call *call);
/* The element-wise rule's converting ops (trr_op_desc.converts: cast), a kernel per dtype pair (ops_cast.c). */
trr_status trr_cuda_run_convert(trr_context *ctx, const trr_call *call);

/* The kernels/cuda sources, embedded at build time (backend_cuda/CMakeLists.txt). */
extern const trr_embedded_file trr_cuda_kernels[];
extern const size_t trr_cuda_kernels_count;

#endif
