/* trr_rowsum_probe: what row_sum f32 4096 x 8192 can reach on a device, timed as the bench times it (a 256 MiB
 * fill before every repetition, then trr_timer_start, one call, trr_timer_stop; the median of the repetitions).
 * Prints, each as GB/s of the bench's byte count (a copy: read + write; a row read: 4 * rows * cols):
 *   - the copy ceiling: a 1 GiB trr_buffer_copy, as bench/ceilings.c measures it;
 *   - on a cuda device, the pure-read ceiling: hand-written PTX kernels launched on the context's stream that
 *     load the whole 128 MiB matrix with 128-bit loads, each thread all its loads before any add, and keep the
 *     sum only (no block reduction, no output unless the sum equals an impossible sentinel), one block per
 *     row-sized span, for several load cache hints and block sizes; after the fill and without it;
 *   - row_sum through the library with each CFG in turn ("default" or
 *     threads=T,block_n=B,block_m=R,block_k=K,variant=V), after the fill and without it.
 * `trr_rowsum_probe DEVICE [CFG...]`; `trr_rowsum_probe --ptx HINT THREADS` prints a read kernel's PTX. The read
 * kernels load through libcuda (dlopen), so the tool needs no toolkit at build time. */
#define _POSIX_C_SOURCE 200809L
#define TOOL_NAME "trr_rowsum_probe"
#include "tool_util.h"
#include "tuner.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS 4096
#define COLS 8192
#define REPS 30
#define FLUSH_BYTES ((size_t)256 << 20)
#define COPY_BYTES ((size_t)1 << 30)

typedef struct probe {
    trr_context *ctx;
    trr_buffer *flush;
    int rep;
} probe;

/* Before each repetition: the bench's fill (or nothing), so each repetition starts with the cache the bench
 * leaves. */
static int pre(probe *p, int fill) {
    p->rep++;
    if (!fill) return tool_check(p->ctx, trr_synchronize(p->ctx), "synchronize");
    return tool_check(p->ctx, trr_buffer_fill(p->ctx, p->flush, 0, FLUSH_BYTES, (uint8_t)(p->rep * 17 + 1)), "fill");
}

/* ---- the copy ceiling ---- */
static double copy_gbs(probe *p) {
    trr_buffer *a = NULL, *b = NULL;
    double ms[REPS], gbs = 0;
    if (tool_check(p->ctx, trr_buffer_create(p->ctx, COPY_BYTES, &a), "copy src") ||
        tool_check(p->ctx, trr_buffer_create(p->ctx, COPY_BYTES, &b), "copy dst") ||
        tool_check(p->ctx, trr_buffer_fill(p->ctx, a, 0, COPY_BYTES, 0x5A), "copy src fill"))
        goto done;
    for (int w = 0; w < 3; w++)
        if (tool_check(p->ctx, trr_buffer_copy(p->ctx, b, 0, a, 0, COPY_BYTES), "copy")) goto done;
    for (int r = 0; r < REPS; r++) {
        if (pre(p, 1) || tool_check(p->ctx, trr_timer_start(p->ctx), "timer") ||
            tool_check(p->ctx, trr_buffer_copy(p->ctx, b, 0, a, 0, COPY_BYTES), "copy") ||
            tool_check(p->ctx, trr_timer_stop(p->ctx, &ms[r]), "timer"))
            goto done;
    }
    gbs = 2.0 * (double)COPY_BYTES / (tool_median(ms, REPS) * 1e-3) * 1e-9;
done:
    if (a) trr_buffer_destroy(a);
    if (b) trr_buffer_destroy(b);
    return gbs;
}

/* ---- pure-read kernels (cuda) ---- */
typedef int (*cu_module_load_data)(void **, const void *);
typedef int (*cu_module_get_function)(void **, void *, const char *);
typedef int (*cu_launch_kernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                                void **, void **);
typedef int (*cu_ctx_set_current)(void *);

typedef struct cu_api {
    cu_module_load_data load;
    cu_module_get_function getf;
    cu_launch_kernel launch;
    cu_ctx_set_current setc;
} cu_api;

static void load_sym(void *lib, const char *name, void *fn_ptr) {
    void *p = dlsym(lib, name);
    memcpy(fn_ptr, &p, sizeof p);
}

/* A read hint: the ld's qualifiers, and whether it takes an L2 evict-first cache policy operand. */
typedef struct hint {
    const char *name, *quals;
    int policy;
} hint;

static const hint hints[] = {
    {"plain", "", 0},
    {"nc", ".nc", 0},
    {"cs", ".cs", 0},
    {"lu", ".lu", 0},
    {"L1noalloc", ".L1::no_allocate", 0},
    {"L2ef", ".L2::cache_hint", 1},
    {"nc+L2ef", ".nc.L2::cache_hint", 1},
    {"nc+L1na+L2ef", ".nc.L1::no_allocate.L2::cache_hint", 1},
};

/* Appends formatted PTX to out (capacity cap, n bytes used); returns 0 from the caller when it does not fit. */
#define PUT(...)                                                                                               \
    do {                                                                                                       \
        int w_ = snprintf(out + n, cap - n, __VA_ARGS__);                                                      \
        if (w_ < 0 || (size_t)w_ >= cap - n) return 0;                                                         \
        n += (size_t)w_;                                                                                       \
    } while (0)

/* PTX of a kernel whose block b reads span_bytes from x + b * span_bytes, thread t its 16-byte vectors t, t + T,
 * ..., all loads issued before the first add. */
static int read_ptx(char *out, size_t cap, const hint *h, int threads, int span_bytes) {
    int loads = span_bytes / (threads * 16);
    size_t n = 0;
    PUT(".version 7.8\n.target sm_80\n.address_size 64\n");
    PUT(".visible .entry rd(.param .u64 x, .param .u64 y, .param .f32 sentinel, .param .u32 nv)\n{\n");
    PUT(".reg .b64 %%rd<8>;\n.reg .b32 %%r<4>;\n.reg .f32 %%f<%d>;\n.reg .f32 %%s<%d>;\n.reg .pred %%p;\n",
        4 * loads, loads + 1);
    PUT("ld.param.u64 %%rd1, [x];\nld.param.u64 %%rd2, [y];\n");
    PUT("cvta.to.global.u64 %%rd1, %%rd1;\ncvta.to.global.u64 %%rd2, %%rd2;\n");
    PUT("mov.u32 %%r1, %%ctaid.x;\nmov.u32 %%r2, %%tid.x;\n");
    PUT("mul.wide.u32 %%rd3, %%r1, %d;\nadd.s64 %%rd3, %%rd1, %%rd3;\n", span_bytes);
    PUT("mul.wide.u32 %%rd4, %%r2, 16;\nadd.s64 %%rd3, %%rd3, %%rd4;\n");
    if (h->policy) PUT("createpolicy.fractional.L2::evict_first.b64 %%rd5, 1.0;\n");
    for (int u = 0; u < loads; u++) {
        PUT("ld.global%s.v4.f32 {%%f%d, %%f%d, %%f%d, %%f%d}, [%%rd3+%d]%s;\n", h->quals, 4 * u, 4 * u + 1, 4 * u + 2,
            4 * u + 3, u * threads * 16, h->policy ? ", %rd5" : "");
    }
    for (int u = 0; u < loads; u++)
        PUT("add.f32 %%s%d, %%f%d, %%f%d;\nadd.f32 %%s%d, %%s%d, %%f%d;\nadd.f32 %%s%d, %%s%d, %%f%d;\n", u, 4 * u,
            4 * u + 1, u, u, 4 * u + 2, u, u, 4 * u + 3);
    for (int u = 1; u < loads; u++) PUT("add.f32 %%s0, %%s0, %%s%d;\n", u);
    PUT("ld.param.f32 %%s%d, [sentinel];\nsetp.neu.f32 %%p, %%s0, %%s%d;\n@%%p bra DONE;\n", loads, loads);
    PUT("mul.wide.u32 %%rd6, %%r1, 4;\nadd.s64 %%rd6, %%rd2, %%rd6;\nst.global.f32 [%%rd6], %%s0;\n");
    PUT("DONE:\nret;\n}\n");
    return 1;
}

/* PTX of a grid-stride read over nv 16-byte vectors (a .param): thread i of the grid loads vectors i, i + G*T,
 * ..., `loads` of them before adding, then the rest one at a time. The grid's blocks share the matrix to within
 * one vector per thread, where one block per row leaves the SMs whole rows apart at the end. */
static int stride_ptx(char *out, size_t cap, const hint *h, int loads) {
    size_t n = 0;
    PUT(".version 7.8\n.target sm_80\n.address_size 64\n");
    PUT(".visible .entry rd(.param .u64 x, .param .u64 y, .param .f32 sentinel, .param .u32 nv)\n{\n");
    PUT(".reg .b64 %%rd<%d>;\n.reg .b32 %%r<12>;\n.reg .f32 %%f<%d>;\n.reg .f32 %%s<%d>;\n.reg .pred %%p;\n",
        loads + 10, 4 * loads, loads + 2);
    PUT("ld.param.u64 %%rd1, [x];\nld.param.u64 %%rd2, [y];\nld.param.u32 %%r5, [nv];\n");
    PUT("cvta.to.global.u64 %%rd1, %%rd1;\ncvta.to.global.u64 %%rd2, %%rd2;\n");
    PUT("mov.u32 %%r1, %%ctaid.x;\nmov.u32 %%r2, %%tid.x;\nmov.u32 %%r6, %%ntid.x;\nmov.u32 %%r7, %%nctaid.x;\n");
    PUT("mad.lo.u32 %%r3, %%r1, %%r6, %%r2;\nmul.lo.u32 %%r4, %%r6, %%r7;\n"); /* r3 = i, r4 = stride */
    PUT("mul.lo.u32 %%r8, %%r4, %d;\n", loads - 1);                         /* r8 = (loads-1) * stride */
    PUT("mul.lo.u32 %%r9, %%r4, %d;\n", loads);                             /* r9 = loads * stride */
    PUT("mul.wide.u32 %%rd4, %%r4, 16;\n");                                 /* rd4 = stride bytes */
    PUT("mov.f32 %%s0, 0f00000000;\n");
    if (h->policy) PUT("createpolicy.fractional.L2::evict_first.b64 %%rd5, 1.0;\n");
    PUT("MAIN:\nadd.u32 %%r10, %%r3, %%r8;\nsetp.ge.u32 %%p, %%r10, %%r5;\n@%%p bra TAIL;\n");
    PUT("mul.wide.u32 %%rd6, %%r3, 16;\nadd.s64 %%rd6, %%rd1, %%rd6;\n");
    for (int u = 0; u < loads; u++) {
        if (u) PUT("add.s64 %%rd6, %%rd6, %%rd4;\n");
        PUT("ld.global%s.v4.f32 {%%f%d, %%f%d, %%f%d, %%f%d}, [%%rd6]%s;\n", h->quals, 4 * u, 4 * u + 1, 4 * u + 2,
            4 * u + 3, h->policy ? ", %rd5" : "");
    }
    for (int u = 0; u < loads; u++)
        PUT("add.f32 %%s1, %%f%d, %%f%d;\nadd.f32 %%s1, %%s1, %%f%d;\nadd.f32 %%s1, %%s1, %%f%d;\n"
            "add.f32 %%s0, %%s0, %%s1;\n",
            4 * u, 4 * u + 1, 4 * u + 2, 4 * u + 3);
    PUT("add.u32 %%r3, %%r3, %%r9;\nbra MAIN;\n");
    PUT("TAIL:\nsetp.ge.u32 %%p, %%r3, %%r5;\n@%%p bra END;\n");
    PUT("mul.wide.u32 %%rd6, %%r3, 16;\nadd.s64 %%rd6, %%rd1, %%rd6;\n");
    PUT("ld.global%s.v4.f32 {%%f0, %%f1, %%f2, %%f3}, [%%rd6]%s;\n", h->quals, h->policy ? ", %rd5" : "");
    PUT("add.f32 %%s1, %%f0, %%f1;\nadd.f32 %%s1, %%s1, %%f2;\nadd.f32 %%s1, %%s1, %%f3;\nadd.f32 %%s0, %%s0, %%s1;\n");
    PUT("add.u32 %%r3, %%r3, %%r4;\nbra TAIL;\n");
    PUT("END:\nld.param.f32 %%s1, [sentinel];\nsetp.neu.f32 %%p, %%s0, %%s1;\n@%%p bra DONE;\n");
    PUT("mul.wide.u32 %%rd7, %%r1, 4;\nadd.s64 %%rd7, %%rd2, %%rd7;\nst.global.f32 [%%rd7], %%s0;\n");
    PUT("DONE:\nret;\n}\n");
    return 1;
}
#undef PUT

/* Loads one read kernel and prints its median after the fill and without it; nonzero when the timer fails. */
static int time_read(probe *p, const cu_api *cu, void *queue, const char *ptx, const char *name, unsigned grid,
                     int threads, void **args) {
    void *mod = NULL, *fn = NULL;
    int err = 0;
    if ((err = cu->load(&mod, ptx)) || (err = cu->getf(&fn, mod, "rd"))) {
        printf("%-40s could not load (CUresult %d)\n", name, err);
        return 0;
    }
    double med[2] = {0, 0};
    for (int fill = 1; fill >= 0; fill--) {
        double ms[REPS];
        for (int w = 0; w < 3; w++) cu->launch(fn, grid, 1, 1, (unsigned)threads, 1, 1, 0, queue, args, NULL);
        for (int r = 0; r < REPS; r++) {
            if (pre(p, fill) || tool_check(p->ctx, trr_timer_start(p->ctx), "timer")) return 1;
            if ((err = cu->launch(fn, grid, 1, 1, (unsigned)threads, 1, 1, 0, queue, args, NULL))) {
                printf("%-40s launch failed (CUresult %d)\n", name, err);
                return 1;
            }
            if (tool_check(p->ctx, trr_timer_stop(p->ctx, &ms[r]), "timer")) return 1;
        }
        med[fill] = tool_median(ms, REPS);
    }
    const double bytes = 4.0 * ROWS * COLS;
    printf("%-40s: after the fill %7.2f us %6.0f GB/s | no fill %7.2f us %6.0f GB/s\n", name, med[1] * 1e3,
           bytes / (med[1] * 1e-3) * 1e-9, med[0] * 1e3, bytes / (med[0] * 1e-3) * 1e-9);
    fflush(stdout);
    return 0;
}

static void read_ceilings(probe *p, trr_buffer *bx, trr_buffer *by) {
    trr_native nat;
    if (trr_context_native(p->ctx, &nat) != TRR_OK || strcmp(nat.backend, "cuda") != 0) {
        printf("pure-read ceiling: cuda devices only\n");
        return;
    }
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    cu_api cu = {0};
    if (lib) {
        load_sym(lib, "cuModuleLoadData", &cu.load);
        load_sym(lib, "cuModuleGetFunction", &cu.getf);
        load_sym(lib, "cuLaunchKernel", &cu.launch);
        load_sym(lib, "cuCtxSetCurrent", &cu.setc);
    }
    uint64_t xp = 0, yp = 0;
    if (!cu.load || !cu.getf || !cu.launch || !cu.setc || cu.setc(nat.context) ||
        trr_buffer_native(bx, &xp) != TRR_OK || trr_buffer_native(by, &yp) != TRR_OK) {
        printf("pure-read ceiling: libcuda or the buffers' device pointers not available\n");
        return;
    }
    trr_device_info dev;
    int sms = trr_context_device(p->ctx, &dev) == TRR_OK && dev.compute_units > 0 ? dev.compute_units : 132;
    float sentinel = 12345.678f;
    unsigned nv = (unsigned)((size_t)ROWS * COLS / 4);
    void *args[] = {&xp, &yp, &sentinel, &nv};
    static char ptx[1 << 16];
    /* one block per row: every hint, four block sizes */
    static const int threads_list[] = {256, 512, 1024, 128};
    for (size_t hi = 0; hi < sizeof hints / sizeof hints[0]; hi++) {
        for (size_t ti = 0; ti < sizeof threads_list / sizeof threads_list[0]; ti++) {
            const int threads = threads_list[ti], span = COLS * 4;
            char name[96];
            snprintf(name, sizeof name, "read/row %s t%d %d loads", hints[hi].name, threads, span / (threads * 16));
            if (!read_ptx(ptx, sizeof ptx, &hints[hi], threads, span)) continue;
            if (time_read(p, &cu, nat.queue, ptx, name, (unsigned)ROWS, threads, args)) return;
        }
    }
    /* grid-stride over a grid of whole waves: the hints that matter, two block sizes, full and half occupancy */
    static const int stride_hints[] = {0, 1, 2, 5, 6};
    for (size_t k = 0; k < sizeof stride_hints / sizeof stride_hints[0]; k++) {
        const hint *h = &hints[stride_hints[k]];
        for (int threads = 256; threads <= 512; threads *= 2) {
            for (int occ = 2; occ >= 1; occ--) {
                for (int loads = 4; loads <= 8; loads *= 2) {
                    const unsigned grid = (unsigned)(sms * (2048 / threads) * occ / 2);
                    char name[96];
                    snprintf(name, sizeof name, "read/grid %s t%d %d loads %u blocks", h->name, threads, loads, grid);
                    if (!stride_ptx(ptx, sizeof ptx, h, loads)) continue;
                    if (time_read(p, &cu, nat.queue, ptx, name, grid, threads, args)) return;
                }
            }
        }
    }
}

/* ---- row_sum through the library ---- */
/* "default" (the backend's choice) or the named form the CLI's --config takes (harness/tuner.h) */
static int parse_cfg(const char *s, trr_config *c) {
    memset(c, 0, sizeof *c);
    return strcmp(s, "default") == 0 || trr_config_parse(s, c) == TRR_OK;
}

static void row_sums(probe *p, trr_buffer *bx, trr_buffer *by, int ncfg, char **cfgs) {
    trr_tensor x, y;
    if (tool_check(p->ctx, trr_tensor_2d(bx, 0, TRR_F32, ROWS, COLS, 0, &x), "x") ||
        tool_check(p->ctx, trr_tensor_1d(by, 0, TRR_F32, ROWS, &y), "y"))
        return;
    for (int c = 0; c < ncfg; c++) {
        trr_config cfg;
        if (!parse_cfg(cfgs[c], &cfg)) {
            printf("row_sum %-40s bad config\n", cfgs[c]);
            continue;
        }
        if (tool_check(p->ctx, trr_config_override(p->ctx, TRR_OP_ROW_SUM, &cfg), "config")) continue;
        trr_status st = TRR_OK;
        for (int w = 0; w < 3 && st == TRR_OK; w++) st = trr_row_sum(p->ctx, &x, &y);
        if (st == TRR_OK) st = trr_synchronize(p->ctx);
        if (st != TRR_OK) {
            printf("row_sum %-40s FAILED: %s\n", cfgs[c], trr_last_error(p->ctx));
            continue;
        }
        trr_config used;
        trr_config_last(p->ctx, &used);
        double med[2] = {0, 0};
        for (int fill = 1; fill >= 0; fill--) {
            double ms[REPS];
            for (int r = 0; r < REPS; r++) {
                if (pre(p, fill) || tool_check(p->ctx, trr_timer_start(p->ctx), "timer") ||
                    tool_check(p->ctx, trr_row_sum(p->ctx, &x, &y), "row_sum") ||
                    tool_check(p->ctx, trr_timer_stop(p->ctx, &ms[r]), "timer"))
                    return;
            }
            med[fill] = tool_median(ms, REPS);
        }
        const double bytes = 4.0 * ROWS * COLS;
        const char *vn = "?";
        trr_variant_name((trr_variant)used.variant, &vn);
        printf("row_sum %-36s t%-4d bn%-6d bm%d bk%d %-8s: after the fill %7.2f us %6.0f GB/s | no fill %7.2f us "
               "%6.0f GB/s\n",
               cfgs[c], used.threads, used.block_n, used.block_m, used.block_k, vn, med[1] * 1e3,
               bytes / (med[1] * 1e-3) * 1e-9, med[0] * 1e3, bytes / (med[0] * 1e-3) * 1e-9);
        fflush(stdout);
    }
    tool_check(p->ctx, trr_config_override(p->ctx, TRR_OP_ROW_SUM, NULL), "config");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: trr_rowsum_probe DEVICE [CFG...]\n");
        return 2;
    }
    if (argc == 4 && strcmp(argv[1], "--ptx") == 0) { /* a read kernel's PTX, for ptxas (THREADS 0: grid-stride) */
        static char ptx[1 << 16];
        for (size_t hi = 0; hi < sizeof hints / sizeof hints[0]; hi++)
            if (strcmp(hints[hi].name, argv[2]) == 0 &&
                (atoi(argv[3]) ? read_ptx(ptx, sizeof ptx, &hints[hi], atoi(argv[3]), COLS * 4)
                               : stride_ptx(ptx, sizeof ptx, &hints[hi], 8))) {
                fputs(ptx, stdout);
                return 0;
            }
        return 2;
    }
    probe p = {0};
    if (tool_check(NULL, trr_context_create(argv[1], &p.ctx), "context")) return 1;
    const size_t n = (size_t)ROWS * COLS;
    trr_buffer *bx = NULL, *by = NULL;
    int bad = tool_check(p.ctx, trr_buffer_create(p.ctx, FLUSH_BYTES, &p.flush), "flush buffer") ||
              tool_check(p.ctx, trr_buffer_create(p.ctx, n * 4, &bx), "x") ||
              tool_check(p.ctx, trr_buffer_create(p.ctx, ROWS * 4, &by), "y") ||
              tool_check(p.ctx, trr_buffer_fill(p.ctx, bx, 0, n * 4, 0x3C), "x fill"); /* 0x3C3C3C3C ~ 0.0115 */
    if (!bad) {
        double c = copy_gbs(&p);
        printf("copy ceiling on %s: %.0f GB/s (1 GiB trr_buffer_copy, read + write, median of %d after the fill)\n",
               argv[1], c, REPS);
        fflush(stdout);
        read_ceilings(&p, bx, by);
        char *def[] = {"default"};
        if (argc > 2) row_sums(&p, bx, by, argc - 2, argv + 2);
        else row_sums(&p, bx, by, 1, def);
    }
    if (bx) trr_buffer_destroy(bx);
    if (by) trr_buffer_destroy(by);
    if (p.flush) trr_buffer_destroy(p.flush);
    trr_context_destroy(p.ctx);
    return bad;
}
