/* Split-K's plan (core/matmul_split.h): the slices cover K exactly once, in aligned steps, never more of them
 * than asked; the heuristic splits only grids that leave most of the device idle, and only a K deep enough. */
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
