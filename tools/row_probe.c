/* trr_row_probe: what the device timer holds around one row-wise op besides the op's own work, as the bench
 * times it (a 256 MiB fill before every repetition, then trr_timer_start, the calls, trr_timer_stop). Prints
 * the median over the repetitions of: an empty interval, with and without the fill before it; a 1x256 softmax;
 * k = 1, 2, 4 calls of the op on k distinct operand pairs (so each reads cold memory) in one interval, whose
 * slope is the op's cost in a run of calls and whose intercept the interval's fixed cost; and one call without
 * the fill before it (the L2 then holds no written lines to write back), and one after the fill and an untimed
 * call of the same op on a single row (which leaves the op's pipeline bound). Then what the interval's fixed
 * cost is made of: k = 1, 2, 4 tiny softmaxes (1x256) and k grids of 4096 near-empty workgroups (a 4096x4
 * softmax, one 64-thread workgroup a row) after the fill, whose slopes are a dispatch's cost in a run and whose
 * first call's excess is what only the first dispatch of an interval pays; k = 1 after the fill and a read
 * of the whole flush buffer (the cache then holds clean lines, not the fill's written ones); and k = 1 after a
 * copy kernel over the flush buffer in place of the fill (the compute units busy up to the timer, as after a
 * fill done by a kernel). Public API only:
 * `trr_row_probe --device vulkan:0 --op softmax --rows 4096 --cols 256 --reps 30`. */
#define _POSIX_C_SOURCE 200809L
#define TOOL_NAME "trr_row_probe"
#include "tool_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_K 4
#define FLUSH_BYTES ((size_t)256 << 20)

typedef struct probe {
    trr_context *ctx;
    trr_buffer *flush;
    int softmax;
    trr_tensor x[MAX_K], z[MAX_K], tx, tz, px, pz; /* px, pz: one row of the op's width */
    trr_tensor rx, rz;                             /* the flush buffer read back as rows (row_sum) */
    trr_tensor ex, ez;                             /* EMPTY_ROWS rows of 4: workgroups with next to no work */
    trr_tensor cx, cz;                             /* the flush buffer's halves, for a copy kernel */
} probe;

/* Before the timer: what an interval puts between the fill and timer_start (flags). */
enum { PRE_FILL = 1, PRE_ONE_ROW = 2, PRE_READ = 4, PRE_COPY = 8 };
/* What the timer holds, k times (TIMED_OP: the op on k distinct operand pairs). */
enum { TIMED_OP, TIMED_TINY, TIMED_EMPTY_GROUPS };
#define EMPTY_ROWS 4096

static int call(probe *p, const trr_tensor *x, const trr_tensor *z) {
    return tool_check(p->ctx, p->softmax ? trr_softmax(p->ctx, x, z) : trr_row_sum(p->ctx, x, z), "op");
}

/* 4096 rows of 4 over 64-thread workgroups, one workgroup a row on every backend: a grid of workgroups that
 * each load and store 16 bytes. */
static int empty_groups(probe *p) {
    trr_config c = {.threads = 64, .block_n = 256, .variant = TRR_VARIANT_SIMT}; /* CUDA: 4 columns a thread */
    if (tool_check(p->ctx, trr_config_override(p->ctx, TRR_OP_SOFTMAX, &c), "config")) return 1;
    int bad = tool_check(p->ctx, trr_softmax(p->ctx, &p->ex, &p->ez), "4096x4 softmax");
    return tool_check(p->ctx, trr_config_override(p->ctx, TRR_OP_SOFTMAX, NULL), "config") || bad;
}

/* One interval: what pre asks for (the fill, or a copy kernel over the flush buffer's halves in its place,
 * which keeps the compute units busy up to the timer where the fill may not; then an untimed read of the whole
 * flush buffer, which leaves the cache holding clean lines instead of written ones; then the untimed one-row
 * call), then the timer around k of what timed names (k = 0: nothing). */
static int interval(probe *p, int pre, int timed, int k, int rep, double *out_us) {
    double ms = 0;
    if ((pre & PRE_FILL) &&
        tool_check(p->ctx, trr_buffer_fill(p->ctx, p->flush, 0, FLUSH_BYTES, (uint8_t)(rep * 17 + 1)), "fill"))
        return 1;
    if ((pre & PRE_COPY) && tool_check(p->ctx, trr_copy(p->ctx, &p->cx, &p->cz), "flush copy")) return 1;
    if ((pre & PRE_READ) && tool_check(p->ctx, trr_row_sum(p->ctx, &p->rx, &p->rz), "flush read")) return 1;
    if ((pre & PRE_ONE_ROW) && call(p, &p->px, &p->pz)) return 1;
    if (tool_check(p->ctx, trr_timer_start(p->ctx), "timer_start")) return 1;
    /* without the fill, one call a repetition goes round the operand pairs, so it reads memory the last few
     * repetitions did not (where they are larger than the L2) */
    const int first = pre || k != 1 ? 0 : rep % MAX_K;
    for (int i = first; i < first + k; i++) {
        if (timed == TIMED_TINY && tool_check(p->ctx, trr_softmax(p->ctx, &p->tx, &p->tz), "tiny softmax")) return 1;
        if (timed == TIMED_EMPTY_GROUPS && empty_groups(p)) return 1;
        if (timed == TIMED_OP && call(p, &p->x[i], &p->z[i])) return 1;
    }
    if (tool_check(p->ctx, trr_timer_stop(p->ctx, &ms), "timer_stop")) return 1;
    *out_us = ms * 1e3;
    return 0;
}

static int measure(probe *p, int pre, int timed, int k, int reps, double *out_us) {
    double t[200];
    for (int i = 0; i < 20; i++) /* warm-up, clocks up */
        if (interval(p, 0, timed, k, i, &t[0])) return 1;
    for (int r = 0; r < reps; r++)
        if (interval(p, pre, timed, k, r, &t[r])) return 1;
    *out_us = tool_median(t, reps);
    return 0;
}

int main(int argc, char **argv) {
    const char *device = "vulkan:0", *op = "softmax";
    long rows = 4096, cols = 256;
    int reps = 30;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--device")) device = argv[i + 1];
        else if (!strcmp(argv[i], "--op")) op = argv[i + 1];
        else if (!strcmp(argv[i], "--rows")) rows = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--cols")) cols = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: trr_row_probe [--device D] [--op softmax|row_sum] [--rows R] [--cols N] [--reps R]\n");
            return 2;
        }
    }
    if (rows < 1 || cols < 1 || reps < 1 || reps > 200 || (strcmp(op, "softmax") && strcmp(op, "row_sum"))) {
        fprintf(stderr, "trr_row_probe: --op softmax|row_sum, --rows and --cols at least 1, --reps 1..200\n");
        return 2;
    }
    probe p = {.softmax = !strcmp(op, "softmax")};
    if (tool_check(NULL, trr_context_create(device, &p.ctx), "opening the device")) return 1;
    size_t in_bytes = (size_t)rows * (size_t)cols * 4, out_bytes = p.softmax ? in_bytes : (size_t)rows * 4;
    trr_buffer *bx[MAX_K] = {0}, *bz[MAX_K] = {0}, *tiny = NULL, *pre = NULL, *rsum = NULL, *eb = NULL;
    const int64_t read_rows = (int64_t)(FLUSH_BYTES / 4 / 1024);
    int bad = tool_check(p.ctx, trr_buffer_create(p.ctx, FLUSH_BYTES, &p.flush), "flush buffer") ||
              tool_check(p.ctx, trr_buffer_create(p.ctx, 2 * 256 * 4, &tiny), "tiny buffer") ||
              tool_check(p.ctx, trr_buffer_fill(p.ctx, tiny, 0, 2 * 256 * 4, 0x3c), "tiny fill") ||
              tool_check(p.ctx, trr_tensor_2d(tiny, 0, TRR_F32, 1, 256, 0, &p.tx), "tensor") ||
              tool_check(p.ctx, trr_tensor_2d(tiny, 256 * 4, TRR_F32, 1, 256, 0, &p.tz), "tensor") ||
              tool_check(p.ctx, trr_buffer_create(p.ctx, (size_t)cols * 8, &pre), "one-row buffer") ||
              tool_check(p.ctx, trr_buffer_fill(p.ctx, pre, 0, (size_t)cols * 8, 0x3c), "one-row fill") ||
              tool_check(p.ctx, trr_tensor_2d(pre, 0, TRR_F32, 1, cols, 0, &p.px), "tensor") ||
              tool_check(p.ctx, p.softmax ? trr_tensor_2d(pre, (size_t)cols * 4, TRR_F32, 1, cols, 0, &p.pz)
                                     : trr_tensor_1d(pre, (size_t)cols * 4, TRR_F32, 1, &p.pz),
                    "tensor") ||
              tool_check(p.ctx, trr_buffer_create(p.ctx, (size_t)read_rows * 4, &rsum), "read-back buffer") ||
              tool_check(p.ctx, trr_tensor_2d(p.flush, 0, TRR_F32, read_rows, 1024, 0, &p.rx), "tensor") ||
              tool_check(p.ctx, trr_tensor_1d(rsum, 0, TRR_F32, read_rows, &p.rz), "tensor") ||
              tool_check(p.ctx, trr_buffer_create(p.ctx, 2 * EMPTY_ROWS * 4 * 4, &eb), "4096x4 buffer") ||
              tool_check(p.ctx, trr_buffer_fill(p.ctx, eb, 0, 2 * EMPTY_ROWS * 4 * 4, 0x3c), "4096x4 fill") ||
              tool_check(p.ctx, trr_tensor_2d(eb, 0, TRR_F32, EMPTY_ROWS, 4, 0, &p.ex), "tensor") ||
              tool_check(p.ctx, trr_tensor_2d(eb, EMPTY_ROWS * 4 * 4, TRR_F32, EMPTY_ROWS, 4, 0, &p.ez), "tensor") ||
              tool_check(p.ctx, trr_tensor_1d(p.flush, 0, TRR_F32, (int64_t)(FLUSH_BYTES / 8), &p.cx), "tensor") ||
              tool_check(p.ctx, trr_tensor_1d(p.flush, FLUSH_BYTES / 2, TRR_F32, (int64_t)(FLUSH_BYTES / 8), &p.cz),
                         "tensor");
    for (int i = 0; !bad && i < MAX_K; i++) {
        /* 0x3c3c3c3c is about 0.0115: every input finite, the softmax well defined */
        bad = tool_check(p.ctx, trr_buffer_create(p.ctx, in_bytes, &bx[i]), "x buffer") ||
              tool_check(p.ctx, trr_buffer_create(p.ctx, out_bytes, &bz[i]), "z buffer") ||
              tool_check(p.ctx, trr_buffer_fill(p.ctx, bx[i], 0, in_bytes, 0x3c), "x fill") ||
              tool_check(p.ctx, trr_tensor_2d(bx[i], 0, TRR_F32, rows, cols, 0, &p.x[i]), "tensor") ||
              tool_check(p.ctx, p.softmax ? trr_tensor_2d(bz[i], 0, TRR_F32, rows, cols, 0, &p.z[i])
                                     : trr_tensor_1d(bz[i], 0, TRR_F32, rows, &p.z[i]),
                    "tensor");
    }
    double e0 = 0, e1 = 0, tiny_us = 0, t[MAX_K + 1] = {0}, nofill = 0, bound = 0;
    double tk[MAX_K + 1] = {0}, gk[MAX_K + 1] = {0}, rd = 0, rd_bound = 0, rd_tiny = 0, cp = 0, cp_tiny = 0,
           cp_empty = 0;
    if (!bad)
        bad = measure(&p, 0, TIMED_OP, 0, reps, &e0) || measure(&p, PRE_FILL, TIMED_OP, 0, reps, &e1) ||
              measure(&p, PRE_FILL, TIMED_TINY, 1, reps, &tiny_us);
    if (!bad)
        bad = measure(&p, 0, TIMED_OP, 1, reps, &nofill) ||
              measure(&p, PRE_FILL | PRE_ONE_ROW, TIMED_OP, 1, reps, &bound);
    for (int k = 1; !bad && k <= MAX_K; k *= 2) bad = measure(&p, PRE_FILL, TIMED_OP, k, reps, &t[k]);
    trr_config cfg; /* the op's, before the calls below run others */
    const int have_cfg = !bad && trr_config_last(p.ctx, &cfg) == TRR_OK;
    for (int k = 1; !bad && k <= MAX_K; k *= 2)
        bad = measure(&p, PRE_FILL, TIMED_TINY, k, reps, &tk[k]) ||
              measure(&p, PRE_FILL, TIMED_EMPTY_GROUPS, k, reps, &gk[k]);
    if (!bad)
        bad = measure(&p, PRE_FILL | PRE_READ, TIMED_OP, 1, reps, &rd) ||
              measure(&p, PRE_FILL | PRE_READ | PRE_ONE_ROW, TIMED_OP, 1, reps, &rd_bound) ||
              measure(&p, PRE_FILL | PRE_READ, TIMED_TINY, 1, reps, &rd_tiny) ||
              measure(&p, PRE_COPY, TIMED_OP, 1, reps, &cp) || measure(&p, PRE_COPY, TIMED_TINY, 1, reps, &cp_tiny) ||
              measure(&p, PRE_COPY, TIMED_OP, 0, reps, &cp_empty);
    if (!bad) {
        trr_device_info info;
        if (trr_context_device(p.ctx, &info) == TRR_OK) printf("device: %s (%s)\n", info.spec, info.name);
        if (have_cfg)
            printf("config: threads %d block_n %d vector_width %d variant %d\n", cfg.threads, cfg.block_n,
                   cfg.vector_width, (int)cfg.variant);
        double slope = (t[4] - t[1]) / 3, bytes = (double)(in_bytes + out_bytes);
        printf("%s %ldx%ld, medians of %d (us): empty %.2f, empty after the fill %.2f, 1x256 softmax after the "
               "fill %.2f; k calls after the fill: k=1 %.2f (%.0f GB/s), k=2 %.2f, k=4 %.2f; per call in a run "
               "%.2f (%.0f GB/s), fixed %.2f; k=1 without the fill %.2f, k=1 after the fill and a one-row "
               "call %.2f\n",
               op, rows, cols, reps, e0, e1, tiny_us, t[1], bytes / (t[1] * 1e3), t[2], t[4], slope,
               bytes / (slope * 1e3), t[1] - slope, nofill, bound);
        printf("after the fill, k = 1 / 2 / 4 in one interval (us): 1x256 softmax %.2f / %.2f / %.2f (%.2f a "
               "call after the first); 4096x4 softmax over 4096 workgroups of 64 %.2f / %.2f / %.2f (%.2f a call "
               "after the first)\n",
               tk[1], tk[2], tk[4], (tk[4] - tk[1]) / 3, gk[1], gk[2], gk[4], (gk[4] - gk[1]) / 3);
        printf("after the fill and a read of it (the cache's written lines replaced by clean ones): k=1 %.2f, "
               "and a one-row call %.2f, 1x256 softmax %.2f\n",
               rd, rd_bound, rd_tiny);
        printf("after a copy kernel over the flush buffer in place of the fill: empty %.2f, k=1 %.2f, 1x256 softmax "
               "%.2f\n",
               cp_empty, cp, cp_tiny);
    }
    for (int i = 0; i < MAX_K; i++) {
        trr_buffer_destroy(bx[i]);
        trr_buffer_destroy(bz[i]);
    }
    trr_buffer_destroy(tiny);
    trr_buffer_destroy(rsum);
    trr_buffer_destroy(eb);
    trr_buffer_destroy(pre);
    trr_buffer_destroy(p.flush);
    trr_context_destroy(p.ctx);
    return bad;
}
