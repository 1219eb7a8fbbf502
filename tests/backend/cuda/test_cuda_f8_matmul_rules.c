/* Which CUDA kernels take a matmul of 8-bit floats (backend_cuda/config_matmul.c) and what they are compiled with
 * (variants.c): the tensor cores only, with K-major operands (A row-major, B stored [N,K]), 16-byte rows, which
 * other layouts reach through copies; the configs the heuristic picks pass the backend's own check; mma.sync
 * variants carry sm_89 as their oldest target.
 * Host arithmetic only: no GPU needed (no device: mma.sync assumed available, wgmma not). */
#include <criterion/criterion.h>

#include "cuda_matmul_call.h"
#include "op_table.h"
#include "trr_cuda.h"

#include <string.h>

/* A row-major [M,K] with B stored [N,K]: the layout the 8-bit float tensor cores take. */
static trr_call f8_call(trr_dtype a, trr_dtype b, trr_dtype out, int64_t m, int64_t n, int64_t k) {
    trr_call c = cuda_matmul_call(a, m, n, k, 1);
    c.y.dtype = b;
    c.z.dtype = out;
    c.trans_b = 1;
    c.y.stride0 = k;
    return c;
}

Test(cuda_f8_matmul, tensor_cores_take_k_major_operands) {
    char why[200];
    trr_call c = f8_call(TRR_F8E4M3, TRR_F8E4M3, TRR_BF16, 1024, 1024, 1024);
    cr_assert(trr_cuda_matmul_variant_runs(NULL, &c, TRR_VARIANT_MMA, why, sizeof why), "%s", why);
    cr_assert_eq(trr_cuda_matmul_auto_variant(NULL, &c), TRR_VARIANT_MMA);
    /* no CUDA-core kernel takes them */
    cr_assert_not(trr_cuda_matmul_variant_runs(NULL, &c, TRR_VARIANT_SIMT, why, sizeof why));
    cr_expect(strstr(why, "8-bit floats run on the tensor cores") != NULL, "%s", why);

    trr_call nk = c;
    nk.trans_b = 0, nk.y.stride0 = 1024; /* B row-major [K,N] */
    cr_assert_not(trr_cuda_matmul_variant_runs(NULL, &nk, TRR_VARIANT_MMA, why, sizeof why));
    cr_expect(strstr(why, "B stored [N,K]") != NULL, "%s", why);
    /* the auto choice stays on mma, so the check names the tensor cores' reason */
    cr_expect_eq(trr_cuda_matmul_auto_variant(NULL, &nk), TRR_VARIANT_MMA);

    trr_call ta = c;
    ta.trans_a = 1;
    cr_assert_not(trr_cuda_matmul_variant_runs(NULL, &ta, TRR_VARIANT_MMA, why, sizeof why));
    cr_expect(strstr(why, "A row-major") != NULL, "%s", why);

    trr_call odd = f8_call(TRR_F8E5M2, TRR_F8E4M3, TRR_F32, 64, 64, 1000); /* lda 1000: not 16-byte rows */
    cr_assert_not(trr_cuda_matmul_variant_runs(NULL, &odd, TRR_VARIANT_MMA, why, sizeof why));
    cr_expect(strstr(why, "multiples of 16") != NULL, "%s", why);
}

Test(cuda_f8_matmul, the_heuristic_picks_configs_its_check_takes) {
    const int64_t sizes[][3] = {{1, 17, 4096}, {128, 4096, 4096}, {1001, 784, 528}, {4096, 4096, 4096}};
    const trr_dtype pairs[3][2] = {{TRR_F8E4M3, TRR_F8E4M3}, {TRR_F8E5M2, TRR_F8E4M3}, {TRR_F8E4M3, TRR_F8E5M2}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int p = 0; p < 3; p++) {
            trr_call c = f8_call(pairs[p][0], pairs[p][1], TRR_F16, sizes[i][0], sizes[i][1], sizes[i][2]);
            trr_cuda_choose_config(NULL, &c);
            cr_assert_eq(c.config.variant, TRR_VARIANT_MMA, "size %zu", i);
            cr_assert_eq(trr_cuda_check_config(NULL, &c), TRR_OK, "size %zu: %s", i, trr_last_error(NULL));
            /* a K step of mma.sync is 32 8-bit elements */
            cr_expect_eq(c.config.block_k % 32, 0);
        }
    /* the wgmma configs: 128 x 128 or 128 x 256 with block_k 128 only, inside a Hopper block's shared memory */
    for (int i = 0; i < trr_cuda_wgmma_f8_config_count; i++) {
        const trr_config *f = &trr_cuda_wgmma_f8_configs[i];
        cr_expect(f->block_n == 128 || f->block_n == 256, "config %d: block_n %d", i, f->block_n);
        cr_expect_eq(f->block_k, 128);
        /* the same 128-byte rows as the 16-bit kernel's: the same shared memory */
        trr_config h = *f;
        h.block_k = TRR_CUDA_WGMMA_BK;
        const trr_dtype outs[] = {TRR_F32, TRR_F16, TRR_BF16};
        for (int o = 0; o < 3; o++) {
            cr_expect_eq(trr_cuda_wgmma_smem(f, outs[o]), trr_cuda_wgmma_smem(&h, outs[o]));
            cr_expect_leq(trr_cuda_wgmma_smem(f, outs[o]) + 128u, 227u * 1024u, "config %d", i);
        }
    }
}

/* The heuristic's wgmma config on a faked H200 (132 SMs, sm_90a), checked by the backend. */
static trr_config chosen_on_hopper(int64_t m, int64_t n, int64_t k, int block_n) {
    trr_cuda_dev hopper = cuda_fake_h200();
    trr_call c = f8_call(TRR_F8E4M3, TRR_F8E4M3, TRR_BF16, m, n, k);
    c.config.block_n = block_n;
    trr_cuda_choose_matmul(&hopper, &c);
    const trr_status st = trr_cuda_check_matmul(NULL, &hopper, &c);
    cuda_fake_h200_done();
    cr_assert_eq(st, TRR_OK, "%lldx%lldx%lld: %s", (long long)m, (long long)n, (long long)k, trr_last_error(NULL));
    cr_assert_eq(c.config.variant, TRR_VARIANT_WGMMA);
    return c.config;
}

Test(cuda_f8_matmul, large_products_take_the_one_partial_wide_tile) {
    /* 128 x 256 (one partial, a half at a time) where it fills the SMs: 4096^3 alone, 8192^3 in clusters of two */
    trr_config c = chosen_on_hopper(4096, 4096, 4096, 0);
    cr_expect_eq(c.block_n, 256);
    cr_expect_eq(c.block_m, 128);
    cr_expect_eq(c.stages, 4);
    c = chosen_on_hopper(8192, 8192, 8192, 0);
    cr_expect_eq(c.block_n, 256);
    cr_expect_eq(c.block_m, 256);
    /* block_n 128 gives the two-partial 128 x 128 config as it was: 6 stages, clusters at 8192^3 only */
    c = chosen_on_hopper(4096, 4096, 4096, 128);
    cr_expect_eq(c.block_m, 128);
    cr_expect_eq(c.stages, 6);
    c = chosen_on_hopper(8192, 8192, 8192, 128);
    cr_expect_eq(c.block_m, 256);
    cr_expect_eq(c.stages, 6);
    /* a narrow product keeps 128 x 128 */
    c = chosen_on_hopper(2048, 128, 4096, 0);
    cr_expect_eq(c.block_n, 128);
}

/* A layout or alignment the FP8 tensor cores cannot read runs on K-major copies of the operands it concerns
 * (matmul_pack.c): the heuristic and the check see the copies (rows of K rounded up to 16 bytes, one matrix per
 * batched input, a shared input copied once), the operand already readable is left where it is, and a device
 * without FP8 tensor cores gets no copies (the check's reason stands). */
Test(cuda_f8_matmul, other_layouts_run_on_k_major_copies) {
    trr_call view;
    trr_call ready = f8_call(TRR_F8E4M3, TRR_F8E4M3, TRR_BF16, 1024, 1024, 1024);
    cr_assert_not(trr_cuda_matmul_view(NULL, &ready, &view), "a K-major, aligned product is copied");

    trr_call nn = ready;
    nn.trans_b = 0, nn.y.stride0 = 1024; /* B stored [K,N] */
    cr_assert(trr_cuda_matmul_view(NULL, &nn, &view));
    cr_expect_eq(view.trans_b, 1);
    cr_expect_eq(view.y.stride0, 1024);
    cr_expect_eq(view.y.batch_stride, 0);
    cr_expect_eq(view.trans_a, 0);
    cr_expect(view.x.stride0 == nn.x.stride0 && view.x.mem == nn.x.mem, "A was readable as stored");

    trr_call odd = f8_call(TRR_F8E5M2, TRR_F8E4M3, TRR_F32, 64, 48, 1000); /* K 1000: lda and ldb not 16-byte rows */
    odd.trans_a = 1, odd.x.stride0 = 64;                                    /* A stored [K,M] */
    cr_assert(trr_cuda_matmul_view(NULL, &odd, &view));
    cr_expect_eq(view.trans_a, 0);
    cr_expect_eq(view.x.stride0, 1008, "K 1000 in rows of %lld", (long long)view.x.stride0);
    cr_expect_eq(view.y.stride0, 1008);
    char why[200];
    cr_assert(trr_cuda_matmul_variant_runs(NULL, &view, TRR_VARIANT_MMA, why, sizeof why), "%s", why);

    /* a batch of 3: A's own matrices copied three times, B shared (batch stride 0) copied once */
    trr_call batched = nn;
    batched.batch = 3;
    batched.x.batch_stride = 1024 * 1024, batched.z.batch_stride = 1024 * 1024;
    cr_assert(trr_cuda_matmul_view(NULL, &batched, &view));
    cr_expect_eq(view.y.batch_stride, 0);
    cr_expect_eq(view.x.batch_stride, 1024 * 1024);
    batched.y.batch_stride = 1024 * 1024 + 8; /* B's matrices 8 bytes apart from 16-byte lines */
    batched.trans_b = 1;
    cr_assert(trr_cuda_matmul_view(NULL, &batched, &view));
    cr_expect_eq(view.y.batch_stride, 1024 * 1024, "B copied into whole matrices of [N, K]");

    trr_cuda_dev ampere;
    memset(&ampere, 0, sizeof ampere);
    ampere.cc_major = 8;
    cr_expect_not(trr_cuda_matmul_view(&ampere, &nn, &view), "sm_80 has no FP8 tensor cores to copy for");

    /* the whole path on a faked H200: chosen and checked as the copies will run */
    trr_cuda_dev hopper = cuda_fake_h200();
    trr_call c = nn;
    trr_cuda_choose_matmul(&hopper, &c);
    const trr_status st = trr_cuda_check_matmul(NULL, &hopper, &c);
    cuda_fake_h200_done();
    cr_assert_eq(st, TRR_OK, "%s", trr_last_error(NULL));
    cr_expect_eq(c.config.variant, TRR_VARIANT_WGMMA);
    cr_expect_eq(c.trans_b, 0, "the caller's call keeps its own layout");
}

Test(cuda_f8_matmul, variants_say_their_types_and_targets) {
    trr_cuda_variant v;
    trr_cuda_variant_matmul_mma_ab(&v, &trr_cuda_mma_f8_configs[0], 1, TRR_F8E5M2, TRR_F8E4M3, TRR_BF16);
    cr_expect(strstr(v.defines, "-DDT_IN=5") != NULL && strstr(v.defines, "-DDT_B=4") != NULL, "%s", v.defines);
    cr_expect_eq(v.min_sm, 89);
    trr_cuda_variant_matmul_mma_ab(&v, &trr_cuda_mma_f8_configs[0], 1, TRR_F8E4M3, TRR_F8E4M3, TRR_F32);
    cr_expect_null(strstr(v.defines, "DT_B"), "%s", v.defines);
    /* the 16-bit variants keep their options (and their disk-cache keys) */
    trr_cuda_variant_matmul_mma(&v, &trr_matmul_f16_nvidia_configs[0], 1, TRR_F16, TRR_F16);
    cr_expect_null(strstr(v.defines, "DT_B"), "%s", v.defines);
    cr_expect_eq(v.min_sm, 0);
    trr_cuda_variant_matmul_wgmma_ab(&v, &trr_cuda_wgmma_f8_configs[0], 1, TRR_F8E4M3, TRR_F8E5M2, TRR_BF16);
    cr_expect(v.sm90a_only);
    cr_expect(strstr(v.defines, "-DDT_IN=4") != NULL && strstr(v.defines, "-DDT_B=5") != NULL, "%s", v.defines);
}
