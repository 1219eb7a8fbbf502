/* The OpenCL matmul kernel picked where neither an override nor the tuning data names one
 * (backend_opencl/matmul_variant.h): the tensor-core kernel for f16 and bf16 wherever the mma probe passed, the
 * portable one otherwise and for every other operand pair; 8-bit floats (any pair of the two) with f16 and
 * bf16; its work-group on the tensor-core kernel; and the calls the wgmma kernel takes (8-bit floats of every layout,
 * some through copies) and why it refuses the others. No device is needed. */
#include "../backend_opencl/matmul_variant.h"
#include "matmul_call.h"

#include <criterion/criterion.h>
#include <string.h>

static const trr_dtype f8[] = {TRR_F8E4M3, TRR_F8E5M2};

Test(opencl_matmul_variant, f8_pairs_take_mma_where_the_probe_passed) {
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            cr_expect(trr_cl_mma_operands(f8[i], f8[j]), "pair %d x %d", (int)f8[i], (int)f8[j]);
            cr_expect_eq(trr_cl_matmul_auto_variant(1, f8[i], f8[j]), TRR_VARIANT_MMA);
            cr_expect_eq(trr_cl_matmul_auto_variant(0, f8[i], f8[j]), TRR_VARIANT_SIMT);
        }
}

Test(opencl_matmul_variant, halves_alike_take_mma_and_the_rest_simt) {
    cr_expect_eq(trr_cl_matmul_auto_variant(1, TRR_F16, TRR_F16), TRR_VARIANT_MMA);
    cr_expect_eq(trr_cl_matmul_auto_variant(1, TRR_BF16, TRR_BF16), TRR_VARIANT_MMA);
    cr_expect_eq(trr_cl_matmul_auto_variant(0, TRR_F16, TRR_F16), TRR_VARIANT_SIMT);
    const trr_dtype other[][2] = {{TRR_F32, TRR_F32}, {TRR_F16, TRR_BF16}, {TRR_F16, TRR_F8E4M3},
                                  {TRR_F8E5M2, TRR_BF16}, {TRR_F32, TRR_F8E4M3}};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        cr_expect(!trr_cl_mma_operands(other[i][0], other[i][1]), "pair %zu", i);
        cr_expect_eq(trr_cl_matmul_auto_variant(1, other[i][0], other[i][1]), TRR_VARIANT_SIMT, "pair %zu", i);
    }
}

/* 8 warps on the wide tile for an f32 C (two sets of accumulators) and for 8-bit float operands (widened through
 * registers); 4 elsewhere, and on the 64 x 64 tile always. */
Test(opencl_matmul_variant, eight_warps_where_the_wide_tile_holds_more_registers) {
    for (int i = 0; i < 2; i++) {
        cr_expect_eq(trr_cl_mma_threads(1, f8[i], TRR_BF16), 256);
        cr_expect_eq(trr_cl_mma_threads(1, f8[i], TRR_F16), 256);
        cr_expect_eq(trr_cl_mma_threads(0, f8[i], TRR_BF16), 128);
    }
    cr_expect_eq(trr_cl_mma_threads(1, TRR_F16, TRR_F32), 256);
    cr_expect_eq(trr_cl_mma_threads(1, TRR_F16, TRR_F16), 128);
    cr_expect_eq(trr_cl_mma_threads(1, TRR_BF16, TRR_BF16), 128);
    cr_expect_eq(trr_cl_mma_threads(0, TRR_F16, TRR_F32), 128);
}

Test(opencl_matmul_variant, wgmma_takes_8_bit_floats_of_every_layout) {
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            trr_call c = nk_call(f8[i], f8[j], 1000, 776, 528);
            cr_expect_null(trr_cl_wgmma_refusal(1, "", &c), "pair %d x %d: %s", (int)f8[i], (int)f8[j],
                           trr_cl_wgmma_refusal(1, "", &c));
        }
    /* the layouts and alignments it cannot read as stored run from K-major copies (test_opencl_matmul_pack) */
    const trr_call ok = nk_call(TRR_F8E4M3, TRR_F8E4M3, 256, 256, 256);
    trr_call others[5];
    int n = 0;
    others[n] = ok, others[n++].trans_b = 0; /* B stored [K,N] */
    others[n] = ok, others[n++].trans_a = 1; /* A stored [K,M] */
    others[n++] = nk_call(TRR_F8E4M3, TRR_F8E4M3, 256, 256, 1000); /* rows of 1000 bytes */
    others[n] = ok, others[n++].y.offset = 8; /* off a 16-byte line */
    others[n] = ok, others[n].batch = 2, others[n++].x.batch_stride = 256 * 256 + 8;
    for (int i = 0; i < n; i++) {
        cr_expect_null(trr_cl_wgmma_refusal(1, "", &others[i]), "case %d: %s", i,
                       trr_cl_wgmma_refusal(1, "", &others[i]));
        cr_expect_neq(trr_cl_f8_copies(&others[i]), 0, "case %d", i);
    }
}

Test(opencl_matmul_variant, wgmma_refuses_every_other_call_with_the_reason) {
    const trr_call ok = nk_call(TRR_F8E4M3, TRR_F8E4M3, 256, 256, 256);
    /* the device's probe first, its own reason kept */
    cr_expect_str_eq(trr_cl_wgmma_refusal(0, "the driver's PTX targets sm_80, not sm_90", &ok),
                     "the driver's PTX targets sm_80, not sm_90");
    cr_expect_not_null(strstr(trr_cl_wgmma_refusal(0, "", &ok), "probe"));
    cr_expect_not_null(strstr(trr_cl_wgmma_refusal(0, NULL, &ok), "probe"));
    const trr_call halves[] = {nk_call(TRR_F16, TRR_F16, 256, 256, 256), nk_call(TRR_BF16, TRR_BF16, 256, 256, 256),
                               nk_call(TRR_F8E4M3, TRR_F16, 256, 256, 256)};
    for (int i = 0; i < 3; i++) {
        const char *why = trr_cl_wgmma_refusal(1, "", &halves[i]);
        cr_expect_not_null(why, "case %d was taken", i);
        if (why) cr_expect_not_null(strstr(why, "8-bit float"), "case %d: %s", i, why);
    }
}

Test(opencl_matmul_variant, rows_are_aligned_where_stride_offset_and_batch_stride_are_multiples) {
    static const int64_t widths[] = {4, 8, 16};
    for (int w = 0; w < 3; w++) {
        const int64_t n = widths[w];
        trr_operand t;
        memset(&t, 0, sizeof t);
        t.stride0 = 7 * n, t.offset = 3 * n, t.batch_stride = 5 * n;
        cr_expect(trr_cl_rows_aligned(&t, n, 4), "width %lld", (long long)n);
        /* each of the three off by one element breaks it; the batch stride only where there is a batch */
        trr_operand s = t;
        s.stride0 += 1;
        cr_expect_not(trr_cl_rows_aligned(&s, n, 1), "width %lld: stride", (long long)n);
        s = t, s.offset += 1;
        cr_expect_not(trr_cl_rows_aligned(&s, n, 1), "width %lld: offset", (long long)n);
        s = t, s.batch_stride += 1;
        cr_expect_not(trr_cl_rows_aligned(&s, n, 2), "width %lld: batch stride", (long long)n);
        cr_expect(trr_cl_rows_aligned(&s, n, 1), "width %lld: one product", (long long)n);
        cr_expect(trr_cl_rows_aligned(&s, n, 0), "width %lld: no batch", (long long)n);
        /* a multiple of the wider width is one of the narrower */
        if (w > 0) cr_expect(trr_cl_rows_aligned(&t, widths[w - 1], 4), "width %lld", (long long)widths[w - 1]);
    }
}
