/*
 * Trireme: a portable GPU compute runtime.
 *
 * This is the only public header. Every function returns a trr_status (TRR_OK is 0); outputs are written
 * through out_* parameters, and only on success. Detail about the last failure on a context (driver error
 * names, compiler logs, which argument was wrong) is kept in that context and read with trr_last_error().
 * Failures that happen before a context exists (trr_context_create, the registry functions) leave their
 * detail in a per-thread slot read with trr_last_error(NULL).
 *
 * Thread safety: the registry functions (trr_backend_*, trr_device_info) are safe from any thread. A context
 * may be shared by threads: every call that touches a context or its buffers (ops, buffer create / wrap /
 * destroy / read / write / copy / fill, synchronize, the timer, config overrides, native handles) holds the
 * context's lock for its whole length, so calls on one context run one at a time, in the order the threads
 * reach the lock, and the work they queue on the device keeps that order (work on separate contexts runs in
 * parallel). Ordering between threads is the caller's: an op reads a buffer as the calls before it on the
 * context left it. trr_last_error(ctx) is the last failure on the context from any thread; with several
 * threads, act on the returned status and read the text as a hint. A timer started on one thread measures
 * every thread's work on the context until its stop. Native handles (trr_context_native) are used outside the
 * lock: work put on the queue through them is the caller's to keep apart from other threads' calls.
 */
#ifndef TRIREME_H
#define TRIREME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TRR_VERSION_MAJOR 0
#define TRR_VERSION_MINOR 1
#define TRR_VERSION_PATCH 0
#define TRR_VERSION_STRING "0.1.0"

/* Every public function carries TRR_API: the shared library exports these and nothing else. */
#if defined(_WIN32)
#define TRR_API
#else
#define TRR_API __attribute__((visibility("default")))
#endif

/* Status codes come in bands: 1-19 the caller's arguments, 20-29 availability, 30-39 the device or driver,
 * 40 and up the runtime itself. */
typedef enum trr_status {
    TRR_OK = 0,
    TRR_ERR_INVALID_ARGUMENT = 1, /* null pointer, unknown enum value, bad option or spec string */
    TRR_ERR_DTYPE = 2,            /* dtype not allowed for this op or operand, or operands disagree */
    TRR_ERR_SHAPE = 3,            /* shapes disagree, wrong rank, negative dimension */
    TRR_ERR_STRIDE = 4,           /* stride not allowed (row stride shorter than the row, inner stride != 1) */
    TRR_ERR_MISALIGNED = 5,       /* byte offset not a multiple of the element size */
    TRR_ERR_OUT_OF_BOUNDS = 6,    /* a view reaches past the end of its buffer, or a copy range does */
    TRR_ERR_OVERLAP = 7,          /* output overlaps an input where the op does not allow it */
    TRR_ERR_OVERFLOW = 8,         /* element count or extent overflows the index type */
    TRR_ERR_WRONG_CONTEXT = 9,    /* a buffer made on another context */
    TRR_ERR_UNSUPPORTED = 20,     /* the device cannot run this op, dtype or option; the text says why */
    TRR_ERR_NO_DEVICE = 21,       /* the device spec names no device that exists */
    TRR_ERR_UNAVAILABLE = 22,     /* backend compiled in but its driver, loader or device is missing */
    TRR_ERR_DEVICE = 30,          /* a driver call failed; the text names the driver error */
    TRR_ERR_OUT_OF_MEMORY = 31,
    TRR_ERR_COMPILE = 32,         /* a kernel failed to compile; the text holds the build log */
    TRR_ERR_IO = 33,              /* a file could not be read or written */
    TRR_ERR_MISMATCH = 34,        /* a result failed its check against the reference */
    TRR_ERR_INTERNAL = 40
} trr_status;

/* F8E4M3 and F8E5M2 are the OCP 8-bit floats (docs/ops.md, Element types): e4m3 has no infinities and one NaN
 * per sign, largest finite 448; e5m2 is IEEE-like (infinities, NaNs), largest finite 57344. */
typedef enum trr_dtype {
    TRR_F32 = 0,
    TRR_F16 = 1,
    TRR_BF16 = 2,
    TRR_U8 = 3,
    TRR_F8E4M3 = 4,
    TRR_F8E5M2 = 5,
    TRR_DTYPE_COUNT
} trr_dtype;

typedef enum trr_op {
    TRR_OP_COPY = 0,
    TRR_OP_ADD,
    TRR_OP_GELU,
    TRR_OP_RGB_TO_GREY,
    TRR_OP_SOFTMAX,
    TRR_OP_ROW_SUM,
    TRR_OP_MATMUL,
    TRR_OP_SILU,
    TRR_OP_RMS_NORM,
    TRR_OP_LAYER_NORM,
    TRR_OP_ATTENTION,
    TRR_OP_CAST,
    TRR_OP_COUNT
} trr_op;

typedef enum trr_epilogue { TRR_EPI_NONE = 0, TRR_EPI_RELU, TRR_EPI_LEAKY_RELU, TRR_EPI_GELU, TRR_EPI_COUNT } trr_epilogue;

#define TRR_LEAKY_RELU_DEFAULT_ALPHA 0.01f

/* matmul flags */
#define TRR_MATMUL_ALLOW_TF32 0x1u /* f32 matmul may use TF32 tensor cores; never used unless asked for */

#define TRR_MAX_DIMS 4

typedef struct trr_context trr_context;
typedef struct trr_buffer trr_buffer;

/* A view into a device buffer. Strides are in elements, outermost first; the innermost stride is 1 except for
 * matmul operands, where either of the two strides may be 1 (a transposed operand). */
typedef struct trr_tensor {
    trr_buffer *buffer;
    size_t offset; /* bytes from the start of the buffer */
    trr_dtype dtype;
    int ndim;
    int64_t shape[TRR_MAX_DIMS];
    int64_t strides[TRR_MAX_DIMS];
} trr_tensor;

/* The kernel family a call runs on. AUTO (0) leaves the choice to the tuning database and the backend's
 * heuristic; any other value asks for that family, and a backend that has no such kernel for the call rejects
 * it with TRR_ERR_UNSUPPORTED. Names (trr_variant_name) are what the CLI's --config and the tuning database use. */
typedef enum trr_variant {
    TRR_VARIANT_AUTO = 0,
    TRR_VARIANT_SIMT,     /* plain FMA units (every backend's portable kernels) */
    TRR_VARIANT_MMA,      /* CUDA mma.sync tensor cores (sm_80 and up) */
    TRR_VARIANT_WGMMA,    /* CUDA Hopper warpgroup MMA (sm_90a) */
    TRR_VARIANT_COOP_KHR, /* Vulkan VK_KHR_cooperative_matrix */
    TRR_VARIANT_COOP_NV,  /* Vulkan VK_NV_cooperative_matrix */
    TRR_VARIANT_CM2,      /* Vulkan VK_NV_cooperative_matrix2 (workgroup-scope matrices) */
    TRR_VARIANT_SUBGROUP, /* row kernels that reduce with subgroup operations */
    TRR_VARIANT_STREAMK,  /* CUDA Hopper warpgroup MMA with a stream-K schedule (the last waves balanced over the SMs) */
    TRR_VARIANT_COUNT
} trr_variant;

/* Tiling parameters in the vocabulary of every backend; 0 means "the backend's choice". Fields an op does not
 * use are ignored. */
typedef struct trr_config {
    int block_m, block_n, block_k; /* output tile rows, columns, reduction step; block_n is the tile width of
                                      row-wise and element-wise ops */
    int group_m;                   /* grouped block order for L2 reuse */
    int threads;                   /* threads (work-items, invocations) per block */
    int stages;                    /* software pipeline depth */
    int vector_width;              /* elements per load */
    int split_k;
    int variant;                   /* trr_variant: the kernel family */
} trr_config;

typedef struct trr_backend_info {
    char name[16];       /* "cpu", "cuda", "opencl", "vulkan" */
    int available;       /* 1 when the driver loaded and at least one device answered */
    int device_count;
    char reason[256];    /* why it is unavailable; empty when available */
} trr_backend_info;

typedef struct trr_device_info {
    char backend[16];
    int index;               /* within its backend */
    char spec[32];           /* "cuda:0": the string that selects it */
    char name[128];
    char vendor[64];
    char driver[64];
    int is_gpu;              /* a discrete or integrated GPU, not a CPU driver such as PoCL or lavapipe */
    uint64_t global_memory;  /* bytes */
    uint64_t shared_memory_per_block; /* bytes of shared / local / workgroup memory a block may use */
    int max_threads_per_block;
    int subgroup_width;      /* warp / subgroup / SIMD width; 1 when unknown */
    int compute_units;
    int native_f16;          /* f16 arithmetic in kernels, not only storage */
    int matrix_units;        /* tensor cores or cooperative matrices usable by the backend */
    char capabilities[160];  /* the same facts and any extras in words, for people */
    /* Identity of the physical device, to tell when two backends' devices are one GPU: the driver's UUID in
     * canonical 8-4-4-4-12 lower-case hex, and the PCI address as "dddd:bb:dd.f". Empty when the driver does
     * not say (CPU devices, OpenCL without cl_khr_device_uuid or a vendor query). */
    char uuid[37];
    char pci_bus_id[16];
} trr_device_info;

/* ---- status ---- */
TRR_API const char *trr_status_name(trr_status status);    /* "TRR_ERR_SHAPE" */
TRR_API const char *trr_status_message(trr_status status); /* a sentence about the code in general */
/* The last error recorded on ctx (or on this thread, for ctx == NULL): the status name followed by detail.
 * Never NULL; "" when nothing has failed. */
TRR_API const char *trr_last_error(const trr_context *ctx);

/* ---- warnings ---- */
/* What the library cannot return as a status because the call it happens in succeeds anyway: a tuning database
 * it ignores (damaged, made for another driver, an entry the backend rejects), a cache file of the wrong kind,
 * a TRIREME_TRACE file it cannot write, the driver representations TRIREME_DUMP_DIR asks for. The library never
 * prints: each such message goes to the handler set here (one per process, called from the thread that met
 * it, at most once per cause; it must not call into trireme), or nowhere when none is set. The `trireme` command
 * prints them to stderr. */
typedef enum trr_log_level { TRR_LOG_INFO = 0, TRR_LOG_WARNING = 1 } trr_log_level;
typedef void (*trr_log_fn)(trr_log_level level, const char *message, void *user);
/* Sets (fn non-NULL) or clears (fn NULL) the process's handler; user is passed back to it. */
TRR_API trr_status trr_log_set(trr_log_fn fn, void *user);

/* ---- backends and devices ---- */
TRR_API trr_status trr_backend_count(int *out_count);
TRR_API trr_status trr_backend_get_info(int index, trr_backend_info *out_info);
TRR_API trr_status trr_device_get_info(const char *backend, int index, trr_device_info *out_info);

/* ---- contexts ----
 * device: "cpu", "cuda", "cuda:1", "opencl:0", "vulkan:0", or "auto" (the best GPU, else the CPU). NULL reads
 * the environment variable TRIREME_DEVICE and falls back to "auto". */
TRR_API trr_status trr_context_create(const char *device, trr_context **out_ctx);
/* Gives up the caller's use of the context; no other call may name it afterwards. Its buffers stay valid for
 * trr_buffer_destroy only (in either order): each buffer keeps the device open, and it is closed, after the
 * work queued on it finishes, when the last of them is destroyed (at once when none is live). So destroying
 * the context before its buffers neither frees memory still in use nor leaks once the buffers are destroyed.
 * A call other than trr_buffer_destroy on a destroyed context that its buffers still keep answers
 * TRR_ERR_INVALID_ARGUMENT; once nothing keeps it, the handle is freed memory. NULL is allowed. */
TRR_API trr_status trr_context_destroy(trr_context *ctx);
TRR_API trr_status trr_context_device(const trr_context *ctx, trr_device_info *out_info);
/* How the device was chosen, e.g. "auto: chose cuda:0 (NVIDIA H200), the first GPU found". */
TRR_API trr_status trr_context_selection(const trr_context *ctx, const char **out_text);

/* ---- buffers ---- */
TRR_API trr_status trr_buffer_create(trr_context *ctx, size_t bytes, trr_buffer **out_buffer);
/* A buffer over memory that something else allocated (another library, a framework's tensor), without a copy.
 * native_handle is, by backend:
 *   cpu     a host address (the pointer cast to uint64_t); 4-byte aligned, so any dtype may view it
 *   cuda    a CUdeviceptr in the context's CUDA context (the primary context of its device, which the CUDA
 *           runtime, PyTorch and CuPy also use)
 *   opencl  a cl_mem made in the context's cl_context; it is retained while wrapped
 *   vulkan  a VkBuffer made on the context's VkDevice with STORAGE_BUFFER, TRANSFER_SRC and TRANSFER_DST usage
 *           and bound memory; bytes must be a multiple of 4
 * bytes is the size the buffer claims (views are bounds-checked against it); it must not exceed the memory.
 * Ownership stays with the caller: trr_buffer_destroy waits for the work queued on the buffer and forgets it,
 * and never frees the memory. The memory must stay valid until then. A backend that cannot wrap answers
 * TRR_ERR_UNSUPPORTED. */
TRR_API trr_status trr_buffer_wrap(trr_context *ctx, uint64_t native_handle, size_t bytes, trr_buffer **out_buffer);
/* Frees the buffer's memory, or only forgets it for a wrapped buffer, after the work queued on it. NULL is
 * allowed. Valid before or after trr_context_destroy of its context: the last buffer of a destroyed context
 * closes the device (trr_context_destroy). */
TRR_API trr_status trr_buffer_destroy(trr_buffer *buffer);
TRR_API trr_status trr_buffer_size(const trr_buffer *buffer, size_t *out_bytes);
TRR_API trr_status trr_buffer_write(trr_context *ctx, trr_buffer *dst, size_t offset, const void *src, size_t bytes);
TRR_API trr_status trr_buffer_read(trr_context *ctx, const trr_buffer *src, size_t offset, void *dst, size_t bytes);
TRR_API trr_status trr_buffer_copy(trr_context *ctx, trr_buffer *dst, size_t dst_offset, const trr_buffer *src,
                           size_t src_offset, size_t bytes);
TRR_API trr_status trr_buffer_fill(trr_context *ctx, trr_buffer *dst, size_t offset, size_t bytes, uint8_t value);

/* ---- native handles: trireme's device, queue and buffers for another library (cuBLAS, clBLAS, ...) ----
 * Owned by trireme and valid until the context or buffer is destroyed. Work put on the queue is ordered with
 * trireme's as that queue orders it (CUDA stream, in-order OpenCL queue); trr_synchronize() first otherwise.
 *            device                    context                                   queue
 *   cuda     CUdevice (intptr_t)      CUcontext, made current on this thread    CUstream
 *   opencl   cl_device_id             cl_context                                cl_command_queue (in order)
 *   vulkan   VkPhysicalDevice         VkDevice                                  VkQueue
 *   cpu      NULL                     NULL                                      NULL
 * A backend without them returns TRR_ERR_UNSUPPORTED. On cuda the call also ends trireme's launches through CUDA
 * graphs for the context (small kernels queued into one graph while the stream is busy, kernels on an idle
 * stream launched as a graph of one node): from then on every kernel is launched on the stream as the call is
 * made, so work the caller puts on the stream keeps its place. */
typedef struct trr_native {
    char backend[16]; /* "cuda", "opencl", "vulkan", "cpu" */
    void *device;
    void *context;
    void *queue;
} trr_native;
TRR_API trr_status trr_context_native(trr_context *ctx, trr_native *out_native);
/* The buffer as the native API names it: CUdeviceptr, cl_mem, VkBuffer, or the host address on cpu. */
TRR_API trr_status trr_buffer_native(const trr_buffer *buffer, uint64_t *out_handle);

/* ---- ordering with another library's stream: DLPack's stream protocol, a framework's current stream ----
 * native_stream is a stream of the context's native API in the context's native context: on cuda a CUstream
 * of the device's primary context, where 0 and 1 (CU_STREAM_LEGACY) name the legacy default stream and 2
 * (CU_STREAM_PER_THREAD) the calling thread's default stream, as DLPack numbers them. The wait is the device's
 * (an event recorded on one stream that the other waits for): the host does not wait, nothing is flushed to
 * the host, and trireme's own launches go on as before (trr_context_native, by contrast, hands the stream
 * over). Backends without streams of this kind (cpu, opencl, vulkan) answer TRR_ERR_UNSUPPORTED with the
 * reason; on cpu every op has finished when it returns, so there is nothing to order.
 * trr_stream_wait_native: trireme's work queued on ctx from now on starts after the work queued on
 *                         native_stream so far (a framework's results read by trireme).
 * trr_native_wait_stream: work queued on native_stream from now on starts after trireme's work queued on ctx
 *                         so far (trireme's results read by a framework).
 * trr_context_stream:     trireme's own stream, for a protocol in which the other library puts the wait there
 *                         itself (DLPack's __dlpack__(stream=...)); that library may put waits on it, no work. */
TRR_API trr_status trr_stream_wait_native(trr_context *ctx, uint64_t native_stream);
TRR_API trr_status trr_native_wait_stream(trr_context *ctx, uint64_t native_stream);
TRR_API trr_status trr_context_stream(trr_context *ctx, uint64_t *out_stream);

/* ---- tensor views (pure helpers: they check the arguments, not the buffer) ---- */
TRR_API trr_status trr_tensor_1d(trr_buffer *buffer, size_t offset, trr_dtype dtype, int64_t n, trr_tensor *out_tensor);
/* row_stride in elements; 0 means packed (row_stride = cols) */
TRR_API trr_status trr_tensor_2d(trr_buffer *buffer, size_t offset, trr_dtype dtype, int64_t rows, int64_t cols,
                         int64_t row_stride, trr_tensor *out_tensor);
/* A view of any rank 1..TRR_MAX_DIMS: shape and strides (in elements, outermost first) of ndim entries each;
 * strides NULL means packed row-major. Checks the arguments only (rank, negative sizes, strides below 1). */
TRR_API trr_status trr_tensor_nd(trr_buffer *buffer, size_t offset, trr_dtype dtype, int ndim, const int64_t *shape,
                                 const int64_t *strides, trr_tensor *out_tensor);
/* The transposed view of a 2-D tensor (swaps shape and strides): how a matmul operand stored as [K,M] or
 * [N,K] is passed. */
TRR_API trr_status trr_tensor_transpose(const trr_tensor *in, trr_tensor *out_tensor);
TRR_API trr_status trr_dtype_size(trr_dtype dtype, size_t *out_bytes);
TRR_API trr_status trr_dtype_name(trr_dtype dtype, const char **out_name);

/* ---- ops: validated in full before the device sees them; a rejected call writes nothing ---- */
TRR_API trr_status trr_copy(trr_context *ctx, const trr_tensor *x, const trr_tensor *z);
TRR_API trr_status trr_add(trr_context *ctx, const trr_tensor *x, const trr_tensor *y, const trr_tensor *z);
TRR_API trr_status trr_gelu(trr_context *ctx, const trr_tensor *x, const trr_tensor *y);
TRR_API trr_status trr_rgb_to_grey(trr_context *ctx, const trr_tensor *img, const trr_tensor *grey);
TRR_API trr_status trr_softmax(trr_context *ctx, const trr_tensor *x, const trr_tensor *y);
TRR_API trr_status trr_row_sum(trr_context *ctx, const trr_tensor *x, const trr_tensor *y);
/* C = act(A·B). A is [M,K], B is [K,N], C is [M,N]; pass trr_tensor_transpose() views for transposed storage.
 * Batched: rank-3 [batch, rows, cols] operands, each with its own batch stride (strides[0]); an input's batch
 * stride may be 0 and a 2-D input is a batch of one (both shared by every batch); C's batches must not overlap.
 * alpha is the leaky_relu slope (ignored by the other epilogues). flags: TRR_MATMUL_*. */
TRR_API trr_status trr_matmul(trr_context *ctx, const trr_tensor *a, const trr_tensor *b, const trr_tensor *c,
                      trr_epilogue epilogue, float alpha, unsigned flags);
/* y = x / (1 + e^-x) */
TRR_API trr_status trr_silu(trr_context *ctx, const trr_tensor *x, const trr_tensor *y);
/* Row norms over x [M,N] with weight w [N] (and bias b [N]), f32 / f16 / bf16 alike in and out, f32 arithmetic:
 *   rms_norm:   y = x / sqrt(mean(x^2) + eps) * w
 *   layer_norm: y = (x - mean(x)) / sqrt(var(x) + eps) * w + b   (biased variance, as torch)
 * w and b may have any positive element stride; x and y rows any row stride >= N. eps must be finite and >= 0. */
TRR_API trr_status trr_rms_norm(trr_context *ctx, const trr_tensor *x, const trr_tensor *w, const trr_tensor *y, float eps);
TRR_API trr_status trr_layer_norm(trr_context *ctx, const trr_tensor *x, const trr_tensor *w, const trr_tensor *b,
                                  const trr_tensor *y, float eps);
/* Fused attention (docs/ops.md, attention): o = softmax(scale · q·kᵀ + mask) · v for every batch and query head,
 * without materialising the scores; f32 accumulation, one rounding on store.
 *   q [B,Hq,Sq,D], k and v [B,Hkv,Skv,D], o [B,Hq,Sq,D]: one dtype (f32, f16 or bf16); Hq a multiple of Hkv,
 *   query head h reading key/value head h / (Hq / Hkv); D from 1 to 256.
 *   lse [B,Hq,Sq] f32, or NULL: the natural log of each row's sum of exp (−inf for a row that sees no key).
 *   Any positive strides on B, H and S (a [B,S,H,D] tensor is passed as its permuted view); D's stride is 1.
 *   scale: 0 means 1/sqrt(D). causal: query i sees keys j <= i + (Skv - Sq) (bottom-right aligned); a row that
 *   sees no key gives o = 0. */
TRR_API trr_status trr_attention(trr_context *ctx, const trr_tensor *q, const trr_tensor *k, const trr_tensor *v,
                                 const trr_tensor *o, const trr_tensor *lse, float scale, int causal);

/* y = x converted to y's dtype, element by element, between any two of f32, f16, bf16, f8e4m3 and f8e5m2: round to
 * nearest even; a finite value past the output's largest finite one becomes an infinity in f16 and bf16 (IEEE)
 * and saturates to the largest finite value in the 8-bit floats, where an infinity also saturates in e4m3 (which
 * has none) and stays one in e5m2; NaN stays NaN. x and y have one shape and any strides the element-wise ops
 * take. */
TRR_API trr_status trr_cast(trr_context *ctx, const trr_tensor *x, const trr_tensor *y);

/* ---- any op by its enum: what the named functions above call ---- */

/* An op's scalar parameters, named and typed by its definition (trr_op_get_param lists them): matmul takes
 * "epilogue" (an enum: trr_epilogue's values, named by trr_epilogue_name), "alpha" (f32, the leaky_relu slope,
 * default TRR_LEAKY_RELU_DEFAULT_ALPHA) and "allow_tf32" (bool). A parameter left out takes its default; a name
 * the op does not declare, a value outside its type (a bool other than 0 or 1, an enum past its choices, a
 * non-finite f32) or the same name twice is TRR_ERR_INVALID_ARGUMENT. Names are copied when the op runs. */
#define TRR_MAX_OP_PARAMS 8
typedef struct trr_param_value {
    const char *name;
    double value; /* f32 parameters are rounded to f32; enums and bools are whole numbers */
} trr_param_value;
typedef struct trr_op_params {
    int count; /* entries of values in use */
    trr_param_value values[TRR_MAX_OP_PARAMS];
} trr_op_params;
/* Sets name to value in params, replacing an earlier value of the same name (params must start zeroed). Checks
 * only that there is room; the op checks names and values when it runs. */
TRR_API trr_status trr_op_params_set(trr_op_params *params, const char *name, double value);
/* Parses "name=value[,name=value...]" against op's definition into params (zeroed first): numbers for f32 and int
 * parameters, true/false/1/0 for bools, the choice's name (or its index) for enums. The CLI's --param and
 * Python's keyword arguments go through it. */
TRR_API trr_status trr_op_params_parse(trr_op op, const char *text, trr_op_params *out_params);

typedef enum trr_param_type { TRR_PARAM_F32 = 0, TRR_PARAM_BOOL, TRR_PARAM_ENUM, TRR_PARAM_INT } trr_param_type;
/* One declared parameter of an op. */
typedef struct trr_param_info {
    const char *name;     /* "eps" */
    trr_param_type type;
    double default_value;
    const char *choices;  /* TRR_PARAM_ENUM: the value names in order, comma-separated ("none,relu,..."); else NULL */
    const char *doc;      /* one line for people */
    int nonnegative;      /* the value must be >= 0 */
} trr_param_info;
/* The index-th parameter op declares (0 <= index < trr_op_info.n_params). */
TRR_API trr_status trr_op_get_param(trr_op op, int index, trr_param_info *out_info);

/* What an op takes: its name, how many inputs come before its outputs, how many parameters it declares, and
 * how many outputs follow the inputs (attention's second, lse, may be passed as NULL). */
typedef struct trr_op_info {
    const char *name;     /* "matmul" */
    int n_inputs;         /* 1 to 3 */
    const char *operands; /* "A[M,K], B[K,N] -> C[M,N]", for people */
    int n_params;         /* trr_op_get_param(op, 0 .. n_params - 1) */
    int n_outputs;        /* 1, or 2 where the op has an optional second output */
} trr_op_info;
TRR_API trr_status trr_op_get_info(trr_op op, trr_op_info *out_info);

/* The output op makes from its inputs (inputs: the op's n_inputs views in order; only their shapes and dtypes are
 * read, so buffers may be NULL): its rank, shape and dtype, by the op's definition (the inputs' shape for the
 * element-wise ops, [H,W] from rgb_to_grey's [3,H,W], [M] from row_sum's [M,N], [B,M,N] from matmul's [B,M,K] and
 * [K,N], ...). out_dtype is the output dtype wanted (a trr_dtype), or -1 for the op's default: the inputs' dtype
 * where the op keeps it, else the first output dtype its signatures pair with it (row_sum's f32). Inputs of a
 * rank or dtype the op does not take are TRR_ERR_SHAPE or TRR_ERR_DTYPE; sizes are checked when the op runs. */
TRR_API trr_status trr_op_output_shape(trr_op op, const trr_tensor *const *inputs, int out_dtype, int *out_ndim,
                                       int64_t out_shape[TRR_MAX_DIMS], trr_dtype *out_out_dtype);

/* operands: the op's inputs in order, then its outputs (n_inputs + n_outputs entries; an optional second
 * output may be NULL). params may be NULL (every parameter at its default). */
TRR_API trr_status trr_op_run(trr_context *ctx, trr_op op, const trr_tensor *const *operands, const trr_op_params *params);

/* ---- user-defined ops: bring your own kernels (docs/custom-ops.md) ----
 * trr_op_define turns a definition into an op id that trr_op_run, trr_op_get_info, trr_op_from_name, config
 * overrides, the conformance engine, the bench and the CLI's --ops-lib take like a built-in op's. Definitions are
 * process-wide and live until the process ends; ids run from TRR_OP_COUNT up to TRR_OP_LIMIT - 1.
 *
 * A user op is element-wise or a row op. An element-wise op's operands (one or two inputs, one output) share one
 * shape, named by symbols ("x[M,N], g[M,N] -> y[M,N]"), and one dtype from the definition's list. A call arrives at the kernel in the
 * element-wise normalised form: rows x cols, each operand at an element offset with a row stride (a packed call
 * arrives as one row of every element), and the named dims stand for that form: the last dim is cols and, in a
 * rank-2 definition, the first is rows (a rank-1 definition gets rows = 1: a strided view runs a row at a time).
 * The argument convention, the same in order on every API, is in docs/custom-ops.md:
 *   CUDA C, OpenCL C: the operands' buffers (inputs, then the output; CUDA: pointers, OpenCL: __global pointers),
 *                     then their offsets in elements (long / long long), then rows and cols (int), then the row
 *                     strides in elements (int), then the parameters in order (float for f32, int otherwise).
 *                     Tile parameters are #defines, as are TRR_DTYPE (the call's trr_dtype value) and
 *                     TRR_THREADS (threads per group).
 *   Vulkan (SPIR-V):  the backend's own layout: storage buffers of set 0, bindings 0 and 1 the inputs (the first
 *                     again for one input) and 2 the output; push constants of 4 bytes each: rows, cols, the
 *                     dtype (a trr_dtype), the three offsets, the first input's row stride, unused, the second's
 *                     and the output's, then up to six parameters (float or int); specialization constant 0 is
 *                     the threads per group (local_size_x_id = 0), 1.. the tile parameters.
 *   CPU:              a C function given trr_op_cpu_args.
 * A row op (trr_op_define_row_op, with a reference of whole rows) works on each row on its own, as rms_norm does:
 * one to three inputs and one or two outputs, each [M,N] or a vector [N] of the rows' length
 * ("x[M,N], r[M,N], w[N] -> y[M,N], h[M,N]"); the first input and every output are [M,N]. Its call arrives as
 * rows = M, cols = N, every operand at its element offset with one stride: a [M,N] operand's row stride (its
 * elements along a row are adjacent), a [N] vector's element stride. Its arguments are the element-wise
 * convention's with every operand in order (inputs, then outputs); on Vulkan its own layout: storage buffers of
 * set 0, binding i the i-th operand; push constants of 4 bytes each: rows, cols, the dtype, five element offsets,
 * five strides (unused operands' are 0), then up to eight parameters. docs/custom-ops.md has both. */
#define TRR_OP_LIMIT 64 /* every op id, built-in or user, is below it (a 64-bit mask holds a set of ops) */
#define TRR_MAX_USER_OPS (TRR_OP_LIMIT - TRR_OP_COUNT)
#define TRR_MAX_TILE_PARAMS 4
#define TRR_MAX_TILE_CANDIDATES 8
#define TRR_MAX_USER_OPERANDS 4
#define TRR_MAX_ROW_OPERANDS 5 /* a row op's three inputs and two outputs */
#define TRR_MAX_USER_DTYPES 3

/* How results are judged against the float64 reference (docs/ops.md, Correctness bounds). */
typedef enum trr_bound {
    TRR_BOUND_MAX_REL = 0, /* f32 outputs: max relative error 1e-5; f16 / bf16 outputs: the half-precision bounds */
    TRR_BOUND_EXACT_F32,   /* f32 outputs bit-exact (as add), half outputs as above */
    TRR_BOUND_EXACT        /* bit-exact in every dtype (as copy) */
} trr_bound;

/* A tile parameter: a compile-time constant of the kernels, carried in a trr_config field (so overrides, --config
 * and the tuning database name it as they name built-in tiles). The first candidate is the default. */
typedef struct trr_tile_param {
    const char *name;  /* "BLOCK": the #define (CUDA, OpenCL) and the specialization constant's order (Vulkan) */
    const char *field; /* the trr_config field holding it: "block_n", "block_m", "block_k", "vector_width", ... */
    int candidates[TRR_MAX_TILE_CANDIDATES];
    int n_candidates;
} trr_tile_param;

/* One API's kernel: source (CUDA C for NVRTC, OpenCL C 1.2) or SPIR-V words (Vulkan), and its entry point. */
typedef struct trr_kernel_code {
    const char *source;
    const uint32_t *spirv;
    size_t spirv_words;
    const char *entry; /* the kernel function's name ("main" for SPIR-V when NULL) */
} trr_kernel_code;

/* The launch rule: groups along x, y, z, each an expression over the named dims, the tile parameters and
 * integers: "N/BLOCK" (a division rounds up), "M", "N*2", NULL for 1; threads per group, an expression too
 * ("THREADS", "256"). */
typedef struct trr_op_launch {
    const char *groups[3];
    const char *threads;
} trr_op_launch;

/* What the CPU function gets: element 0 of each operand's view (inputs, then the outputs), row strides in
 * elements (a row op's [N] vectors: their element strides), the normalised rows and cols, the dtype, the
 * parameters in order and the tile parameters' values. The backend may call it several times for one call, from
 * several threads at once, each time on a part of the view (whole rows, or for an element-wise op a range of one
 * row's columns). A row op's function gets trr_op_cpu_row_args instead (below). */
typedef struct trr_op_cpu_args {
    void *operands[TRR_MAX_USER_OPERANDS];
    int64_t row_strides[TRR_MAX_USER_OPERANDS];
    int64_t rows, cols;
    trr_dtype dtype;
    const double *params;
    const int *tiles;
    void *user;
} trr_op_cpu_args;
typedef void (*trr_op_cpu_fn)(const trr_op_cpu_args *args);
/* What a row op's CPU function gets: as trr_op_cpu_args, for every operand (n_operands of them, inputs then
 * outputs), strides[i] a [M,N] operand's row stride or a [N] vector's element stride. The backend calls it on
 * whole rows only, maybe several times for one call, from several threads at once. */
typedef struct trr_op_cpu_row_args {
    void *operands[TRR_MAX_ROW_OPERANDS];
    int64_t strides[TRR_MAX_ROW_OPERANDS];
    int n_operands;
    int64_t rows, cols;
    trr_dtype dtype;
    const double *params;
    const int *tiles;
    void *user;
} trr_op_cpu_row_args;
typedef void (*trr_op_cpu_row_fn)(const trr_op_cpu_row_args *args);
/* The float64 reference of one point: the inputs' values (exact in double), the parameters; returns the output. */
typedef double (*trr_op_reference_fn)(const double *inputs, const double *params, void *user);
/* A row op's float64 reference of one row: inputs[i] holds input i's n values of that row (a [N] vector: all of
 * it), outputs[j] receives output j's n values; the parameters in order. */
typedef void (*trr_op_row_reference_fn)(const double *const *inputs, double *const *outputs, int64_t n,
                                        const double *params, void *user);

typedef struct trr_op_def {
    const char *name;                  /* [a-z_][a-z0-9_]*, unique among all ops */
    const char *operands;              /* "x[M,N], g[M,N] -> y[M,N]" */
    trr_dtype dtypes[TRR_MAX_USER_DTYPES]; /* the dtypes a call may use, every operand the same */
    int n_dtypes;
    const trr_param_info *params;      /* named scalar parameters (copied) */
    int n_params;
    trr_tile_param tiles[TRR_MAX_TILE_PARAMS];
    int n_tiles;
    trr_kernel_code cuda, opencl, vulkan; /* an API without code answers TRR_ERR_UNSUPPORTED when asked */
    trr_op_cpu_fn cpu;
    trr_op_launch launch;
    trr_op_reference_fn reference;     /* required (trr_op_define_row_op: NULL, the row reference is its own) */
    trr_bound bound;
    int flops_per_point;               /* for the bench's report; bytes are every operand once */
    int transcendental;                /* evaluates exp or the like per element (a heuristic's hint) */
    void *user;                        /* passed to cpu and the reference */
} trr_op_def;

/* Checks def and registers it: an inconsistent definition (a dim no operand has, operands of different shapes, a
 * launch rule naming an unknown symbol, a tile field used twice, a name taken, ...) is TRR_ERR_INVALID_ARGUMENT
 * with the reason in trr_last_error(NULL). Strings and arrays are copied. Kernels compile on first use; a
 * compile error is TRR_ERR_COMPILE with the compiler's log on the context. */
TRR_API trr_status trr_op_define(const trr_op_def *def, trr_op *out_op);
/* The same for a row op (see above): def as for trr_op_define with def->reference and def->cpu NULL, its operands
 * those of a row op (up to TRR_MAX_ROW_OPERANDS); row_reference its float64 reference of one row (required), cpu
 * its CPU function (NULL: none). trr_op_def and trr_op_cpu_args keep their layouts, which bindings mirror. */
TRR_API trr_status trr_op_define_row_op(const trr_op_def *def, trr_op_row_reference_fn row_reference,
                                        trr_op_cpu_row_fn cpu, trr_op *out_op);
/* The number of ops defined now: TRR_OP_COUNT built-ins, then the user ops (ids TRR_OP_COUNT .. count - 1). */
TRR_API trr_status trr_op_count(int *out_count);
/* A library of user ops (the CLI's --ops-lib): a shared library exporting one function named
 * TRR_OPS_REGISTER_SYMBOL, of type trr_ops_register_fn, which calls trr_op_define for each of its ops.
 * trr_ops_library_load opens it (it stays open), calls that function and passes on its status; *out_defined (may
 * be NULL) gets how many ops it defined. TRR_ERR_IO when the library does not load or lacks the function. */
#define TRR_OPS_REGISTER_SYMBOL "trireme_register_ops"
typedef trr_status (*trr_ops_register_fn)(void);
TRR_API trr_status trr_ops_library_load(const char *path, int *out_defined);

/* ---- the harness in this process: conformance, bench and tune as calls ----
 * What `trireme conformance`, `trireme bench` and `trireme tune` do on one device, run in the calling process, so
 * ops defined in it (a binding's: Python's trireme.define_op, whose reference and CPU kernel are callbacks into
 * the interpreter) are checked, timed and tuned like the built-ins. Each writes a malloc'd JSON document to
 * *out_json, freed with trr_tool_free: conformance and bench the commands' --json documents (one report), tune
 * {"tool", "device", "results": [{op, in_dtype, out_dtype, rows, cols, status, error, best, best_config,
 * best_ms, default, default_ms, listed, dropped, failed, timed, first_failure, stored}]}. Failed cases are in
 * the document; the status is another only when the run could not go on (an unknown op or benchmark, a bad size
 * list, a device that does not open), with the reason in trr_last_error(NULL). */
typedef struct trr_tool_options {
    const char *device; /* a device spec; NULL: TRIREME_DEVICE, else auto */
    const char *ops;    /* comma-separated op names (bench: benchmark names too); NULL: every op (tune: required) */
    uint64_t seed;      /* the inputs' seed; a run repeats with the same one */
    int quick;          /* conformance: the quick subset */
    const char *sizes;  /* bench: "quick" (NULL), "full" or a list as --sizes takes; tune: shapes "RxC" or "N",
                           comma-separated (NULL: each op's quick defaults) */
    int reps;           /* bench, tune: timed repetitions; 0: automatic */
    double budget_s;    /* bench: as --budget; 0: the default */
    int no_vendor;      /* bench: skip the vendor library */
    int write_db;       /* tune: merge each result into the device's tuning database (TRIREME_TUNE_DB, ...) */
} trr_tool_options;
TRR_API trr_status trr_tool_conformance(const trr_tool_options *options, char **out_json);
TRR_API trr_status trr_tool_bench(const trr_tool_options *options, char **out_json);
TRR_API trr_status trr_tool_tune(const trr_tool_options *options, char **out_json);
TRR_API trr_status trr_tool_free(char *text); /* NULL is fine */

TRR_API trr_status trr_synchronize(trr_context *ctx);

/* Device-side timing: the device time of all work submitted between start and stop (CUDA events, OpenCL markers'
 * profiling stamps, Vulkan timestamps; wall time on the CPU), launches included. stop waits for that work. */
TRR_API trr_status trr_timer_start(trr_context *ctx);
TRR_API trr_status trr_timer_stop(trr_context *ctx, double *out_ms);

/* ---- tiling configs ----
 * Override the config used for op on this context (NULL clears it); zero fields keep the backend's choice. */
TRR_API trr_status trr_config_override(trr_context *ctx, trr_op op, const trr_config *config);
/* The config the last call on ctx actually ran with. */
TRR_API trr_status trr_config_last(const trr_context *ctx, trr_config *out_config);
TRR_API trr_status trr_op_name(trr_op op, const char **out_name);
TRR_API trr_status trr_op_from_name(const char *name, trr_op *out_op);
TRR_API trr_status trr_epilogue_name(trr_epilogue epilogue, const char **out_name);
TRR_API trr_status trr_variant_name(trr_variant variant, const char **out_name); /* "auto", "wgmma", ... */
TRR_API trr_status trr_variant_from_name(const char *name, trr_variant *out_variant);

/* ---- half precision (IEEE binary16, round to nearest even) ---- */
TRR_API trr_status trr_f32_to_f16(const float *src, uint16_t *dst, size_t n);
TRR_API trr_status trr_f16_to_f32(const uint16_t *src, float *dst, size_t n);
/* ---- bfloat16 (1 sign, 8 exponent, 7 mantissa bits: the top half of an f32; round to nearest even,
 * overflow to inf, NaN stays a quiet NaN, subnormals kept) ---- */
TRR_API trr_status trr_f32_to_bf16(const float *src, uint16_t *dst, size_t n);
TRR_API trr_status trr_bf16_to_f32(const uint16_t *src, float *dst, size_t n);
/* ---- OCP 8-bit floats: round to nearest even; a finite value past the largest finite one saturates to it (e4m3:
 * 448, e5m2: 57344), and so does an infinity in e4m3, which has none; e5m2 keeps infinities; NaN stays NaN with
 * its sign. Widening to f32 is exact. ---- */
TRR_API trr_status trr_f32_to_f8e4m3(const float *src, uint8_t *dst, size_t n);
TRR_API trr_status trr_f8e4m3_to_f32(const uint8_t *src, float *dst, size_t n);
TRR_API trr_status trr_f32_to_f8e5m2(const float *src, uint8_t *dst, size_t n);
TRR_API trr_status trr_f8e5m2_to_f32(const uint8_t *src, float *dst, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* TRIREME_H */
