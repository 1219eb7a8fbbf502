/* The benchmark table of docs/ops.md (Benchmarks): which cases each benchmark runs (quick, full or a list) and how a time becomes
 * its figure. */
#include "bench.h"

#include "number.h"
#include "op_table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const trr_bench_def g_defs[TRR_BENCH_COUNT] = {
    {TRR_BENCH_ADD, "add_f32", "add f32 (GB/s = 12n/t)", "GB/s", "n", 0, TRR_OP_ADD, 0},
    {TRR_BENCH_GELU, "gelu_f32", "gelu f32 (GB/s = 8n/t)", "GB/s", "n", 0, TRR_OP_GELU, 0},
    {TRR_BENCH_SOFTMAX, "softmax_f32", "softmax f32, M = 4096 (GB/s = 8MN/t)", "GB/s", "N", 0, TRR_OP_SOFTMAX, 0},
    {TRR_BENCH_ROW_SUM, "row_sum_f32", "row_sum f32, M = 4096 (GB/s = 4MN/t)", "GB/s", "N", 0, TRR_OP_ROW_SUM, 1},
    {TRR_BENCH_MATMUL_F16, "matmul_f16", "matmul f16 -> f16 (TFLOPS = 2MNK/t)", "TFLOPS", "M=N=K", 1, TRR_OP_MATMUL, 0},
    {TRR_BENCH_MATMUL_F16_RELU, "matmul_f16_relu", "matmul f16 -> f16 + ReLU (TFLOPS = 2MNK/t)", "TFLOPS",
     "M=N=K", 1, TRR_OP_MATMUL, 0},
    {TRR_BENCH_MATMUL_F32, "matmul_f32", "matmul f32, no TF32 (TFLOPS = 2MNK/t)", "TFLOPS", "M=N=K", 1,
     TRR_OP_MATMUL, 0},
    {TRR_BENCH_RGB_TO_GREY, "rgb_to_grey", "rgb_to_grey u8 -> u8 (GB/s = 4HW/t)", "GB/s", "H", 0,
     TRR_OP_RGB_TO_GREY, 0},
    {TRR_BENCH_SILU, "silu_f32", "silu f32 (GB/s = 8n/t)", "GB/s", "n", 0, TRR_OP_SILU, 0},
    {TRR_BENCH_BMM_F16, "bmm_f16", "batched matmul f16 -> f16 (TFLOPS = 2BMNK/t)", "TFLOPS", "BxMxNxK", 1,
     TRR_OP_MATMUL, 0},
    {TRR_BENCH_MATMUL_BF16, "matmul_bf16", "matmul bf16 -> bf16 (TFLOPS = 2MNK/t)", "TFLOPS", "M=N=K", 1, TRR_OP_MATMUL, 0},
    {TRR_BENCH_BMM_BF16, "bmm_bf16", "batched matmul bf16 -> bf16 (TFLOPS = 2BMNK/t)", "TFLOPS", "BxMxNxK", 1,
     TRR_OP_MATMUL, 0},
    {TRR_BENCH_RMS_NORM_F32, "rms_norm_f32", "rms_norm f32, M = 4096 (GB/s = (8MN + 8N)/t)", "GB/s", "N", 0,
     TRR_OP_RMS_NORM, 0},
    {TRR_BENCH_RMS_NORM_F16, "rms_norm_f16", "rms_norm f16, M = 4096 (GB/s = (4MN + 4N)/t)", "GB/s", "N", 0,
     TRR_OP_RMS_NORM, 0},
    {TRR_BENCH_RMS_NORM_BF16, "rms_norm_bf16", "rms_norm bf16, M = 4096 (GB/s = (4MN + 4N)/t)", "GB/s", "N", 0,
     TRR_OP_RMS_NORM, 0},
    {TRR_BENCH_LAYER_NORM_F32, "layer_norm_f32", "layer_norm f32, M = 4096 (GB/s = (8MN + 12N)/t)", "GB/s", "N", 0,
     TRR_OP_LAYER_NORM, 0},
    {TRR_BENCH_LAYER_NORM_F16, "layer_norm_f16", "layer_norm f16, M = 4096 (GB/s = (4MN + 6N)/t)", "GB/s", "N", 0,
     TRR_OP_LAYER_NORM, 0},
    {TRR_BENCH_LAYER_NORM_BF16, "layer_norm_bf16", "layer_norm bf16, M = 4096 (GB/s = (4MN + 6N)/t)", "GB/s", "N",
     0, TRR_OP_LAYER_NORM, 0},
    {TRR_BENCH_ATTENTION_F16, "attention_f16", "attention f16, B·S = 16384, Hq·D = 2048 (TFLOPS = 4BHS²D/t, causal /2)",
     "TFLOPS", "BxHxSxD", 1, TRR_OP_ATTENTION, 0},
    {TRR_BENCH_ATTENTION_BF16, "attention_bf16", "attention bf16, B·S = 16384, Hq·D = 2048 (TFLOPS = 4BHS²D/t, causal /2)",
     "TFLOPS", "BxHxSxD", 1, TRR_OP_ATTENTION, 0},
    {TRR_BENCH_ATTENTION_DECODE_F16, "attention_decode_f16", "attention decode f16, B = 32, Hq = 32, Hkv = 8, D = 128 "
     "(GB/s = 2·B·Hkv·Skv·D·2/t)", "GB/s", "BxHqxHkvxSkvxD", 0, TRR_OP_ATTENTION, 1},
    {TRR_BENCH_ATTENTION_DECODE_BF16, "attention_decode_bf16", "attention decode bf16, B = 32, Hq = 32, Hkv = 8, D = 128 "
     "(GB/s = 2·B·Hkv·Skv·D·2/t)", "GB/s", "BxHqxHkvxSkvxD", 0, TRR_OP_ATTENTION, 1},
};

#define ROWS_M 4096 /* softmax, row_sum and the row norms: M is fixed by docs/ops.md */

/* ---- attention (docs/ops.md, Benchmarks) ---- */

static int attention_bench(trr_bench_id id) { return id >= TRR_BENCH_ATTENTION_F16 && id <= TRR_BENCH_ATTENTION_DECODE_BF16; }
static int attention_decode(trr_bench_id id) {
    return id == TRR_BENCH_ATTENTION_DECODE_F16 || id == TRR_BENCH_ATTENTION_DECODE_BF16;
}

static trr_case attention_case(trr_bench_id id, int64_t b, int64_t hq, int64_t hkv, int64_t sq, int64_t skv, int64_t d,
                               int causal) {
    const trr_dtype dt = id == TRR_BENCH_ATTENTION_F16 || id == TRR_BENCH_ATTENTION_DECODE_F16 ? TRR_F16 : TRR_BF16;
    trr_case c = {.op = TRR_OP_ATTENTION, .in_dtype = dt, .out_dtype = dt, .layout = TRR_LAYOUT_PACKED};
    c.attn.b = b, c.attn.hq = hq, c.attn.hkv = hkv, c.attn.sq = sq, c.attn.skv = skv, c.attn.d = d;
    c.rows = sq, c.cols = d;
    if (causal) trr_op_params_set(&c.params, "causal", 1.0);
    return c;
}

/* The row norms' benchmarks: their dtype (in and out), or -1 for any other benchmark. */
static int norm_dtype(trr_bench_id id) {
    switch (id) {
    case TRR_BENCH_RMS_NORM_F32:
    case TRR_BENCH_LAYER_NORM_F32: return TRR_F32;
    case TRR_BENCH_RMS_NORM_F16:
    case TRR_BENCH_LAYER_NORM_F16: return TRR_F16;
    case TRR_BENCH_RMS_NORM_BF16:
    case TRR_BENCH_LAYER_NORM_BF16: return TRR_BF16;
    default: return -1;
    }
}

int trr_bench_above_ceiling_suspect(trr_bench_id id, double figure, double copy_gbs) {
    const trr_bench_def *d = trr_bench_get(id);
    return d && !d->compute_bound && !d->reads_only && copy_gbs > 0 && figure > copy_gbs;
}

const trr_bench_def *trr_bench_get(trr_bench_id id) {
    return (unsigned)id < TRR_BENCH_COUNT ? &g_defs[id] : NULL;
}

static trr_op op_of(trr_bench_id id) { return g_defs[id].op; }

unsigned trr_bench_mask_for(const char *name) {
    unsigned mask = 0;
    trr_op op;
    int is_op = trr_op_from_name(name, &op) == TRR_OK;
    for (int i = 0; i < TRR_BENCH_COUNT; i++)
        if (!strcmp(name, g_defs[i].name) || (is_op && op_of((trr_bench_id)i) == op)) mask |= 1u << i;
    return mask;
}

int trr_bench_find(const char *name) {
    unsigned mask = trr_bench_mask_for(name);
    for (int i = 0; i < TRR_BENCH_COUNT; i++)
        if (mask & (1u << i)) return i;
    return -1;
}

/* ---- cases ---- */

static trr_case make_case(trr_bench_id id, int64_t a, int64_t b, int64_t c3) {
    trr_case c = {.op = op_of(id), .in_dtype = TRR_F32, .out_dtype = TRR_F32, .layout = TRR_LAYOUT_PACKED};
    if (norm_dtype(id) >= 0) { /* eps at the op's default */
        c.in_dtype = c.out_dtype = (trr_dtype)norm_dtype(id);
        c.rows = ROWS_M, c.cols = a;
        return c;
    }
    switch (id) {
    case TRR_BENCH_ADD:
    case TRR_BENCH_GELU:
    case TRR_BENCH_SILU: c.rows = 1, c.cols = a; break;
    case TRR_BENCH_SOFTMAX:
    case TRR_BENCH_ROW_SUM: c.rows = ROWS_M, c.cols = a; break;
    case TRR_BENCH_RGB_TO_GREY:
        c.in_dtype = c.out_dtype = TRR_U8;
        c.rows = a;
        c.cols = b ? b : (int64_t)llround((double)a * 1600.0 / 1066.0);
        break;
    case TRR_BENCH_MATMUL_F16:
    case TRR_BENCH_MATMUL_F16_RELU:
    case TRR_BENCH_MATMUL_BF16:
        c.in_dtype = c.out_dtype = id == TRR_BENCH_MATMUL_BF16 ? TRR_BF16 : TRR_F16;
        /* fall through */
    default:
        c.m = a, c.n = b ? b : a, c.k = c3 ? c3 : a;
        c.epilogue = id == TRR_BENCH_MATMUL_F16_RELU ? TRR_EPI_RELU : TRR_EPI_NONE;
        break;
    }
    return c;
}

/* A batched matmul: batch products of M x K by K x N, packed (batch strides of one whole matrix). */
static trr_case make_bmm(trr_bench_id id, int64_t batch, int64_t m, int64_t n, int64_t k) {
    trr_case c = make_case(id, m, n, k);
    c.in_dtype = c.out_dtype = id == TRR_BENCH_BMM_BF16 ? TRR_BF16 : TRR_F16;
    c.batch = batch;
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

/* docs/ops.md, Benchmarks: many small products, and fewer wide ones with a short K. */
static trr_status bmm_sizes(trr_bench_id id, case_vec *v) {
    TRR_TRY(push(v, make_bmm(id, 512, 128, 128, 128)));
    return push(v, make_bmm(id, 64, 1024, 1024, 128));
}

/* docs/ops.md, Benchmarks: the row norms at the hidden sizes of common models, quick and full alike. */
static trr_status norm_sizes(trr_bench_id id, case_vec *v) {
    static const int64_t n[] = {1024, 4096, 8192, 16384};
    for (size_t i = 0; i < sizeof n / sizeof n[0]; i++) TRR_TRY(push(v, make_case(id, n[i], 0, 0)));
    return TRR_OK;
}

/* Prefill: B·S = 16384 and Hq·D = 2048 at D = 64 and 128, S = Sq = Skv up to max_s, causal off and on. Decode:
 * Sq = 1, B = 32, Hq = 32, Hkv = 8, D = 128, Skv = 4096 and 32768. */
static trr_status attention_sizes(trr_bench_id id, int64_t max_s, case_vec *v) {
    if (attention_decode(id)) {
        TRR_TRY(push(v, attention_case(id, 32, 32, 8, 1, 4096, 128, 0)));
        return push(v, attention_case(id, 32, 32, 8, 1, 32768, 128, 0));
    }
    static const int64_t dims[] = {64, 128};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        for (int64_t s = 1024; s <= max_s; s *= 4)
            for (int causal = 0; causal < 2; causal++)
                TRR_TRY(push(v, attention_case(id, 16384 / s, 2048 / dims[i], 2048 / dims[i], s, s, dims[i], causal)));
    return TRR_OK;
}

static trr_status full_sizes(trr_bench_id id, case_vec *v) {
    if (norm_dtype(id) >= 0) return norm_sizes(id, v);
    if (attention_bench(id)) return attention_sizes(id, 16384, v);
    switch (id) {
    case TRR_BENCH_BMM_F16:
    case TRR_BENCH_BMM_BF16: return bmm_sizes(id, v);
    case TRR_BENCH_ADD:
    case TRR_BENCH_GELU:
    case TRR_BENCH_SILU:
        for (int e = 12; e <= (id == TRR_BENCH_ADD ? 27 : 28); e++) TRR_TRY(push(v, make_case(id, 1ll << e, 0, 0)));
        return TRR_OK;
    case TRR_BENCH_SOFTMAX:
        for (int64_t n = 256; n <= 12672; n += 128) TRR_TRY(push(v, make_case(id, n, 0, 0)));
        return TRR_OK;
    case TRR_BENCH_ROW_SUM:
        for (int64_t n = 256; n <= 65536; n *= 2) TRR_TRY(push(v, make_case(id, n, 0, 0)));
        return TRR_OK;
    case TRR_BENCH_RGB_TO_GREY:
        TRR_TRY(push(v, make_case(id, 1066, 1600, 0)));
        return push(v, make_case(id, 4320, 7680, 0));
    case TRR_BENCH_MATMUL_F16_RELU:
        /* the epilogue costs nothing at large sizes; a few points show that */
        for (int64_t s = 1024; s <= 8192; s *= 2) TRR_TRY(push(v, make_case(id, s, 0, 0)));
        return TRR_OK;
    default:
        for (int64_t s = 256; s <= 4096; s += 128) TRR_TRY(push(v, make_case(id, s, 0, 0)));
        TRR_TRY(push(v, make_case(id, 6144, 0, 0)));
        TRR_TRY(push(v, make_case(id, 8192, 0, 0)));
        if (id == TRR_BENCH_MATMUL_F32) TRR_TRY(push(v, make_case(id, 8192, 4096, 6144)));
        return TRR_OK;
    }
}

/* A few sizes per benchmark, including the ones docs/performance.md compares, so a GPU run takes a few
 * minutes. */
static trr_status quick_sizes(trr_bench_id id, case_vec *v) {
    if (norm_dtype(id) >= 0) return norm_sizes(id, v);
    if (attention_bench(id)) return attention_sizes(id, 4096, v);
    switch (id) {
    case TRR_BENCH_ADD:
        TRR_TRY(push(v, make_case(id, 1ll << 20, 0, 0)));
        TRR_TRY(push(v, make_case(id, 1ll << 24, 0, 0)));
        return push(v, make_case(id, 1ll << 27, 0, 0));
    case TRR_BENCH_GELU:
    case TRR_BENCH_SILU: return push(v, make_case(id, 1ll << 24, 0, 0));
    case TRR_BENCH_SOFTMAX: {
        static const int64_t n[] = {256, 1024, 4096, 12288};
        for (size_t i = 0; i < sizeof n / sizeof n[0]; i++) TRR_TRY(push(v, make_case(id, n[i], 0, 0)));
        return TRR_OK;
    }
    case TRR_BENCH_ROW_SUM: return push(v, make_case(id, 8192, 0, 0));
    case TRR_BENCH_RGB_TO_GREY: return full_sizes(id, v);
    case TRR_BENCH_BMM_F16:
    case TRR_BENCH_BMM_BF16: return bmm_sizes(id, v);
    case TRR_BENCH_MATMUL_F16_RELU: return push(v, make_case(id, 4096, 0, 0));
    default:
        /* 1024 first: on a slow device its time predicts whether 4096 fits the budget */
        TRR_TRY(push(v, make_case(id, 1024, 0, 0)));
        return push(v, make_case(id, 4096, 0, 0));
    }
}

/* "16777216", "2^24", "1<<24" (number.h), positive */
static int parse_size(const char *s, const char **end, int64_t *out) {
    return trr_parse_number(s, end, out) && *out > 0;
}

/* attention's entries: BxHxSxD (Hkv = H, Skv = S), with a trailing c for causal; decode: BxHqxHkvxSkvxD */
static trr_status attention_list(trr_bench_id id, const char *list, case_vec *v) {
    const char *p = list;
    const int want = attention_decode(id) ? 5 : 4;
    while (*p) {
        int64_t d[5] = {0};
        int nd = 0, causal = 0;
        const char *e;
        while (nd < want && parse_size(p, &e, &d[nd])) {
            nd++;
            p = e;
            if (nd < want && (*p == 'x' || *p == 'X')) p++;
            else break;
        }
        if (!attention_decode(id) && *p == 'c') causal = 1, p++;
        if (nd != want || (*p && *p != ',') || (want == 5 && d[1] % d[2]))
            return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "bench %s: bad size list entry at \"%s\" (give %s%s)",
                             g_defs[id].name, p, g_defs[id].size_label, want == 4 ? ", c after it for causal" : "");
        TRR_TRY(push(v, want == 5 ? attention_case(id, d[0], d[1], d[2], 1, d[3], d[4], 0)
                                  : attention_case(id, d[0], d[1], d[1], d[2], d[2], d[3], causal)));
        if (*p == ',') p++;
    }
    return TRR_OK;
}

static trr_status list_sizes(trr_bench_id id, const char *list, case_vec *v) {
    if (!list || !*list) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "bench: empty size list");
    if (attention_bench(id)) return attention_list(id, list, v);
    const char *p = list;
    while (*p) {
        int64_t d[4] = {0, 0, 0, 0};
        int nd = 0, bad = 0;
        const char *e;
        while (nd < 4) {
            if (!parse_size(p, &e, &d[nd])) {
                bad = 1;
                break;
            }
            nd++;
            p = e;
            if (*p != 'x' && *p != 'X') break;
            p++;
        }
        const int bmm = id == TRR_BENCH_BMM_F16 || id == TRR_BENCH_BMM_BF16;
        if (bad || nd == 0 || (*p && *p != ',') || (nd > 1 && !g_defs[id].compute_bound && id != TRR_BENCH_RGB_TO_GREY) ||
            (nd == 3 && id == TRR_BENCH_RGB_TO_GREY) || (bmm != (nd == 4)))
            return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "bench %s: bad size list entry at \"%s\" (give %s%s)",
                             g_defs[id].name, p, g_defs[id].size_label,
                             bmm ? ", e.g. 512x128x128x128" :
                             g_defs[id].op == TRR_OP_MATMUL ? " or MxNxK" :
                             id == TRR_BENCH_RGB_TO_GREY ? " or HxW" : "");
        if (nd == 2 && id != TRR_BENCH_RGB_TO_GREY) d[2] = d[0]; /* MxN: K = M */
        TRR_TRY(push(v, bmm ? make_bmm(id, d[0], d[1], d[2], d[3]) : make_case(id, d[0], d[1], d[2])));
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
    if (attention_bench(id)) { /* the batch, then the heads (keeping the GQA ratio where it can), then the sequence */
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
    if (id == TRR_BENCH_RGB_TO_GREY) c->rows /= 2;
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
    if ((unsigned)id >= TRR_BENCH_COUNT || !out_cases || !out_count || !capped || !capped_cap)
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
    if ((unsigned)id >= TRR_BENCH_COUNT || !out_cases || !out_count) return TRR_ERR_INVALID_ARGUMENT;
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
    if (d->shape == TRR_SHAPE_MATMUL)
        return 2.0 * (double)trr_case_batch(c) * (double)c->m * (double)c->n * (double)c->k;
    if (d->shape == TRR_SHAPE_ATTENTION) {
        if (c->attn.sq > 1) return trr_case_flops(c);
        size_t e = 0;
        trr_dtype_size(c->in_dtype, &e);
        return 2.0 * (double)c->attn.b * (double)c->attn.hkv * (double)c->attn.skv * (double)c->attn.d * (double)e;
    }
    /* x and y [M,N], w and b [N]: every operand once, as the op table lays them out */
    if (d->shape == TRR_SHAPE_ROW_NORM) return trr_case_bytes(c);
    size_t in = 0, out = 0;
    trr_dtype_size(c->in_dtype, &in);
    trr_dtype_size(c->out_dtype, &out);
    const double n = (double)c->rows * (double)c->cols;
    /* every input read once (rgb_to_grey's image has three planes), the output written once; row_sum's output,
     * one value per row, is not counted */
    double bytes = n * (double)in * (double)d->operand[0].planes * (double)d->n_inputs;
    if (d->shape != TRR_SHAPE_ROW_REDUCE) bytes += n * (double)out;
    return bytes;
}

int trr_bench_case_compute_bound(const trr_case *c) {
    const trr_op_desc *d = trr_op_desc_get(c->op);
    return d && (d->shape == TRR_SHAPE_MATMUL || (d->shape == TRR_SHAPE_ATTENTION && c->attn.sq > 1));
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
    if (attention_bench(id)) {
        if (attention_decode(id))
            snprintf(out, cap, "B%lld H%lld/%lld Skv%lld D%lld", (long long)c->attn.b, (long long)c->attn.hq,
                     (long long)c->attn.hkv, (long long)c->attn.skv, (long long)c->attn.d);
        else
            snprintf(out, cap, "B%lld H%lld S%lld D%lld%s", (long long)c->attn.b, (long long)c->attn.hq,
                     (long long)c->attn.sq, (long long)c->attn.d, trr_case_causal(c) ? " causal" : "");
        return;
    }
    if (norm_dtype(id) >= 0) {
        snprintf(out, cap, "%lldx%lld", (long long)c->rows, (long long)c->cols);
        return;
    }
    switch (id) {
    case TRR_BENCH_ADD:
    case TRR_BENCH_GELU:
    case TRR_BENCH_SILU: {
        int e = 0;
        while (e < 62 && (1ll << e) < c->cols) e++;
        if ((1ll << e) == c->cols) snprintf(out, cap, "n=2^%d", e);
        else snprintf(out, cap, "n=%lld", (long long)c->cols);
        return;
    }
    case TRR_BENCH_SOFTMAX:
    case TRR_BENCH_ROW_SUM: snprintf(out, cap, "%lldx%lld", (long long)c->rows, (long long)c->cols); return;
    case TRR_BENCH_RGB_TO_GREY: snprintf(out, cap, "3x%lldx%lld", (long long)c->rows, (long long)c->cols); return;
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
    if (attention_bench(id)) return (double)c->attn.skv;
    if (norm_dtype(id) >= 0) return (double)c->cols;
    switch (id) {
    case TRR_BENCH_ADD:
    case TRR_BENCH_GELU:
    case TRR_BENCH_SILU:
    case TRR_BENCH_SOFTMAX:
    case TRR_BENCH_ROW_SUM: return (double)c->cols;
    case TRR_BENCH_RGB_TO_GREY: return (double)c->rows * (double)c->cols;
    default: return cbrt((double)c->m * (double)c->n * (double)c->k);
    }
}
