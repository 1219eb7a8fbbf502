/* The CUDA-core matmul's tiles (backend_cuda/config_matmul.c, variants.c): a thread owns 16 x 8 outputs where threads =
 * block_m * block_n / 128 and 8 x 8 where it is / 64, so the thread count is part of the compiled variant, and
 * the heuristic gives f32 products that fill the SMs 128 x 256 tiles over 256 threads. Host-side only: no GPU
 * needed (a NULL context is a device with the H200's 132 SMs). */
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "cuda_matmul_call.h"
#include "trr_cuda.h"

static trr_call f32_matmul(int64_t m, int64_t n, int64_t k) { return cuda_matmul_call(TRR_F32, m, n, k, 1); }

static int defined_threads(const trr_config *cfg) {
    trr_cuda_variant v;
    trr_cuda_variant_matmul_simt(&v, cfg, TRR_F32, TRR_F32, 0, 0, 1);
    const char *p = strstr(v.defines, "-DTHREADS=");
    cr_assert_not_null(p, "no THREADS in \"%s\"", v.defines);
    int t = -1;
    cr_assert_eq(sscanf(p, "-DTHREADS=%d", &t), 1);
    return t;
}

Test(cuda_simt_config, thread_count_is_compiled_in) {
    /* one tile at 16 x 8 and at 8 x 8 per thread: two kernels, so two module-cache keys */
    trr_config a = {.block_m = 128, .block_n = 128, .block_k = 8, .group_m = 8, .stages = 2, .threads = 128};
    trr_config b = a;
    b.threads = 256;
    cr_expect_eq(defined_threads(&a), 128);
    cr_expect_eq(defined_threads(&b), 256);
    trr_cuda_variant va, vb;
    trr_cuda_variant_matmul_simt(&va, &a, TRR_F32, TRR_F32, 0, 0, 1);
    trr_cuda_variant_matmul_simt(&vb, &b, TRR_F32, TRR_F32, 0, 0, 1);
    cr_expect_str_neq(va.defines, vb.defines);
}

Test(cuda_simt_config, every_listed_tile_passes_the_check) {
    for (int i = 0; i < trr_cuda_simt_config_count; i++) {
        trr_call c = f32_matmul(1000, 1000, 1000);
        c.config = trr_cuda_simt_configs[i];
        c.config.variant = TRR_VARIANT_SIMT;
        c.config.group_m = 8;
        c.config.stages = 2;
        c.config.split_k = 1;
        const int per = c.config.block_m * c.config.block_n / c.config.threads;
        cr_expect(per == 64 || per == 128, "tile %d: %d outputs per thread", i, per);
        cr_expect_eq(trr_cuda_check_config(NULL, &c), TRR_OK, "tile %d: %s", i, trr_last_error(NULL));
    }
}

static trr_status check(int bm, int bn, int bk, int threads) {
    trr_call c = f32_matmul(1000, 1000, 1000);
    c.config = (trr_config){.block_m = bm, .block_n = bn, .block_k = bk, .group_m = 8, .stages = 2, .split_k = 1,
                            .threads = threads, .variant = TRR_VARIANT_SIMT};
    return trr_cuda_check_config(NULL, &c);
}

Test(cuda_simt_config, thread_counts_and_depths_the_kernel_takes) {
    cr_expect_eq(check(256, 128, 8, 256), TRR_OK, "16 x 8 each: %s", trr_last_error(NULL));
    cr_expect_eq(check(128, 64, 8, 128), TRR_OK, "8 x 8 each: %s", trr_last_error(NULL));
    cr_expect_eq(check(128, 128, 8, 128), TRR_OK, "16 x 8 each: %s", trr_last_error(NULL));
    cr_expect_eq(check(128, 128, 16, 256), TRR_OK, "8 x 8 each, block_k 16: %s", trr_last_error(NULL));
    /* 32 x 8 outputs each is not a kernel shape */
    cr_expect_eq(check(256, 128, 8, 128), TRR_ERR_UNSUPPORTED);
    cr_expect_not_null(strstr(trr_last_error(NULL), "block_m*block_n/128"), "%s", trr_last_error(NULL));
    /* a chunk along k pairs with its neighbour: block_k 4 or a multiple of 8 */
    cr_expect_eq(check(128, 128, 12, 256), TRR_ERR_UNSUPPORTED);
    cr_expect_not_null(strstr(trr_last_error(NULL), "block_k"), "%s", trr_last_error(NULL));
    cr_expect_eq(check(64, 64, 4, 64), TRR_OK, "block_k 4: %s", trr_last_error(NULL));
}

static trr_config chosen(int64_t m, int64_t n, int64_t k, const trr_config *given) {
    trr_call c = f32_matmul(m, n, k);
    if (given) c.config = *given;
    trr_cuda_choose_config(NULL, &c);
    cr_expect_eq(trr_cuda_check_config(NULL, &c), TRR_OK, "%lldx%lldx%lld: %s", (long long)m, (long long)n,
                 (long long)k, trr_last_error(NULL));
    return c.config;
}

Test(cuda_simt_config, heuristic_takes_128x256_where_it_fills_the_sms) {
    /* 4096^2: 512 blocks of 128 x 256; 2048^2 would give 128 of them on 132 SMs, so 128 x 128 (256 blocks) */
    trr_config big = chosen(4096, 4096, 4096, NULL);
    cr_expect_eq(big.variant, TRR_VARIANT_SIMT);
    cr_expect(big.block_m == 128 && big.block_n == 256 && big.block_k == 8 && big.threads == 256,
              "4096^3: %dx%dx%d over %d threads", big.block_m, big.block_n, big.block_k, big.threads);
    trr_config mid = chosen(2048, 2048, 2048, NULL);
    cr_expect(mid.block_m == 128 && mid.block_n == 128 && mid.threads == 128, "2048^3: %dx%d over %d threads",
              mid.block_m, mid.block_n, mid.threads);
    /* a tile given without threads gets the list's count for that tile, else 8 x 8 each */
    trr_config given = {.block_m = 128, .block_n = 256};
    trr_config g = chosen(4096, 4096, 4096, &given);
    cr_expect_eq(g.threads, 256);
    given = (trr_config){.block_m = 64, .block_n = 128};
    g = chosen(4096, 4096, 4096, &given);
    cr_expect_eq(g.threads, 128);
}
