/* The CUDA matmul's split-K (backend_cuda/config_matmul.c, ops_matmul.c): the heuristic splits K only where the output
 * tiles leave SMs idle and K is long enough, leaves the grids that fill the SMs (4096^3, 8192^3, the large LLM
 * products) at split_k 1, picks configs its own check takes and the NVRTC check compiles; the check's limits;
 * and the split kernels (wgmma, mma.sync, the second pass) compile with NVRTC for sm_80 and sm_90a without a
 * warning. Host-side only: no GPU needed. An H200-like device (132 SMs, sm_90a, a driver with tensor maps) is
 * faked for the wgmma rules. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_matmul_call.h"
#include "op_table.h"
#include "cuda_variant_list.h"
#include "trr_cuda.h"

static trr_cuda_dev hopper;

static void hopper_setup(void) { hopper = cuda_fake_h200(); }

static void hopper_teardown(void) { cuda_fake_h200_done(); }

/* The heuristic's config for a call on the faked H200, checked by the backend and found among the variants the
 * NVRTC check compiles (the main kernel, and for a wgmma split the second pass into C's type; mma.sync joins its
 * splits in the kernel, into C's type). */
static trr_call chosen(const variant_list *l, trr_dtype dt, int64_t m, int64_t n, int64_t k, int64_t batch) {
    trr_call c = cuda_matmul_call(dt, m, n, k, batch);
    trr_cuda_choose_matmul(&hopper, &c);
    cr_assert_eq(trr_cuda_check_matmul(NULL, &hopper, &c), TRR_OK, "%lldx%lldx%lld: %s", (long long)m, (long long)n,
                 (long long)k, trr_last_error(NULL));
    const int wgmma = c.config.variant == TRR_VARIANT_WGMMA || c.config.variant == TRR_VARIANT_STREAMK;
    const trr_dtype main_out = wgmma && c.config.split_k > 1 ? TRR_F32 : c.z.dtype;
    trr_cuda_variant v;
    if (wgmma)
        trr_cuda_variant_matmul_wgmma(&v, &c.config, 0, dt, main_out);
    else
        trr_cuda_variant_matmul_mma(&v, &c.config, 0, dt, main_out);
    cr_assert(listed(l, &v), "%lldx%lldx%lld: %s %s is not compiled by the NVRTC check", (long long)m, (long long)n,
              (long long)k, v.file, v.defines);
    if (wgmma && c.config.split_k > 1) {
        trr_cuda_variant_matmul_reduce(&v, c.z.dtype);
        cr_assert(listed(l, &v), "%s %s is not compiled by the NVRTC check", v.file, v.defines);
    }
    return c;
}

static int64_t grid_tiles(const trr_call *c) {
    const int64_t b = c->batch > 1 ? c->batch : 1;
    return ((c->rows + c->config.block_m - 1) / c->config.block_m) *
           ((c->cols + c->config.block_n - 1) / c->config.block_n) * b;
}

Test(cuda_matmul_split, grids_that_fill_the_sms_keep_one_split, .init = hopper_setup, .fini = hopper_teardown) {
    variant_list l = {0};
    trr_cuda_for_each_variant(collect, &l);
    const int64_t full[][3] = {{4096, 4096, 4096},  {8192, 8192, 8192},  {2048, 2048, 2048},  {2048, 4096, 4096},
                               {2048, 11008, 4096}, {2048, 4096, 11008}, {8192, 14336, 4096}, {1536, 1536, 1536}};
    for (size_t i = 0; i < sizeof full / sizeof full[0]; i++)
        for (int h = 0; h < 2; h++) {
            trr_call c = chosen(&l, h ? TRR_BF16 : TRR_F16, full[i][0], full[i][1], full[i][2], 1);
            /* the 192-wide tile where the tiles leave a part wave (1536^3, 2048 x 11008 x 4096); never stream-K
             * unless asked for */
            cr_expect_eq(c.config.variant, TRR_VARIANT_WGMMA, "%zu", i);
            cr_expect_eq(c.config.split_k, 1, "%lldx%lldx%lld split %d ways", (long long)full[i][0],
                         (long long)full[i][1], (long long)full[i][2], c.config.split_k);
        }
    free(l.items);
}

Test(cuda_matmul_split, small_grids_with_long_k_split_to_fill_the_sms, .init = hopper_setup,
     .fini = hopper_teardown) {
    variant_list l = {0};
    trr_cuda_for_each_variant(collect, &l);
    const int64_t small[][3] = {{768, 768, 4096}, {1024, 768, 8192}};
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++) {
        trr_call c = chosen(&l, TRR_F16, small[i][0], small[i][1], small[i][2], 1);
        const int s = c.config.split_k;
        cr_expect_eq(c.config.variant, TRR_VARIANT_WGMMA, "%zu", i);
        cr_expect_gt(s, 1, "%lldx%lldx%lld is not split", (long long)small[i][0], (long long)small[i][1],
                     (long long)small[i][2]);
        /* the split grid covers at least 80% of the SMs, and each split keeps its minimum steps of K */
        cr_expect_geq(grid_tiles(&c) * s * 10, 132 * 8, "%zu: %lld tiles x %d", i, (long long)grid_tiles(&c), s);
        cr_expect_geq(small[i][2], (int64_t)s * TRR_CUDA_SPLIT_MIN_STEPS * c.config.block_k, "%zu", i);
        cr_expect_geq(small[i][2], (int64_t)s * TRR_CUDA_SPLIT_MIN_K_WIDE, "%zu", i);
        cr_expect_leq(s, TRR_CUDA_SPLIT_K_MAX);
    }
    /* past 64 rows a split keeps 1024 of K: 768^3 and 896^3 stay whole */
    for (int64_t n = 768; n <= 896; n += 128) {
        trr_call c = chosen(&l, TRR_F16, n, n, n, 1);
        cr_expect_eq(c.config.split_k, 1, "%lld^3 split %d ways", (long long)n, c.config.split_k);
    }
    /* past 64 rows, grids that fill more than 40% of the SMs keep one split (the partials weigh as much as the
     * operands): 128 x 11008 (86 tiles), 1024^3 (64) */
    const int64_t wide_m[][3] = {{128, 11008, 4096}, {1024, 1024, 1024}};
    for (size_t i = 0; i < sizeof wide_m / sizeof wide_m[0]; i++) {
        trr_call c = chosen(&l, TRR_F16, wide_m[i][0], wide_m[i][1], wide_m[i][2], 1);
        cr_expect_eq(c.config.split_k, 1, "%zu split %d ways", i, c.config.split_k);
    }
    /* K too short to split: a small cube keeps one split */
    trr_call tiny = chosen(&l, TRR_F16, 256, 256, 256, 1);
    cr_expect_eq(tiny.config.split_k, 1);
    /* 128 rows with a long K: 64 x 64 tiles make one wave (128 blocks) unsplit, ahead of 128 x 128 split 4 ways */
    const int64_t long_k[][3] = {{128, 4096, 4096}, {128, 4096, 11008}};
    for (size_t i = 0; i < sizeof long_k / sizeof long_k[0]; i++) {
        trr_call c = chosen(&l, TRR_F16, long_k[i][0], long_k[i][1], long_k[i][2], 1);
        cr_expect_eq(c.config.block_m, 64, "%zu", i);
        cr_expect_eq(c.config.block_n, 64, "%zu", i);
        cr_expect_eq(c.config.split_k, 1, "%zu", i);
    }
    /* a batch whose tiles already fill the SMs is not split */
    trr_call many = chosen(&l, TRR_BF16, 128, 512, 4096, 64);
    cr_expect_eq(many.config.split_k, 1);
    free(l.items);
}

/* Few rows (decode-like products, at most 32 on Hopper) take mma.sync's few-row tiles: the fewest rows that hold
 * M, and split-K that brings the blocks to 90% of the SMs within one block an SM, each split keeping its minimum
 * K: 4096 columns (32 tiles) split 4 ways, 11008 and 14336 (86 and 112 tiles) not at all. */
Test(cuda_matmul_split, few_rows_take_the_few_row_tiles, .init = hopper_setup, .fini = hopper_teardown) {
    variant_list l = {0};
    trr_cuda_for_each_variant(collect, &l);
    const int64_t few[][3] = {{16, 4096, 4096},  {16, 11008, 4096}, {16, 4096, 11008}, {16, 14336, 4096},
                              {1, 4096, 4096},   {7, 4096, 14336},  {32, 4096, 4096},  {32, 11008, 4096},
                              {32, 14336, 4096}, {16, 512, 4096},   {16, 32000, 4096}};
    for (size_t i = 0; i < sizeof few / sizeof few[0]; i++)
        for (int h = 0; h < 2; h++) {
            const int64_t m = few[i][0], n = few[i][1], k = few[i][2];
            trr_call c = chosen(&l, h ? TRR_BF16 : TRR_F16, m, n, k, 1);
            const int s = c.config.split_k;
            if (m == 16 && k == 4096 && (n == 4096 || n == 11008 || n == 14336))
                cr_expect_eq(s, n == 4096 ? 4 : 1, "16 x %lld x 4096 split %d ways", (long long)n, s);
            const int64_t t = grid_tiles(&c);
            cr_expect_eq(c.config.variant, TRR_VARIANT_MMA, "%zu", i);
            cr_expect_geq(c.config.block_m, m, "%zu: block_m %d", i, c.config.block_m);
            cr_expect_lt(c.config.block_m, m + 16 > 32 ? 2 * m : 32, "%zu: block_m %d for %lld rows", i,
                         c.config.block_m, (long long)m);
            /* one block an SM at most (a grid of more tiles than SMs is not split) */
            if (s > 1) cr_expect_leq(t * s, 132, "%zu: %lld tiles x %d", i, (long long)t, s);
            if (t * 10 >= 132 * 9 || 2 * t > 132) cr_expect_eq(s, 1, "%zu: %lld tiles split %d ways", i, (long long)t, s);
            else if (s < TRR_CUDA_SPLIT_K_MAX && k >= (int64_t)(s + 1) * TRR_CUDA_SPLIT_MIN_K &&
                     t * (s + 1) <= 132)
                cr_expect_geq(t * s * 10, 132 * 9, "%zu: %lld tiles x %d leave SMs idle", i, (long long)t, s);
            cr_expect_geq(k, (int64_t)s * TRR_CUDA_SPLIT_MIN_K, "%zu", i);
            cr_expect_geq(k, (int64_t)s * TRR_CUDA_SPLIT_MIN_STEPS * c.config.block_k, "%zu", i);
        }
    /* a device of 99 KiB of shared memory a block (sm_86) takes the same tiles with the stages that fit, and those
     * are compiled by the NVRTC check too */
    trr_cuda_dev ga102 = hopper;
    ga102.cc_major = 8;
    ga102.cc_minor = 6;
    strcpy(ga102.arch, "sm_86");
    ga102.sm_count = 84;
    ga102.smem_optin = 101376;
    for (int64_t m = 1; m <= 64; m *= 2) {
        trr_call c = cuda_matmul_call(TRR_F16, m, 4096, 4096, 1);
        trr_cuda_choose_matmul(&ga102, &c);
        cr_expect_eq(c.config.variant, TRR_VARIANT_MMA);
        cr_expect_eq(trr_cuda_check_matmul(NULL, &ga102, &c), TRR_OK, "%lld rows: %s", (long long)m,
                     trr_last_error(NULL));
        trr_cuda_variant v;
        trr_cuda_variant_matmul_mma(&v, &c.config, 0, TRR_F16, TRR_F16);
        cr_expect(listed(&l, &v), "%lld rows on sm_86: %s is not compiled by the NVRTC check", (long long)m, v.defines);
    }
    /* a short K keeps one split */
    trr_call shallow = chosen(&l, TRR_F16, 16, 4096, 128, 1);
    cr_expect_eq(shallow.config.split_k, 1);
    /* a tile asked for (here wgmma's) is kept: the few-row rule only fills what the config leaves open */
    trr_call asked = cuda_matmul_call(TRR_F16, 16, 4096, 4096, 1);
    asked.config.variant = TRR_VARIANT_WGMMA;
    trr_cuda_choose_matmul(&hopper, &asked);
    cr_expect_eq(asked.config.block_m, 128);
    free(l.items);
}

/* 33 to 64 rows on Hopper: one row of the narrow wgmma tile, 64 x 128 where its blocks fill at least 80% of the SMs
 * (14336 columns: 112), else 64 x 64 (4096 and 11008 columns), split where its grid leaves a fifth of the SMs idle
 * (4096 columns: 64 tiles in 2 splits, at K = 4096 and 11008); f16 and bf16 alike. A device without wgmma keeps
 * mma.sync's few-row tiles (few_rows_take_the_few_row_tiles' sm_86 part). */
Test(cuda_matmul_split, few_rows_past_32_take_one_row_of_narrow_tiles, .init = hopper_setup, .fini = hopper_teardown) {
    variant_list l = {0};
    trr_cuda_for_each_variant(collect, &l);
    const struct {
        int64_t n, k;
        int bn, split;
    } want[] = {{4096, 4096, 64, 2}, {11008, 4096, 64, 1}, {4096, 11008, 64, 2}, {14336, 4096, 128, 1}};
    const int64_t rows[] = {33, 48, 64};
    for (int h = 0; h < 2; h++)
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
            for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
                trr_call c = chosen(&l, h ? TRR_BF16 : TRR_F16, rows[r], want[i].n, want[i].k, 1);
                cr_expect_eq(c.config.variant, TRR_VARIANT_WGMMA, "%lld rows, case %zu", (long long)rows[r], i);
                cr_expect_eq(c.config.block_m, TRR_CUDA_WGMMA_NARROW_BM, "%lld rows, case %zu", (long long)rows[r], i);
                cr_expect_eq(c.config.block_n, want[i].bn, "%lld rows, case %zu", (long long)rows[r], i);
                cr_expect_eq(c.config.split_k, want[i].split, "%lld rows, case %zu", (long long)rows[r], i);
            }
    /* a batch of products no wider than 64 columns keeps 64 x 64 however many tiles it makes */
    trr_call narrow_batch = chosen(&l, TRR_F16, 48, 64, 4096, 256);
    cr_expect_eq(narrow_batch.config.block_m, TRR_CUDA_WGMMA_NARROW_BM);
    cr_expect_eq(narrow_batch.config.block_n, 64);
    /* mma.sync asked for keeps its few-row tile of 64 rows */
    trr_call asked = cuda_matmul_call(TRR_F16, 48, 4096, 4096, 1);
    asked.config.variant = TRR_VARIANT_MMA;
    trr_cuda_choose_matmul(&hopper, &asked);
    cr_expect_eq(asked.config.variant, TRR_VARIANT_MMA);
    cr_expect_eq(asked.config.block_m, 64);
    free(l.items);
}

Test(cuda_matmul_split, mma_sync_splits_where_wgmma_does_not_run) {
    variant_list l = {0};
    trr_cuda_for_each_variant(collect, &l);
    /* no device: mma.sync, not wgmma */
    trr_call c = cuda_matmul_call(TRR_F16, 16, 4096, 4096, 1);
    trr_cuda_choose_config(NULL, &c);
    cr_assert_eq(c.config.variant, TRR_VARIANT_MMA);
    cr_assert_eq(trr_cuda_check_config(NULL, &c), TRR_OK, "%s", trr_last_error(NULL));
    cr_expect_gt(c.config.split_k, 1);
    trr_cuda_variant v;
    trr_cuda_variant_matmul_mma(&v, &c.config, 0, TRR_F16, c.z.dtype);
    cr_expect(strstr(v.defines, "-DSPLIT_K=1") != NULL, "%s", v.defines);
    cr_expect(listed(&l, &v), "%s is not compiled by the NVRTC check", v.defines);
    free(l.items);
}

Test(cuda_matmul_split, the_check_takes_1_to_the_limit_on_the_tensor_cores) {
    trr_call c = cuda_matmul_call(TRR_F16, 64, 64, 4096, 1);
    c.config = (trr_config){.split_k = TRR_CUDA_SPLIT_K_MAX, .variant = TRR_VARIANT_MMA};
    trr_cuda_choose_config(NULL, &c);
    cr_expect_eq(c.config.split_k, TRR_CUDA_SPLIT_K_MAX, "an asked split is kept");
    cr_expect_eq(trr_cuda_check_config(NULL, &c), TRR_OK, "%s", trr_last_error(NULL));
    c.config.split_k = TRR_CUDA_SPLIT_K_MAX + 1;
    cr_expect_eq(trr_cuda_check_config(NULL, &c), TRR_ERR_UNSUPPORTED);
    cr_expect(strstr(trr_last_error(NULL), "split_k") != NULL, "%s", trr_last_error(NULL));
    /* the CUDA-core kernel has none */
    trr_call s = cuda_matmul_call(TRR_F32, 64, 64, 4096, 1);
    s.config = (trr_config){.split_k = 2, .variant = TRR_VARIANT_SIMT};
    trr_cuda_choose_config(NULL, &s);
    cr_expect_eq(trr_cuda_check_config(NULL, &s), TRR_ERR_UNSUPPORTED);
    cr_expect(strstr(trr_last_error(NULL), "simt kernel has no split-K") != NULL, "%s", trr_last_error(NULL));
    /* f32 products stay on it unsplit */
    trr_call f = cuda_matmul_call(TRR_F32, 16, 4096, 4096, 1);
    trr_cuda_choose_config(NULL, &f);
    cr_expect_eq(f.config.split_k, 1);
}

/* One variant compiled for arch with NVRTC in its fast-compile mode: no error, no warning. The front end checks
 * the same source as the default build (the compile-everything check, test_cuda_nvrtc_*, builds one of each
 * group at the default too); fast mode's own performance advisories describe a build that never runs. */
static void compiles(const trr_cuda_variant *v, const char *arch) {
    void *cubin = NULL;
    size_t size = 0;
    char *log = NULL;
    trr_status st = trr_cuda_compile_with(NULL, v, arch, "-Ofc=max", &cubin, &size, NULL, &log);
    cr_expect_eq(st, TRR_OK, "%s %s for %s: %s", v->file, v->defines, arch, trr_last_error(NULL));
    for (const char *line = log; line && *line;) {
        const size_t len = strcspn(line, "\n");
        char text[1024];
        snprintf(text, sizeof text, "%.*s", (int)len, line);
        cr_expect(strstr(text, "Potential Performance Loss") || !strstr(text, "warning"), "%s %s for %s: %s",
                  v->file, v->defines, arch, text);
        line += len;
        if (*line == '\n') line++;
    }
    free(cubin);
    free(log);
}

Test(cuda_matmul_split, split_kernels_compile_with_nvrtc, .timeout = 1200) {
    char reason[1024];
    if (trr_cuda_load_nvrtc(reason, sizeof reason) != TRR_OK) cr_skip_test("NVRTC unavailable: %s", reason);
    trr_cuda_variant v;
    const trr_dtype outs[3] = {TRR_F32, TRR_F16, TRR_BF16};
    for (int o = 0; o < 3; o++) {
        trr_cuda_variant_matmul_reduce(&v, outs[o]);
        compiles(&v, "sm_80");
        compiles(&v, "sm_90a");
    }
    trr_config mma = trr_matmul_f16_nvidia_configs[trr_matmul_f16_nvidia_config_count - 1];
    mma.split_k = 3;
    trr_cuda_variant_matmul_mma(&v, &mma, 0, TRR_BF16, TRR_F32);
    compiles(&v, "sm_80");
    trr_cuda_variant_matmul_mma(&v, &mma, 1, TRR_F16, TRR_F16);
    compiles(&v, "sm_90a");
    trr_config few = trr_cuda_mma_small_configs[0];
    few.split_k = 3;
    trr_cuda_variant_matmul_mma(&v, &few, 0, TRR_BF16, TRR_BF16);
    compiles(&v, "sm_80");
    compiles(&v, "sm_90a");
    for (int cm = 1; cm <= 2; cm++) {
        trr_config wg = trr_cuda_wgmma_configs[0];
        wg.block_m *= cm;
        wg.split_k = 3;
        trr_cuda_variant_matmul_wgmma(&v, &wg, cm - 1, TRR_F16, TRR_F32);
        compiles(&v, "sm_90a");
        trr_config f8 = trr_cuda_wgmma_f8_configs[0];
        f8.block_m *= cm;
        f8.split_k = 3;
        trr_cuda_variant_matmul_wgmma_ab(&v, &f8, 1, TRR_F8E4M3, TRR_F8E5M2, TRR_F32);
        compiles(&v, "sm_90a");
    }
    /* the stream-K schedule (variant streamk): the same kernel with its own loop, 16-bit, single blocks */
    for (int i = 0; i < trr_cuda_wgmma_config_count; i++) {
        trr_config sk = trr_cuda_wgmma_configs[i];
        sk.variant = TRR_VARIANT_STREAMK;
        trr_cuda_variant_matmul_wgmma(&v, &sk, i % 2, i < 2 ? TRR_F16 : TRR_BF16, i % 3 ? TRR_F32 : TRR_F16);
        cr_expect(strstr(v.defines, "-DSTREAM_K=1") != NULL, "%s", v.defines);
        compiles(&v, "sm_90a");
    }
}

/* Part waves (the sweep M = N = K = 128 i on 132 SMs): where the tile count leaves much of the last wave idle,
 * the heuristic takes the tile between 128 x 128, 192 and 256 that balances it (the cases as measured on NVIDIA
 * H200: docs/performance.md, matmul at every size), never the stream-K schedule (a plain tile measured faster
 * wherever the estimate put stream-K ahead), and keeps the rule's tile where the waves are whole or nearly so
 * or where clusters or split-K take the call; what it picks is checked and compiled; stream-K asked for runs. */
Test(cuda_matmul_split, part_waves_take_the_tile_that_balances_them, .init = hopper_setup, .fini = hopper_teardown) {
    variant_list l = {0};
    trr_cuda_for_each_variant(collect, &l);
    /* plain tiles, {size, block_m, block_n}: 2432^3 is 247 tiles of 128 x 192 (1.9 waves) against 361 of 128 x 128
     * (2.7); 1792^3 112 of 128 x 224 (one wave) against 196 of 128 x 128; 4224^3 484 of 192 x 192 (3.7 waves)
     * against 726 of 128 x 192 (5.5); 3200^3 625 of 128 x 128 (4.7 waves), ahead of stream-K there; 2560^3 240
     * of 128 x 224 against 200 of 128 x 256 (both two waves, the narrower tile's cheaper); 2048^3 128 x 256;
     * the tiles that make one wave where the tile count is short of one but ran no faster where measured, 128 x 96,
     * 144 and 192 x 208, not taken: 1152^3 81 of 128 x 128, 1536^3 96 of 128 x 192, 2176^3 204 of 128 x 192,
     * 3840^3 900 of 128 x 128 (6.8 waves, against 380 of 192 x 208, 2.9) */
    const int64_t plain[][3] = {{1152, 128, 128}, {1536, 128, 192}, {1664, 128, 192}, {2176, 128, 192},
                                {3840, 128, 128}, {2304, 128, 192}, {2432, 128, 192}, {1792, 128, 224},
                                {2944, 192, 192}, {3072, 192, 192}, {4224, 192, 192}, {3200, 128, 128},
                                {2560, 128, 224}, {2688, 128, 224}, {3328, 128, 224}, {2048, 128, 256}};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        for (int h = 0; h < 2; h++) {
            const int64_t s = plain[i][0];
            trr_call c = chosen(&l, h ? TRR_BF16 : TRR_F16, s, s, s, 1);
            cr_expect_eq(c.config.variant, TRR_VARIANT_WGMMA, "%lld^3", (long long)s);
            cr_expect_eq(c.config.block_m, plain[i][1], "%lld^3", (long long)s);
            cr_expect_eq(c.config.block_n, plain[i][2], "%lld^3", (long long)s);
            cr_expect_eq(c.config.split_k, 1, "%lld^3", (long long)s);
        }
    /* shapes whose K is long beside M and N keep a plain tile too: stream-K ran behind it wherever the estimate
     * had put stream-K ahead (2560 x 2560 x 4096: 200 tiles of 128 x 256, 1.5 waves; 1664 x 4096 x 4096), so the
     * heuristic never picks it; 128 x 224 makes two waves of 240 tiles at both */
    const int64_t part[][3] = {{2560, 2560, 4096}, {1664, 4096, 4096}};
    for (size_t i = 0; i < sizeof part / sizeof part[0]; i++)
        for (int h = 0; h < 2; h++) {
            trr_call c = chosen(&l, h ? TRR_BF16 : TRR_F16, part[i][0], part[i][1], part[i][2], 1);
            cr_expect_eq(c.config.variant, TRR_VARIANT_WGMMA, "%zu", i);
            cr_expect_eq(c.config.block_m, 128, "%zu", i);
            cr_expect_eq(c.config.block_n, 224, "%zu: %d", i, c.config.block_n);
            cr_expect_eq(c.config.split_k, 1, "%zu", i);
        }
    /* whole waves and small grids: the rule's tiles */
    const int64_t whole[] = {768, 1024, 2048, 3584, 4096, 8192};
    for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++) {
        trr_call c = chosen(&l, TRR_F16, whole[i], whole[i], whole[i], 1);
        cr_expect_eq(c.config.variant, TRR_VARIANT_WGMMA, "%lld^3", (long long)whole[i]);
        cr_expect(c.config.block_n == 64 || c.config.block_n == 128 || c.config.block_n == 256, "%lld^3: %d",
                  (long long)whole[i], c.config.block_n);
    }
    /* split-K's small grids keep it */
    trr_call split = chosen(&l, TRR_F16, 768, 768, 4096, 1);
    cr_expect_eq(split.config.variant, TRR_VARIANT_WGMMA);
    cr_expect_gt(split.config.split_k, 1);
    /* asked for: kept, with the heuristic's tile; a split, a cluster or 8-bit floats are refused with the reason */
    trr_call asked = cuda_matmul_call(TRR_F16, 4096, 4096, 4096, 1);
    asked.config.variant = TRR_VARIANT_STREAMK;
    trr_cuda_choose_matmul(&hopper, &asked);
    cr_expect_eq(asked.config.variant, TRR_VARIANT_STREAMK);
    cr_expect_eq(asked.config.block_m, 128);
    cr_expect_eq(asked.config.split_k, 1);
    cr_expect_eq(trr_cuda_check_matmul(NULL, &hopper, &asked), TRR_OK, "%s", trr_last_error(NULL));
    asked.config.split_k = 2;
    cr_expect_eq(trr_cuda_check_matmul(NULL, &hopper, &asked), TRR_ERR_UNSUPPORTED);
    asked.config.split_k = 1;
    asked.config.block_m = 256;
    cr_expect_eq(trr_cuda_check_matmul(NULL, &hopper, &asked), TRR_ERR_UNSUPPORTED);
    cr_expect(strstr(trr_last_error(NULL), "streamk") != NULL, "%s", trr_last_error(NULL));
    free(l.items);
}

/* The wgmma tiles a config may ask for: 128 rows by any multiple of 16 from 64 to 256 columns (16-bit inputs,
 * single blocks; B [K,N] in boxes of 64, 32 or 16 columns, the epilogue's columns past its whole store boxes
 * stored directly), 192 rows (three consumers, 512 threads) up to 192 columns, clusters of two only 128 or 256
 * wide (their B halves whole 64-column boxes), 8-bit floats 128 or 256 wide; stages that fit beside the store
 * slots. Every other case is refused with the reason, not compiled into a broken kernel. */
Test(cuda_matmul_split, the_wgmma_tiles_take_what_their_kernel_can, .init = hopper_setup, .fini = hopper_teardown) {
    const int widths[] = {64, 96, 144, 160, 176, 192, 208, 224, 240, 256};
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) {
        trr_call c = cuda_matmul_call(TRR_F16, 2432, 2432, 2432, 1);
        c.config.variant = TRR_VARIANT_WGMMA;
        c.config.block_n = widths[i];
        trr_cuda_choose_matmul(&hopper, &c);
        cr_expect_eq(c.config.block_m, 128, "%d", widths[i]);
        cr_expect_eq(c.config.threads, TRR_CUDA_WGMMA_THREADS, "%d", widths[i]);
        cr_expect_eq(trr_cuda_check_matmul(NULL, &hopper, &c), TRR_OK, "%d: %s", widths[i], trr_last_error(NULL));
        trr_call sk = c;
        sk.config.variant = TRR_VARIANT_STREAMK;
        cr_expect_eq(trr_cuda_check_matmul(NULL, &hopper, &sk), TRR_OK, "%d: %s", widths[i], trr_last_error(NULL));
        trr_call pair = c;
        pair.config.block_m = 256;
        cr_expect_eq(trr_cuda_check_matmul(NULL, &hopper, &pair),
                     widths[i] == 128 || widths[i] == 256 ? TRR_OK : TRR_ERR_UNSUPPORTED, "%d", widths[i]);
    }
    const int refused[] = {48, 120, 200, 272};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        trr_call c = cuda_matmul_call(TRR_F16, 2432, 2432, 2432, 1);
        c.config.variant = TRR_VARIANT_WGMMA;
        c.config.block_m = 128;
        c.config.block_n = refused[i];
        c.config.block_k = 64;
        c.config.threads = TRR_CUDA_WGMMA_THREADS;
        c.config.stages = 3;
        c.config.group_m = 8;
        c.config.split_k = 1;
        c.config.vector_width = 8;
        cr_expect_eq(trr_cuda_check_matmul(NULL, &hopper, &c), TRR_ERR_UNSUPPORTED, "%d", refused[i]);
        cr_expect(strstr(trr_last_error(NULL), "multiple of 16") != NULL, "%s", trr_last_error(NULL));
    }
    /* a ring too deep for the slots beside it */
    trr_call deep = cuda_matmul_call(TRR_F16, 2432, 2432, 2432, 1);
    deep.config.variant = TRR_VARIANT_WGMMA;
    deep.config.block_n = 192;
    deep.config.stages = 5;
    trr_cuda_choose_matmul(&hopper, &deep);
    cr_expect_eq(trr_cuda_check_matmul(NULL, &hopper, &deep), TRR_ERR_UNSUPPORTED);
    cr_expect(strstr(trr_last_error(NULL), "shared memory") != NULL, "%s", trr_last_error(NULL));
    /* 192 rows: 512 threads and the stages that fit, up to 224 columns (the consumers' registers) */
    const int tall_widths[] = {128, 160, 192, 208, 224, 240, 256};
    for (size_t w = 0; w < sizeof tall_widths / sizeof tall_widths[0]; w++) {
        const int bn = tall_widths[w];
        trr_call t = cuda_matmul_call(TRR_BF16, 2432, 2432, 2432, 1);
        t.config.variant = TRR_VARIANT_WGMMA;
        t.config.block_m = 192;
        t.config.block_n = bn;
        trr_cuda_choose_matmul(&hopper, &t);
        cr_expect_eq(t.config.threads, TRR_CUDA_WGMMA_TALL_THREADS, "%d", bn);
        cr_expect_leq(trr_cuda_wgmma_smem(&t.config, trr_cuda_wgmma_c_type(&t)) + 128u, (size_t)hopper.smem_optin,
                      "%d", bn);
        cr_expect_eq(trr_cuda_check_matmul(NULL, &hopper, &t),
                     bn <= TRR_CUDA_WGMMA_TALL_MAX_N ? TRR_OK : TRR_ERR_UNSUPPORTED, "%d: %s", bn,
                     trr_last_error(NULL));
        trr_call sk = t;
        sk.config.variant = TRR_VARIANT_STREAMK;
        cr_expect_eq(trr_cuda_check_matmul(NULL, &hopper, &sk), TRR_ERR_UNSUPPORTED, "%d", bn);
    }
    trr_call f8 = cuda_matmul_call(TRR_F8E4M3, 2432, 2432, 2432, 1);
    f8.z.dtype = TRR_BF16;
    f8.trans_b = 1;
    f8.config.variant = TRR_VARIANT_WGMMA;
    f8.config.block_n = 192;
    trr_cuda_choose_matmul(&hopper, &f8);
    cr_expect_eq(trr_cuda_check_matmul(NULL, &hopper, &f8), TRR_ERR_UNSUPPORTED);
}

/* 64-row wgmma tiles: 64 x 64 and 64 x 128 with 256 threads, plain or split, for 16-bit inputs in single blocks;
 * the check refuses the rest with the reason, and every accepted form is one the NVRTC check compiles. */
Test(cuda_matmul_split, the_narrow_tile_is_checked_and_compiled, .init = hopper_setup, .fini = hopper_teardown) {
    variant_list l = {0};
    trr_cuda_for_each_variant(collect, &l);
    const trr_dtype dts[2] = {TRR_F16, TRR_BF16};
    for (int d = 0; d < 2; d++)
        for (int bn = 64; bn <= 128; bn += 64)
            for (int split = 1; split <= 2; split++) {
                trr_call c = cuda_matmul_call(dts[d], 700, 504, 3000, 1);
                c.config = (trr_config){.variant = TRR_VARIANT_WGMMA, .block_m = 64, .block_n = bn, .split_k = split};
                trr_cuda_choose_matmul(&hopper, &c);
                cr_assert_eq(trr_cuda_check_matmul(NULL, &hopper, &c), TRR_OK, "64 x %d split %d: %s", bn, split,
                             trr_last_error(NULL));
                trr_cuda_variant v;
                trr_cuda_variant_matmul_wgmma(&v, &c.config, 0, dts[d], split > 1 ? TRR_F32 : dts[d]);
                cr_expect(listed(&l, &v), "%s is not compiled by the NVRTC check", v.defines);
            }
    const struct {
        trr_config cfg;
        trr_dtype dt;
        const char *why;
    } refused[] = {
        {{.variant = TRR_VARIANT_WGMMA, .block_m = 64, .block_n = 256, .block_k = 64, .threads = 256, .stages = 4,
          .group_m = 8, .split_k = 1},
         TRR_F16, "64 x 64 or 64 x 128"},
        {{.variant = TRR_VARIANT_WGMMA, .block_m = 64, .block_n = 128, .block_k = 64, .threads = 384, .stages = 4,
          .group_m = 8, .split_k = 1},
         TRR_F16, "256 threads"},
        {{.variant = TRR_VARIANT_STREAMK, .block_m = 64, .block_n = 128, .block_k = 64, .threads = 256, .stages = 4,
          .group_m = 8, .split_k = 1},
         TRR_F16, "streamk"},
        {{.variant = TRR_VARIANT_WGMMA, .block_m = 64, .block_n = 128, .block_k = 128, .threads = 256, .stages = 4,
          .group_m = 8, .split_k = 1},
         TRR_F8E4M3, "8-bit float"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        trr_call c = cuda_matmul_call(refused[i].dt, 700, 512, 3008, 1);
        c.trans_b = 1;
        c.y.stride0 = 3008;
        c.config = refused[i].cfg;
        cr_expect_eq(trr_cuda_check_matmul(NULL, &hopper, &c), TRR_ERR_UNSUPPORTED, "case %zu", i);
        cr_expect(strstr(trr_last_error(NULL), refused[i].why) != NULL, "case %zu: %s", i, trr_last_error(NULL));
    }
    free(l.items);
}

/* Small products past the few rows take the narrowest 64-row wgmma tile whose grid is one wave: 64 x 64 up to 640^3
 * (100 blocks), 64 x 128 from 768^3 to 1024^3 (72 to 128 blocks), the 128-row tiles from 1152^3 (162 blocks of
 * 64 x 128 would be past a wave); f16 and bf16 alike, 8-bit floats never (their kernel has no 64-row form), and
 * nothing narrow where a tile is asked for. */
Test(cuda_matmul_split, small_products_take_the_narrow_tile_of_one_wave, .init = hopper_setup,
     .fini = hopper_teardown) {
    variant_list l = {0};
    trr_cuda_for_each_variant(collect, &l);
    const trr_dtype dts[2] = {TRR_F16, TRR_BF16};
    for (int d = 0; d < 2; d++)
        for (int64_t n = 256; n <= 1280; n += 128) {
            trr_call c = chosen(&l, dts[d], n, n, n, 1);
            const int want_m = n <= 1024 ? 64 : 128, want_n = n <= 640 ? 64 : n <= 1024 ? 128 : 0;
            cr_expect_eq(c.config.variant, TRR_VARIANT_WGMMA, "%lld^3", (long long)n);
            cr_expect_eq(c.config.block_m, want_m, "%lld^3", (long long)n);
            if (want_n) cr_expect_eq(c.config.block_n, want_n, "%lld^3", (long long)n);
            cr_expect_eq(c.config.split_k, 1, "%lld^3", (long long)n);
            const int64_t blocks = grid_tiles(&c);
            if (want_m == 64) cr_expect_leq(blocks, 132, "%lld^3: %lld blocks", (long long)n, (long long)blocks);
        }
    trr_call f8 = cuda_matmul_call(TRR_F8E4M3, 512, 512, 512, 1);
    f8.trans_b = 1;
    f8.y.stride0 = 512;
    trr_cuda_choose_matmul(&hopper, &f8);
    cr_expect_eq(f8.config.block_m, 128);
    trr_call asked = cuda_matmul_call(TRR_F16, 512, 512, 512, 1);
    asked.config.block_n = 128;
    trr_cuda_choose_matmul(&hopper, &asked);
    cr_expect_neq(asked.config.block_m, 64);
    free(l.items);
}
