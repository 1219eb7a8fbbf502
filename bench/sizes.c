/* The benchmarks of docs/ops.md (Benchmarks), as the op definitions declare them (trr_op_desc.benches in
 * core/op_table.c): which cases each runs (quick, full or a list) and how a time becomes its figure. Nothing here
 * names an op: a benchmark's sizes are read by its sizing (trr_bench_sizing), its work by its op's rule
 * (trr_work_rule). */
#include "bench.h"

#include "number.h"
#include "op_table.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The benchmarks, numbered in op order and, within an op, in its definition's order. */
static trr_bench_def g_defs[TRR_BENCH_MAX];
static int g_count;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *size_label_of(trr_bench_sizing s) {
    switch (s) {
    case TRR_SIZING_VECTOR: return "n";
    case TRR_SIZING_ROWS: return "N";
    case TRR_SIZING_IMAGE: return "H";
    case TRR_SIZING_CUBE: return "M=N=K";
    case TRR_SIZING_ATTENTION: return "BxHxSxD";
    case TRR_SIZING_DECODE: return "Skv";
    default: return "BxMxNxK";
    }
}

/* Whether a benchmark's figure is TFLOPS: its op counts flops, or attention's prefill (decode counts bytes). */
static int flops_of(const trr_op_desc *d, trr_bench_sizing s) {
    return d->bench_work == TRR_WORK_FLOPS || (d->bench_work == TRR_WORK_ATTENTION && s == TRR_SIZING_ATTENTION);
}

/* The benchmarks of ops first .. end - 1, appended (ids already given keep their benchmarks). */
static void collect(int first, int end) {
    for (int op = first; op < end; op++) {
        const trr_op_desc *d = trr_op_desc_get((trr_op)op);
        for (int i = 0; d && i < d->n_benches && g_count < TRR_BENCH_MAX; i++) {
            const trr_op_bench *b = &d->benches[i];
            trr_bench_def *def = &g_defs[g_count];
            def->id = g_count;
            def->name = b->name;
            def->title = b->title;
            def->compute_bound = flops_of(d, b->sizing);
            def->unit = def->compute_bound ? "TFLOPS" : "GB/s";
            def->size_label = size_label_of(b->sizing);
            def->op = (trr_op)op;
            def->reads_only = b->reads_only;
            def->sizing = b->sizing;
            def->row = b;
            g_count++;
        }
    }
}

/* ops collected so far: the built-ins, then the user ops defined by the time of a later call (--ops-lib) */
static int g_ops;

int trr_bench_count(void) {
    int n_ops = TRR_OP_COUNT;
    trr_op_count(&n_ops);
    pthread_mutex_lock(&g_lock);
    if (n_ops > g_ops) collect(g_ops, n_ops), g_ops = n_ops;
    const int count = g_count;
    pthread_mutex_unlock(&g_lock);
    return count;
}

int trr_bench_above_ceiling_suspect(trr_bench_id id, double figure, double copy_gbs) {
    const trr_bench_def *d = trr_bench_get(id);
    return d && !d->compute_bound && !d->reads_only && copy_gbs > 0 && figure > copy_gbs;
}

const trr_bench_def *trr_bench_get(trr_bench_id id) {
    return id >= 0 && id < trr_bench_count() ? &g_defs[id] : NULL;
}

static const trr_op_bench *row_of(trr_bench_id id) { return g_defs[id].row; }

uint64_t trr_bench_mask_for(const char *name) {
    uint64_t mask = 0;
    trr_op op;
    int is_op = trr_op_from_name(name, &op) == TRR_OK;
    for (int i = 0; i < trr_bench_count(); i++)
        if (!strcmp(name, g_defs[i].name) || (is_op && g_defs[i].op == op)) mask |= (uint64_t)1 << i;
    return mask;
}

int trr_bench_find(const char *name) {
    uint64_t mask = trr_bench_mask_for(name);
    for (int i = 0; i < trr_bench_count(); i++)
        if (mask & ((uint64_t)1 << i)) return i;
    return -1;
}

int trr_bench_predicts(trr_bench_id earlier, trr_bench_id id) {
    const trr_bench_def *a = trr_bench_get(earlier), *b = trr_bench_get(id);
    return a && b && earlier < id && a->op == b->op && a->sizing == b->sizing && a->row->in == b->row->in &&
           a->row->out == b->row->out;
}

/* ---- cases ---- */

/* attention's case: B, Hq, Hkv, Sq, Skv, D, causal */
static void attention_case(trr_case *c, int64_t b, int64_t hq, int64_t hkv, int64_t sq, int64_t skv, int64_t d,
                           int causal) {
    c->attn.b = b, c->attn.hq = hq, c->attn.hkv = hkv, c->attn.sq = sq, c->attn.skv = skv, c->attn.d = d;
    c->rows = sq, c->cols = d;
    if (causal) trr_op_params_set(&c->params, "causal", 1.0);
}

/* One case of a benchmark from a size as its size list names it (a, b, c, d, e; unused fields 0). */
static trr_case make_case(trr_bench_id id, int64_t a, int64_t b, int64_t c3, int64_t d4, int64_t e5) {
    const trr_op_bench *row = row_of(id);
    trr_case c = {.op = g_defs[id].op, .in_dtype = row->in, .out_dtype = row->out, .layout = TRR_LAYOUT_PACKED};
    switch (row->sizing) { /* the op's parameters at their defaults */
    case TRR_SIZING_ATTENTION: attention_case(&c, a, b, b, c3, c3, d4, e5 != 0); break;
    case TRR_SIZING_DECODE: /* Skv alone at docs/ops.md's decode sizes, or BxHqxHkvxSkvxD */
        if (b) attention_case(&c, a, b, c3, 1, d4, e5, 0);
        else attention_case(&c, 32, 32, 8, 1, a, 128, 0);
        break;
    case TRR_SIZING_VECTOR: c.rows = 1, c.cols = a; break;
    case TRR_SIZING_ROWS: c.rows = TRR_BENCH_ROWS_M, c.cols = a; break;
    case TRR_SIZING_IMAGE:
        c.rows = a;
        c.cols = b ? b : (int64_t)llround((double)a * 1600.0 / 1066.0);
        break;
    case TRR_SIZING_CUBE:
        c.m = a, c.n = b ? b : a, c.k = c3 ? c3 : a;
        c.epilogue = row->epilogue;
        /* 8-bit floats with B stored [N,K]: K-major on both sides, as FP8 tensor cores and cuBLASLt (TN) take them */
        c.trans_b = row->in == TRR_F8E4M3 || row->in == TRR_F8E5M2;
        break;
    case TRR_SIZING_BATCH: /* batch products of M x K by K x N, packed (batch strides of one whole matrix) */
        c.batch = a;
        c.m = b, c.n = c3, c.k = d4;
        c.epilogue = row->epilogue;
        break;
    }
    return c;
}

typedef struct case_vec {
    trr_case *items;
    int count, cap;
} case_vec;

static trr_status push(case_vec *v, trr_case c) {
    if (v->count == v->cap) {
        int cap = v->cap ? 2 * v->cap : 64;
        trr_case *p = realloc(v->items, (size_t)cap * sizeof *p);
        if (!p) return TRR_ERR_OUT_OF_MEMORY;
        v->items = p, v->cap = cap;
    }
    v->items[v->count++] = c;
    return TRR_OK;
}

/* A mode's sizes (trr_bench_sizes): the range, then the listed sizes. */
static trr_status sizes_of(trr_bench_id id, const trr_bench_sizes *z, case_vec *v) {
    if (z->from > 0)
        for (int64_t x = z->from; x <= z->to; x = z->factor > 1 ? x * z->factor : x + (z->step > 0 ? z->step : 1))
            TRR_TRY(push(v, make_case(id, x, 0, 0, 0, 0)));
    for (int i = 0; i < TRR_BENCH_LISTED && z->list[i][0]; i++)
        TRR_TRY(push(v, make_case(id, z->list[i][0], z->list[i][1], z->list[i][2], z->list[i][3], z->list[i][4])));
    return TRR_OK;
}

static trr_status full_sizes(trr_bench_id id, case_vec *v) { return sizes_of(id, &row_of(id)->full, v); }

/* A few sizes per benchmark, including the ones docs/performance.md compares, so a GPU run takes a few
 * minutes. */
static trr_status quick_sizes(trr_bench_id id, case_vec *v) { return sizes_of(id, &row_of(id)->quick, v); }

/* "16777216", "2^24", "1<<24" (number.h), positive */
static int parse_size(const char *s, const char **end, int64_t *out) {
    return trr_parse_number(s, end, out) && *out > 0;
}

static trr_status list_sizes(trr_bench_id id, const char *list, case_vec *v) {
    if (!list || !*list) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "bench: empty size list");
    const trr_bench_sizing sizing = row_of(id)->sizing;
    const char *p = list;
    while (*p) {
        int64_t d[5] = {0, 0, 0, 0, 0};
        int nd = 0, bad = 0;
        const char *e;
        while (nd < 5) {
            if (!parse_size(p, &e, &d[nd])) {
                bad = 1;
                break;
            }
            nd++;
            p = e;
            if (*p != 'x' && *p != 'X') break;
            p++;
        }
        if (sizing == TRR_SIZING_ATTENTION || sizing == TRR_SIZING_DECODE) {
            /* BxHxSxD, c after it for causal; Skv or BxHqxHkvxSkvxD */
            if (sizing == TRR_SIZING_ATTENTION && !bad && *p == 'c') d[4] = 1, p++;
            const int ok = sizing == TRR_SIZING_ATTENTION ? nd == 4 : (nd == 1 || (nd == 5 && d[1] % d[2] == 0));
            if (bad || !ok || (*p && *p != ','))
                return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "bench %s: bad size list entry at \"%s\" (give %s)",
                                 g_defs[id].name, p,
                                 sizing == TRR_SIZING_ATTENTION ? "BxHxSxD, c after it for causal"
                                                                : "Skv, or BxHqxHkvxSkvxD with Hkv dividing Hq");
            TRR_TRY(push(v, make_case(id, d[0], d[1], d[2], d[3], d[4])));
            if (*p == ',') p++;
            continue;
        }
        /* n and N: one number; an image: H or HxW; a product: M, MxN (K = M) or MxNxK; a batch: BxMxNxK */
        const int most = sizing == TRR_SIZING_IMAGE  ? 2
                         : sizing == TRR_SIZING_CUBE  ? 3
                         : sizing == TRR_SIZING_BATCH ? 4
                                                      : 1;
        if (bad || nd == 0 || (*p && *p != ',') || nd > most || (sizing == TRR_SIZING_BATCH && nd != 4))
            return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "bench %s: bad size list entry at \"%s\" (give %s%s)",
                             g_defs[id].name, p, g_defs[id].size_label,
                             sizing == TRR_SIZING_BATCH   ? ", e.g. 512x128x128x128"
                             : sizing == TRR_SIZING_CUBE  ? " or MxNxK"
                             : sizing == TRR_SIZING_IMAGE ? " or HxW"
                                                          : "");
        if (nd == 2 && sizing == TRR_SIZING_CUBE) d[2] = d[0]; /* MxN: K = M */
        TRR_TRY(push(v, make_case(id, d[0], d[1], d[2], d[3], 0)));
        if (*p == ',') p++;
    }
    return TRR_OK;
}

int trr_bench_cpu_quick_fits(const trr_case *c) {
    const double work = trr_bench_case_work(c);
    return trr_bench_case_compute_bound(c) ? work <= TRR_BENCH_CPU_QUICK_MAX_FLOP : work <= TRR_BENCH_CPU_QUICK_MAX_BYTES;
}

/* One step down from a case over the CPU quick caps: half the size along what the benchmark's sizes vary (n; N
 * at the benchmark's fixed M; H and W; M, N and K; a batched matmul's batch first). 0 when it cannot shrink. */
static int shrink(trr_bench_id id, trr_case *c) {
    const trr_bench_sizing sizing = row_of(id)->sizing;
    if (sizing == TRR_SIZING_ATTENTION || sizing == TRR_SIZING_DECODE) {
        /* the batch, then the heads (keeping the GQA ratio while it can), then the sequence */
        if (c->attn.b > 1) return c->attn.b /= 2, 1;
        if (c->attn.hkv > 1) return c->attn.hq /= 2, c->attn.hkv /= 2, 1;
        if (c->attn.hq > 1) return c->attn.hq /= 2, 1;
        if (c->attn.skv < 256) return 0;
        c->attn.skv /= 2;
        if (c->attn.sq > 1) c->attn.sq /= 2, c->rows = c->attn.sq;
        return 1;
    }
    if (trr_bench_case_compute_bound(c)) {
        if (c->batch > 1) {
            c->batch /= 2;
            return 1;
        }
        if (c->m < 32 || c->n < 32 || c->k < 32) return 0;
        c->m /= 2, c->n /= 2, c->k /= 2;
        return 1;
    }
    if (c->cols < 256) return 0;
    c->cols /= 2;
    if (row_of(id)->sizing == TRR_SIZING_IMAGE) c->rows /= 2;
    return 1;
}

static int same_size(const trr_case *a, const trr_case *b) {
    return a->rows == b->rows && a->cols == b->cols && a->m == b->m && a->n == b->n && a->k == b->k &&
           a->batch == b->batch && !memcmp(&a->attn, &b->attn, sizeof a->attn) &&
           trr_case_causal(a) == trr_case_causal(b);
}

/* Quick mode's sizes on a CPU device: each one over the caps halved until it fits (one already in the list is
 * not run twice), and named in note with the size it runs at, so every benchmark still runs and is checked. */
static trr_status cpu_quick_sizes(trr_bench_id id, case_vec *v, char *note, size_t cap) {
    case_vec all = {0};
    trr_status st = quick_sizes(id, &all);
    for (int i = 0; st == TRR_OK && i < all.count; i++) {
        trr_case c = all.items[i];
        while (!trr_bench_cpu_quick_fits(&c) && shrink(id, &c)) {}
        if (!same_size(&c, &all.items[i])) {
            char was[48], now[48];
            trr_bench_size_text(id, &all.items[i], was, sizeof was);
            trr_bench_size_text(id, &c, now, sizeof now);
            const size_t at = strlen(note);
            if (at < cap) snprintf(note + at, cap - at, "%s%s %s as %s", at ? ", " : "", g_defs[id].name, was, now);
        }
        int dup = 0;
        for (int j = 0; j < v->count; j++) dup |= same_size(&c, &v->items[j]);
        if (!dup) st = push(v, c);
    }
    free(all.items);
    return st;
}

trr_status trr_bench_device_cases(trr_bench_id id, trr_bench_sizes_mode mode, const char *list, int is_gpu,
                                  trr_case **out_cases, int *out_count, char *capped, size_t capped_cap) {
    if (mode != TRR_BENCH_SIZES_QUICK || is_gpu) return trr_bench_cases(id, mode, list, out_cases, out_count);
    if (!trr_bench_get(id) || !out_cases || !out_count || !capped || !capped_cap)
        return TRR_ERR_INVALID_ARGUMENT;
    case_vec v = {0};
    trr_status st = cpu_quick_sizes(id, &v, capped, capped_cap);
    if (st != TRR_OK) {
        free(v.items);
        return st;
    }
    *out_cases = v.items;
    *out_count = v.count;
    return TRR_OK;
}

trr_status trr_bench_cases(trr_bench_id id, trr_bench_sizes_mode mode, const char *list, trr_case **out_cases,
                           int *out_count) {
    if (!trr_bench_get(id) || !out_cases || !out_count) return TRR_ERR_INVALID_ARGUMENT;
    case_vec v = {0};
    trr_status st = mode == TRR_BENCH_SIZES_FULL ? full_sizes(id, &v)
                    : mode == TRR_BENCH_SIZES_LIST ? list_sizes(id, list, &v)
                                                   : quick_sizes(id, &v);
    if (st != TRR_OK) {
        free(v.items);
        return st;
    }
    *out_cases = v.items;
    *out_count = v.count;
    return TRR_OK;
}

/* ---- figures ---- */

double trr_bench_case_work(const trr_case *c) {
    const trr_op_desc *d = trr_op_desc_get(c->op);
    if (!d) return 0;
    switch (d->bench_work) {
    case TRR_WORK_FLOPS:
        return (double)d->flops_per_point * (double)trr_case_batch(c) * (double)c->m * (double)c->n * (double)c->k;
    case TRR_WORK_ATTENTION: {
        if (c->attn.sq > 1) return trr_case_flops(c); /* halved when causal */
        size_t e = 0;
        trr_dtype_size(c->in_dtype, &e);
        return 2.0 * (double)c->attn.b * (double)c->attn.hkv * (double)c->attn.skv * (double)c->attn.d * (double)e;
    }
    case TRR_WORK_INPUT_BYTES: return trr_case_bytes(c) - trr_case_output_bytes(c);
    default: return trr_case_bytes(c); /* every operand once, as the op table lays them out */
    }
}

int trr_bench_case_compute_bound(const trr_case *c) {
    const trr_op_desc *d = trr_op_desc_get(c->op);
    return d && (d->bench_work == TRR_WORK_FLOPS || (d->bench_work == TRR_WORK_ATTENTION && c->attn.sq > 1));
}

double trr_bench_case_figure(const trr_case *c, double ms) {
    if (ms <= 0) return 0;
    const double per_s = trr_bench_case_work(c) / (ms * 1e-3);
    return trr_bench_case_compute_bound(c) ? per_s * 1e-12 : per_s * 1e-9;
}

double trr_bench_work(trr_bench_id id, const trr_case *c) {
    (void)id; /* every benchmark counts its case's work */
    return trr_bench_case_work(c);
}

double trr_bench_figure(trr_bench_id id, const trr_case *c, double ms) {
    (void)id;
    return trr_bench_case_figure(c, ms);
}

void trr_bench_size_text(trr_bench_id id, const trr_case *c, char *out, size_t cap) {
    switch (row_of(id)->sizing) {
    case TRR_SIZING_VECTOR: {
        int e = 0;
        while (e < 62 && (1ll << e) < c->cols) e++;
        if ((1ll << e) == c->cols) snprintf(out, cap, "n=2^%d", e);
        else snprintf(out, cap, "n=%lld", (long long)c->cols);
        return;
    }
    case TRR_SIZING_ROWS: snprintf(out, cap, "%lldx%lld", (long long)c->rows, (long long)c->cols); return;
    case TRR_SIZING_IMAGE: snprintf(out, cap, "3x%lldx%lld", (long long)c->rows, (long long)c->cols); return;
    case TRR_SIZING_ATTENTION:
        snprintf(out, cap, "B%lld H%lld S%lld D%lld%s", (long long)c->attn.b, (long long)c->attn.hq,
                 (long long)c->attn.sq, (long long)c->attn.d, trr_case_causal(c) ? " causal" : "");
        return;
    case TRR_SIZING_DECODE:
        snprintf(out, cap, "B%lld H%lld/%lld Skv%lld D%lld", (long long)c->attn.b, (long long)c->attn.hq,
                 (long long)c->attn.hkv, (long long)c->attn.skv, (long long)c->attn.d);
        return;
    default:
        if (c->batch > 0 && c->m == c->n && c->n == c->k)
            snprintf(out, cap, "%lldx%lld^3", (long long)c->batch, (long long)c->m);
        else if (c->batch > 0)
            snprintf(out, cap, "%lldx%lldx%lldx%lld", (long long)c->batch, (long long)c->m, (long long)c->n,
                     (long long)c->k);
        else if (c->m == c->n && c->n == c->k) snprintf(out, cap, "%lld^3", (long long)c->m);
        else snprintf(out, cap, "%lldx%lldx%lld", (long long)c->m, (long long)c->n, (long long)c->k);
        return;
    }
}

double trr_bench_size_x(trr_bench_id id, const trr_case *c) {
    switch (row_of(id)->sizing) {
    case TRR_SIZING_VECTOR:
    case TRR_SIZING_ROWS: return (double)c->cols;
    case TRR_SIZING_IMAGE: return (double)c->rows * (double)c->cols;
    case TRR_SIZING_ATTENTION:
    case TRR_SIZING_DECODE: return (double)c->attn.skv;
    default: return cbrt((double)c->m * (double)c->n * (double)c->k);
    }
}
