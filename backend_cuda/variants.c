/* The compiled variants: how each op's compile-time choices become -D options, the list of every variant the
 * backend can choose (so CI can compile them all with NVRTC alone), and that compile-everything check. */
#include "trr_cuda.h"

#include "cache.h"
#include "op_table.h"
#include "tune.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Dtype codes in the kernels' -D options are trr_dtype's values: 0 f32, 1 f16, 2 bf16, 4 f8e4m3, 5 f8e5m2. */
void trr_cuda_variant_matmul_mma(trr_cuda_variant *v, const trr_config *cfg, int trans_b, trr_dtype in, trr_dtype out) {
    trr_cuda_variant_matmul_mma_ab(v, cfg, trans_b, in, in, out);
}

void trr_cuda_variant_matmul_mma_ab(trr_cuda_variant *v, const trr_config *cfg, int trans_b, trr_dtype in, trr_dtype b,
                                    trr_dtype out) {
    int wm = 1, wn = 1;
    trr_cuda_mma_warp_grid(cfg->block_m, cfg->block_n, cfg->threads / 32, &wm, &wn);
    memset(v, 0, sizeof *v);
    v->file = "matmul_mma.cu";
    /* Main loop: 1 pipelines the register fragments across k steps (faster, more registers), 0 loads them at
     * each k step. 1 where it fits the register file: BK 32 or less, and not a 64x64 warp tile in a block of
     * 4 warps or fewer (those spill, compiled for sm_90a); and only for an even number of 16-deep k steps per
     * tile, since its two fragment buffers alternate by step and an odd count (BK 16) would multiply the next
     * tile's first step with the previous tile's fragments. */
    int warp_tile = (cfg->block_m / wm) * (cfg->block_n / wn);
    /* in bytes a row and 32-byte K steps a tile: 16-bit BK 32 is 8-bit BK 64 */
    const int f8 = in == TRR_F8E4M3 || in == TRR_F8E5M2, row_bytes = cfg->block_k * (f8 ? 1 : 2);
    int mv = row_bytes <= 64 && (row_bytes / 32) % 2 == 0 &&
                     !(warp_tile >= 64 * 64 && cfg->threads <= 128 && cfg->block_m < 128)
                 ? 1
                 : 0;
    trr_cuda_define(v, "-DBM=%d -DBN=%d -DBK=%d -DWARPS_M=%d -DWARPS_N=%d -DSTAGES=%d -DTRANS_B=%d -DDT_IN=%d -DDT_OUT=%d -DMMA_V=%d",
                    cfg->block_m, cfg->block_n, cfg->block_k, wm, wn, cfg->stages, trans_b ? 1 : 0, (int)in, (int)out,
                    mv);
    if (b != in) trr_cuda_define(v, "-DDT_B=%d", (int)b);
    /* split-K, the splits joined in the kernel into C's type */
    if (cfg->split_k > 1) trr_cuda_define(v, "-DSPLIT_K=1");
    if (f8) v->min_sm = 89; /* mma.sync with e4m3 / e5m2 operands */
}

void trr_cuda_variant_matmul_wgmma(trr_cuda_variant *v, const trr_config *cfg, int trans_b, trr_dtype in, trr_dtype out) {
    trr_cuda_variant_matmul_wgmma_ab(v, cfg, trans_b, in, in, out);
}

void trr_cuda_variant_matmul_wgmma_ab(trr_cuda_variant *v, const trr_config *cfg, int trans_b, trr_dtype in,
                                      trr_dtype b, trr_dtype out) {
    trr_cuda_variant_matmul_wgmma_layout(v, cfg, 0, trans_b, in, b, out);
}

void trr_cuda_variant_matmul_wgmma_layout(trr_cuda_variant *v, const trr_config *cfg, int trans_a, int trans_b,
                                          trr_dtype in, trr_dtype b, trr_dtype out) {
    memset(v, 0, sizeof *v);
    v->file = "matmul_wgmma.cu";
    v->sm90a_only = 1;
    trr_cuda_define(v, "-DBN=%d -DSTAGES=%d -DTRANS_B=%d -DDT_IN=%d -DDT_OUT=%d -DC_SLOTS=%d", cfg->block_n,
                    cfg->stages, trans_b ? 1 : 0, (int)in, (int)out, trr_cuda_wgmma_c_slots(cfg, out));
    /* block_m 64 or 192: one or three consumer warpgroups (the kernel's default is 128, left out) */
    if (cfg->block_m == TRR_CUDA_WGMMA_NARROW_BM || cfg->block_m == TRR_CUDA_WGMMA_TALL_BM)
        trr_cuda_define(v, "-DBM=%d", cfg->block_m);
    /* block_m 256: two 128-row blocks in a cluster sharing B (the kernel's default is 1, left out) */
    if (cfg->block_m == 2 * TRR_CUDA_WGMMA_BM) trr_cuda_define(v, "-DCLUSTER_M=2");
    if (b != in) trr_cuda_define(v, "-DDT_B=%d", (int)b);
    /* A stored [K,M], read M-major (16-bit inputs; the kernel's default is 0, left out) */
    if (trans_a) trr_cuda_define(v, "-DTRANS_A=1");
    /* split-K's main kernel: out is then the partials' f32 (ops_matmul.c) */
    if (cfg->split_k > 1) trr_cuda_define(v, "-DSPLIT_K=1");
    /* variant streamk: the schedule that balances the last waves (16-bit, single blocks, unsplit: config_matmul.c) */
    if (cfg->variant == TRR_VARIANT_STREAMK) trr_cuda_define(v, "-DSTREAM_K=1");
}

void trr_cuda_variant_matmul_reduce(trr_cuda_variant *v, trr_dtype out) {
    memset(v, 0, sizeof *v);
    v->file = "matmul_reduce.cu";
    trr_cuda_define(v, "-DDT_OUT=%d", (int)out);
}

void trr_cuda_variant_matmul_pack(trr_cuda_variant *v) {
    memset(v, 0, sizeof *v);
    v->file = "matmul_pack.cu";
}

void trr_cuda_variant_matmul_simt(trr_cuda_variant *v, const trr_config *cfg, trr_dtype in, trr_dtype out,
                                  int trans_a, int trans_b, int aligned) {
    memset(v, 0, sizeof *v);
    v->file = "matmul_simt.cu";
    trr_cuda_define(v, "-DDT_IN=%d -DDT_OUT=%d -DBM=%d -DBN=%d -DBK=%d -DTHREADS=%d -DTRANS_A=%d -DTRANS_B=%d -DALIGNED=%d",
                    (int)in, (int)out, cfg->block_m, cfg->block_n, cfg->block_k, cfg->threads,
                    trans_a ? 1 : 0, trans_b ? 1 : 0, aligned ? 1 : 0);
}

int trr_cuda_matmul_call_variants(const trr_call *call, trr_cuda_variant out[2]) {
    const trr_config *cfg = &call->config;
    if (cfg->variant == TRR_VARIANT_WGMMA || cfg->variant == TRR_VARIANT_STREAMK) {
        trr_cuda_variant_matmul_wgmma_layout(&out[0], cfg, call->trans_a, call->trans_b, call->x.dtype, call->y.dtype,
                                             trr_cuda_wgmma_c_type(call));
        if (cfg->split_k < 2) return 1;
        trr_cuda_variant_matmul_reduce(&out[1], call->z.dtype);
        return 2;
    }
    if (cfg->variant == TRR_VARIANT_MMA) {
        trr_cuda_variant_matmul_mma_ab(&out[0], cfg, call->trans_b, call->x.dtype, call->y.dtype, call->z.dtype);
        return 1;
    }
    for (int al = 0; al <= 1; al++)
        trr_cuda_variant_matmul_simt(&out[al], cfg, call->x.dtype, call->z.dtype, call->trans_a, call->trans_b, al);
    return 2;
}

/* A kernel of a shape rule's generic path; a stem with no embedded file still reaches fn, whose compile fails. */
static void rule_variant(trr_cuda_variant_fn fn, void *user, const char *stem, trr_dtype dt, int kind, int vpt) {
    trr_cuda_variant v;
    if (!trr_cuda_variant_rule(&v, stem, dt, kind, vpt)) v.file = stem;
    fn(&v, user);
}

/* 1 when op d is the first of the ops with its stem and shape rule (whose variants are each stem's once). */
static int first_of_stem(const trr_op_desc *d) {
    for (int e = 0; e < (int)d->op; e++) {
        const trr_op_desc *o = trr_op_desc_get((trr_op)e);
        if (o && o->shape == d->shape && o->kernel && d->kernel && strcmp(o->kernel, d->kernel) == 0) return 0;
    }
    return 1;
}

/* The distinct input dtypes of d's signatures, in order; their count. */
static int input_dtypes(const trr_op_desc *d, trr_dtype out[TRR_DTYPE_COUNT]) {
    int n = 0;
    for (int s = 0; s < d->n_signatures; s++) {
        int seen = 0;
        for (int i = 0; i < n; i++) seen |= out[i] == d->signatures[s].in;
        if (!seen) out[n++] = d->signatures[s].in;
    }
    return n;
}

static int elem_bytes(trr_dtype t) { return t == TRR_F32 ? 4 : t == TRR_F16 || t == TRR_BF16 ? 2 : 1; }

void trr_cuda_for_each_variant(trr_cuda_variant_fn fn, void *user) {
    trr_cuda_variant v;
    const trr_dtype floats[3] = {TRR_F32, TRR_F16, TRR_BF16};
    const trr_dtype halves[2] = {TRR_F16, TRR_BF16};
    /* every op of the memory-bound rules, from its definition, per input dtype of its signatures */
    for (int op = 0; op < TRR_OP_COUNT; op++) {
        const trr_op_desc *d = trr_op_desc_get((trr_op)op);
        trr_dtype dts[TRR_DTYPE_COUNT];
        const int ndt = d ? input_dtypes(d, dts) : 0;
        if (!d || !trr_cuda_variant_of(&v, d)) continue;
        if (d->shape == TRR_SHAPE_ELEMENTWISE && !d->converts) {
            /* a byte move per element size, the others per dtype; each with every UNROLL (vectors per thread:
             * 1, 2, 4, 8) */
            for (int u = 1; u <= 8; u *= 2) {
                if (d->bytewise) {
                    for (int es = 1; es <= 4; es *= 2) {
                        int has = 0;
                        for (int i = 0; i < ndt; i++) has |= elem_bytes(dts[i]) == es;
                        if (has && trr_cuda_variant_elementwise(&v, d, es, u)) fn(&v, user);
                    }
                    continue;
                }
                for (int i = 0; i < ndt; i++)
                    if (trr_cuda_variant_elementwise(&v, d, (int)dts[i], u)) fn(&v, user);
            }
        } else if (d->shape == TRR_SHAPE_PLANES) {
            for (int f = 0; f <= 1; f++) {
                trr_cuda_variant_of(&v, d);
                trr_cuda_define(&v, "-DOUT_F32=%d", f);
                fn(&v, user);
            }
        } else if (d->shape == TRR_SHAPE_ROWS) {
            for (int i = 0; i < ndt; i++) {
                int count = 0;
                const trr_cuda_softmax_step *ladder = trr_cuda_softmax_ladder(dts[i], &count);
                for (int k = 0; k < count; k++)
                    if (trr_cuda_variant_rows(&v, d, dts[i], ladder[k].threads, ladder[k].items)) fn(&v, user);
                for (int items = 16 / elem_bytes(dts[i]); items <= 32; items *= 2) /* the subgroup variant */
                    if (trr_cuda_variant_rows(&v, d, dts[i], TRR_CUDA_SOFTMAX_WARP_THREADS, items)) fn(&v, user);
                if (trr_cuda_variant_rows(&v, d, dts[i], TRR_CUDA_SOFTMAX_ONLINE_THREADS,
                                          trr_cuda_softmax_online_items(dts[i])))
                    fn(&v, user);
            }
        } else if (d->shape == TRR_SHAPE_ROW_REDUCE) {
            for (int i = 0; i < ndt; i++)
                for (int loads = 1; loads <= 16; loads *= 2)
                    for (int kind = 0; kind <= 3; kind++) {
                        if (kind == 3 && loads > 1) continue; /* bulk copies: LOADS plays no part (ops_stream.c) */
                        if (trr_cuda_variant_row_reduce(&v, d, dts[i], loads, kind)) fn(&v, user);
                    }
        }
    }
    /* the row-norm rule's kernel files (each stem once), per float dtype: a warp per row with every count of
     * vectors a lane up to 1024 columns, a block per row with every count up to TRR_CUDA_NORM_MAX_VPT, the
     * looping kernel with its own */
    for (int op = 0; op < TRR_OP_COUNT; op++) {
        const trr_op_desc *d = trr_op_desc_get((trr_op)op);
        if (!d || d->shape != TRR_SHAPE_ROW_NORM || !d->kernel || !first_of_stem(d)) continue;
        for (int f = 0; f < 3; f++) {
            const int vec = floats[f] == TRR_F32 ? 4 : 8;
            for (int vpt = 1; vpt <= TRR_CUDA_NORM_MAX_VPT; vpt++) {
                if (32 * vpt * vec <= TRR_CUDA_NORM_WARP_MAX_COLS)
                    rule_variant(fn, user, d->kernel, floats[f], TRR_CUDA_NORM_WARP, vpt);
                rule_variant(fn, user, d->kernel, floats[f], TRR_CUDA_NORM_BLOCK, vpt);
            }
            rule_variant(fn, user, d->kernel, floats[f], TRR_CUDA_NORM_LOOP, TRR_CUDA_NORM_LOOP_VPT);
        }
    }
    /* the element-wise rule's converting ops (cast): one module each, every dtype pair's kernels in it */
    for (int op = 0; op < TRR_OP_COUNT; op++) {
        const trr_op_desc *d = trr_op_desc_get((trr_op)op);
        if (!d || d->shape != TRR_SHAPE_ELEMENTWISE || !d->kernel || !d->converts) continue;
        if (!trr_cuda_variant_convert(&v, d->kernel, d->name)) v.file = d->kernel; /* no such file: its compile fails */
        fn(&v, user);
    }
    /* matmul, tensor cores: every known-good config, both B layouts, both output types */
    for (int i = 0; i < trr_matmul_f16_nvidia_config_count; i++) {
        trr_config cfg = trr_matmul_f16_nvidia_configs[i];
        for (int tb = 0; tb <= 1; tb++) {
            for (int h = 0; h < 2; h++) {
                for (int o = 0; o < 2; o++) {
                    trr_cuda_variant_matmul_mma(&v, &cfg, tb, halves[h], o ? halves[h] : TRR_F32);
                    fn(&v, user);
                }
            }
        }
    }
    /* ... and the BK 32 form of the first that choose_config picks for large products */
    {
        trr_config cfg = {.block_m = 128, .block_n = 256, .block_k = 32, .group_m = 8, .stages = 4, .threads = 256};
        for (int tb = 0; tb <= 1; tb++) {
            for (int h = 0; h < 2; h++) {
                for (int o = 0; o < 2; o++) {
                    trr_cuda_variant_matmul_mma(&v, &cfg, tb, halves[h], o ? halves[h] : TRR_F32);
                    fn(&v, user);
                }
            }
        }
    }
    /* ... and the few-row tiles, unsplit and split, as listed and with the stages that fit the devices of the
     * least shared memory */
    for (int i = 0; i < 2 * trr_cuda_mma_small_config_count; i++) {
        const int c = i % trr_cuda_mma_small_config_count;
        trr_config cfg = trr_cuda_mma_small_configs[c];
        if (i >= trr_cuda_mma_small_config_count) {
            cfg = trr_cuda_mma_small_fit(&cfg, TRR_CUDA_SMEM_OPTIN_MIN);
            if (cfg.stages == trr_cuda_mma_small_configs[c].stages) continue;
        }
        for (int sk = 1; sk <= 2; sk++) {
            cfg.split_k = sk;
            for (int tb = 0; tb <= 1; tb++)
                for (int h = 0; h < 2; h++)
                    for (int o = 0; o < 2; o++) {
                        trr_cuda_variant_matmul_mma(&v, &cfg, tb, halves[h], o ? halves[h] : TRR_F32);
                        fn(&v, user);
                    }
        }
    }
    /* matmul, Hopper (sm_90a only): every wgmma config, both B layouts, both output types; then the clustered
     * (block_m 256) form of each that runs every schedule (not 192 wide). A stored [K,M] (TRANS_A) in each, into
     * C's own type only (the layout is all that differs) */
    for (int cm = 1; cm <= 2; cm++) {
        for (int i = 0; i < trr_cuda_wgmma_config_count; i++) {
            trr_config cfg = trr_cuda_wgmma_configs[i];
            if (cm == 2 && (cfg.block_n == 192 || !trr_cuda_wgmma_every_schedule(&cfg))) continue;
            cfg.block_m *= cm;
            for (int ta = 0; ta <= 1; ta++)
                for (int tb = 0; tb <= 1; tb++)
                    for (int h = 0; h < 2; h++)
                        for (int o = ta; o < 2; o++) {
                            trr_cuda_variant_matmul_wgmma_layout(&v, &cfg, ta, tb, halves[h], halves[h],
                                                                 o ? halves[h] : TRR_F32);
                            fn(&v, user);
                        }
        }
    }
    /* ... the narrow (64-row) configs, likewise, and split (their partials f32) */
    for (int i = 0; i < trr_cuda_wgmma_narrow_config_count; i++)
        for (int sk = 1; sk <= 2; sk++)
            for (int ta = 0; ta <= 1; ta++)
                for (int tb = 0; tb <= 1; tb++)
                    for (int h = 0; h < 2; h++)
                        for (int o = 0; o < (sk > 1 ? 1 : 2); o++) {
                            if (ta && sk == 1 && o == 0) continue;
                            trr_config cfg = trr_cuda_wgmma_narrow_configs[i];
                            cfg.split_k = sk;
                            trr_cuda_variant_matmul_wgmma_layout(&v, &cfg, ta, tb, halves[h], halves[h],
                                                                 o ? halves[h] : TRR_F32);
                            fn(&v, user);
                        }
    /* ... and with the stream-K schedule (variant streamk: single blocks, 16-bit inputs, C's type): the heuristic's
     * configs (the first of each width) in every layout of B and type, and once with A stored [K,M]; the tuner's
     * others once (STREAM_K is all that differs) */
    for (int i = 0; i < trr_cuda_wgmma_config_count; i++) {
        trr_config cfg = trr_cuda_wgmma_configs[i];
        if (!trr_cuda_wgmma_every_schedule(&cfg)) continue;
        cfg.variant = TRR_VARIANT_STREAMK;
        int first = 1;
        for (int j = 0; j < i; j++) first &= trr_cuda_wgmma_configs[j].block_n != cfg.block_n;
        for (int ta = 0; ta <= 1; ta++)
            for (int tb = 0; tb <= 1; tb++)
                for (int h = 0; h < 2; h++)
                    for (int o = 0; o < 2; o++) {
                        if (!first && (ta || tb != i % 2 || h != 0 || o != 1)) continue;
                        if (ta && (h != 0 || o != 1)) continue;
                        trr_cuda_variant_matmul_wgmma_layout(&v, &cfg, ta, tb, halves[h], halves[h],
                                                             o ? halves[h] : TRR_F32);
                        fn(&v, user);
                    }
    }
    /* matmul: the configs of the shipped tuning tables (tuning/cuda-*.json), which the tuner may take from beyond
     * the tables above (harness/tune_space.c); the check gathers each distinct kernel once */
    int n_shipped = 0;
    const trr_tune_entry *shipped = trr_tune_shipped_entries(&n_shipped);
    for (int i = 0; i < n_shipped; i++) {
        const trr_tune_entry *e = &shipped[i];
        if (strcmp(e->key.backend, "cuda") != 0 || e->key.op != TRR_OP_MATMUL) continue;
        trr_call call;
        memset(&call, 0, sizeof call);
        call.x.dtype = call.y.dtype = e->key.in_dtype;
        call.z.dtype = e->key.out_dtype;
        call.trans_a = e->key.trans_a;
        call.trans_b = e->key.trans_b;
        call.config = e->config;
        trr_cuda_variant kv[2];
        const int nk = trr_cuda_matmul_call_variants(&call, kv);
        for (int k = 0; k < nk; k++) fn(&kv[k], user);
    }
    /* attention: the heuristic's tiles per head-dimension bucket and dtype, and the split's combine kernel */
    trr_cuda_attention_variants(fn, user);
    /* matmul of 8-bit floats (B stored [N,K], the only layout their tensor cores take): every mma.sync config with
     * e4m3 x e4m3 into each output type, the first with the mixed pairs (the types are all that differs), sm_89 and
     * later; every wgmma config, single and clustered, likewise (sm_90a) */
    const trr_dtype outs[3] = {TRR_F32, TRR_F16, TRR_BF16};
    const trr_dtype pairs[3][2] = {{TRR_F8E4M3, TRR_F8E4M3}, {TRR_F8E5M2, TRR_F8E4M3}, {TRR_F8E4M3, TRR_F8E5M2}};
    for (int i = 0; i < trr_cuda_mma_f8_config_count; i++)
        for (int p = 0; p < (i == 0 ? 3 : 1); p++)
            for (int o = 0; o < 3; o++) {
                trr_cuda_variant_matmul_mma_ab(&v, &trr_cuda_mma_f8_configs[i], 1, pairs[p][0], pairs[p][1], outs[o]);
                fn(&v, user);
            }
    for (int cm = 1; cm <= 2; cm++)
        for (int i = 0; i < trr_cuda_wgmma_f8_config_count; i++)
            for (int p = 0; p < (i == 0 && cm == 1 ? 3 : 1); p++)
                for (int o = 0; o < 3; o++) {
                    trr_config cfg = trr_cuda_wgmma_f8_configs[i];
                    cfg.block_m *= cm;
                    trr_cuda_variant_matmul_wgmma_ab(&v, &cfg, 1, pairs[p][0], pairs[p][1], outs[o]);
                    fn(&v, user);
                }
    /* matmul split-K: every mma.sync config with SPLIT_K (its splits joined in the kernel into C's type), both B
     * layouts, f16 and bf16 into f32 and their own type; every wgmma config (single and clustered) with SPLIT_K,
     * whose main kernel stores f32 partials whatever C's type; the 8-bit floats' first mma.sync config and every
     * wgmma one; and wgmma's second pass into each output type */
    for (int i = 0; i < trr_matmul_f16_nvidia_config_count; i++) {
        trr_config cfg = trr_matmul_f16_nvidia_configs[i];
        cfg.split_k = 2;
        for (int tb = 0; tb <= 1; tb++)
            for (int h = 0; h < 2; h++)
                for (int o = 0; o < 2; o++) {
                    trr_cuda_variant_matmul_mma(&v, &cfg, tb, halves[h], o ? halves[h] : TRR_F32);
                    fn(&v, user);
                }
    }
    for (int cm = 1; cm <= 2; cm++)
        for (int i = 0; i < trr_cuda_wgmma_config_count; i++) {
            trr_config cfg = trr_cuda_wgmma_configs[i];
            if ((cm == 2 && cfg.block_n == 192) || !trr_cuda_wgmma_every_schedule(&cfg)) continue;
            cfg.block_m *= cm;
            cfg.split_k = 2;
            for (int ta = 0; ta <= 1; ta++)
                for (int tb = 0; tb <= 1; tb++)
                    for (int h = 0; h < 2; h++) {
                        trr_cuda_variant_matmul_wgmma_layout(&v, &cfg, ta, tb, halves[h], halves[h], TRR_F32);
                        fn(&v, user);
                    }
        }
    {
        trr_config cfg = trr_cuda_mma_f8_configs[0];
        cfg.split_k = 2;
        for (int o = 0; o < 3; o++) {
            trr_cuda_variant_matmul_mma_ab(&v, &cfg, 1, TRR_F8E4M3, TRR_F8E4M3, outs[o]);
            fn(&v, user);
        }
        for (int cm = 1; cm <= 2; cm++)
            for (int i = 0; i < trr_cuda_wgmma_f8_config_count; i++) {
                cfg = trr_cuda_wgmma_f8_configs[i];
                cfg.block_m *= cm;
                cfg.split_k = 2;
                trr_cuda_variant_matmul_wgmma_ab(&v, &cfg, 1, TRR_F8E4M3, TRR_F8E4M3, TRR_F32);
                fn(&v, user);
            }
    }
    for (int o = 0; o < 3; o++) {
        trr_cuda_variant_matmul_reduce(&v, outs[o]);
        fn(&v, user);
    }
    trr_cuda_variant_matmul_pack(&v);
    fn(&v, user);
    /* matmul, CUDA cores: f32 with every SIMT tile; f16 and bf16 inputs (the fallback) with the small tile */
    for (int ta = 0; ta <= 1; ta++) {
        for (int tb = 0; tb <= 1; tb++) {
            for (int al = 0; al <= 1; al++) {
                for (int i = 0; i < trr_cuda_simt_config_count; i++) {
                    trr_cuda_variant_matmul_simt(&v, &trr_cuda_simt_configs[i], TRR_F32, TRR_F32, ta, tb, al);
                    fn(&v, user);
                }
                for (int h = 0; h < 2; h++) {
                    for (int o = 0; o < 2; o++) {
                        trr_cuda_variant_matmul_simt(&v, &trr_cuda_simt_configs[trr_cuda_simt_config_count - 1],
                                                     halves[h], o ? halves[h] : TRR_F32, ta, tb, al);
                        fn(&v, user);
                    }
                }
            }
        }
    }
}

/* ---- The compile-everything check ----
 *
 * Every distinct variant is compiled for each architecture asked for. Compiling them all at NVRTC's default
 * optimisation costs far more than CI's time, nearly all of it in the optimiser and ptxas, so the check
 * compiles in two modes:
 *  - fast (NVRTC's fast-compile mode, CHECK_FAST_OPTIONS): every variant. The front end parses and checks the
 *    same source as at the default, so its errors and warnings are the same, and ptxas still builds machine code
 *    for the architecture (its errors, and its warnings such as ignored launch bounds). Fast mode optimises less,
 *    and ptxas then reports performance advisories that the default build does not have (its lines "ptxas ...
 *    Potential Performance Loss": wgmma serialised at waits it inserted, setmaxnreg ignored): they describe the
 *    fast build, which never runs, so they pass.
 *  - full (the default optimisation, as the backend builds): one representative of each group of variants that
 *    share what decides register allocation and the schedule of the tensor-core instructions (full_groups), in
 *    place of its fast compile. Any warning fails, and so does a performance advisory: there it says that the
 *    kernel as it runs serialises its wgmma, a real loss, unless the kernel does so by design
 *    (serialises_by_design). ptxas gives these advisories at the "info" level, which a search of the log for
 *    "warning" alone would pass.
 * The distinct (file, options) pairs are gathered per architecture first (the enumeration repeats a few softmax
 * shapes), then the compiles of all the architectures are dealt into parts of about equal cost: NVRTC
 * serializes compiles within a process (threads only spin), so separate processes take the parts. */

/* -Ofc: NVRTC's spelling of --Ofast-compile; max skips the most optimisation work. */
#define CHECK_FAST_OPTIONS "-Ofc=max"

typedef enum { CHECK_FAST, CHECK_FULL } check_mode;

/* The value of v's define -D<name>=<int>, or -1 when it has none. */
static int define_value(const trr_cuda_variant *v, const char *name) {
    const size_t n = strlen(name);
    for (const char *p = v->defines; (p = strstr(p, "-D")) != NULL; p += 2) {
        if ((p == v->defines || p[-1] == ' ') && strncmp(p + 2, name, n) == 0 && p[2 + n] == '=')
            return atoi(p + 3 + n);
    }
    return -1;
}

/* Which defines set a file's register allocation and the schedule ptxas gives its tensor-core instructions: the
 * variants of one file and architecture with the same values of these (for the first row of the file whose
 * condition holds) are one group, whose first variant is compiled in full; a file with no row is one group.
 * Dtype codes count by their width (f16 and bf16 alike, e4m3 and e5m2 alike: the same instruction shapes and
 * registers, only the conversions and the type qualifiers differ).
 * The grouping is coarser than the code's real distinctions, because a full compile costs as much as many fast
 * ones: it is spent where the default build reports what fast mode cannot, on the wgmma kernels. Their serialisation
 * follows from the main loop's structure: the operand width (8-bit floats add partial sums on the CUDA cores),
 * BM (one consumer warpgroup or two), BN (the instruction's width, and the 8-bit kernel's one or two partials), the
 * cluster's remote releases, the split-K and stream-K work loops; and from the epilogue that reads the accumulators,
 * which differs by C's width.
 * The ring's depth (STAGES), the epilogue's store slots and B's layout change addresses and waits, not that
 * structure. The other kernels hold no wgmma, and the default build has shown no warning fast mode lacks: one
 * representative per file (and per kind for attention's mma.sync, CUDA-core and combine kernels) keeps the
 * default pipeline exercised on each. */
static const struct {
    const char *file, *when, *keys; /* when: "NAME=VALUE" that must hold, or NULL */
} full_groups[] = {
    {"matmul_wgmma.cu", NULL, "DT_IN DT_OUT BM BN CLUSTER_M SPLIT_K STREAM_K"},
    {"attention.cu", "KIND=3", "KIND DT DP"}, /* wgmma: the head dimension sets the shapes and the registers */
    {"attention.cu", NULL, "KIND"},
    {"matmul_mma.cu", NULL, "DT_IN"},
};

static int dtype_define(const char *name) { return strncmp(name, "DT", 2) == 0 && (name[2] == '\0' || name[2] == '_'); }

/* v's group key, for v compiled for arch: the file, the architecture and the values of its row's defines. */
static void group_key(const trr_cuda_variant *v, const char *arch, char *key, size_t cap) {
    int n = snprintf(key, cap, "%s %s", v->file, arch);
    for (size_t g = 0; g < sizeof full_groups / sizeof full_groups[0]; g++) {
        if (strcmp(full_groups[g].file, v->file) != 0) continue;
        const char *when = full_groups[g].when;
        if (when) {
            char name[32];
            const size_t len = strcspn(when, "=");
            snprintf(name, sizeof name, "%.*s", (int)len, when);
            if (define_value(v, name) != atoi(when + len + 1)) continue;
        }
        for (const char *k = full_groups[g].keys; *k;) {
            char name[32];
            const size_t len = strcspn(k, " ");
            snprintf(name, sizeof name, "%.*s", (int)len, k);
            int value = define_value(v, name);
            if (dtype_define(name) && value >= 0) value = elem_bytes((trr_dtype)value);
            if (n >= 0 && (size_t)n < cap) n += snprintf(key + n, cap - (size_t)n, " %s=%d", name, value);
            k += len;
            while (*k == ' ') k++;
        }
        return;
    }
}

/* 1 when ptxas serialises v's wgmma by the kernel's design, so its full compile may carry that advisory:
 * matmul_wgmma.cu's 8-bit float BN 128 form, whose two partials alternate (kept for comparison; the file says
 * why ptxas answers it so). */
static int serialises_by_design(const trr_cuda_variant *v) {
    return strcmp(v->file, "matmul_wgmma.cu") == 0 && define_value(v, "DT_IN") >= TRR_F8E4M3 &&
           define_value(v, "BN") == 128;
}

/* The first line of log that fails v's check in mode, or NULL. A line fails when it holds "warning", or when it
 * is a ptxas performance advisory ("ptxas" then "Potential Performance Loss") in a full compile of a kernel
 * that does not serialise by design; in fast mode those advisories describe the fast build alone (above). */
static const char *failing_line(const char *log, const trr_cuda_variant *v, check_mode mode, size_t *out_len) {
    for (const char *line = log; line && *line;) {
        const size_t len = strcspn(line, "\n");
        char text[1024];
        snprintf(text, sizeof text, "%.*s", (int)len, line);
        const int advisory = strncmp(text, "ptxas", 5) == 0 && strstr(text, "Potential Performance Loss");
        if (advisory ? mode == CHECK_FULL && !serialises_by_design(v) : strstr(text, "warning") != NULL) {
            *out_len = len;
            return line;
        }
        line += len;
        if (*line == '\n') line++;
    }
    return NULL;
}

/* One compile of the check: a variant, the architecture for it, the mode and the part that runs it. */
typedef struct check_job {
    trr_cuda_variant v;
    const char *arch;
    check_mode mode;
    int cost; /* relative: a fast compile is 1 */
    int part;
} check_job;

/* What a compile costs, relative: a full compile of the tensor-core kernels that most full compiles are of, in
 * fast compiles of an average variant (as measured; only the balance of the parts depends on it). */
enum { COST_FAST = 1, COST_FULL = 20 };

typedef struct compile_all_state {
    const char *arch;
    int first;      /* jobs[first..] are this architecture's */
    check_job *jobs;
    int count, cap;
    trr_status status;
    char *report;
    size_t report_cap;
} compile_all_state;

static void collect_one(const trr_cuda_variant *v, void *user) {
    compile_all_state *s = user;
    if (s->status != TRR_OK) return;
    if (v->sm90a_only && strcmp(s->arch, "sm_90a") != 0) return;
    if (v->min_sm && atoi(s->arch + 3) < v->min_sm) return; /* "sm_80" -> 80 */
    for (int i = s->first; i < s->count; i++) /* the same program compiled twice checks nothing more */
        if (strcmp(s->jobs[i].v.file, v->file) == 0 && strcmp(s->jobs[i].v.defines, v->defines) == 0) return;
    if (s->count == s->cap) {
        int cap = s->cap ? 2 * s->cap : 512;
        check_job *grown = realloc(s->jobs, (size_t)cap * sizeof *grown);
        if (!grown) {
            snprintf(s->report, s->report_cap, "no host memory for the list of variants");
            s->status = TRR_ERR_OUT_OF_MEMORY;
            return;
        }
        s->jobs = grown;
        s->cap = cap;
    }
    check_job *j = &s->jobs[s->count++];
    memset(j, 0, sizeof *j);
    j->v = *v;
    j->arch = s->arch;
}

/* 1 when this NVRTC takes the fast-compile option (older ones refuse it as unknown): a kernel with nothing in
 * it, compiled for arch in fast mode. */
static int fast_mode_taken(const char *arch) {
    trr_cuda_variant probe;
    memset(&probe, 0, sizeof probe);
    probe.file = "check#fast-compile";
    probe.text = "extern \"C\" __global__ void probe() {}\n";
    void *cubin = NULL;
    size_t size = 0;
    char *log = NULL;
    const trr_status st = trr_cuda_compile_with(NULL, &probe, arch, CHECK_FAST_OPTIONS, &cubin, &size, NULL, &log);
    free(cubin);
    free(log);
    return st == TRR_OK;
}

/* Marks the first variant of each group of this architecture's jobs for the full compile, and the others for the
 * fast one; with no fast mode (an NVRTC that lacks it) all of them for the full compile, which checks as much as
 * the two modes together at the cost of compiling everything in full. */
static trr_status choose_full(compile_all_state *s, int fast) {
    const int n = s->count - s->first;
    char(*keys)[384] = malloc((size_t)(n ? n : 1) * sizeof *keys);
    if (!keys) {
        snprintf(s->report, s->report_cap, "no host memory for the variants' groups");
        return TRR_ERR_OUT_OF_MEMORY;
    }
    for (int i = 0; i < n; i++) {
        check_job *j = &s->jobs[s->first + i];
        group_key(&j->v, j->arch, keys[i], sizeof keys[i]);
        int seen = 0;
        for (int e = 0; e < i && !seen; e++) seen = strcmp(keys[e], keys[i]) == 0;
        j->mode = seen && fast ? CHECK_FAST : CHECK_FULL;
        j->cost = j->mode == CHECK_FAST ? COST_FAST : COST_FULL;
    }
    free(keys);
    return TRR_OK;
}

/* Deals the jobs into parts of about equal cost: the costliest first, each to the part with the least so far
 * (ties to the lowest part). Every process computes the same deal from the same list. */
static void deal_parts(check_job *jobs, int count, int parts) {
    long long load[64] = {0};
    int top = 0;
    for (int i = 0; i < count; i++)
        if (jobs[i].cost > top) top = jobs[i].cost;
    for (int cost = top; cost >= 1; cost--)
        for (int i = 0; i < count; i++) {
            if (jobs[i].cost != cost) continue;
            int best = 0;
            for (int p = 1; p < parts; p++)
                if (load[p] < load[best]) best = p;
            jobs[i].part = best;
            load[best] += cost;
        }
}

/* A variant that passed its check leaves an empty file named by its key (source, options, arch, NVRTC version
 * and the check's mode) in the cache directory's nvrtc-clean/, so the check compiles only what changed since:
 * the same inputs give NVRTC's same result. The mode is in the key, so a fast compile's pass never stands for a
 * full one's, nor the reverse. Where no cache directory can be had, everything is compiled. */
static int clean_record_path(const check_job *j, char *path, size_t cap) {
    char dir[1024], versions[64];
    if (trr_cache_dir(NULL, dir, sizeof dir) != TRR_OK) return 0;
    snprintf(versions, sizeof versions, "nvrtc %d check %s", trr_cuda_nvrtc_version(),
             j->mode == CHECK_FULL ? "full" : "fast " CHECK_FAST_OPTIONS);
    const uint64_t key = trr_cuda_variant_key(&j->v, j->arch, versions);
    if (!key) return 0;
    snprintf(path, cap, "%s/nvrtc-clean", dir);
    if (mkdir(path, 0755) != 0 && errno != EEXIST) return 0;
    snprintf(path, cap, "%s/nvrtc-clean/%016llx", dir, (unsigned long long)key);
    return 1;
}

static trr_status compile_one(const check_job *j, char *report, size_t report_cap) {
    char record[1200];
    const int recorded = clean_record_path(j, record, sizeof record);
    struct stat sb;
    if (recorded && stat(record, &sb) == 0 && S_ISREG(sb.st_mode)) return TRR_OK;
    void *cubin = NULL;
    size_t size = 0, len = 0;
    char *log = NULL;
    const char *mode = j->mode == CHECK_FULL ? "full" : "fast";
    trr_status st = trr_cuda_compile_with(NULL, &j->v, j->arch, j->mode == CHECK_FULL ? NULL : CHECK_FAST_OPTIONS,
                                          &cubin, &size, NULL, &log);
    free(cubin);
    const char *bad = st == TRR_OK ? failing_line(log, &j->v, j->mode, &len) : NULL;
    if (st != TRR_OK) {
        snprintf(report, report_cap, "%s (%s) for %s, %s compile: %s", j->v.file, j->v.defines, j->arch, mode,
                 trr_last_error(NULL));
    } else if (bad) {
        snprintf(report, report_cap, "%s (%s) for %s, %s compile: %.*s\nwhole log:\n%s", j->v.file, j->v.defines,
                 j->arch, mode, (int)len, bad, log);
        st = TRR_ERR_COMPILE;
    } else if (recorded) {
        trr_file_write_atomic(NULL, record, "", 0); /* best effort: without it the next check compiles again */
    }
    free(log);
    return st;
}

trr_status trr_cuda_compile_check(const char *const *archs, int n_archs, int part, int parts, int *out_done,
                                  char *report, size_t report_cap) {
    if (out_done) *out_done = 0;
    if (report_cap) report[0] = '\0';
    if (n_archs < 1 || parts < 1 || parts > 64 || part < 0 || part >= parts) {
        snprintf(report, report_cap, "part %d of %d, %d architectures", part, parts, n_archs);
        return TRR_ERR_INVALID_ARGUMENT;
    }
    trr_status st = trr_cuda_load_nvrtc(report, report_cap);
    if (st != TRR_OK) return st;
    const int fast = fast_mode_taken(archs[0]);
    compile_all_state s = {.status = TRR_OK, .report = report, .report_cap = report_cap};
    for (int a = 0; a < n_archs && s.status == TRR_OK; a++) {
        s.arch = archs[a];
        s.first = s.count;
        trr_cuda_for_each_variant(collect_one, &s);
        if (s.status == TRR_OK) s.status = choose_full(&s, fast);
    }
    if (s.status == TRR_OK) deal_parts(s.jobs, s.count, parts);
    int done = 0;
    for (int i = 0; s.status == TRR_OK && i < s.count; i++) {
        if (s.jobs[i].part != part) continue;
        s.status = compile_one(&s.jobs[i], report, report_cap);
        if (s.status == TRR_OK) done++;
    }
    free(s.jobs);
    if (out_done) *out_done = done;
    return s.status;
}

trr_status trr_cuda_compile_part(const char *arch, int part, int parts, int *out_done, char *report,
                                 size_t report_cap) {
    return trr_cuda_compile_check(&arch, 1, part, parts, out_done, report, report_cap);
}

trr_status trr_cuda_compile_all(const char *arch, int *out_done, char *report, size_t report_cap) {
    return trr_cuda_compile_part(arch, 0, 1, out_done, report, report_cap);
}
