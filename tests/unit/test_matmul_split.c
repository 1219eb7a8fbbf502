/* Split-K's plan (core/matmul_split.h): the slices cover K exactly once, in aligned steps, never more of them
 * than asked; the calls that compute them read and write where each slice lies; the heuristic splits only grids
 * that leave most of the device idle, and only a K deep enough. */
#include <criterion/criterion.h>

#include "matmul_split.h"

Test(matmul_split, slices_cover_k_once_on_aligned_steps) {
    static const int64_t ks[] = {1, 15, 16, 17, 100, 127, 1000, 4096, 4104, 11008, 131075};
    static const int splits[] = {1, 2, 3, 4, 5, 7, 8, 16, 32};
    static const int64_t aligns[] = {1, 16, 32, 64};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
        for (size_t j = 0; j < sizeof splits / sizeof splits[0]; j++)
            for (size_t a = 0; a < sizeof aligns / sizeof aligns[0]; a++) {
                const int64_t k = ks[i], align = aligns[a];
                const trr_matmul_k_split s = trr_matmul_k_slices(k, splits[j], align);
                const int64_t n = trr_matmul_k_slice_count(s);
                cr_assert_eq(s.full * s.depth + s.rest, k, "K %lld split %d align %lld: %lld x %lld + %lld",
                             (long long)k, splits[j], (long long)align, (long long)s.full, (long long)s.depth,
                             (long long)s.rest);
                cr_assert_eq(s.depth % align, 0, "K %lld split %d: depth %lld off the %lld alignment", (long long)k,
                             splits[j], (long long)s.depth, (long long)align);
                cr_assert(s.rest >= 0 && s.rest < s.depth, "K %lld split %d: rest %lld of depth %lld", (long long)k,
                          splits[j], (long long)s.rest, (long long)s.depth);
                cr_assert(n >= 1 && n <= splits[j], "K %lld split %d align %lld: %lld slices", (long long)k,
                          splits[j], (long long)align, (long long)n);
            }
}

Test(matmul_split, equal_slices_where_k_divides) {
    const trr_matmul_k_split s = trr_matmul_k_slices(4096, 4, 64);
    cr_assert_eq(s.depth, 1024);
    cr_assert_eq(s.full, 4);
    cr_assert_eq(s.rest, 0);
    const trr_matmul_k_split t = trr_matmul_k_slices(4104, 4, 16);
    cr_assert_eq(t.depth, 1040); /* 1026 rounded up to 16 */
    cr_assert_eq(t.full, 3);
    cr_assert_eq(t.rest, 984);
}

Test(matmul_split, heuristic_splits_small_grids_of_deep_k) {
    /* 17 tiles on 132 SMs, K 4104: 7 slices (132 / 17), each past the minimum depth */
    cr_expect_eq(trr_matmul_split_for_grid(17, 132, 4104), 7);
    /* the depth caps it: K 2048 keeps 4 slices of 512 */
    cr_expect_eq(trr_matmul_split_for_grid(17, 132, 2048), 4);
    /* more than half the units already busy: whole */
    cr_expect_eq(trr_matmul_split_for_grid(67, 132, 8192), 1);
    cr_expect_eq(trr_matmul_split_for_grid(66, 132, 8192), 2);
    /* K too short for two slices of the minimum depth */
    cr_expect_eq(trr_matmul_split_for_grid(4, 132, TRR_MATMUL_SPLIT_MIN_DEPTH * 2 - 1), 1);
    /* units unknown: whole */
    cr_expect_eq(trr_matmul_split_for_grid(1, 0, 1 << 20), 1);
    /* one tile on a large device: the most slices a call may have */
    cr_expect_eq(trr_matmul_split_for_grid(1, 1000, 1 << 20), TRR_MATMUL_MAX_SPLIT);
}

Test(matmul_split, heuristic_counts_the_calls_tiles) {
    /* 40 x 1030 x 4104 in 64 x 64 tiles: 1 x 17 of them on 132 SMs */
    trr_call c = {.rows = 40, .cols = 1030, .k = 4104, .batch = 1};
    trr_config cfg = {.block_m = 64, .block_n = 64};
    cr_expect_eq(trr_matmul_split_for_call(&c, &cfg, 132), 7);
    /* a batch runs whole, as does a config without its tiles yet */
    c.batch = 2;
    cr_expect_eq(trr_matmul_split_for_call(&c, &cfg, 132), 1);
    c.batch = 1;
    cfg.block_n = 0;
    cr_expect_eq(trr_matmul_split_for_call(&c, &cfg, 132), 1);
}

/* The slices' calls read A and B at each slice's first k and write each slice's product at its own matrix of the
 * partials, in every layout: element (i, k0) of A and (k0, j) of B for slice s at k0 = s * depth. */
Test(matmul_split, slice_calls_step_along_k) {
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            const int64_t M = 5, N = 7, K = 100, lda = ta ? M + 3 : K + 3, ldb = tb ? K + 5 : N + 5;
            trr_call c = {.rows = M, .cols = N, .k = K, .trans_a = ta, .trans_b = tb, .epilogue = TRR_EPI_RELU};
            c.x = (trr_operand){.offset = 11, .stride0 = lda, .dtype = TRR_F16};
            c.y = (trr_operand){.offset = 13, .stride0 = ldb, .dtype = TRR_F16};
            c.z = (trr_operand){.offset = 17, .stride0 = N, .dtype = TRR_F16};
            c.config.split_k = 3;
            c.config.block_k = 16;
            const trr_matmul_k_split ks = trr_matmul_call_slices(&c);
            cr_assert_eq(ks.depth, 48);
            cr_assert_eq(ks.full, 2);
            cr_assert_eq(ks.rest, 4);
            int scratch;
            trr_call full, rest;
            trr_matmul_slice_calls(&c, ks, &scratch, &full, &rest);
            for (int64_t s = 0; s < 3; s++) {
                const trr_call *p = s < ks.full ? &full : &rest;
                const int64_t b = s < ks.full ? s : 0, k0 = s * ks.depth;
                const int64_t a_at = p->x.offset + b * p->x.batch_stride, b_at = p->y.offset + b * p->y.batch_stride;
                cr_expect_eq(a_at, 11 + (ta ? k0 * lda : k0), "tA %d slice %lld: A at %lld", ta, (long long)s,
                             (long long)a_at);
                cr_expect_eq(b_at, 13 + (tb ? k0 : k0 * ldb), "tB %d slice %lld: B at %lld", tb, (long long)s,
                             (long long)b_at);
                cr_expect_eq(p->z.offset + b * p->z.batch_stride, s * M * N, "slice %lld's product", (long long)s);
                cr_expect_eq(p->k, s < ks.full ? 48 : 4);
                cr_expect_eq(p->z.mem, (void *)&scratch);
                cr_expect_eq(p->z.dtype, TRR_F32);
                cr_expect_eq(p->z.stride0, N);
                cr_expect_eq(p->epilogue, TRR_EPI_NONE);
                cr_expect_eq(p->config.split_k, 1);
                cr_expect_eq(p->trans_a, ta);
                cr_expect_eq(p->x.stride0, lda);
            }
            cr_expect_eq(full.batch, 2);
            cr_expect_eq(rest.batch, 1);
        }
}

Test(matmul_split, batch_entries_are_single_matrices) {
    trr_call c = {.rows = 4, .cols = 4, .k = 64, .batch = 3};
    c.x = (trr_operand){.offset = 1, .stride0 = 64, .batch_stride = 256};
    c.y = (trr_operand){.offset = 2, .stride0 = 4, .batch_stride = 0}; /* one B for every matrix */
    c.z = (trr_operand){.offset = 3, .stride0 = 4, .batch_stride = 16};
    const trr_call e = trr_matmul_batch_entry(&c, 2);
    cr_expect_eq(e.batch, 1);
    cr_expect_eq(e.x.offset, 1 + 2 * 256);
    cr_expect_eq(e.y.offset, 2);
    cr_expect_eq(e.z.offset, 3 + 2 * 16);
    cr_expect_eq(e.x.batch_stride + e.y.batch_stride + e.z.batch_stride, 0);
}
