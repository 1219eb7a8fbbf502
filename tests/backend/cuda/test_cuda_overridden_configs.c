/* The CUDA backend's heuristics and checks under overridden configs of the largest fields, host-side (no GPU):
 * for every built-in op, every dtype pair it takes and a few shapes, on no device (the H200's limits) and on a
 * faked H200 (wgmma rules included), the rule's choose then check either accept the config or refuse it as
 * unsupported, and no int overflows on the way (the ASan + UBSan run). What tests/conformance/
 * test_overridden_configs.c runs through the whole call path on the devices CI has, for the backend CI cannot
 * open. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "config_fields.h"
#include "cuda_matmul_call.h"
#include "op_table.h"

/* An [rows, cols] operand set of the op's shape (the attention's: [1, 8, rows, cols] queries over as many keys). */
static trr_call shaped_call(trr_op op, trr_dtype in, trr_dtype out, int64_t rows, int64_t cols) {
    const trr_op_desc *d = trr_op_desc_get(op);
    if (d->shape == TRR_SHAPE_MATMUL) {
        trr_call c = packed_matmul_call(in, in, out, rows, cols, cols, 1, 0);
        c.op = op;
        return c;
    }
    trr_call c;
    memset(&c, 0, sizeof c);
    c.op = op;
    trr_operand *ops[5] = {&c.x, &c.y, &c.u, &c.w, &c.z};
    for (int i = 0; i < 5; i++) {
        ops[i]->dtype = ops[i] == &c.z ? out : in;
        ops[i]->stride0 = cols;
        ops[i]->stride1 = rows * cols;
    }
    c.rows = rows;
    c.cols = cols;
    if (d->shape == TRR_SHAPE_ATTENTION) {
        c.w.dtype = TRR_F32;
        c.attn = (trr_attention_shape){.batch = 1, .heads_q = 8, .heads_kv = 8, .seq_q = rows, .seq_kv = rows,
                                       .head_dim = cols, .scale = 0.125f, .causal = 1};
        c.k = rows;
        c.batch = 1;
        for (int i = 0; i < 5; i++) ops[i]->batch_stride = 8 * rows * cols;
    }
    return c;
}

Test(cuda_overridden, largest_fields_are_refused_or_run) {
    const int F = TRR_CONFIG_FIELD_MAX;
    const trr_config huge[] = {
        {.threads = F, .vector_width = F},
        {.threads = F, .vector_width = 16},
        {.threads = 1024, .block_n = F},
        {.block_m = F, .block_n = F, .block_k = F, .threads = 1024},
        {.block_m = F, .block_n = F, .block_k = F, .threads = F, .stages = F, .split_k = F},
        {.block_m = F, .block_n = F, .block_k = F, .group_m = F, .threads = F, .stages = F, .vector_width = F,
         .split_k = F},
    };
    static const int64_t shapes[][2] = {{1, 17}, {5, 1000}, {16, 4096}, {3, 70000}, {64, 128}};
    trr_cuda_dev hopper = cuda_fake_h200();
    const trr_cuda_dev *devs[2] = {NULL, &hopper};
    int checked = 0;
    for (int op = 0; op < TRR_OP_COUNT; op++) {
        const trr_op_desc *d = trr_op_desc_get((trr_op)op);
        const trr_cuda_rule *r = trr_cuda_rule_for(d);
        if (!r) continue;
        for (int in = 0; in < TRR_DTYPE_COUNT; in++)
            for (int out = 0; out < TRR_DTYPE_COUNT; out++) {
                if (!trr_op_allows((trr_op)op, (trr_dtype)in, (trr_dtype)out)) continue;
                for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                    for (int v = 0; v < 2; v++)
                        for (size_t h = 0; h < sizeof huge / sizeof huge[0]; h++) {
                            trr_call c = shaped_call((trr_op)op, (trr_dtype)in, (trr_dtype)out, shapes[s][0],
                                                     shapes[s][1]);
                            c.config = huge[h];
                            r->choose(devs[v], &c);
                            const trr_status st = r->check(NULL, devs[v], &c);
                            cr_expect(st == TRR_OK || st == TRR_ERR_UNSUPPORTED,
                                      "%s %d -> %d, %lld x %lld, config %zu%s: %s", d->name, in, out,
                                      (long long)shapes[s][0], (long long)shapes[s][1], h, v ? " (H200)" : "",
                                      trr_last_error(NULL));
                            if (st == TRR_ERR_UNSUPPORTED)
                                cr_expect_str_neq(trr_last_error(NULL), "", "%s refused without a reason", d->name);
                            checked++;
                        }
            }
    }
    cuda_fake_h200_done();
    /* a rule may accept such a config (it ignores the fields it does not read): the call path's range check
     * refuses whatever field it filled past the largest one */
    cr_assert_gt(checked, 1000, "%d configs checked", checked);
}
