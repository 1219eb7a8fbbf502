/* The grouped block ordering against a check vector worked by hand, plus coverage: every block visited exactly once. */
#include <criterion/criterion.h>

#include "grouped.h"

Test(grouped_order, spec_check_vector) {
    static const int expected[5][4] = {
        {0, 3, 6, 9}, {1, 4, 7, 10}, {2, 5, 8, 11}, {12, 14, 16, 18}, {13, 15, 17, 19}};
    int got[5][4];
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 4; j++) got[i][j] = -1;
    for (int64_t pid = 0; pid < 20; pid++) {
        int64_t pm, pn;
        trr_grouped_block(pid, 5, 4, 3, &pm, &pn);
        cr_assert(pm >= 0 && pm < 5 && pn >= 0 && pn < 4, "pid %lld maps outside the grid", (long long)pid);
        got[pm][pn] = (int)pid;
    }
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 4; j++)
            cr_expect_eq(got[i][j], expected[i][j], "block (%d,%d): got %d, expected %d", i, j, got[i][j], expected[i][j]);
}

Test(grouped_order, bijective_on_odd_grids) {
    static const int64_t grids[][3] = {{1, 1, 8}, {7, 3, 8}, {13, 29, 4}, {64, 1, 8}, {1, 64, 8}, {9, 9, 1}};
    for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++) {
        int64_t npm = grids[g][0], npn = grids[g][1], group = grids[g][2];
        char seen[64 * 64] = {0};
        for (int64_t pid = 0; pid < npm * npn; pid++) {
            int64_t pm, pn;
            trr_grouped_block(pid, npm, npn, group, &pm, &pn);
            cr_assert(pm >= 0 && pm < npm && pn >= 0 && pn < npn);
            cr_assert_eq(seen[pm * npn + pn], 0, "block (%lld,%lld) visited twice", (long long)pm, (long long)pn);
            seen[pm * npn + pn] = 1;
        }
    }
}
