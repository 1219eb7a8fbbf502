/* Overridden config fields reach TRR_CONFIG_FIELD_MAX each, and the heuristics fill block_n from products of them
 * (threads x vector width x loads), their checks from products of tile sides: a call under such a config is
 * refused with the reason or runs right (a backend may not use those fields), and no int overflows on the way
 * (the ASan + UBSan run; fuzz seeds found OpenCL's elementwise and row norms' products overflowing). Every
 * backend present (the CPU backend, OpenCL, Vulkan; CUDA where a driver is). */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>

#include "forced_conformance.h"
#include "op_table.h"
#include "tune_db_fixture.h"

#include <stdio.h>
#include <string.h>

/* no user tuning database: each call runs the forced config or the heuristic */
TestSuite(overridden, .init = tune_db_setup, .fini = tune_db_teardown);

static const char *devices[] = {"cpu", "opencl:0", "vulkan:0", "cuda:0"};

/* Every op, each through its conformance cases (the quick list: random inputs, poisoned outputs, guard bytes,
 * the float64 reference), under configs of the largest fields: no case fails, a refused one says why. Tile ops
 * (matmul, attention) take largest tiles with a thread count each device runs too, so their tile products are
 * reached rather than refused at the threads; the other ops would only compile one more kernel with it. */
Test(overridden, every_op_at_the_largest_fields, .timeout = 900) {
    const int F = TRR_CONFIG_FIELD_MAX;
    const trr_config huge[] = {
        {.threads = F, .vector_width = F},
        {.threads = F, .vector_width = 16},
        {.block_m = F, .block_n = F, .block_k = F, .group_m = F, .threads = F, .stages = F, .vector_width = F,
         .split_k = F},
    };
    const trr_config tiles[] = {
        {.block_m = F, .block_n = F, .block_k = F, .threads = 1024},
        {.block_m = F, .block_n = F, .block_k = F, .group_m = F, .threads = 1024, .stages = F, .split_k = F},
        {.group_m = F, .threads = 1024, .stages = F, .split_k = F},
        {.block_m = 64, .block_n = 64, .block_k = F, .threads = 256, .stages = F},
    };
    const size_t n_huge = sizeof huge / sizeof *huge, n_tiles = sizeof tiles / sizeof *tiles;
    int ran = 0;
    for (size_t d = 0; d < sizeof devices / sizeof *devices; d++) {
        trr_context *ctx = NULL;
        if (trr_context_create(devices[d], &ctx) != TRR_OK) continue;
        ran++;
        for (int op = 0; op < TRR_OP_COUNT; op++) {
            const char *name = "?";
            trr_op_name((trr_op)op, &name);
            const int tile_op = (trr_op_desc_get((trr_op)op)->config_fields & TRR_CFG_BLOCK_M) != 0;
            for (size_t h = 0; h < n_huge + (tile_op ? n_tiles : 0); h++) {
                char label[96];
                snprintf(label, sizeof label, "%s %s, config %zu: ", devices[d], name, h);
                const trr_config *forced = h < n_huge ? &huge[h] : &tiles[h - n_huge];
                trr_conformance_free(run_forced_conformance(ctx, (trr_op)op, forced, 1, label));
            }
        }
        trr_context_destroy(ctx);
    }
    cr_assert_gt(ran, 0, "no backend opened");
}

/* add, softmax, row_sum and matmul under such configs, with their values checked here. */
Test(overridden, products) {
    const trr_config huge[] = {{.threads = 65536, .vector_width = 65536}, {.threads = 65536, .vector_width = 16}};
    const trr_config tiles[] = {{.block_m = 65536, .block_n = 65536, .block_k = 65536, .threads = 1024},
                                {.block_m = 65536, .block_n = 65536, .block_k = 65536, .threads = 65536}};
    float in[128];
    for (int i = 0; i < 64; i++) in[i] = (float)i, in[64 + i] = (float)(2 * i);
    int ran = 0;
    for (size_t d = 0; d < sizeof devices / sizeof *devices; d++) {
        trr_context *ctx = NULL;
        if (trr_context_create(devices[d], &ctx) != TRR_OK) continue;
        ran++;
        trr_buffer *buf = NULL;
        cr_assert_eq(trr_buffer_create(ctx, 3 * 64 * 4, &buf), TRR_OK);
        trr_tensor x, y, z, x2, r, s;
        cr_assert_eq(trr_tensor_1d(buf, 0, TRR_F32, 64, &x), TRR_OK);
        cr_assert_eq(trr_tensor_1d(buf, 64 * 4, TRR_F32, 64, &y), TRR_OK);
        cr_assert_eq(trr_tensor_1d(buf, 128 * 4, TRR_F32, 64, &z), TRR_OK);
        cr_assert_eq(trr_tensor_2d(buf, 0, TRR_F32, 4, 16, 0, &x2), TRR_OK);
        cr_assert_eq(trr_tensor_2d(buf, 128 * 4, TRR_F32, 4, 16, 0, &s), TRR_OK);
        cr_assert_eq(trr_tensor_1d(buf, 128 * 4, TRR_F32, 4, &r), TRR_OK);
        trr_tensor b2, c2; /* x2 (4 x 16) times y's 64 values as 16 x 4 into z's first 16 */
        cr_assert_eq(trr_tensor_2d(buf, 64 * 4, TRR_F32, 16, 4, 0, &b2), TRR_OK);
        cr_assert_eq(trr_tensor_2d(buf, 128 * 4, TRR_F32, 4, 4, 0, &c2), TRR_OK);
        for (size_t h = 0; h < sizeof huge / sizeof *huge; h++) {
            const trr_op ops[] = {TRR_OP_ADD, TRR_OP_SOFTMAX, TRR_OP_ROW_SUM, TRR_OP_MATMUL};
            const char *names[] = {"add", "softmax", "row_sum", "matmul"};
            for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
                cr_assert_eq(trr_config_override(ctx, ops[o], ops[o] == TRR_OP_MATMUL ? &tiles[h] : &huge[h]), TRR_OK);
                cr_assert_eq(trr_buffer_write(ctx, buf, 0, in, sizeof in), TRR_OK);
                trr_status st = ops[o] == TRR_OP_ADD       ? trr_add(ctx, &x, &y, &z)
                                : ops[o] == TRR_OP_SOFTMAX ? trr_softmax(ctx, &x2, &s)
                                : ops[o] == TRR_OP_ROW_SUM ? trr_row_sum(ctx, &x2, &r)
                                                           : trr_matmul(ctx, &x2, &b2, &c2, TRR_EPI_NONE, 0, 0);
                if (st != TRR_OK) {
                    cr_expect_neq(st, TRR_ERR_INTERNAL, "%s %s: %s", devices[d], names[o], trr_last_error(ctx));
                    cr_expect_str_neq(trr_last_error(ctx), "", "%s %s", devices[d], names[o]);
                    continue;
                }
                if (ops[o] == TRR_OP_SOFTMAX) continue; /* ran; its values are the conformance suite's */
                float out[64];
                const int n = ops[o] == TRR_OP_ADD ? 64 : ops[o] == TRR_OP_MATMUL ? 16 : 4;
                cr_assert_eq(trr_buffer_read(ctx, buf, 128 * 4, out, (size_t)n * 4), TRR_OK);
                for (int i = 0; i < n; i++) {
                    float want = 0;
                    if (ops[o] == TRR_OP_ADD) want = (float)(3 * i);
                    else if (ops[o] == TRR_OP_MATMUL) /* A: row i/4 of 0..63, B[j][q] = 2 (4 j + q) */
                        for (int j = 0; j < 16; j++) want += (float)(16 * (i / 4) + j) * (float)(2 * (4 * j + i % 4));
                    else
                        for (int j = 0; j < 16; j++) want += (float)(16 * i + j);
                    cr_expect_eq(out[i], want, "%s %s with threads %d x vector width %d: [%d] %g, want %g", devices[d],
                                 names[o], huge[h].threads, huge[h].vector_width, i, out[i], want);
                }
            }
        }
        trr_buffer_destroy(buf);
        trr_context_destroy(ctx);
    }
    cr_assert_gt(ran, 0, "no backend opened");
}
