/* The mma.sync matmul's main-loop choice (backend_cuda/variants.c): the software-pipelined loop (MMA_V=1)
 * alternates two fragment buffers by 16-deep k step, so it is right only for an even number of steps per K
 * tile: with block_k 16 it would multiply each tile's first step with the previous tile's fragments. Host-side
 * only: no GPU needed. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "trr_cuda.h"

static int mma_v(int block_m, int block_n, int block_k, int threads) {
    trr_config cfg = {.block_m = block_m, .block_n = block_n, .block_k = block_k, .group_m = 8, .stages = 3,
                      .threads = threads};
    trr_cuda_variant v;
    trr_cuda_variant_matmul_mma(&v, &cfg, 0, TRR_F16, TRR_F16);
    const char *p = strstr(v.defines, "-DMMA_V=");
    cr_assert_not_null(p, "no MMA_V in \"%s\"", v.defines);
    int value = -1;
    cr_assert_eq(sscanf(p, "-DMMA_V=%d", &value), 1);
    return value;
}

Test(cuda_mma_variant, pipelined_loop_only_for_an_even_number_of_k_steps) {
    /* every tile of the tuner's and the heuristic's shapes, at each block_k the kernel takes */
    static const int tiles[][3] = {{128, 256, 256}, {128, 128, 256}, {128, 64, 256}, {64, 128, 128}, {64, 64, 128}};
    for (size_t t = 0; t < sizeof tiles / sizeof tiles[0]; t++) {
        const int bm = tiles[t][0], bn = tiles[t][1], th = tiles[t][2];
        cr_expect_eq(mma_v(bm, bn, 16, th), 0, "%dx%dx16 over %d threads: one k step per tile", bm, bn, th);
        cr_expect_eq(mma_v(bm, bn, 48, th), 0, "%dx%dx48: three k steps per tile", bm, bn, th);
        cr_expect_eq(mma_v(bm, bn, 64, th), 0, "%dx%dx64: past the registers the pipelined loop fits", bm, bn, th);
    }
    /* and it is still taken where it was measured faster: two k steps, a tile the register file holds */
    cr_expect_eq(mma_v(128, 256, 32, 256), 1);
    cr_expect_eq(mma_v(128, 128, 32, 256), 1);
}
