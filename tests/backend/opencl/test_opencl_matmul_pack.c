/* The K-major copies the OpenCL wgmma kernel reads 8-bit float operands from (backend_opencl/matmul_pack.c,
 * kernels/opencl/matmul_pack.cl): which operands a call copies and the call as it then runs (no device), and the
 * copies themselves on opencl:0 against the bytes they must hold: every row K-major, padded with zeros to a
 * multiple of 16, in odd shapes, batches with and without a shared operand, through the word kernel (rows
 * contiguous on 16-byte lines) and the byte kernel (any other source). On Hopper the wgmma kernel then runs on
 * them (the conformance suite on NVIDIA); elsewhere the copy kernels are plain OpenCL C, so PoCL checks them here.
 * Skipped without an OpenCL device unless TRIREME_REQUIRE_BACKENDS names opencl. */
#include "opencl.h"

#include "matmul_call.h"
#include "matmul_variant.h"
#include "random.h"
#include "test_support.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* e4m3 A [M,K] with e5m2 B stored [N,K], packed rows: what the wgmma kernel reads as stored */
static trr_call k_major(int64_t m, int64_t n, int64_t k) { return nk_call(TRR_F8E4M3, TRR_F8E5M2, m, n, k); }

Test(opencl_matmul_pack, copies_what_the_wgmma_kernel_cannot_read_as_stored) {
    trr_call c = k_major(256, 256, 256), v;
    cr_expect_eq(trr_cl_f8_copies(&c), 0);
    cr_expect_not(trr_cl_f8_view(&c, &v));
    trr_call t = c;
    t.trans_a = 1, t.x.stride0 = 256; /* A stored [K,M] */
    cr_expect_eq(trr_cl_f8_copies(&t), 1);
    t = c, t.trans_b = 0, t.y.stride0 = 256; /* B stored [K,N] */
    cr_expect_eq(trr_cl_f8_copies(&t), 2);
    t = c, t.y.offset = 8; /* off a 16-byte line */
    cr_expect_eq(trr_cl_f8_copies(&t), 2);
    t = k_major(64, 64, 1000); /* rows of 1000 bytes */
    cr_expect_eq(trr_cl_f8_copies(&t), 3);
    t = c, t.batch = 2, t.x.batch_stride = 256 * 256 + 8;
    cr_expect_eq(trr_cl_f8_copies(&t), 1);
    t.batch = 1; /* one matrix: its batch stride is never used */
    cr_expect_eq(trr_cl_f8_copies(&t), 0);
    /* no 8-bit floats, no copies */
    t = c, t.trans_b = 0, t.x.dtype = t.y.dtype = TRR_F16;
    cr_expect_eq(trr_cl_f8_copies(&t), 0);
}

Test(opencl_matmul_pack, the_view_is_k_major_with_rows_of_16_byte_multiples) {
    trr_call c = k_major(70, 50, 100), v;
    c.trans_a = 1, c.x.stride0 = 72, c.x.offset = 3;  /* A stored [K,M] */
    c.trans_b = 0, c.y.stride0 = 50, c.y.offset = 16; /* B stored [K,N] */
    c.batch = 3, c.x.batch_stride = 100 * 72, c.y.batch_stride = 0; /* B shared by the batch */
    cr_assert(trr_cl_f8_view(&c, &v));
    cr_expect_eq(v.trans_a, 0);
    cr_expect_eq(v.trans_b, 1);
    cr_expect_eq(v.x.stride0, 112);
    cr_expect_eq(v.y.stride0, 112);
    cr_expect_eq(v.x.offset, 0);
    cr_expect_eq(v.x.batch_stride, 70 * 112);
    cr_expect_eq(v.y.batch_stride, 0);
    cr_expect_eq(v.rows, 70);
    cr_expect_eq(v.cols, 50);
    cr_expect_eq(v.k, 100);
    cr_expect(v.x.mem == NULL && v.y.mem == NULL);
    /* the view is what the kernel reads as stored */
    v.x.mem = v.y.mem = &v;
    cr_expect_eq(trr_cl_f8_copies(&v), 0);
}

/* One case: A and B of the given layouts in one buffer (random bytes), copied, and the copies read back and
 * compared byte by byte with the source's elements (zeros past K). */
typedef struct {
    int64_t m, n, k, batch;
    int trans_a, trans_b;
    int64_t lda, ldb, a_off, b_off, a_bs, b_bs;
} pack_case;

static void check_case(trr_context *ctx, const pack_case *pc, uint64_t seed) {
    trr_call c = k_major(pc->m, pc->n, pc->k);
    c.trans_a = pc->trans_a, c.trans_b = pc->trans_b;
    c.x.stride0 = pc->lda, c.y.stride0 = pc->ldb;
    c.batch = pc->batch;
    c.x.batch_stride = pc->a_bs, c.y.batch_stride = pc->b_bs;
    const int64_t nb = pc->batch > 1 ? pc->batch : 1;
    const int64_t a_rows = pc->trans_a ? pc->k : pc->m, b_rows = pc->trans_b ? pc->n : pc->k;
    const int64_t a_end = pc->a_off + (pc->a_bs ? (nb - 1) * pc->a_bs : 0) + a_rows * pc->lda;
    const int64_t b_at = (a_end + 63) / 64 * 64 + pc->b_off;
    const int64_t total = b_at + (pc->b_bs ? (nb - 1) * pc->b_bs : 0) + b_rows * pc->ldb;
    uint8_t *host = malloc((size_t)total);
    cr_assert_not_null(host);
    uint64_t rng = seed;
    for (int64_t i = 0; i < total; i++) host[i] = trr_rng_byte(&rng);
    trr_buffer *buf = NULL;
    cr_assert_eq(trr_buffer_create(ctx, (size_t)total, &buf), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_write(ctx, buf, 0, host, (size_t)total), TRR_OK, "%s", trr_last_error(ctx));
    c.x.mem = c.y.mem = buf->mem;
    c.x.offset = pc->a_off, c.y.offset = b_at;

    trr_call v;
    cr_assert(trr_cl_f8_view(&c, &v), "case %lldx%lldx%lld copies nothing", (long long)pc->m, (long long)pc->n,
              (long long)pc->k);
    cr_assert_eq(trr_cl_f8_pack(ctx, &c, &v), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_cl_synchronize(ctx), TRR_OK, "%s", trr_last_error(ctx));
    const int copies = trr_cl_f8_copies(&c);
    for (int op = 0; op < 2; op++) {
        if (!(copies & (1 << op))) continue;
        const trr_operand *src = op ? &c.y : &c.x, *dst = op ? &v.y : &v.x;
        const int64_t rows = op ? pc->n : pc->m, kp = dst->stride0;
        /* element (r, k) of the source: A [M,K] or stored [K,M]; B stored [N,K] or [K,N] */
        const int k_major_src = op ? pc->trans_b : !pc->trans_a;
        const int64_t rs = k_major_src ? src->stride0 : 1, ks = k_major_src ? 1 : src->stride0;
        const int64_t mats = pc->batch > 1 && src->batch_stride ? pc->batch : 1;
        cr_assert_eq(kp % 16, 0);
        cr_assert(kp >= pc->k && kp < pc->k + 16);
        const size_t bytes = (size_t)(mats * rows * kp);
        uint8_t *got = malloc(bytes);
        cr_assert_not_null(got);
        cr_assert_eq(trr_cl_read(ctx, dst->mem, (size_t)dst->offset, got, bytes), TRR_OK, "%s", trr_last_error(ctx));
        int64_t bad = 0;
        for (int64_t z = 0; z < mats; z++)
            for (int64_t r = 0; r < rows; r++)
                for (int64_t k = 0; k < kp; k++) {
                    const uint8_t want = k < pc->k ? host[src->offset + z * src->batch_stride + r * rs + k * ks] : 0;
                    const uint8_t g = got[z * rows * kp + r * kp + k];
                    if (g != want && bad++ < 4)
                        cr_log_error("%s matrix %lld (%lld, %lld): got %u, want %u", op ? "B" : "A", (long long)z,
                                     (long long)r, (long long)k, g, want);
                }
        cr_expect_eq(bad, 0, "%s of %lldx%lldx%lld (batch %lld, trans %d%d, seed %llu): %lld bytes wrong",
                     op ? "B" : "A", (long long)pc->m, (long long)pc->n, (long long)pc->k, (long long)pc->batch,
                     pc->trans_a, pc->trans_b, (unsigned long long)seed, (long long)bad);
        free(got);
    }
    trr_buffer_destroy(buf);
    free(host);
}

Test(opencl_matmul_pack, copies_hold_every_element_k_major) {
    trr_context *ctx = open_device_or_skip("opencl:0", "opencl");
    const uint64_t seed = (uint64_t)time(NULL);
    const pack_case cases[] = {
        /* B stored [K,N], rows on 16-byte lines: the word kernel, a partial tile each way */
        {.m = 64, .n = 272, .k = 200, .batch = 1, .trans_b = 0, .lda = 208, .ldb = 272, .b_off = 16},
        /* B stored [K,N] on 16-byte lines, 100 columns: the word kernel's last words of a row partly past it */
        {.m = 32, .n = 100, .k = 70, .batch = 1, .trans_b = 0, .lda = 80, .ldb = 112},
        /* A stored [K,M] and B stored [K,N], both word-copied, a batch of 3 with B shared */
        {.m = 144, .n = 160, .k = 131, .batch = 3, .trans_a = 1, .lda = 160, .ldb = 160, .a_bs = 131 * 160},
        /* A stored [K,M] of odd width and offset: the byte kernel read along the rows */
        {.m = 70, .n = 48, .k = 77, .batch = 1, .trans_a = 1, .trans_b = 1, .lda = 71, .ldb = 80, .a_off = 5},
        /* A [M,K] and B stored [N,K] with rows of odd length: the byte kernel read along K */
        {.m = 33, .n = 65, .k = 100, .batch = 2, .trans_b = 1, .lda = 101, .ldb = 100, .a_bs = 33 * 101 + 3,
         .b_bs = 65 * 100},
        /* B stored [K,N] of an odd width, every matrix its own */
        {.m = 16, .n = 129, .k = 300, .batch = 2, .trans_b = 0, .lda = 304, .ldb = 129, .a_bs = 16 * 304,
         .b_bs = 300 * 129},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(ctx, &cases[i], seed + i);
    trr_context_destroy(ctx);
}
