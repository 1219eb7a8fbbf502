/* f16 and bf16 products the 16-bit tensor-core kernels cannot read as stored (A stored [K,M], rows or bases off
 * 16 bytes) run on K-major copies of the operands concerned (backend_cuda/matmul_pack.c), not on the CUDA-core
 * kernel: the heuristic and the check see the copies, an operand already readable stays where it is, variant simt
 * and f32 read the caller's layout, and a device older than sm_80 gets no copies.
 * Host arithmetic only: no GPU needed. */
#include <criterion/criterion.h>

#include "cuda_matmul_call.h"
#include "trr_cuda.h"

#include <string.h>

Test(cuda_matmul_copies, readable_16_bit_operands_stay_in_place) {
    trr_call view;
    const trr_dtype dts[] = {TRR_F16, TRR_BF16};
    for (int d = 0; d < 2; d++) {
        trr_call c = cuda_matmul_call(dts[d], 256, 256, 256, 1);
        cr_expect_not(trr_cuda_matmul_view(NULL, &c, &view), "dtype %d: A [M,K], B [K,N] aligned", d);
        c.trans_b = 1; /* B stored [N,K]: the tensor cores read either way round */
        cr_expect_not(trr_cuda_matmul_view(NULL, &c, &view), "dtype %d: B stored [N,K]", d);
    }
}

Test(cuda_matmul_copies, a_stored_k_by_m_is_copied_k_major) {
    trr_call view;
    trr_call c = cuda_matmul_call(TRR_F16, 200, 256, 96, 1);
    c.trans_a = 1, c.x.stride0 = 200; /* A stored [K,M] */
    c.y.offset = 8;
    cr_assert(trr_cuda_matmul_view(NULL, &c, &view));
    cr_expect_eq(view.trans_a, 0);
    cr_expect_eq(view.x.stride0, 96, "K 96 is whole 16-byte rows already");
    cr_expect(view.y.offset == 8 && view.y.stride0 == c.y.stride0 && view.trans_b == 0, "B was readable");
    char why[200];
    cr_assert(trr_cuda_matmul_variant_runs(NULL, &view, TRR_VARIANT_MMA, why, sizeof why), "%s", why);
}

Test(cuda_matmul_copies, rows_off_16_bytes_are_padded) {
    trr_call view;
    /* N 1030: B [K,N] rows of 2060 bytes; K 4100: A's rows of 8200 bytes */
    trr_call c = cuda_matmul_call(TRR_BF16, 40, 1030, 4100, 1);
    cr_assert(trr_cuda_matmul_view(NULL, &c, &view));
    cr_expect_eq(view.x.stride0, 4104, "A's rows padded to 8 elements: %lld", (long long)view.x.stride0);
    cr_expect_eq(view.trans_b, 1);
    cr_expect_eq(view.y.stride0, 4104, "B copied as [N, K padded]: %lld", (long long)view.y.stride0);

    /* only B off: A stays (its offset of 8 elements, 16 bytes, marks it: a copy starts at 0) */
    trr_call b_only = cuda_matmul_call(TRR_F16, 40, 1030, 4096, 1);
    b_only.x.offset = 8;
    cr_assert(trr_cuda_matmul_view(NULL, &b_only, &view));
    cr_expect_eq(view.x.offset, 8, "A was readable");
    cr_expect_eq(view.y.stride0, 4096);

    /* a batch whose A matrices sit 4 elements apart from 16-byte lines: A copied into whole matrices */
    trr_call batched = cuda_matmul_call(TRR_F16, 64, 64, 64, 3);
    batched.x.batch_stride = 64 * 64 + 4;
    batched.y.offset = 8;
    cr_assert(trr_cuda_matmul_view(NULL, &batched, &view));
    cr_expect_eq(view.x.batch_stride, 64 * 64);
    cr_expect_eq(view.y.offset, 8, "B was readable");

    /* a base off 16 bytes (an offset of 3 elements) is copied too */
    trr_call based = cuda_matmul_call(TRR_F16, 64, 64, 64, 1);
    based.x.offset = 3;
    cr_assert(trr_cuda_matmul_view(NULL, &based, &view));
    cr_expect_eq(view.x.offset, 0);
}

Test(cuda_matmul_copies, simt_f32_and_old_devices_read_as_stored) {
    trr_call view;
    trr_call t = cuda_matmul_call(TRR_F16, 128, 128, 128, 1);
    t.trans_a = 1;
    t.config.variant = TRR_VARIANT_SIMT;
    cr_expect_not(trr_cuda_matmul_view(NULL, &t, &view), "the CUDA-core kernel reads A stored [K,M]");
    trr_call f = cuda_matmul_call(TRR_F32, 128, 128, 128, 1);
    f.trans_a = 1;
    cr_expect_not(trr_cuda_matmul_view(NULL, &f, &view), "f32 runs on the CUDA cores as stored");
    trr_cuda_dev turing;
    memset(&turing, 0, sizeof turing);
    turing.cc_major = 7, turing.cc_minor = 5;
    t.config.variant = 0;
    cr_expect_not(trr_cuda_matmul_view(&turing, &t, &view), "sm_75 has no 16-bit tensor-core kernels here");
}

/* The whole path on a faked H200: a transposed A and an odd N, chosen and checked as the copies will run, land on
 * the tensor cores with the split-K the few output tiles call for. */
Test(cuda_matmul_copies, chosen_for_the_tensor_cores) {
    trr_cuda_dev hopper = cuda_fake_h200();
    trr_call c = cuda_matmul_call(TRR_F16, 40, 1030, 4104, 1);
    trr_cuda_choose_matmul(&hopper, &c);
    const trr_status st = trr_cuda_check_matmul(NULL, &hopper, &c);
    trr_call t = cuda_matmul_call(TRR_BF16, 2048, 2048, 2048, 1);
    t.trans_a = 1;
    trr_cuda_choose_matmul(&hopper, &t);
    const trr_status st_t = trr_cuda_check_matmul(NULL, &hopper, &t);
    cuda_fake_h200_done();
    cr_assert_eq(st, TRR_OK, "%s", trr_last_error(NULL));
    cr_expect_neq(c.config.variant, TRR_VARIANT_SIMT);
    cr_expect_gt(c.config.split_k, 1, "40 rows of 1030 columns leave most SMs idle");
    cr_assert_eq(st_t, TRR_OK, "%s", trr_last_error(NULL));
    cr_expect_eq(t.config.variant, TRR_VARIANT_WGMMA);
}

/* On Hopper, wgmma reads a 16-bit A stored [K,M] as stored (M-major, TRANS_A): no copy where wgmma runs the
 * product (the heuristic's choice past the few-row tiles, or asked for); mma.sync, which reads A along K only,
 * still takes a copy (few rows, or variant mma). Every such wgmma form is one the NVRTC check compiles. */
static void listed_define(const trr_cuda_variant *v, void *user) {
    trr_cuda_variant *want = user;
    if (strcmp(v->file, want->file) == 0 && strcmp(v->defines, want->defines) == 0) want->file = "";
}

Test(cuda_matmul_copies, wgmma_reads_a_stored_k_by_m) {
    trr_cuda_dev hopper = cuda_fake_h200();
    trr_call view;
    const trr_dtype dts[] = {TRR_F16, TRR_BF16};
    for (int d = 0; d < 2; d++) {
        trr_call c = cuda_matmul_call(dts[d], 2048, 2048, 2048, 1);
        c.trans_a = 1;
        cr_expect_not(trr_cuda_matmul_view(&hopper, &c, &view), "dtype %d: wgmma reads A as stored", d);
        trr_cuda_choose_matmul(&hopper, &c);
        cr_assert_eq(trr_cuda_check_matmul(NULL, &hopper, &c), TRR_OK, "%s", trr_last_error(NULL));
        cr_expect_eq(c.config.variant, TRR_VARIANT_WGMMA);
        trr_cuda_variant v;
        trr_cuda_variant_matmul_wgmma_layout(&v, &c.config, 1, 0, dts[d], dts[d], dts[d]);
        cr_expect(strstr(v.defines, "-DTRANS_A=1") != NULL, "%s", v.defines);
        trr_cuda_for_each_variant(listed_define, &v);
        cr_expect_str_empty(v.file, "%s is not compiled by the NVRTC check", v.defines);
    }
    /* a split of few tiles and a long K, and B stored [N,K]: the same, into f32 partials */
    trr_call s = cuda_matmul_call(TRR_F16, 256, 256, 16384, 1);
    s.trans_a = 1, s.trans_b = 1, s.y.stride0 = 16384;
    cr_expect_not(trr_cuda_matmul_view(&hopper, &s, &view));
    trr_cuda_choose_matmul(&hopper, &s);
    cr_assert_eq(trr_cuda_check_matmul(NULL, &hopper, &s), TRR_OK, "%s", trr_last_error(NULL));
    cr_expect_eq(s.config.variant, TRR_VARIANT_WGMMA);
    if (s.config.split_k > 1) {
        trr_cuda_variant v;
        trr_cuda_variant_matmul_wgmma_layout(&v, &s.config, 1, 1, TRR_F16, TRR_F16, TRR_F32);
        trr_cuda_for_each_variant(listed_define, &v);
        cr_expect_str_empty(v.file, "%s is not compiled by the NVRTC check", v.defines);
    }

    /* B's rows off 16 bytes (N 1030): B alone is copied, A still read as stored */
    trr_call odd = cuda_matmul_call(TRR_BF16, 1024, 1030, 2048, 1);
    odd.trans_a = 1, odd.x.stride0 = 1024;
    cr_assert(trr_cuda_matmul_view(&hopper, &odd, &view));
    cr_expect(view.trans_a == 1 && view.x.stride0 == 1024, "A read as stored beside B's copy");
    cr_expect(view.trans_b == 1 && view.y.stride0 == 2048, "B copied K-major");
    trr_cuda_choose_matmul(&hopper, &odd);
    cr_assert_eq(trr_cuda_check_matmul(NULL, &hopper, &odd), TRR_OK, "%s", trr_last_error(NULL));
    cr_expect_eq(odd.config.variant, TRR_VARIANT_WGMMA);

    /* few rows: mma's few-row tiles from a copy of A */
    trr_call few = cuda_matmul_call(TRR_F16, 16, 4096, 4096, 1);
    few.trans_a = 1, few.x.stride0 = 16;
    cr_assert(trr_cuda_matmul_view(&hopper, &few, &view));
    cr_expect_eq(view.trans_a, 0);
    trr_cuda_choose_matmul(&hopper, &few);
    cr_assert_eq(trr_cuda_check_matmul(NULL, &hopper, &few), TRR_OK, "%s", trr_last_error(NULL));
    cr_expect_eq(few.config.variant, TRR_VARIANT_MMA);
    /* mma asked for: a copy too */
    trr_call m = cuda_matmul_call(TRR_F16, 2048, 2048, 2048, 1);
    m.trans_a = 1;
    m.config.variant = TRR_VARIANT_MMA;
    cr_expect(trr_cuda_matmul_view(&hopper, &m, &view));
    cuda_fake_h200_done();
}
