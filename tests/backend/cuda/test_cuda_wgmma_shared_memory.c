/* The wgmma kernel's shared memory (backend_cuda/config_matmul.c): its stage ring and the epilogue's TMA-store slots
 * share the 227 KB a Hopper block can have, so every config the heuristic and the tuner pick from must fit, with
 * the slot count the kernel is compiled with (C_SLOTS) counted in. Host arithmetic only: no GPU needed. */
#include <criterion/criterion.h>

#include "cuda_matmul_call.h"
#include "trr_cuda.h"

#include <stdio.h>
#include <string.h>

/* cudaDevAttrMaxSharedMemoryPerBlockOptin on H100 and H200 */
#define HOPPER_OPTIN (227u * 1024u)
#define SLOT_BYTES (64u * 128u) /* one 64-row x 128-byte store box */

/* the stage ring: block_m rows of A and block_n columns of B, 128 bytes of K each, a stage; B's columns in whole
 * 64-column boxes but for a last 16 or 32, which take a narrow box of their own */
static size_t ring_bytes(const trr_config *c) {
    const size_t rem = (size_t)c->block_n % 64, cols = rem == 16 || rem == 32 ? (size_t)c->block_n
                                                                              : ((size_t)c->block_n + 63) / 64 * 64;
    return (size_t)c->stages * ((size_t)c->block_m + cols) * TRR_CUDA_WGMMA_BK * 2;
}

Test(cuda_wgmma_smem, narrow_last_box_of_b) {
    const int widths[][2] = {{64, 0}, {80, 16}, {96, 32}, {112, 0}, {144, 16}, {160, 32}, {176, 0}, {208, 16},
                             {224, 32}, {256, 0}};
    for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) {
        const trr_config c = {.block_m = 128, .block_n = widths[i][0], .block_k = 64, .stages = 4};
        cr_expect_eq(trr_cuda_wgmma_b_tail(&c), widths[i][1], "block_n %d", widths[i][0]);
        const int whole = (widths[i][0] - widths[i][1] + 63) / 64 * 64;
        cr_expect_eq(trr_cuda_wgmma_b_stage_cols(&c), whole + widths[i][1], "block_n %d", widths[i][0]);
    }
}

/* the 128-byte store boxes a consumer's 64 rows of a tile make in c_type: its whole 128-byte column groups */
static int boxes(const trr_config *c, trr_dtype c_type) {
    return c->block_n * (c_type == TRR_F32 ? 4 : 2) / 128;
}

static const trr_dtype c_types[] = {TRR_F32, TRR_F16, TRR_BF16};

Test(cuda_wgmma_smem, every_config_fits_with_its_store_slots) {
    cr_assert_gt(trr_cuda_wgmma_config_count, 0);
    for (int i = 0; i < trr_cuda_wgmma_config_count; i++)
        for (int o = 0; o < 3; o++) {
            const trr_config *c = &trr_cuda_wgmma_configs[i];
            const int slots = trr_cuda_wgmma_c_slots(c, c_types[o]), want = boxes(c, c_types[o]);
            /* as many slots as the tile's boxes, at most 4, or 2 where 4 would not fit */
            cr_assert(slots == want || (slots == 2 && want > 2) || (slots == 4 && want > 4),
                      "config %d (%d x %d, %d stages), type %d: %d slots for %d boxes", i, c->block_m, c->block_n,
                      c->stages, (int)c_types[o], slots, want);
            /* one consumer warpgroup for each 64 rows (three, 512 threads, for the 192-row tile) */
            const size_t cons = (size_t)c->block_m / 64;
            cr_assert_eq((size_t)trr_cuda_wgmma_consumers(c), cons, "config %d", i);
            cr_assert_eq((size_t)c->threads, 128u * (1u + cons), "config %d", i);
            const size_t smem = trr_cuda_wgmma_smem(c, c_types[o]);
            /* the ring, the consumer warpgroups' slots, the 1 KB alignment pad */
            cr_assert_eq(smem, ring_bytes(c) + cons * (size_t)slots * SLOT_BYTES + 1024u, "config %d", i);
            /* check_config adds 128 bytes for the stages' mbarriers in static shared memory */
            cr_assert_leq(smem + 128u, HOPPER_OPTIN, "config %d (%d x %d, %d stages) needs %zu bytes", i, c->block_m,
                          c->block_n, c->stages, smem + 128u);
            /* 2 slots for more boxes only where 4 would not fit */
            if (slots == 2 && want > 2)
                cr_assert_gt(ring_bytes(c) + cons * 4u * SLOT_BYTES + 1024u + 128u, HOPPER_OPTIN, "config %d", i);
        }
}

Test(cuda_wgmma_smem, slots_follow_the_ring) {
    /* 128 x 256 with 4 stages and 128 x 128 with 6 (192 KB rings) leave room for 2 slots each; 3 and 4 stages
     * leave room for 4, which f32 outputs fill (4 or 8 boxes a tile's 64 rows) */
    const trr_config big4 = {.block_m = 128, .block_n = 256, .block_k = 64, .stages = 4},
                     big3 = {.block_m = 128, .block_n = 256, .block_k = 64, .stages = 3},
                     small6 = {.block_m = 128, .block_n = 128, .block_k = 64, .stages = 6},
                     small4 = {.block_m = 128, .block_n = 128, .block_k = 64, .stages = 4};
    cr_assert_eq(trr_cuda_wgmma_c_slots(&big4, TRR_F32), 2);
    cr_assert_eq(trr_cuda_wgmma_c_slots(&small6, TRR_F32), 2);
    cr_assert_eq(trr_cuda_wgmma_c_slots(&big3, TRR_F32), 4);
    cr_assert_eq(trr_cuda_wgmma_c_slots(&small4, TRR_F32), 4);
    /* 16-bit outputs: 128 columns make 2 boxes, 256 make 4 */
    cr_assert_eq(trr_cuda_wgmma_c_slots(&big4, TRR_F16), 2);
    cr_assert_eq(trr_cuda_wgmma_c_slots(&big3, TRR_BF16), 4);
    cr_assert_eq(trr_cuda_wgmma_c_slots(&small4, TRR_F16), 2);
}

/* A slot past a tile's boxes is never written (the kernel's C_NS), so a narrow tile's ring takes that room: a
 * 192 x 96 tile asked for gets 5 stages beside one slot a consumer for 16-bit outputs, 4 beside two for f32
 * (three boxes) and for a split's f32 partials; an asked stage count is kept, and checked. */
Test(cuda_wgmma_smem, a_tall_tile_takes_the_stages_its_slots_leave, .fini = cuda_fake_h200_done) {
    trr_cuda_dev hopper = cuda_fake_h200();
    const trr_config t96 = {.block_m = 192, .block_n = 96, .block_k = 64, .stages = 5};
    cr_assert_eq(trr_cuda_wgmma_c_slots(&t96, TRR_F16), 1);
    cr_assert_eq(trr_cuda_wgmma_c_slots(&t96, TRR_F32), 2);
    cr_assert_eq(trr_cuda_wgmma_smem(&t96, TRR_BF16), ring_bytes(&t96) + 3u * SLOT_BYTES + 1024u);
    const struct {
        int bn;
        trr_dtype out;
        int split, stages;
    } cases[] = {{96, TRR_F16, 1, 5}, {96, TRR_BF16, 1, 5}, {96, TRR_F32, 1, 4}, {96, TRR_F16, 4, 4},
                 {64, TRR_F16, 1, 5}, {128, TRR_F16, 1, 4}, {192, TRR_BF16, 1, 3}, {224, TRR_F16, 1, 3}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        trr_call c = cuda_matmul_call(TRR_F16, 1536, 1536, 1536, 1);
        c.z.dtype = cases[i].out;
        c.config.variant = TRR_VARIANT_WGMMA;
        c.config.block_m = TRR_CUDA_WGMMA_TALL_BM;
        c.config.block_n = cases[i].bn;
        c.config.split_k = cases[i].split;
        trr_cuda_choose_matmul(&hopper, &c);
        cr_expect_eq(c.config.stages, cases[i].stages, "case %zu: 192 x %d", i, cases[i].bn);
        cr_expect_eq(trr_cuda_wgmma_c_type(&c), cases[i].split > 1 ? TRR_F32 : cases[i].out, "case %zu", i);
        cr_expect_eq(trr_cuda_check_matmul(NULL, &hopper, &c), TRR_OK, "case %zu: %s", i, trr_last_error(NULL));
    }
    /* asked for: kept, and refused where it does not fit (6 stages of 192 x 96 with f32 outputs) */
    trr_call c = cuda_matmul_call(TRR_F16, 1536, 1536, 1536, 1);
    c.z.dtype = TRR_F32;
    c.config.variant = TRR_VARIANT_WGMMA;
    c.config.block_m = TRR_CUDA_WGMMA_TALL_BM;
    c.config.block_n = 96;
    c.config.stages = 6;
    trr_cuda_choose_matmul(&hopper, &c);
    cr_expect_eq(c.config.stages, 6);
    cr_expect_eq(trr_cuda_check_matmul(NULL, &hopper, &c), TRR_ERR_UNSUPPORTED);
    cr_expect(strstr(trr_last_error(NULL), "shared memory") != NULL, "%s", trr_last_error(NULL));
}

Test(cuda_wgmma_smem, a_cluster_block_keeps_the_unclustered_footprint) {
    /* block_m 256 is two 128-row blocks in a cluster: each block's shared memory (ring, slots) is that of the
     * 128-row config, and only the variant's CLUSTER_M differs, so the unclustered variant's options (and its
     * disk-cache key) stay as they were (the tiles that run clustered: every schedule's) */
    for (int i = 0; i < trr_cuda_wgmma_config_count; i++) {
        trr_config c = trr_cuda_wgmma_configs[i];
        if (!trr_cuda_wgmma_every_schedule(&c)) continue;
        trr_cuda_variant plain, pair;
        trr_cuda_variant_matmul_wgmma(&plain, &c, 0, TRR_F16, TRR_F16);
        const size_t smem = trr_cuda_wgmma_smem(&c, TRR_F16);
        const int slots = trr_cuda_wgmma_c_slots(&c, TRR_F16);
        c.block_m = 2 * TRR_CUDA_WGMMA_BM;
        trr_cuda_variant_matmul_wgmma(&pair, &c, 0, TRR_F16, TRR_F16);
        cr_assert_eq(trr_cuda_wgmma_smem(&c, TRR_F16), smem, "config %d", i);
        cr_assert_eq(trr_cuda_wgmma_c_slots(&c, TRR_F16), slots, "config %d", i);
        cr_assert_null(strstr(plain.defines, "CLUSTER_M"), "config %d: %s", i, plain.defines);
        char want[300];
        snprintf(want, sizeof want, "%s -DCLUSTER_M=2", plain.defines);
        cr_assert_str_eq(pair.defines, want, "config %d", i);
    }
}

static trr_config chosen_wgmma(int64_t m, int64_t n, int64_t k, int64_t batch) {
    trr_call c = cuda_matmul_call(TRR_F16, m, n, k, batch);
    c.config.variant = TRR_VARIANT_WGMMA;
    trr_cuda_choose_config(NULL, &c); /* NULL: a device of 132 SMs */
    return c.config;
}

Test(cuda_wgmma_smem, clusters_only_for_large_single_products) {
    /* 8192^3: 2048 tiles of 128 x 256 = 15.5 waves on 132 SMs, K 8192: a cluster of two (block_m 256) */
    cr_expect_eq(chosen_wgmma(8192, 8192, 8192, 1).block_m, 256);
    /* 4096^3 (3.9 waves), a short K, a batch: single 128-row blocks */
    cr_expect_eq(chosen_wgmma(4096, 4096, 4096, 1).block_m, 128);
    cr_expect_eq(chosen_wgmma(8192, 8192, 1024, 1).block_m, 128);
    cr_expect_eq(chosen_wgmma(1024, 1024, 8192, 64).block_m, 128);
}

/* The narrow (64-row) configs: one consumer warpgroup, so a ring of 64-row A stages and one consumer's slots;
 * each fits with four slots (a 64 x 128 tile of f32 outputs stores four boxes), builds with BM 64, and a forced
 * 64-row tile gets the narrow kernel's threads and stages. */
Test(cuda_wgmma_smem, narrow_configs_fit_with_one_consumers_slots) {
    cr_assert_gt(trr_cuda_wgmma_narrow_config_count, 0);
    for (int i = 0; i < trr_cuda_wgmma_narrow_config_count; i++) {
        const trr_config *c = &trr_cuda_wgmma_narrow_configs[i];
        cr_assert_eq(c->block_m, TRR_CUDA_WGMMA_NARROW_BM);
        cr_assert_eq(trr_cuda_wgmma_consumers(c), 1);
        cr_assert_eq(trr_cuda_wgmma_block_rows(c), 64);
        const size_t ring = (size_t)c->stages * (64u + (size_t)c->block_n) * TRR_CUDA_WGMMA_BK * 2;
        for (int o = 0; o < 3; o++) {
            /* room for four slots: as many as the tile's boxes (64 x 128 f32: 4) */
            const int slots = trr_cuda_wgmma_c_slots(c, c_types[o]);
            cr_assert_eq(slots, boxes(c, c_types[o]), "config %d", i);
            cr_assert_eq(trr_cuda_wgmma_smem(c, c_types[o]), ring + (size_t)slots * SLOT_BYTES + 1024u, "config %d", i);
            cr_assert_leq(trr_cuda_wgmma_smem(c, c_types[o]) + 128u, HOPPER_OPTIN, "config %d", i);
        }
        trr_cuda_variant v;
        trr_cuda_variant_matmul_wgmma(&v, c, 1, TRR_BF16, TRR_BF16);
        cr_assert_not_null(strstr(v.defines, "-DBM=64"), "%s", v.defines);
        cr_assert_null(strstr(v.defines, "CLUSTER_M"), "%s", v.defines);
    }
    /* the 128-row configs keep their variants' options (and disk-cache keys): no BM define */
    trr_cuda_variant v;
    trr_cuda_variant_matmul_wgmma(&v, &trr_cuda_wgmma_configs[0], 1, TRR_F16, TRR_F16);
    cr_assert_null(strstr(v.defines, "-DBM="), "%s", v.defines);
}

Test(cuda_wgmma_smem, a_forced_64_row_tile_takes_the_narrow_kernel) {
    for (int bn = 0; bn <= 128; bn += 64) {
        trr_call c = cuda_matmul_call(TRR_F16, 1000, 700, 300, 1);
        c.config.variant = TRR_VARIANT_WGMMA;
        c.config.block_m = 64;
        c.config.block_n = bn;
        trr_cuda_choose_config(NULL, &c);
        cr_expect_eq(c.config.block_m, 64);
        cr_expect_eq(c.config.block_n, bn ? bn : 128, "block_n %d", bn);
        cr_expect_eq(c.config.threads, TRR_CUDA_WGMMA_NARROW_THREADS);
        cr_expect_eq(c.config.block_k, TRR_CUDA_WGMMA_BK);
    }
}
