/* A benchmark by its name (the op definitions declare them: trr_op_desc.benches), for the bench tests. */
#ifndef TRR_TEST_BENCH_IDS_H
#define TRR_TEST_BENCH_IDS_H

#include <criterion/criterion.h>

#include "bench.h"

static inline trr_bench_id bench_id(const char *name) {
    const int id = trr_bench_find(name);
    cr_assert_geq(id, 0, "no benchmark named %s", name);
    return (trr_bench_id)id;
}

#endif
