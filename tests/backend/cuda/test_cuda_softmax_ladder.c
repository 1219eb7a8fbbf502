/* The CUDA softmax's ladders of row shapes (backend_cuda/config.c): rows up to threads x items stay in registers,
 * and the heuristic takes the smallest step that holds the row. Steps whose capacity is far above the rows they
 * serve leave few rows in flight per SM (a 1024 x 8 step for rows of 4097-8192 is far slower than a step sized
 * to them). Host-side only: no GPU needed (a NULL context is a device with the H200's limits). */
#include <criterion/criterion.h>

#include <string.h>

#include "trr_cuda.h"

static trr_call softmax_call(trr_dtype dtype, int64_t rows, int64_t cols) {
    trr_call c;
    memset(&c, 0, sizeof c);
    c.op = TRR_OP_SOFTMAX;
    c.x.dtype = c.z.dtype = dtype;
    c.x.stride0 = c.z.stride0 = cols;
    c.rows = rows;
    c.cols = cols;
    return c;
}

static const trr_dtype dtypes[] = {TRR_F32, TRR_F16, TRR_BF16};

Test(cuda_softmax_ladder, steps_grow_and_pass_the_check) {
    for (int d = 0; d < 3; d++) {
        int count = 0;
        const trr_cuda_softmax_step *ladder = trr_cuda_softmax_ladder(dtypes[d], &count);
        cr_assert_gt(count, 0);
        for (int i = 0; i < count; i++) {
            const int cap = ladder[i].threads * ladder[i].items;
            if (i) cr_expect_gt(cap, ladder[i - 1].threads * ladder[i - 1].items, "dtype %d step %d", d, i);
            trr_call c = softmax_call(dtypes[d], 4096, cap);
            c.config.variant = TRR_VARIANT_SIMT;
            c.config.threads = ladder[i].threads;
            c.config.block_n = cap;
            cr_expect_eq(trr_cuda_check_config(NULL, &c), TRR_OK, "dtype %d step %d (%d x %d): %s", d, i,
                         ladder[i].threads, ladder[i].items, trr_last_error(NULL));
        }
    }
}

Test(cuda_softmax_ladder, heuristic_takes_the_smallest_step_that_holds_the_row) {
    for (int d = 0; d < 3; d++) {
        int count = 0;
        const trr_cuda_softmax_step *ladder = trr_cuda_softmax_ladder(dtypes[d], &count);
        const int top = ladder[count - 1].threads * ladder[count - 1].items;
        /* past the subgroup kernel's rows (1024) up to the ladder's top, in steps of 128 and one past each */
        for (int64_t n = 1025; n <= top; n += n % 128 == 1 ? 127 : 1) {
            trr_call c = softmax_call(dtypes[d], 4096, n);
            trr_cuda_choose_config(NULL, &c);
            cr_assert_eq(c.config.variant, TRR_VARIANT_SIMT, "dtype %d, %lld columns", d, (long long)n);
            int want = -1;
            for (int i = 0; i < count && want < 0; i++)
                if (n <= (int64_t)ladder[i].threads * ladder[i].items) want = i;
            cr_assert_eq(c.config.threads, ladder[want].threads, "dtype %d, %lld columns", d, (long long)n);
            cr_assert_eq(c.config.block_n, ladder[want].threads * ladder[want].items, "dtype %d, %lld columns", d,
                         (long long)n);
            /* no cliff: a row fills at least two thirds of the registers its step holds for it */
            cr_assert_leq(2 * c.config.block_n, 3 * n, "dtype %d, %lld columns in a step of %d", d, (long long)n,
                          c.config.block_n);
            cr_assert_eq(trr_cuda_check_config(NULL, &c), TRR_OK, "%s", trr_last_error(NULL));
        }
    }
}

Test(cuda_softmax_ladder, rows_past_the_ladder_take_the_online_kernel_config) {
    for (int d = 0; d < 3; d++) {
        int count = 0;
        const trr_cuda_softmax_step *ladder = trr_cuda_softmax_ladder(dtypes[d], &count);
        const int64_t n = (int64_t)ladder[count - 1].threads * ladder[count - 1].items + 1;
        trr_call c = softmax_call(dtypes[d], 64, n);
        trr_cuda_choose_config(NULL, &c);
        cr_expect_eq(c.config.variant, TRR_VARIANT_SIMT);
        cr_expect_lt(c.config.block_n, n, "a row of %lld columns streams through the online kernel", (long long)n);
        cr_expect_eq(trr_cuda_check_config(NULL, &c), TRR_OK, "%s", trr_last_error(NULL));
    }
}
