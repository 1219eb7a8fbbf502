/*
 * The backend interface: what a backend implements, and the normalised op call it receives.
 *
 * The front-end validates every call before a backend sees it, so a backend may assume: dtypes are allowed for
 * the op, shapes agree, every view lies inside its buffer, every element index of an operand counted from its
 * offset fits in int32 (it spans fewer than 2^31 elements: the front-end runs larger calls in parts, parts.c;
 * offsets themselves are 64-bit), offsets are whole elements, and the output does not overlap an input (except
 * the exact aliasing that copy/add/gelu allow). Empty calls (a zero dimension) never reach a backend.
 */
#ifndef TRR_BACKEND_H
#define TRR_BACKEND_H

#include "trireme.h"

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define TRR_BACKEND_API_VERSION 1

/* One operand of a normalised call. offset and strides are in elements of dtype. */
typedef struct trr_operand {
    void *mem;        /* the backend's own buffer handle (what its alloc returned) */
    int64_t offset;   /* elements from the start of the buffer */
    int64_t stride0;  /* see trr_call for what it means per op */
    int64_t stride1;
    int64_t slice_stride;       /* elementwise views that do not fold to rows x cols: elements between slices */
    int64_t outer_slice_stride; /* ... and between groups of slice_count slices (rank-4 views that do not fold) */
    int64_t batch_stride; /* matmul: elements between consecutive matrices of a batch; 0 for an input shared by
                             every batch (and for every operand when batch == 1) */
    trr_dtype dtype;
} trr_operand;

/*
 * A validated call, normalised so every backend sees the same few forms, one per shape rule (op_table.h):
 *   element-wise     (copy, add, gelu, silu) rows x cols, operands x (y) -> z; stride0 = row stride. When every
 *                    operand is packed the front-end passes rows = 1, cols = n (one flat vector), so rows == 1
 *                    is the fast path.
 *                    Higher-rank views that cannot be folded into that form are split by the front-end.
 *   planes           (rgb_to_grey) rows = H, cols = W; x.stride0 = plane (channel) stride, x.stride1 = row stride;
 *                    z.stride0 = row stride. x is u8; z is u8 or f32.
 *   rows             (softmax) rows = M, cols = N; x.stride0, z.stride0 = row strides.
 *   row reduce       (row_sum) rows = M, cols = N; x.stride0 = row stride; z is f32 with stride0 = its element stride.
 *   row norm         (rms_norm, layer_norm) rows = M, cols = N; x.stride0, z.stride0 = row strides; y = the
 *                    weight w [N] and u = the bias b [N] (layer_norm), each with stride0 = its element stride;
 *                    call->params[TRR_NORM_PARAM_EPS] is eps.
 *   matmul           rows = M, cols = N, k = K. x = A, y = B, z = C. stride0 is the leading dimension of the
 *                    operand as stored: A row-major [M,K] (trans_a = 0, lda = x.stride0 >= K) or stored as [K,M]
 *                    (trans_a = 1, lda >= M); B row-major [K,N] (trans_b = 0) or stored as [N,K] (trans_b = 1);
 *                    C row-major with ldc = z.stride0. batch (below) matrices, each operand at its
 *                    batch_stride; C's matrices never overlap, an input's batch_stride may be 0.
 *   attention        (core/attention.c) x = q, y = k, u = v, z = o, w = lse (w.mem NULL when the caller passed
 *                    none); the sizes and the resolved parameters are in call->attn. Every operand's element
 *                    (b, h, s, d) is at offset + b * batch_stride + h * stride1 + s * stride0 + d: D is
 *                    contiguous, the other strides are any positive values (lse has no d). rows = Sq, cols = D,
 *                    k = Skv, batch = B (the tuning database's shape). Every size is at least 1, D at most
 *                    TRR_ATTN_MAX_HEAD_DIM; the front-end writes the calls with Skv = 0 itself.
 */
/* attention's problem, normalised (docs/ops.md, attention). Query head h reads key/value head
 * h / (heads_q / heads_kv). */
typedef struct trr_attention_shape {
    int64_t batch, heads_q, heads_kv, seq_q, seq_kv, head_dim; /* B, Hq, Hkv, Sq, Skv, D */
    float scale;  /* resolved: the caller's scale, or 1/sqrt(D) where it asked for the default (0) */
    int causal;   /* query i sees key j only when j <= i + (Skv - Sq) */
    int has_lse;  /* the call writes lse through w */
} trr_attention_shape;

typedef struct trr_call {
    trr_op op;
    trr_operand x, y, z;
    trr_operand u;     /* a third input (layer_norm's bias); the slots are op_table.h's TRR_SLOT_* */
    trr_operand w;     /* a second output (attention's lse); mem is NULL when the caller passed none */
    trr_attention_shape attn; /* attention only */
    int64_t rows, cols, k;
    int trans_a, trans_b;
    trr_epilogue epilogue;
    float alpha;      /* leaky_relu slope */
    int allow_tf32;
    trr_config config; /* resolved: every field the op uses is non-zero */
    double params[TRR_MAX_OP_PARAMS]; /* the op's declared parameters in slot order (op_table.c), resolved */
    int64_t slices;    /* > 1 only for elementwise views of rank 3 or 4 that do not fold; the front-end runs them
                          one slice at a time (trr_call_slice), so backends always see slices == 1 */
    int64_t slice_count; /* slices per outer group: slice s is at (s / slice_count) * outer_slice_stride +
                            (s % slice_count) * slice_stride; equal to slices when there is one group */
    int64_t batch;     /* matmul: matrices computed by this call (1 for 2-D); batch i reads A at x.offset +
                          i * x.batch_stride (likewise B) and writes C at z.offset + i * z.batch_stride. Backends
                          run the batch as a grid dimension. Calls built without it (0) mean 1. */
} trr_call;

/*
 * A backend. Every function that can fail returns a status and, on failure, records detail with trr_error()
 * on the context it was given. Slots marked optional may be NULL.
 */
typedef struct trr_backend {
    const char *name; /* "cpu", "cuda", ... */
    int api_version;  /* TRR_BACKEND_API_VERSION */

    /* Loads the driver at run time (dlopen) and counts devices. On failure writes why into reason and returns
     * TRR_ERR_UNAVAILABLE; a driver with zero devices is also unavailable. Called once; the result is kept. */
    trr_status (*probe)(int *out_device_count, char *reason, size_t reason_cap);
    trr_status (*device_info)(int index, trr_device_info *out_info);

    /* Opens a device for ctx; the returned handle is stored in ctx->dev. */
    trr_status (*open)(trr_context *ctx, int index, void **out_dev);
    void (*close)(void *dev);

    trr_status (*alloc)(trr_context *ctx, size_t bytes, void **out_mem);
    void (*free)(void *dev, void *mem);
    trr_status (*write)(trr_context *ctx, void *mem, size_t offset, const void *src, size_t bytes);
    trr_status (*read)(trr_context *ctx, void *mem, size_t offset, void *dst, size_t bytes);
    trr_status (*copy)(trr_context *ctx, void *dst, size_t dst_offset, void *src, size_t src_offset, size_t bytes);
    trr_status (*fill)(trr_context *ctx, void *mem, size_t offset, size_t bytes, uint8_t value);
    trr_status (*synchronize)(trr_context *ctx);
    trr_status (*timer_start)(trr_context *ctx);
    trr_status (*timer_stop)(trr_context *ctx, double *out_ms);

    /* optional: TRR_OK, or TRR_ERR_UNSUPPORTED with the reason recorded via trr_error(). NULL: supports all. */
    trr_status (*supports)(trr_context *ctx, const trr_call *call);
    /* optional: fill the zero fields of call->config for this shape (a heuristic). The front-end then fills
     * any field still zero from the op table's defaults. */
    void (*choose_config)(trr_context *ctx, trr_call *call);
    /* optional: TRR_OK if config is valid for this device and call, else TRR_ERR_UNSUPPORTED with a reason. */
    trr_status (*check_config)(trr_context *ctx, const trr_call *call);
    /* optional: the TRR_CFG_* fields (op_table.h) this backend's kernels for op read; the others are filled so
     * the recorded config is complete, but change nothing (trr_config_fields_used). NULL: every field of the op
     * table's. */
    unsigned (*config_fields_used)(trr_op op);

    trr_status (*run)(trr_context *ctx, const trr_call *call);

    /* optional: the native handles behind ctx and behind one of its buffers (trr_context_native and
     * trr_buffer_native in trireme.h say what each is per API). The front-end has filled out->backend and
     * zeroed the rest. NULL: those calls return TRR_ERR_UNSUPPORTED. */
    trr_status (*native_context)(trr_context *ctx, trr_native *out);
    trr_status (*native_buffer)(trr_context *ctx, void *mem, uint64_t *out_handle);
    /* optional: trr_stream_wait_native (native_waits 0: ctx's queue waits for `native`'s work so far) and
     * trr_native_wait_stream (native_waits 1: `native` waits for ctx's work so far), on the device. NULL: those
     * calls return TRR_ERR_UNSUPPORTED. */
    trr_status (*order_native)(trr_context *ctx, uint64_t native, int native_waits);
    /* optional: trr_context_stream. NULL: TRR_ERR_UNSUPPORTED. */
    trr_status (*native_stream)(trr_context *ctx, uint64_t *out_stream);
    /* ---- memory allocated elsewhere (trr_buffer_wrap) ---- */
    /* optional: make a buffer handle, of the kind alloc returns, that refers to the native memory `native`
     * (what trr_buffer_wrap documents per backend) of at least `bytes` bytes, checking what the driver lets it
     * check. The memory stays the caller's: free is never called on the handle. NULL: the backend cannot wrap
     * (trr_buffer_wrap answers TRR_ERR_UNSUPPORTED). */
    trr_status (*wrap)(trr_context *ctx, uint64_t native, size_t bytes, void **out_mem);
    /* optional: forget a handle made by wrap, after the work queued on it is done; must not free the memory.
     * NULL: nothing to release. */
    void (*unwrap)(void *dev, void *mem);
} trr_backend;

/* Where a call's config came from (trr_call_resolve_config): what a front-end reports beside the config. */
typedef enum trr_config_source {
    TRR_CONFIG_FROM_HEURISTIC = 0, /* the backend's heuristic, then the op table's defaults */
    TRR_CONFIG_FROM_OVERRIDE,      /* trr_config_override; fields it leaves at zero are the heuristic's */
    TRR_CONFIG_FROM_TUNING_DB      /* a tuning database entry (last_config_where says which) */
} trr_config_source;

/* The origin of a resolved config: its source and, for a database entry, where it is ("bucket [..] of FILE"). */
typedef struct trr_config_origin {
    trr_config_source source;
    char where[512];
} trr_config_origin;

struct trr_context {
    const trr_backend *backend;
    void *dev;
    int device_index;
    trr_device_info info;
    char selection[1024];
    trr_status last_status;
    char last_error[8192];
    int has_override[TRR_OP_LIMIT];
    trr_config override[TRR_OP_LIMIT];
    trr_config last_config;
    trr_config_origin last_config_origin; /* where last_config came from */
    int timer_running; /* between a successful trr_timer_start and its trr_timer_stop */
    /* Sharing and lifetime (trireme.h, at trr_context_destroy and in the thread-safety paragraph). */
    pthread_mutex_t lock; /* recursive: held by every public entry point that touches the context or its buffers */
    int refs;             /* the caller's reference (until trr_context_destroy) plus one per live buffer */
    int destroyed;        /* trr_context_destroy was called; the device closes with the last buffer */
};

struct trr_buffer {
    trr_context *ctx;
    void *mem;
    size_t size;
    int wrapped; /* made by trr_buffer_wrap: the memory belongs to the caller */
};

/* The context's lock, for a public entry point (core/context.c): trr_context_enter takes it, or fails with
 * TRR_ERR_INVALID_ARGUMENT (the lock not held) when the context was destroyed and only its buffers keep it;
 * trr_context_leave releases it. trr_context_release drops a buffer's reference, closing the device after the
 * last one once the context was destroyed. */
trr_status trr_context_enter(trr_context *ctx, const char *what);
void trr_context_leave(trr_context *ctx);
void trr_context_release(trr_context *ctx);

/* Records status and a printf-style detail on ctx (or this thread's slot when ctx is NULL); returns status so
 * call sites can write `return trr_error(ctx, TRR_ERR_DEVICE, "clEnqueueNDRangeKernel: %s", name);`. */
trr_status trr_error(trr_context *ctx, trr_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
trr_status trr_verror(trr_context *ctx, trr_status status, const char *fmt, va_list ap);
/* Appends more detail (a build log) to the last error on ctx. */
void trr_error_append(trr_context *ctx, const char *text);

#define TRR_TRY(expr)                                                                                          \
    do {                                                                                                       \
        trr_status trr_try_status_ = (expr);                                                                   \
        if (trr_try_status_ != TRR_OK) return trr_try_status_;                                                 \
    } while (0)

/* The compiled-in backends. Each table is defined in its backend's folder (backend_cpu/device.c,
 * backend_cuda/backend.c, backend_opencl/backend.c, backend_vulkan/vk_backend.c); core/registry.c lists them in
 * the order "auto" prefers GPUs from them. */
extern const trr_backend trr_backend_cpu;
#ifdef TRIREME_WITH_CUDA
extern const trr_backend trr_backend_cuda;
#endif
#ifdef TRIREME_WITH_OPENCL
extern const trr_backend trr_backend_opencl;
#endif
#ifdef TRIREME_WITH_VULKAN
extern const trr_backend trr_backend_vulkan;
#endif

#endif /* TRR_BACKEND_H */
