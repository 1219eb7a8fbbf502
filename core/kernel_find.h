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

/* Records TRR_ERR_UNSUPPORTED on ctx: "<backend>: <op> has no kernel here: <why>". */
trr_status trr_kernel_unsupported(trr_context *ctx, const char *backend, const trr_op_desc *d, const char *why);

#endif
