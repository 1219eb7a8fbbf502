/* The OpenCL matmul kernel picked where neither an override nor the tuning data names one
 * (backend_opencl/matmul_variant.h): the tensor-core kernel for f16 and bf16 wherever the mma probe passed, the
 * portable one otherwise and for every other operand pair; 8-bit floats (any pair of the two) with f16 and
 * bf16; and its work-group on the tensor-core kernel. No device is needed. */
#include "../backend_opencl/matmul_variant.h"

#include <criterion/criterion.h>

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
