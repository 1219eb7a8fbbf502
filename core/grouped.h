/* Grouped block ordering (docs/ops.md, Grouped ordering): maps a linear block id to the (row, column) block it computes so
 * that GROUP_M consecutive row-blocks share the columns of B while they sit in L2. Kernels in every backend
 * compute the same mapping; this is the host copy the tests check against its check vector. */
#ifndef TRR_GROUPED_H
#define TRR_GROUPED_H

#include <stdint.h>

static inline void trr_grouped_block(int64_t pid, int64_t npm, int64_t npn, int64_t group_m, int64_t *out_pm,
                                     int64_t *out_pn) {
    int64_t width = group_m * npn;
    int64_t group = pid / width;
    int64_t first_m = group * group_m;
    int64_t gsize = npm - first_m < group_m ? npm - first_m : group_m;
    *out_pm = first_m + (pid % width) % gsize;
    *out_pn = (pid % width) / gsize;
}

#endif
