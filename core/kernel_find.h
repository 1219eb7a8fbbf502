/*
 * How a backend finds the kernel an op's definition names, and the one way it says it has none.
 *
 * The definition names a stem (trr_op_desc.kernel: kernels/<api>/<stem>.<ext>) and an entry, the op's name. A
 * kernel source provides the entry when it has a kernel function of that name (norm.cl's rms_norm) or code
 * selected by the define ENTRY_<name> (elementwise.cu's ENTRY_add, which the backend passes when it compiles the
 * source for that op). Whether a backend runs an op at all is decided in its `supports`, from its path for the
 * op's shape rule and this lookup, and reported through trr_kernel_unsupported: an op no path or source of the
 * backend provides is TRR_ERR_UNSUPPORTED with the reason, never another op's kernel.
 */
#ifndef TRR_KERNEL_FIND_H
#define TRR_KERNEL_FIND_H

#include "backend.h"
#include "embedded.h"
#include "op_table.h"
#include "user_op.h"

#include <stdatomic.h>
#include <stddef.h>

/* 1 when text (NUL-terminated source) provides entry: outside comments, the identifier ENTRY_<entry>, or the
 * identifier <entry> followed by "(". */
int trr_kernel_text_provides(const char *text, const char *entry);

/* 1 when the table holds <d->kernel>.<ext> and it provides d's entry, the op's name followed by kind (NULL, or a
 * shape rule's kernel kind such as "_online" where the rule has several kernels per op); else 0 with what is
 * missing in why ("kernels/cuda/elementwise.cu has no entry relu"). api names the kernel folder (cuda, opencl).
 * It reads the source: a backend keeps the answer (trr_kernel_memo). */
int trr_kernel_source_provides(const trr_embedded_file *table, size_t count, const char *api, const char *ext,
                               const trr_op_desc *d, const char *kind, char *why, size_t cap);

/* An answer about one op kept for the calls after the first (whether a backend has its kernel), valid for the
 * definition it was found for: a backend keeps one per op (and per dtype pair where the answer depends on it),
 * zero-initialised. Lock-free: supports runs on every call. */
typedef struct trr_kernel_memo {
    _Atomic(const trr_op_desc *) desc;
    _Atomic int answer;
} trr_kernel_memo;

/* The answer kept for d (0 or 1), or -1 when none is. */
static inline int trr_kernel_memo_get(trr_kernel_memo *m, const trr_op_desc *d) {
    if (atomic_load_explicit(&m->desc, memory_order_acquire) != d) return -1;
    return atomic_load_explicit(&m->answer, memory_order_relaxed);
}

static inline void trr_kernel_memo_put(trr_kernel_memo *m, const trr_op_desc *d, int answer) {
    atomic_store_explicit(&m->desc, NULL, memory_order_relaxed);
    atomic_store_explicit(&m->answer, answer, memory_order_relaxed);
    atomic_store_explicit(&m->desc, d, memory_order_release);
}

/* A backend whose kernels are embedded source files (CUDA's .cu, OpenCL's .cl): where they are, and the kernel kinds
 * its rows rule runs for each op (one entry <op><kind> each). */
typedef struct trr_kernel_sources {
    const char *backend; /* "cuda": the kernel folder and the errors' prefix */
    const char *label;   /* "CUDA", for the errors */
    const trr_embedded_file *table;
    size_t count;
    const char *ext; /* "cu" */
    const char *const *rows_kinds;
    int n_rows_kinds;
} trr_kernel_sources;

/* Whether such a backend runs the op of d: TRR_OK, or TRR_ERR_UNSUPPORTED with the reason. has_rule: the backend
 * has a path for d's shape rule; own_files: that path picks its files itself (matmul's variants), so every dtype
 * runs. A user op needs its definition's code for user_api; a byte-moving element-wise op runs on any element size;
 * otherwise the op's stem must provide its entry (each rows kind's for the rows rule). memo keeps a yes for d. */
trr_status trr_kernel_sources_support(trr_context *ctx, const trr_kernel_sources *src, const trr_op_desc *d,
                                      int has_rule, int own_files, trr_user_api user_api, trr_kernel_memo *memo);

/* Records TRR_ERR_UNSUPPORTED on ctx: "<backend>: <op> has no kernel here: <why>". */
trr_status trr_kernel_unsupported(trr_context *ctx, const char *backend, const trr_op_desc *d, const char *why);

#endif
