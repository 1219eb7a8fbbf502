/* One benchmark case laid out on the device: packed operands at offset 0 (the layout a caller who wants speed
 * uses), random inputs kept on the host for the check. */
#include "bench.h"

#include "random.h"

#include <stdlib.h>
#include <string.h>

static void fill_random(trr_bench_operand *o, trr_op op, uint64_t *rng) {
    if (o->dtype == TRR_U8) {
        uint8_t *p = o->host;
        for (int64_t i = 0; i < o->count; i++) p[i] = trr_rng_byte(rng);
        return;
    }
    if (o->dtype == TRR_F32) {
        float *p = o->host;
        for (int64_t i = 0; i < o->count; i++) p[i] = trr_rng_input(rng, op);
        return;
    }
    float chunk[4096];
    uint16_t *h = o->host;
    for (int64_t i = 0; i < o->count; i += 4096) {
        int64_t n = o->count - i < 4096 ? o->count - i : 4096;
        for (int64_t j = 0; j < n; j++) chunk[j] = trr_rng_input(rng, op);
        trr_f32_to_f16(chunk, h + i, (size_t)n);
    }
}

static int64_t in_count(const trr_case *c, int which) {
    switch (c->op) {
    case TRR_OP_MATMUL: return which == 0 ? c->m * c->k : c->k * c->n;
    case TRR_OP_RGB_TO_GREY: return 3 * c->rows * c->cols;
    default: return c->rows * c->cols;
    }
}

static int64_t out_count(const trr_case *c) {
    if (c->op == TRR_OP_MATMUL) return c->m * c->n;
    if (c->op == TRR_OP_ROW_SUM) return c->rows;
    return c->rows * c->cols;
}

static int has_y(const trr_case *c) { return c->op == TRR_OP_ADD || c->op == TRR_OP_MATMUL; }

double trr_bench_case_bytes(const trr_case *c) {
    size_t ei = 1, eo = 1;
    trr_dtype_size(c->in_dtype, &ei);
    trr_dtype_size(c->out_dtype, &eo);
    double b = (double)in_count(c, 0) * (double)ei + (double)out_count(c) * (double)eo;
    if (has_y(c)) b += (double)in_count(c, 1) * (double)ei;
    return b;
}

static trr_status operand_make(trr_context *ctx, trr_bench_operand *o, trr_dtype dt, int64_t count, int input) {
    size_t es = 1;
    TRR_TRY(trr_dtype_size(dt, &es));
    o->dtype = dt;
    o->count = count;
    o->bytes = (size_t)count * es;
    if (input) {
        o->host = malloc(o->bytes ? o->bytes : 1);
        if (!o->host) return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "bench: %zu bytes of host memory", o->bytes);
    }
    return trr_buffer_create(ctx, o->bytes ? o->bytes : 1, &o->buf);
}

static trr_status make_tensors(trr_bench_setup *s) {
    const trr_case *c = &s->tcase;
    switch (c->op) {
    case TRR_OP_MATMUL: {
        trr_tensor a, b;
        TRR_TRY(trr_tensor_2d(s->x.buf, 0, c->in_dtype, c->trans_a ? c->k : c->m, c->trans_a ? c->m : c->k, 0, &a));
        TRR_TRY(trr_tensor_2d(s->y.buf, 0, c->in_dtype, c->trans_b ? c->n : c->k, c->trans_b ? c->k : c->n, 0, &b));
        s->tx = a, s->ty = b;
        if (c->trans_a) TRR_TRY(trr_tensor_transpose(&a, &s->tx));
        if (c->trans_b) TRR_TRY(trr_tensor_transpose(&b, &s->ty));
        return trr_tensor_2d(s->z.buf, 0, c->out_dtype, c->m, c->n, 0, &s->tz);
    }
    case TRR_OP_RGB_TO_GREY: {
        trr_tensor t = {.buffer = s->x.buf, .offset = 0, .dtype = TRR_U8, .ndim = 3,
                        .shape = {3, c->rows, c->cols}, .strides = {c->rows * c->cols, c->cols, 1}};
        s->tx = t;
        return trr_tensor_2d(s->z.buf, 0, c->out_dtype, c->rows, c->cols, 0, &s->tz);
    }
    case TRR_OP_SOFTMAX:
        TRR_TRY(trr_tensor_2d(s->x.buf, 0, c->in_dtype, c->rows, c->cols, 0, &s->tx));
        return trr_tensor_2d(s->z.buf, 0, c->out_dtype, c->rows, c->cols, 0, &s->tz);
    case TRR_OP_ROW_SUM:
        TRR_TRY(trr_tensor_2d(s->x.buf, 0, c->in_dtype, c->rows, c->cols, 0, &s->tx));
        return trr_tensor_1d(s->z.buf, 0, c->out_dtype, c->rows, &s->tz);
    default:
        /* element-wise cases are flat vectors: the fast path every backend has */
        TRR_TRY(trr_tensor_1d(s->x.buf, 0, c->in_dtype, c->rows * c->cols, &s->tx));
        if (s->has_y) TRR_TRY(trr_tensor_1d(s->y.buf, 0, c->in_dtype, c->rows * c->cols, &s->ty));
        return trr_tensor_1d(s->z.buf, 0, c->out_dtype, c->rows * c->cols, &s->tz);
    }
}

trr_status trr_bench_setup_create(trr_context *ctx, const trr_case *c, uint64_t seed, trr_bench_setup *out) {
    if (!ctx || !c || !out) return TRR_ERR_INVALID_ARGUMENT;
    trr_bench_setup s = {.tcase = *c, .has_y = has_y(c)};
    uint64_t rng = seed ^ 0x5EED5EED12345678ull;
    trr_status st = operand_make(ctx, &s.x, c->in_dtype, in_count(c, 0), 1);
    if (st == TRR_OK && s.has_y) st = operand_make(ctx, &s.y, c->in_dtype, in_count(c, 1), 1);
    if (st == TRR_OK) st = operand_make(ctx, &s.z, c->out_dtype, out_count(c), 0);
    if (st == TRR_OK) {
        fill_random(&s.x, c->op, &rng);
        st = trr_buffer_write(ctx, s.x.buf, 0, s.x.host, s.x.bytes);
    }
    if (st == TRR_OK && s.has_y) {
        fill_random(&s.y, c->op, &rng);
        st = trr_buffer_write(ctx, s.y.buf, 0, s.y.host, s.y.bytes);
    }
    if (st == TRR_OK) st = make_tensors(&s);
    if (st == TRR_OK) st = trr_synchronize(ctx);
    if (st != TRR_OK) {
        trr_bench_setup_destroy(&s);
        return st;
    }
    *out = s;
    return TRR_OK;
}

static void operand_free(trr_bench_operand *o) {
    if (o->buf) trr_buffer_destroy(o->buf);
    free(o->host);
    memset(o, 0, sizeof *o);
}

void trr_bench_setup_destroy(trr_bench_setup *s) {
    if (!s) return;
    operand_free(&s->x);
    operand_free(&s->y);
    operand_free(&s->z);
}

trr_status trr_bench_setup_call(trr_context *ctx, const trr_bench_setup *s) {
    const trr_case *c = &s->tcase;
    switch (c->op) {
    case TRR_OP_COPY: return trr_copy(ctx, &s->tx, &s->tz);
    case TRR_OP_ADD: return trr_add(ctx, &s->tx, &s->ty, &s->tz);
    case TRR_OP_GELU: return trr_gelu(ctx, &s->tx, &s->tz);
    case TRR_OP_RGB_TO_GREY: return trr_rgb_to_grey(ctx, &s->tx, &s->tz);
    case TRR_OP_SOFTMAX: return trr_softmax(ctx, &s->tx, &s->tz);
    case TRR_OP_ROW_SUM: return trr_row_sum(ctx, &s->tx, &s->tz);
    case TRR_OP_MATMUL: return trr_matmul(ctx, &s->tx, &s->ty, &s->tz, c->epilogue, c->alpha, 0);
    default: return TRR_ERR_INVALID_ARGUMENT;
    }
}
