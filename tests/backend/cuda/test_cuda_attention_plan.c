/* The CUDA attention's host-side plan (backend_cuda/ops_attention.c): every config the heuristic chooses passes
 * check_config and is one of the variants the NVRTC check compiles (so a heuristic change cannot pick a kernel CI
 * never compiled), the split over the keys goes to calls whose blocks fill less than a wave, and the limits refuse
 * what the kernels cannot run. Host-side only: no GPU needed (a NULL context is a device with the H200's limits
 * that runs mma.sync and not wgmma). */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_variant_list.h"
#include "trr_cuda.h"

/* A packed [B,H,S,D] call. */
static trr_call attention_call(trr_dtype dt, int64_t b, int64_t hq, int64_t hkv, int64_t sq, int64_t skv, int64_t d,
                               int causal) {
    trr_call c;
    memset(&c, 0, sizeof c);
    c.op = TRR_OP_ATTENTION;
    trr_operand *ops[4] = {&c.x, &c.y, &c.u, &c.z};
    for (int i = 0; i < 4; i++) {
        const int kv = ops[i] == &c.y || ops[i] == &c.u;
        const int64_t h = kv ? hkv : hq, s = kv ? skv : sq;
        ops[i]->dtype = dt;
        ops[i]->stride0 = d;
        ops[i]->stride1 = s * d;
        ops[i]->batch_stride = h * s * d;
    }
    c.w.dtype = TRR_F32;
    c.attn = (trr_attention_shape){.batch = b, .heads_q = hq, .heads_kv = hkv, .seq_q = sq, .seq_kv = skv,
                                   .head_dim = d, .scale = 0.125f, .causal = causal};
    c.rows = sq;
    c.cols = d;
    c.k = skv;
    c.batch = b;
    return c;
}

Test(cuda_attention_plan, every_choice_runs_and_is_compiled_by_the_nvrtc_check) {
    variant_list l = {0};
    trr_cuda_for_each_variant(collect, &l);
    static const trr_dtype dts[3] = {TRR_F32, TRR_F16, TRR_BF16};
    static const int64_t dims[] = {1, 3, 16, 17, 32, 63, 64, 80, 96, 100, 128, 129, 160, 192, 200, 256};
    static const int64_t seqs[][2] = {{1, 1}, {1, 4096}, {1, 32768}, {4, 1000}, {17, 127}, {127, 17}, {1024, 1024},
                                      {4096, 4096}};
    static const int64_t heads[][3] = {{1, 1, 1}, {32, 32, 8}, {2, 16, 16}, {1, 8, 1}};
    int checked = 0;
    for (int t = 0; t < 3; t++)
        for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
            for (size_t si = 0; si < sizeof seqs / sizeof seqs[0]; si++)
                for (size_t hi = 0; hi < sizeof heads / sizeof heads[0]; hi++)
                    for (int causal = 0; causal <= 1; causal++) {
                        trr_call c = attention_call(dts[t], heads[hi][0], heads[hi][1], heads[hi][2], seqs[si][0],
                                                    seqs[si][1], dims[di], causal);
                        trr_cuda_choose_config(NULL, &c);
                        cr_assert_eq(trr_cuda_check_config(NULL, &c), TRR_OK, "D %lld, %lld x %lld: %s",
                                     (long long)dims[di], (long long)seqs[si][0], (long long)seqs[si][1],
                                     trr_last_error(NULL));
                        cr_assert_eq(c.config.variant, dts[t] == TRR_F32 ? TRR_VARIANT_SIMT : TRR_VARIANT_MMA,
                                     "f32 takes the precise kernel, halves mma.sync");
                        trr_cuda_variant v;
                        trr_cuda_variant_attention(&v, c.config.variant, dts[t], trr_cuda_attention_dp(dims[di]),
                                                   &c.config);
                        cr_assert(listed(&l, &v), "D %lld, %lld x %lld: %s (%s) is not in the NVRTC check's list",
                                  (long long)dims[di], (long long)seqs[si][0], (long long)seqs[si][1], v.file,
                                  v.defines);
                        checked++;
                    }
    cr_assert_gt(checked, 0);
    free(l.items);
}

Test(cuda_attention_plan, head_dims_round_up_to_a_compiled_bucket) {
    int last = 0;
    for (int64_t d = 1; d <= 256; d++) {
        const int dp = trr_cuda_attention_dp(d);
        cr_assert_geq(dp, d);
        cr_assert_eq(dp % 16, 0, "D %lld: bucket %d", (long long)d, dp);
        cr_assert_geq(dp, last, "buckets grow with D");
        last = dp;
    }
}

Test(cuda_attention_plan, decode_splits_over_the_keys_and_prefill_does_not) {
    /* one kv head's 4 query rows against 32768 keys: one block a (batch, kv head), far below a wave */
    trr_call dec = attention_call(TRR_BF16, 1, 32, 8, 1, 32768, 128, 0);
    trr_cuda_choose_config(NULL, &dec);
    cr_assert_gt(dec.config.split_k, 1, "decode splits the keys");
    cr_assert_eq(dec.config.block_m, 16, "decode takes a 16-row tile");
    cr_assert_gt(dec.config.threads, 32, "decode's warps split the keys inside the block");
    /* many blocks already: no split */
    trr_call pre = attention_call(TRR_F16, 4, 16, 16, 4096, 4096, 128, 1);
    trr_cuda_choose_config(NULL, &pre);
    cr_assert_eq(pre.config.split_k, 1);
    cr_assert_eq(pre.config.block_m, 128);
    /* a split left to the caller is kept */
    trr_call asked = attention_call(TRR_F32, 1, 1, 1, 1, 1000, 64, 0);
    asked.config.split_k = 3;
    trr_cuda_choose_config(NULL, &asked);
    cr_assert_eq(asked.config.split_k, 3);
    cr_assert_eq(trr_cuda_check_config(NULL, &asked), TRR_OK, "%s", trr_last_error(NULL));
}

Test(cuda_attention_plan, limits_refuse_what_the_kernels_cannot_run) {
    trr_call c = attention_call(TRR_F32, 1, 2, 2, 64, 64, 64, 0);
    c.config = (trr_config){.variant = TRR_VARIANT_MMA};
    trr_cuda_choose_config(NULL, &c);
    cr_expect_eq(trr_cuda_check_config(NULL, &c), TRR_ERR_UNSUPPORTED, "f32 on mma.sync would round the products");

    c = attention_call(TRR_F16, 1, 2, 2, 64, 64, 64, 0);
    c.config = (trr_config){.variant = TRR_VARIANT_MMA, .block_m = 96, .threads = 128};
    trr_cuda_choose_config(NULL, &c);
    cr_expect_eq(trr_cuda_check_config(NULL, &c), TRR_ERR_UNSUPPORTED, "96 rows over 4 warps is 24 a warp");

    c = attention_call(TRR_F16, 1, 2, 2, 64, 64, 256, 0);
    c.config = (trr_config){.variant = TRR_VARIANT_MMA, .block_m = 128, .threads = 256, .block_n = 128, .stages = 4};
    trr_cuda_choose_config(NULL, &c);
    cr_expect_eq(trr_cuda_check_config(NULL, &c), TRR_ERR_UNSUPPORTED, "the tiles pass the shared memory");

    c = attention_call(TRR_F16, 1, 2, 2, 64, 64, 64, 0);
    c.config = (trr_config){.variant = TRR_VARIANT_WGMMA};
    trr_cuda_choose_config(NULL, &c);
    cr_expect_eq(trr_cuda_check_config(NULL, &c), TRR_ERR_UNSUPPORTED, "wgmma needs an sm_90a device");

    c = attention_call(TRR_BF16, 1, 2, 2, 64, 64, 64, 0);
    c.config = (trr_config){.variant = TRR_VARIANT_SUBGROUP};
    cr_expect_eq(trr_cuda_check_config(NULL, &c), TRR_ERR_UNSUPPORTED, "no subgroup attention kernel");
}

Test(cuda_attention_plan, decode_warps_walk_the_keys_where_shared_memory_allows) {
    /* the decode: a kv head's 4 query rows, every (batch, kv head) a block; 256 blocks fill the H200 */
    for (int64_t skv = 4096; skv <= 32768; skv *= 8) {
        trr_call c = attention_call(TRR_F16, 32, 32, 8, 1, skv, 128, 0);
        trr_cuda_choose_config(NULL, &c);
        cr_assert_eq(c.config.variant, TRR_VARIANT_MMA);
        cr_assert_eq(c.config.block_m, 16);
        cr_assert_geq(c.config.threads, 64, "Skv %lld: warps over the keys", (long long)skv);
        cr_assert_geq(c.config.stages, 2, "a ring of stages a warp");
        cr_assert_eq(c.config.split_k, 1, "Skv %lld: the blocks fill a wave already", (long long)skv);
        cr_assert_eq(trr_cuda_check_config(NULL, &c), TRR_OK, "%s", trr_last_error(NULL));
    }
    /* a device with 99 KB a block (compute capability 8.6): the decode tiles past it give way to the one-warp
     * tile, those within it are kept; every choice fits */
    trr_cuda_dev small;
    memset(&small, 0, sizeof small);
    small.cc_major = 8, small.cc_minor = 6, small.sm_count = 84, small.max_threads = 1024;
    small.smem_optin = 99 * 1024;
    snprintf(small.arch, sizeof small.arch, "sm_86");
    static const int64_t dims[] = {64, 128, 256};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        trr_call c = attention_call(TRR_BF16, 4, 32, 8, 1, 4096, dims[i], 0);
        trr_cuda_choose_attention(&small, &c);
        cr_assert_eq(trr_cuda_check_attention(NULL, &small, &c), TRR_OK, "D %lld: %s", (long long)dims[i],
                     trr_last_error(NULL));
        cr_assert_leq(trr_cuda_attention_smem(TRR_VARIANT_MMA, trr_cuda_attention_dp(dims[i]), &c.config),
                      (size_t)small.smem_optin);
        if (dims[i] == 64) cr_assert_gt(c.config.threads, 32, "D 64's decode tile fits 99 KB");
        else cr_assert_eq(c.config.threads, 32, "D %lld: the one-warp tile", (long long)dims[i]);
    }
}

Test(cuda_attention_plan, key_warp_configs_are_checked) {
    trr_call c = attention_call(TRR_F16, 2, 8, 2, 1, 3000, 64, 0);
    c.config = (trr_config){.variant = TRR_VARIANT_MMA, .block_m = 16, .threads = 256, .block_n = 32, .stages = 2};
    trr_cuda_choose_config(NULL, &c);
    cr_assert_eq(trr_cuda_check_config(NULL, &c), TRR_OK, "8 warps over the keys: %s", trr_last_error(NULL));
    /* the splits leave at least two key blocks for each of the block's warps */
    const int64_t steps = (3000 + 32 * 8 - 1) / (32 * 8);
    cr_assert_leq(c.config.split_k * 2, steps, "split_k %d over %lld steps of 8 warps", c.config.split_k,
                  (long long)steps);

    c = attention_call(TRR_F16, 2, 8, 2, 1, 3000, 64, 0);
    c.config = (trr_config){.variant = TRR_VARIANT_MMA, .block_m = 16, .threads = 128, .block_n = 16, .stages = 1};
    trr_cuda_choose_config(NULL, &c);
    cr_expect_eq(trr_cuda_check_config(NULL, &c), TRR_ERR_UNSUPPORTED, "warps over the keys need a ring each");

    c = attention_call(TRR_F16, 2, 8, 2, 1, 3000, 256, 0);
    c.config = (trr_config){.variant = TRR_VARIANT_MMA, .block_m = 16, .threads = 256, .block_n = 64, .stages = 4};
    trr_cuda_choose_config(NULL, &c);
    cr_expect_eq(trr_cuda_check_config(NULL, &c), TRR_ERR_UNSUPPORTED, "8 rings of 4 stages pass the shared memory");

    c = attention_call(TRR_BF16, 2, 8, 2, 1, 3000, 64, 0);
    c.config = (trr_config){.variant = TRR_VARIANT_MMA, .block_m = 32, .threads = 128};
    trr_cuda_choose_config(NULL, &c);
    cr_expect_eq(trr_cuda_check_config(NULL, &c), TRR_ERR_UNSUPPORTED, "only 16 rows share their warps' keys");
}
