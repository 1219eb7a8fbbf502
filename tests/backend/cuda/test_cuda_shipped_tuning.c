/* The CUDA entries of the shipped tuning tables (tuning/cuda-*.json, embedded in the library) against the backend:
 * each config passes the backend's check on the device it names, and its kernels are among those the NVRTC check
 * compiles (trr_cuda_for_each_variant takes them from the tables: the tuner's space is wider than the backend's
 * own lists), so a kernel change that breaks a shipped config fails in CI, not on a user's GPU. Host-side only:
 * the H200 and H100 (132 SMs, sm_90a) are faked. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_matmul_call.h"
#include "cuda_variant_list.h"
#include "shipped_tuning.h"
#include "trr_cuda.h"

static trr_cuda_dev hopper;

static void hopper_setup(void) { hopper = cuda_fake_h200(); }

static void hopper_teardown(void) { cuda_fake_h200_done(); }

Test(cuda_shipped_tuning, every_matmul_entry_is_checked_and_compiled, .init = hopper_setup, .fini = hopper_teardown) {
    variant_list l = {0};
    trr_cuda_for_each_variant(collect, &l);
    int n = 0, matmuls = 0;
    trr_tune_entry *all = shipped_entries(&n);
    for (int i = 0; i < n; i++) {
        const trr_tune_entry *e = &all[i];
        if (strcmp(e->key.backend, "cuda") != 0 || e->key.op != TRR_OP_MATMUL) continue;
        cr_assert(strstr(e->key.device, "H100") || strstr(e->key.device, "H200"),
                  "entry %d is for %s: fake that device here", i, e->key.device);
        matmuls++;
        trr_call c = packed_matmul_call(e->key.in_dtype, e->key.in_dtype, e->key.out_dtype, e->shape[0], e->shape[1],
                                        e->shape[2], 1, e->key.trans_b);
        c.trans_a = e->key.trans_a;
        c.allow_tf32 = e->key.tf32;
        if (c.trans_a) c.x.stride0 = c.rows;
        c.config = e->config;
        cr_assert_eq(trr_cuda_check_matmul(NULL, &hopper, &c), TRR_OK, "entry %d (%lldx%lldx%lld): %s", i,
                     (long long)c.rows, (long long)c.cols, (long long)c.k, trr_last_error(NULL));
        trr_cuda_variant v[2];
        const int nv = trr_cuda_matmul_call_variants(&c, v);
        for (int j = 0; j < nv; j++)
            cr_expect(listed(&l, &v[j]), "entry %d (%lldx%lldx%lld, %d x %d, %d stages): %s %s is not compiled by the "
                      "NVRTC check", i, (long long)c.rows, (long long)c.cols, (long long)c.k, c.config.block_m,
                      c.config.block_n, c.config.stages, v[j].file, v[j].defines);
    }
    cr_expect_gt(matmuls, 0, "the shipped tables hold no CUDA matmul entry");
    free(all);
    free(l.items);
}
