/* attention's definition in the front-end (core/attention.c, docs/ops.md, attention): every bad-input class has
 * its own status and message and writes nothing; a valid call normalises to the form backend.h describes; the
 * optional second output and the named parameters. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "op_table.h"
#include "trireme.h"
#include "validate.h"

#define BUF_BYTES 65536
#define SENTINEL 0xAB

static trr_context *ctx, *other_ctx;
static trr_buffer *buf, *foreign;

static void setup(void) {
    cr_assert_eq(trr_context_create("cpu", &ctx), TRR_OK, "%s", trr_last_error(NULL));
    cr_assert_eq(trr_context_create("cpu", &other_ctx), TRR_OK, "%s", trr_last_error(NULL));
    cr_assert_eq(trr_buffer_create(ctx, BUF_BYTES, &buf), TRR_OK);
    cr_assert_eq(trr_buffer_create(other_ctx, BUF_BYTES, &foreign), TRR_OK);
    cr_assert_eq(trr_buffer_fill(ctx, buf, 0, BUF_BYTES, SENTINEL), TRR_OK);
}

static void teardown(void) {
    trr_buffer_destroy(buf);
    trr_buffer_destroy(foreign);
    trr_context_destroy(ctx);
    trr_context_destroy(other_ctx);
}

static void expect_untouched(void) {
    static unsigned char host[BUF_BYTES];
    cr_assert_eq(trr_buffer_read(ctx, buf, 0, host, BUF_BYTES), TRR_OK);
    for (int i = 0; i < BUF_BYTES; i++) cr_assert_eq(host[i], SENTINEL, "byte %d was written by a rejected call", i);
}

static void expect_status(trr_status got, trr_status want, const char *needle) {
    cr_assert_eq(got, want, "got %s, want %s: %s", trr_status_name(got), trr_status_name(want), trr_last_error(ctx));
    const char *msg = trr_last_error(ctx);
    cr_assert(strstr(msg, trr_status_name(want)) != NULL, "message lacks the status name: %s", msg);
    cr_assert(strstr(msg, needle) != NULL, "message lacks '%s': %s", needle, msg);
    expect_untouched();
}

/* a packed [n0,n1,n2,n3] view (rank 4), or [n0,n1,n2] when n3 < 0 */
static trr_tensor t4(size_t offset, trr_dtype dt, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
    const int64_t shape[4] = {n0, n1, n2, n3};
    trr_tensor t;
    cr_assert_eq(trr_tensor_nd(buf, offset, dt, n3 < 0 ? 3 : 4, shape, NULL, &t), TRR_OK, "%s", trr_last_error(NULL));
    return t;
}

/* The problem every test starts from: B 2, Hq 4, Hkv 2, Sq 3, Skv 5, D 8, f32, each operand in its own stretch */
enum { B = 2, HQ = 4, HKV = 2, SQ = 3, SKV = 5, D = 8 };
#define Q_AT 0
#define K_AT 4096
#define V_AT 8192
#define O_AT 12288
#define L_AT 16384

typedef struct args {
    trr_tensor q, k, v, o, lse;
} args;

static args valid(void) {
    args a = {t4(Q_AT, TRR_F32, B, HQ, SQ, D), t4(K_AT, TRR_F32, B, HKV, SKV, D), t4(V_AT, TRR_F32, B, HKV, SKV, D),
              t4(O_AT, TRR_F32, B, HQ, SQ, D), t4(L_AT, TRR_F32, B, HQ, SQ, -1)};
    return a;
}

static trr_status build(const args *a, int with_lse, trr_call *call, int *empty) {
    const trr_tensor *slots[TRR_SLOTS] = {&a->q, &a->k, &a->o, &a->v, with_lse ? &a->lse : NULL};
    return trr_call_build_slots(ctx, TRR_OP_ATTENTION, slots, TRR_EPI_NONE, 0.0f, 0, call, empty);
}

static trr_status run(const args *a, int with_lse) {
    return trr_attention(ctx, &a->q, &a->k, &a->v, &a->o, with_lse ? &a->lse : NULL, 0.0f, 0);
}

TestSuite(attention_validation, .init = setup, .fini = teardown);

Test(attention_validation, normalised_form) {
    args a = valid();
    trr_call c;
    int empty = -1;
    cr_assert_eq(build(&a, 1, &c, &empty), TRR_OK, "%s", trr_last_error(ctx));
    cr_expect_eq(empty, TRR_CALL_RUNS);
    const trr_attention_shape *s = &c.attn;
    cr_expect(s->batch == B && s->heads_q == HQ && s->heads_kv == HKV && s->seq_q == SQ && s->seq_kv == SKV &&
              s->head_dim == D && s->has_lse == 1);
    cr_expect(c.rows == SQ && c.cols == D && c.k == SKV && c.batch == B);
    /* element (b, h, s, d) at offset + b * batch_stride + h * stride1 + s * stride0 + d */
    cr_expect(c.x.batch_stride == HQ * SQ * D && c.x.stride1 == SQ * D && c.x.stride0 == D && c.x.offset == 0);
    cr_expect(c.y.batch_stride == HKV * SKV * D && c.y.stride1 == SKV * D && c.y.stride0 == D &&
              c.y.offset == K_AT / 4);
    cr_expect(c.u.offset == V_AT / 4 && c.z.offset == O_AT / 4 && c.w.offset == L_AT / 4);
    cr_expect(c.w.batch_stride == HQ * SQ && c.w.stride1 == SQ && c.w.stride0 == 1 && c.w.dtype == TRR_F32);
    /* the parameters: scale 0 is 1/sqrt(D) */
    double params[TRR_MAX_OP_PARAMS] = {0};
    trr_call_set_params(&c, params);
    cr_expect_eq(c.attn.scale, (float)(1.0 / sqrt((double)D)));
    cr_expect_eq(c.attn.causal, 0);
    params[TRR_ATTN_PARAM_SCALE] = 0.25, params[TRR_ATTN_PARAM_CAUSAL] = 1;
    trr_call_set_params(&c, params);
    cr_expect(c.attn.scale == 0.25f && c.attn.causal == 1);
    /* without lse: w.mem NULL, has_lse 0 */
    cr_assert_eq(build(&a, 0, &c, &empty), TRR_OK, "%s", trr_last_error(ctx));
    cr_expect(c.w.mem == NULL && c.attn.has_lse == 0);
}

/* torch's [B,S,H,D] storage passed as its permuted [B,H,S,D] view, with padded heads */
Test(attention_validation, bshd_view_and_gqa) {
    args a = valid();
    const int64_t hpad = D + 3;
    const int64_t qs[4] = {SQ * HQ * hpad, hpad, HQ * hpad, 1}, ks[4] = {SKV * HKV * D, D, HKV * D, 1};
    const int64_t qshape[4] = {B, HQ, SQ, D}, kshape[4] = {B, HKV, SKV, D};
    cr_assert_eq(trr_tensor_nd(buf, Q_AT, TRR_F32, 4, qshape, qs, &a.q), TRR_OK);
    cr_assert_eq(trr_tensor_nd(buf, O_AT, TRR_F32, 4, qshape, qs, &a.o), TRR_OK);
    cr_assert_eq(trr_tensor_nd(buf, K_AT, TRR_F32, 4, kshape, ks, &a.k), TRR_OK);
    trr_call c;
    int empty;
    cr_assert_eq(build(&a, 1, &c, &empty), TRR_OK, "%s", trr_last_error(ctx));
    cr_expect(c.x.batch_stride == qs[0] && c.x.stride1 == qs[1] && c.x.stride0 == qs[2]);
    cr_expect(c.z.batch_stride == qs[0] && c.z.stride1 == qs[1] && c.z.stride0 == qs[2]);
    cr_expect(c.y.batch_stride == ks[0] && c.y.stride1 == ks[1] && c.y.stride0 == ks[2]);
    /* GQA ratio 1 and Hkv = 1 are fine */
    a = valid();
    a.k = t4(K_AT, TRR_F32, B, 1, SKV, D), a.v = t4(V_AT, TRR_F32, B, 1, SKV, D);
    cr_expect_eq(build(&a, 0, &c, &empty), TRR_OK, "%s", trr_last_error(ctx));
    a.k = t4(K_AT, TRR_F32, B, HQ, SKV, D), a.v = t4(V_AT, TRR_F32, B, HQ, SKV, D);
    cr_expect_eq(build(&a, 0, &c, &empty), TRR_OK, "%s", trr_last_error(ctx));
}

Test(attention_validation, invalid_argument) {
    args a = valid();
    expect_status(trr_attention(ctx, NULL, &a.k, &a.v, &a.o, NULL, 0.0f, 0), TRR_ERR_INVALID_ARGUMENT,
                  "q: tensor is NULL");
    expect_status(trr_attention(ctx, &a.q, &a.k, NULL, &a.o, NULL, 0.0f, 0), TRR_ERR_INVALID_ARGUMENT,
                  "v: tensor is NULL");
    expect_status(trr_attention(ctx, &a.q, &a.k, &a.v, NULL, &a.lse, 0.0f, 0), TRR_ERR_INVALID_ARGUMENT,
                  "o: tensor is NULL");
    trr_tensor nobuf = a.lse;
    nobuf.buffer = NULL;
    expect_status(trr_attention(ctx, &a.q, &a.k, &a.v, &a.o, &nobuf, 0.0f, 0), TRR_ERR_INVALID_ARGUMENT,
                  "lse: tensor has no buffer");
    expect_status(trr_attention(ctx, &a.q, &a.k, &a.v, &a.o, NULL, NAN, 0), TRR_ERR_INVALID_ARGUMENT, "scale");
    expect_status(trr_attention(ctx, &a.q, &a.k, &a.v, &a.o, NULL, INFINITY, 0), TRR_ERR_INVALID_ARGUMENT, "scale");
    cr_expect_eq(trr_attention(NULL, &a.q, &a.k, &a.v, &a.o, NULL, 0.0f, 0), TRR_ERR_INVALID_ARGUMENT);
    /* through trr_op_run: causal is a bool, names are the op's */
    const trr_tensor *ops[] = {&a.q, &a.k, &a.v, &a.o, NULL};
    trr_op_params p;
    memset(&p, 0, sizeof p);
    cr_assert_eq(trr_op_params_set(&p, "causal", 2.0), TRR_OK);
    expect_status(trr_op_run(ctx, TRR_OP_ATTENTION, ops, &p), TRR_ERR_INVALID_ARGUMENT, "causal");
    memset(&p, 0, sizeof p);
    cr_assert_eq(trr_op_params_set(&p, "eps", 1e-5), TRR_OK);
    expect_status(trr_op_run(ctx, TRR_OP_ATTENTION, ops, &p), TRR_ERR_INVALID_ARGUMENT, "scale, causal");
}

Test(attention_validation, dtype) {
    args a = valid();
    a.k = t4(K_AT, TRR_F16, B, HKV, SKV, D);
    expect_status(run(&a, 0), TRR_ERR_DTYPE, "inputs disagree");
    a = valid();
    a.o = t4(O_AT, TRR_F16, B, HQ, SQ, D);
    expect_status(run(&a, 0), TRR_ERR_DTYPE, "attention does not take f32 -> f16");
    a = valid();
    a.lse = t4(L_AT, TRR_F16, B, HQ, SQ, -1);
    expect_status(run(&a, 1), TRR_ERR_DTYPE, "lse must be f32");
    a = valid();
    a.q = t4(Q_AT, TRR_U8, B, HQ, SQ, D), a.k = t4(K_AT, TRR_U8, B, HKV, SKV, D),
    a.v = t4(V_AT, TRR_U8, B, HKV, SKV, D);
    a.o = t4(O_AT, TRR_U8, B, HQ, SQ, D);
    expect_status(run(&a, 0), TRR_ERR_DTYPE, "u8 -> u8");
}

Test(attention_validation, shape) {
    args a = valid();
    a.q = t4(Q_AT, TRR_F32, B * HQ, SQ, D, -1);
    expect_status(run(&a, 0), TRR_ERR_SHAPE, "q must be 4-D");
    a = valid();
    a.k = t4(K_AT, TRR_F32, B, HKV, SKV, D + 1), a.v = t4(V_AT, TRR_F32, B, HKV, SKV, D + 1);
    expect_status(run(&a, 0), TRR_ERR_SHAPE, "head dimension");
    a = valid();
    a.v = t4(V_AT, TRR_F32, B, HKV, SKV + 1, D);
    expect_status(run(&a, 0), TRR_ERR_SHAPE, "v is [2,2,6,8]");
    a = valid();
    a.k = t4(K_AT, TRR_F32, B + 1, HKV, SKV, D), a.v = t4(V_AT, TRR_F32, B + 1, HKV, SKV, D);
    expect_status(run(&a, 0), TRR_ERR_SHAPE, "batch");
    a = valid();
    a.o = t4(O_AT, TRR_F32, B, HQ, SQ + 1, D);
    expect_status(run(&a, 0), TRR_ERR_SHAPE, "o is [2,4,4,8]");
    a = valid();
    a.k = t4(K_AT, TRR_F32, B, 3, SKV, D), a.v = t4(V_AT, TRR_F32, B, 3, SKV, D);
    expect_status(run(&a, 0), TRR_ERR_SHAPE, "multiple of Hkv");
    a = valid();
    a.lse = t4(L_AT, TRR_F32, B, HQ, SQ + 1, -1);
    expect_status(run(&a, 1), TRR_ERR_SHAPE, "lse is [2,4,4]");
    a.lse = t4(L_AT, TRR_F32, B, HQ, SQ, 1);
    expect_status(run(&a, 1), TRR_ERR_SHAPE, "lse must be 3-D");
    a = valid();
    a.q = t4(Q_AT, TRR_F32, 1, 1, 1, 300), a.o = t4(O_AT, TRR_F32, 1, 1, 1, 300);
    a.k = t4(K_AT, TRR_F32, 1, 1, 1, 300), a.v = t4(V_AT, TRR_F32, 1, 1, 1, 300);
    expect_status(run(&a, 0), TRR_ERR_SHAPE, "D = 300");
    a.q = t4(Q_AT, TRR_F32, 1, 1, 1, 0), a.o = t4(O_AT, TRR_F32, 1, 1, 1, 0);
    a.k = t4(K_AT, TRR_F32, 1, 1, 1, 0), a.v = t4(V_AT, TRR_F32, 1, 1, 1, 0);
    expect_status(run(&a, 0), TRR_ERR_SHAPE, "D = 0");
}

Test(attention_validation, stride) {
    args a = valid();
    a.k.strides[3] = 2, a.k.strides[2] = 2 * D;
    expect_status(run(&a, 0), TRR_ERR_STRIDE, "k's D stride is 2");
    a = valid();
    a.o.strides[1] = 0;
    expect_status(run(&a, 0), TRR_ERR_STRIDE, "o's stride 1 is 0");
    a = valid();
    a.lse.strides[2] = -1;
    expect_status(run(&a, 1), TRR_ERR_STRIDE, "lse's stride 2 is -1");
}

Test(attention_validation, overlap) {
    args a = valid();
    a.o = t4(Q_AT + 64, TRR_F32, B, HQ, SQ, D);
    expect_status(run(&a, 0), TRR_ERR_OVERLAP, "output o overlaps q");
    a = valid();
    a.lse = t4(V_AT, TRR_F32, B, HQ, SQ, -1);
    expect_status(run(&a, 1), TRR_ERR_OVERLAP, "output lse overlaps v");
    a = valid();
    a.lse = t4(O_AT + 32, TRR_F32, B, HQ, SQ, -1);
    expect_status(run(&a, 1), TRR_ERR_OVERLAP, "output o overlaps lse");
    /* o's rows on top of one another: S stride shorter than D */
    a = valid();
    a.o.strides[2] = D - 1;
    expect_status(run(&a, 0), TRR_ERR_OVERLAP, "o's dimension 2");
    /* heads interleaved with sequence positions: H stride inside S's span */
    a = valid();
    a.o.strides[1] = D, a.o.strides[2] = 2 * D;
    expect_status(run(&a, 0), TRR_ERR_OVERLAP, "its elements overlap");
    a = valid();
    a.lse.strides[1] = 1, a.lse.strides[2] = 1;
    expect_status(run(&a, 1), TRR_ERR_OVERLAP, "lse's dimension");
}

Test(attention_validation, alignment_bounds_context_overflow) {
    args a = valid();
    a.v.offset += 2;
    expect_status(run(&a, 0), TRR_ERR_MISALIGNED, "v: byte offset");
    a = valid();
    a.o = t4(BUF_BYTES - 256, TRR_F32, B, HQ, SQ, D);
    expect_status(run(&a, 0), TRR_ERR_OUT_OF_BOUNDS, "o: view");
    a = valid();
    a.lse.buffer = foreign;
    expect_status(run(&a, 1), TRR_ERR_WRONG_CONTEXT, "lse: buffer belongs to another context");
    a = valid();
    a.k.strides[0] = (int64_t)1 << 61; /* B = 2: 2^61 elements, past 64 bits in bytes */
    expect_status(run(&a, 0), TRR_ERR_OVERFLOW, "k: the view's extent in bytes overflows 64 bits");
    a = valid();
    a.k.strides[0] = (int64_t)1 << 40; /* past 2^31 elements is fine (the call runs in parts), past the buffer not */
    expect_status(run(&a, 0), TRR_ERR_OUT_OF_BOUNDS, "k: view");
}

/* An empty output does nothing; no key at all (Skv = 0) gives o = 0 and lse = -inf, through padded views */
Test(attention_validation, empty_calls) {
    args a = valid();
    a.q = t4(Q_AT, TRR_F32, B, HQ, 0, D), a.o = t4(O_AT, TRR_F32, B, HQ, 0, D), a.lse = t4(L_AT, TRR_F32, B, HQ, 0, -1);
    cr_assert_eq(run(&a, 1), TRR_OK, "%s", trr_last_error(ctx));
    expect_untouched();
    a = valid();
    a.k = t4(K_AT, TRR_F32, B, HKV, 0, D), a.v = t4(V_AT, TRR_F32, B, HKV, 0, D);
    a.o.strides[2] = D + 2, a.o.strides[1] = SQ * (D + 2), a.o.strides[0] = HQ * SQ * (D + 2);
    a.lse.strides[2] = 2, a.lse.strides[1] = 2 * SQ, a.lse.strides[0] = 2 * SQ * HQ;
    cr_assert_eq(run(&a, 1), TRR_OK, "%s", trr_last_error(ctx));
    static unsigned char host[BUF_BYTES];
    cr_assert_eq(trr_buffer_read(ctx, buf, 0, host, BUF_BYTES), TRR_OK);
    static unsigned char want[BUF_BYTES];
    memset(want, SENTINEL, sizeof want);
    for (int64_t r = 0; r < B * HQ * SQ; r++) {
        memset(want + O_AT + r * (D + 2) * 4, 0, D * 4);
        const float minus_inf = -INFINITY;
        memcpy(want + L_AT + r * 2 * 4, &minus_inf, 4);
    }
    for (int i = 0; i < BUF_BYTES; i++)
        cr_assert_eq(host[i], want[i], "byte %d: 0x%02x, want 0x%02x", i, host[i], want[i]);
}

Test(attention_validation, op_info_and_params) {
    trr_op_info info;
    cr_assert_eq(trr_op_get_info(TRR_OP_ATTENTION, &info), TRR_OK);
    cr_expect_str_eq(info.name, "attention");
    cr_expect(info.n_inputs == 3 && info.n_outputs == 2 && info.n_params == 2);
    cr_assert_eq(trr_op_get_info(TRR_OP_LAYER_NORM, &info), TRR_OK);
    cr_expect_eq(info.n_outputs, 1);
    trr_param_info p;
    cr_assert_eq(trr_op_get_param(TRR_OP_ATTENTION, TRR_ATTN_PARAM_SCALE, &p), TRR_OK);
    cr_expect(!strcmp(p.name, "scale") && p.type == TRR_PARAM_F32 && p.default_value == 0.0);
    cr_assert_eq(trr_op_get_param(TRR_OP_ATTENTION, TRR_ATTN_PARAM_CAUSAL, &p), TRR_OK);
    cr_expect(!strcmp(p.name, "causal") && p.type == TRR_PARAM_BOOL && p.default_value == 0.0);
    trr_op_params parsed;
    cr_assert_eq(trr_op_params_parse(TRR_OP_ATTENTION, "scale=0.125,causal=true", &parsed), TRR_OK);
    cr_expect(parsed.count == 2 && parsed.values[0].value == 0.125 && parsed.values[1].value == 1.0);
    trr_op op;
    cr_assert_eq(trr_op_from_name("attention", &op), TRR_OK);
    cr_expect_eq(op, TRR_OP_ATTENTION);
}
