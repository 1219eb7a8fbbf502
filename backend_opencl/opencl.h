/* Internal to the OpenCL backend: the run-time loaded API table, the per-device state and the helpers the op
 * files share. The driver is never linked: <CL/cl.h> is included for its types only. */
#ifndef TRR_OPENCL_H
#define TRR_OPENCL_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "backend.h"
#include "op_table.h"
#include "embedded.h"
#include "tensor_map.h"

#include <stddef.h>
#include <stdint.h>

/* Every entry point the backend uses: X(return type, name without the "cl" prefix, parameter list). */
#define TRR_CL_FUNCTIONS(X)                                                                                    \
    X(cl_int, GetPlatformIDs, (cl_uint, cl_platform_id *, cl_uint *))                                          \
    X(cl_int, GetPlatformInfo, (cl_platform_id, cl_platform_info, size_t, void *, size_t *))                  \
    X(cl_int, GetDeviceIDs, (cl_platform_id, cl_device_type, cl_uint, cl_device_id *, cl_uint *))              \
    X(cl_int, GetDeviceInfo, (cl_device_id, cl_device_info, size_t, void *, size_t *))                         \
    X(cl_context, CreateContext,                                                                               \
      (const cl_context_properties *, cl_uint, const cl_device_id *,                                           \
       void(CL_CALLBACK *)(const char *, const void *, size_t, void *), void *, cl_int *))                     \
    X(cl_int, ReleaseContext, (cl_context))                                                                    \
    X(cl_command_queue, CreateCommandQueue, (cl_context, cl_device_id, cl_command_queue_properties, cl_int *)) \
    X(cl_int, ReleaseCommandQueue, (cl_command_queue))                                                         \
    X(cl_mem, CreateBuffer, (cl_context, cl_mem_flags, size_t, void *, cl_int *))                              \
    X(cl_int, ReleaseMemObject, (cl_mem))                                                                      \
    X(cl_int, RetainMemObject, (cl_mem))                                                                       \
    X(cl_int, GetMemObjectInfo, (cl_mem, cl_mem_info, size_t, void *, size_t *))                               \
    X(cl_int, EnqueueWriteBuffer,                                                                              \
      (cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void *, cl_uint, const cl_event *, cl_event *)) \
    X(cl_int, EnqueueReadBuffer,                                                                               \
      (cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *, cl_uint, const cl_event *, cl_event *))      \
    X(cl_int, EnqueueCopyBuffer,                                                                               \
      (cl_command_queue, cl_mem, cl_mem, size_t, size_t, size_t, cl_uint, const cl_event *, cl_event *))       \
    X(cl_int, EnqueueFillBuffer,                                                                               \
      (cl_command_queue, cl_mem, const void *, size_t, size_t, size_t, cl_uint, const cl_event *, cl_event *)) \
    X(cl_int, Finish, (cl_command_queue))                                                                      \
    X(cl_program, CreateProgramWithSource, (cl_context, cl_uint, const char **, const size_t *, cl_int *))     \
    X(cl_program, CreateProgramWithBinary,                                                                     \
      (cl_context, cl_uint, const cl_device_id *, const size_t *, const unsigned char **, cl_int *, cl_int *))  \
    X(cl_int, BuildProgram,                                                                                    \
      (cl_program, cl_uint, const cl_device_id *, const char *, void(CL_CALLBACK *)(cl_program, void *),       \
       void *))                                                                                                \
    X(cl_int, GetProgramBuildInfo, (cl_program, cl_device_id, cl_program_build_info, size_t, void *, size_t *)) \
    X(cl_int, GetProgramInfo, (cl_program, cl_program_info, size_t, void *, size_t *))                         \
    X(cl_int, ReleaseProgram, (cl_program))                                                                    \
    X(cl_kernel, CreateKernel, (cl_program, const char *, cl_int *))                                           \
    X(cl_int, ReleaseKernel, (cl_kernel))                                                                      \
    X(cl_int, SetKernelArg, (cl_kernel, cl_uint, size_t, const void *))                                        \
    X(cl_int, EnqueueNDRangeKernel,                                                                            \
      (cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *, const size_t *, cl_uint,          \
       const cl_event *, cl_event *))                                                                          \
    X(cl_int, GetEventProfilingInfo, (cl_event, cl_profiling_info, size_t, void *, size_t *))                  \
    X(cl_int, WaitForEvents, (cl_uint, const cl_event *))                                                      \
    X(cl_int, EnqueueMarkerWithWaitList, (cl_command_queue, cl_uint, const cl_event *, cl_event *))            \
    X(cl_int, ReleaseEvent, (cl_event))

#define TRR_CL_MEMBER(ret, name, params) ret(CL_API_CALL *name) params;
typedef struct trr_cl_api {
    TRR_CL_FUNCTIONS(TRR_CL_MEMBER)
} trr_cl_api;
#undef TRR_CL_MEMBER

/* Filled once by trr_cl_load() (from probe) and read-only afterwards. */
extern trr_cl_api trr_cl;

/* Loads libOpenCL.so.1 and every symbol above; idempotent. Writes why into reason on failure. */
trr_status trr_cl_load(char *reason, size_t reason_cap);
/* "CL_OUT_OF_RESOURCES"; "CL error -9999" (in a static buffer per thread) for codes not in the table. */
const char *trr_cl_error_name(cl_int err);
/* Records a failed CL call on ctx: "<function>: <CL error name>"; out-of-memory codes map to
 * TRR_ERR_OUT_OF_MEMORY, everything else to TRR_ERR_DEVICE. */
trr_status trr_cl_fail(trr_context *ctx, const char *function, cl_int err);

/* ---- devices (devices.c) ---- */
typedef struct trr_cl_device_ref {
    cl_platform_id platform;
    cl_device_id device;
} trr_cl_device_ref;

trr_status trr_cl_probe(int *out_device_count, char *reason, size_t reason_cap);
trr_status trr_cl_device_info(int index, trr_device_info *out_info);
/* The index-th device of the flat list probe built; NULL when out of range. */
const trr_cl_device_ref *trr_cl_device_ref_get(int index);

/* ---- tensor cores through inline PTX (mma_probe.c) ---- */
typedef struct trr_cl_mma {
    int ok;           /* the probe built and computed right: matmul_mma.cl runs here */
    int addr_mode;    /* its ADDR_MODE build option */
    int cp_async;     /* its CP_ASYNC build option: cp.async computed right too */
    char reason[192]; /* why not, when !ok */
    int wgmma;        /* the wgmma probe (matmul_wgmma.cl) built as sm_90a PTX and computed right */
    char wgmma_reason[192];
} trr_cl_mma;
/* The probe's verdict for device index (name and driver as the device reports them, for the disk cache key):
 * run at most once per device per process. */
void trr_cl_mma_probe(int index, const char *name, const char *driver, trr_cl_mma *out);

/* ---- an open device (backend.c) ---- */
typedef struct trr_cl_program trr_cl_program; /* program.c */

/* A scratch buffer a device keeps for the passes of one call that hand partial results on (attention's splits of
 * the keys, matmul's slices of K): grown as a call needs more, reused by the next (the queue runs in order), freed
 * with the device. */
typedef struct trr_cl_scratch {
    cl_mem mem;
    size_t bytes;
} trr_cl_scratch;

typedef struct trr_cl_dev {
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    trr_device_info info;
    trr_cl_mma mma;           /* whether the mma matmul variant runs here, and why not */
    char driver_version[128]; /* full CL_DRIVER_VERSION, part of the disk cache key */
    size_t max_work_group;
    uint64_t local_memory;
    size_t max_alloc;
    /* Loop iterations a work-item may run, summed over all its loops, before the device cuts it short and
     * returns what it has: 65535 on llvmpipe (rusticl), UINT64_MAX elsewhere (config.c: trr_cl_loop_budget). */
    uint64_t loop_budget;
    uint64_t allocated;       /* bytes of live buffers: PoCL asserts (aborting the process) when its first use
                                 finds the device full, so allocations past the device's memory are refused first */
    trr_cl_program *programs; /* in-memory program cache, a list: a context compiles a handful */
    /* Timing: a marker enqueued at the start (begin_marker), and while active every enqueued command's event is
     * kept: the first and the last one (queue.c says which interval is reported). */
    int timing;
    cl_event begin_marker, first_event, last_event;
    trr_cl_scratch partials, partial_sums; /* a split's partial results and its rows' sums (or max and sum) */
    trr_cl_tma tma;                        /* the CUDA driver's tensor-map encoder, for matmul_wgmma.cl's TMA */
    trr_cl_scratch tensor_maps;            /* where tmap_fill puts a call's two tensor maps */
    trr_cl_scratch matmul_pack;            /* an 8-bit float matmul's K-major operand copies (matmul_pack.c) */
    trr_cl_scratch matmul_partials;        /* split-K's K slices' f32 products (matmul.c) */
} trr_cl_dev;

/* s holding at least bytes (counted with the context's buffers); TRR_ERR_OUT_OF_MEMORY or the driver's error
 * naming `what` otherwise. */
trr_status trr_cl_scratch_get(trr_context *ctx, trr_cl_scratch *s, size_t bytes, const char *what, cl_mem *out);
void trr_cl_scratch_release(trr_cl_dev *dev, trr_cl_scratch *s);

/* ---- programs and launches (program.c, queue.c) ---- */
/* The kernel `kernel` of kernels/opencl/<file> built with options, compiled at most once per device and
 * options (then cached in memory and on disk). The kernel object is owned by the cache. */
trr_status trr_cl_get_kernel(trr_context *ctx, const char *file, const char *options, const char *kernel,
                             cl_kernel *out_kernel);
/* The same for a file whose sm_90a instructions are marked as comments for the sm_90 compiler (ptx_retarget.h;
 * options must define WG_COMMENTED=1): built from the driver's PTX, retargeted to sm_90a. */
trr_status trr_cl_get_kernel_sm90a(trr_context *ctx, const char *file, const char *options, const char *kernel,
                                   cl_kernel *out_kernel);
/* The driver's PTX of built (a program built for sm_90 from a file whose sm_90a instructions are marked:
 * ptx_retarget.h), unmarked and retargeted, as a new program in *out, not yet built. CL_SUCCESS, or the failing
 * call's code (CL_INVALID_BINARY where the PTX is not one to retarget) with the reason in why. */
cl_int trr_cl_retargeted_program(cl_context context, cl_device_id device, cl_program built, cl_program *out,
                                 char *why, size_t cap);
/* The same for a source that is not an embedded file (a user op's, core/user_op.h): file is the in-memory cache's
 * name for it, which must be unique per source; the disk cache's key hashes the text itself. */
trr_status trr_cl_get_kernel_text(trr_context *ctx, const char *file, const char *text, const char *options,
                                  const char *kernel, cl_kernel *out_kernel);
/* A user op's kernel (user.c). */
trr_status trr_cl_run_user(trr_context *ctx, const trr_call *call);
void trr_cl_programs_release(trr_cl_dev *dev);

trr_status trr_cl_set_arg(trr_context *ctx, cl_kernel kernel, cl_uint index, size_t size, const void *value);
/* Enqueues kernel over global (a multiple of local in every dimension), recording its event while timing. */
trr_status trr_cl_launch(trr_context *ctx, cl_kernel kernel, cl_uint dims, const size_t *global,
                         const size_t *local);
/* Releases the timer's marker and kept events. */
void trr_cl_timer_reset(trr_cl_dev *dev);
/* While timing, keeps ev as the last event (and the first, if none yet); releases it otherwise. */
void trr_cl_track_event(trr_cl_dev *dev, cl_event ev);
/* &a fresh event slot while timing, NULL otherwise: what to pass as the enqueue's out event. */
cl_event *trr_cl_event_slot(trr_cl_dev *dev, cl_event *slot);

trr_status trr_cl_alloc(trr_context *ctx, size_t bytes, void **out_mem);
void trr_cl_free(void *dev, void *mem);
trr_status trr_cl_wrap(trr_context *ctx, uint64_t native, size_t bytes, void **out_mem);
trr_status trr_cl_write(trr_context *ctx, void *mem, size_t offset, const void *src, size_t bytes);
trr_status trr_cl_read(trr_context *ctx, void *mem, size_t offset, void *dst, size_t bytes);
trr_status trr_cl_copy(trr_context *ctx, void *dst, size_t dst_offset, void *src, size_t src_offset,
                       size_t bytes);
trr_status trr_cl_fill(trr_context *ctx, void *mem, size_t offset, size_t bytes, uint8_t value);
trr_status trr_cl_synchronize(trr_context *ctx);
trr_status trr_cl_timer_start(trr_context *ctx);
trr_status trr_cl_timer_stop(trr_context *ctx, double *out_ms);

/* ---- ops ---- */
/* Appends a printf-style piece to a build-options string; returns 0 when it did not fit. */
int trr_cl_opt(char *options, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* "-DX_DT=1"-style code for a dtype in kernels/opencl/common.cl: 0 f32, 1 f16, 2 bf16, 3 u8, 4 f8e4m3, 5 f8e5m2. */
int trr_cl_dtype_code(trr_dtype dtype);

/* ---- the ops, by shape rule (rules.c: the one place that decides whether an op runs here) ---- */
trr_status trr_cl_supports(trr_context *ctx, const trr_call *call);
void trr_cl_choose_config(trr_context *ctx, trr_call *call);
trr_status trr_cl_check_config(trr_context *ctx, const trr_call *call);
trr_status trr_cl_run(trr_context *ctx, const trr_call *call);
/* the heuristics' arithmetic (config.c, norm.c): the least power of two >= n (up to 2^30), whether n is one, and a
 * config field the heuristic fills only where the override or tuning data left it zero */
static inline int trr_cl_pow2_at_least(int64_t n) {
    int p = 1;
    while (p < n && p < (1 << 30)) p <<= 1;
    return p;
}
static inline int trr_cl_is_pow2(int n) { return n > 0 && (n & (n - 1)) == 0; }
static inline void trr_cl_set_if_zero(int *field, int value) {
    if (*field == 0) *field = value;
}

/* each rule's heuristic (config.c, norm.c), limits and launch (elementwise.c, rows.c, matmul.c, norm.c) */
void trr_cl_choose_elementwise(trr_context *ctx, trr_call *call);
void trr_cl_choose_planes(trr_context *ctx, trr_call *call);
void trr_cl_choose_rows(trr_context *ctx, trr_call *call);
void trr_cl_choose_row_reduce(trr_context *ctx, trr_call *call);
void trr_cl_choose_matmul(trr_context *ctx, trr_call *call);
void trr_cl_choose_row_norm(trr_context *ctx, trr_call *call);
/* what every rule but matmul's checks first: one kernel family, the work-group size */
trr_status trr_cl_check_common(trr_context *ctx, const trr_call *call);
trr_status trr_cl_check_elementwise(trr_context *ctx, const trr_call *call);
trr_status trr_cl_check_planes(trr_context *ctx, const trr_call *call);
trr_status trr_cl_check_rows(trr_context *ctx, const trr_call *call);
trr_status trr_cl_check_row_reduce(trr_context *ctx, const trr_call *call);
trr_status trr_cl_check_matmul(trr_context *ctx, const trr_call *call);
trr_status trr_cl_check_row_norm(trr_context *ctx, const trr_call *call);
trr_status trr_cl_run_elementwise(trr_context *ctx, const trr_call *call);
/* The element-wise rule's converting ops (trr_op_desc.converts: cast), whose dtypes are kernel arguments
 * (convert.c): what the rule's heuristic, check and launch hand them to. */
void trr_cl_convert_choose(trr_context *ctx, trr_call *call);
trr_status trr_cl_convert_check(trr_context *ctx, const trr_call *call);
trr_status trr_cl_convert_launch(trr_context *ctx, const trr_call *call);
trr_status trr_cl_run_rgb_to_grey(trr_context *ctx, const trr_call *call);
trr_status trr_cl_run_softmax(trr_context *ctx, const trr_call *call);
trr_status trr_cl_run_row_sum(trr_context *ctx, const trr_call *call);
trr_status trr_cl_run_matmul(trr_context *ctx, const trr_call *call);
/* Enqueues the copies trr_cl_f8_view planned for call into the device's scratch and points view's copied operands
 * at them (matmul_pack.c). */
trr_status trr_cl_f8_pack(trr_context *ctx, const trr_call *call, trr_call *view);
/* attention (attention.c): its heuristic, its limits and its launch */
void trr_cl_attention_choose_config(trr_context *ctx, trr_call *call);
trr_status trr_cl_attention_check_config(trr_context *ctx, const trr_call *call);
trr_status trr_cl_run_attention(trr_context *ctx, const trr_call *call);
/* ... its merge of the chunks of the keys, attention.cl's attention_combine built with options ... */
trr_status trr_cl_attention_combine(trr_context *ctx, const trr_call *call, const char *options, cl_mem part,
                                    cl_mem part_lse, cl_mem lse, cl_int nsplit);
/* ... and the decode form (attention_decode.c; core/attention_decode.h): its heuristic (1 where it completed the
 * config), its limits and its launches */
int trr_cl_attention_decode_choose(trr_context *ctx, trr_call *call);
trr_status trr_cl_attention_decode_check(trr_context *ctx, const trr_call *call);
trr_status trr_cl_attention_decode_run(trr_context *ctx, const trr_call *call);
/* ... its mma form (variant mma with split_k >= 2: attention_decode_mma.cl, where the mma probe passed) ... */
/* Whether the mma kernels can take the call here (the probe passed, the call suits them); else UNSUPPORTED with the
 * reason. */
trr_status trr_cl_attention_mma_usable(trr_context *ctx, const trr_call *call);
int trr_attention_decode_mma_selected(const trr_config *c);
trr_status trr_cl_attention_decode_mma_check(trr_context *ctx, const trr_call *call);
trr_status trr_cl_attention_decode_mma_run(trr_context *ctx, const trr_call *call);
/* ... and why the mma kernels cannot take a call (dtype, head dim, alignment), or NULL where they can */
const char *trr_cl_attention_mma_refusal(const trr_call *call);
trr_status trr_cl_run_row_norm(trr_context *ctx, const trr_call *call);
/* The rows rule's kernels per op: entry points <name><kind> (softmax_regs, softmax_online). */
#define TRR_CL_ROWS_KINDS 2
extern const char *const trr_cl_rows_kinds[TRR_CL_ROWS_KINDS];

/* Tiling helpers (config.c). */
/* The matmul thread grid for a config: threads = rows_threads * cols_threads, each owning tm x tn outputs. */
void trr_cl_matmul_grid(const trr_config *cfg, int *out_rt, int *out_ct, int *out_tm, int *out_tn);
/* The loop budget of a device (trr_cl_dev.loop_budget). */
uint64_t trr_cl_loop_budget(const trr_device_info *info);
/* The deepest K one launch of matmul.cl takes within the device's loop budget under cfg (a multiple of block_k,
 * INT64_MAX where loops are unbounded); deeper K is split across launches (matmul.c). 0: not even one K tile. */
int64_t trr_cl_matmul_chunk_k(const trr_cl_dev *dev, const trr_config *cfg);
/* The mma variant's warp grid: threads / 32 warps as warps_m x warps_n (matmul_mma.cl). */
void trr_cl_mma_warps(const trr_config *cfg, int *out_warps_m, int *out_warps_n);

/* The kernels/opencl sources, embedded at build time (backend_opencl/CMakeLists.txt). */
extern const trr_embedded_file trr_opencl_kernels[];
extern const size_t trr_opencl_kernels_count;

#endif
