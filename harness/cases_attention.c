/*
 * attention's cases (cases.h, trr_cases_add_attention; docs/ops.md, attention): odd lengths (Sq, Skv in 1, 17,
 * 127, 1000, 1823), Sq != Skv with and without causal, grouped-query ratios 1, 4 and 8, head dims 16, 64, 80,
 * 128 and 256 (and odd ones, 1 and 17), rows that see no key (causal with Sq > Skv), large-magnitude logits, an
 * explicit scale, torch's [B,S,H,D] storage passed as its permuted view, padded rows and odd offsets, lse on
 * and off, and decode (Sq = 1).
 *
 * Cost: the conformance suite runs the full list on PoCL and lavapipe in CI, on the 2-core machine that also
 * runs the float64 reference, so the list is sized by its work (4·B·Hq·Sq·Skv·D, halved when causal) and by
 * the kernels it makes a device compile: the long sequences run with one or two heads, and only a core of
 * small shapes runs in all three dtypes (the kernels differ between dtypes in their loads and stores alone);
 * the quick list (sanitizers, Vulkan's staging path) is that core: GQA, causal, lse, no-key rows, both
 * layouts, decode, D 256 and large logits, and the few small ones the split-call test cuts into parts.
 */
#include "cases.h"

#include "op_table.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { F32 = 1, F16 = 2, BF16 = 4, ALL = 7 };

typedef struct attn_shape {
    int64_t b, hq, hkv, sq, skv, d;
    int causal, lse, bshd;
    trr_case_layout layout;
    int special;   /* trr_case_special */
    double scale;  /* 0: the op's default, 1/sqrt(D) */
    int dtypes;    /* F32 | F16 | BF16 */
    int quick;
} attn_shape;

#define P TRR_LAYOUT_PACKED
#define O TRR_LAYOUT_OFFSET
#define S TRR_LAYOUT_STRIDED
#define LL TRR_SPECIAL_LARGE_LOGITS

static const attn_shape g_shapes[] = {
    /* b, hq, hkv, sq, skv, d, causal, lse, bshd, layout, special, scale, dtypes, quick */
    /* in every dtype: one query and one key; small heads; GQA 4 causal in torch's layout with padded rows;
     * decode; rows that see no key; the largest head dim; large logits */
    {1, 1, 1, 1, 1, 16, 0, 1, 0, P, 0, 0, ALL, 1},
    {2, 4, 4, 17, 17, 64, 0, 1, 0, P, 0, 0, ALL, 1},
    {1, 8, 2, 33, 47, 64, 1, 1, 1, S, 0, 0, ALL, 1},
    {1, 8, 1, 1, 1000, 128, 0, 1, 0, P, 0, 0, ALL, 1},
    {1, 2, 2, 127, 17, 64, 1, 1, 0, P, 0, 0, ALL, 1},
    {1, 2, 1, 17, 127, 256, 0, 1, 0, P, 0, 0, ALL, 1},
    {1, 2, 2, 17, 127, 64, 0, 1, 0, P, LL, 0, ALL, 1},
    /* short keys at D 16 behind q, o and lse of over 1021 elements: the ones test_split_calls runs in parts
     * (by batch, by GQA group and inside one, by rows; causal parts whose rows see no key, some, or all) */
    {2, 4, 2, 40, 9, 16, 1, 1, 0, P, 0, 0, ALL, 1},
    {1, 6, 2, 50, 9, 16, 0, 1, 1, S, 0, 0, ALL, 1},
    {1, 1, 1, 150, 40, 16, 1, 1, 0, O, 0, 0, ALL, 1},
    /* the rest in one dtype each, the dtypes taking turns: the kernels convert on load and store only */
    {2, 4, 4, 17, 17, 64, 1, 0, 0, O, 0, 0, F16, 0},
    {1, 8, 2, 127, 127, 64, 1, 1, 1, S, 0, 0, BF16, 0},
    /* GQA 8 and multi-query, decode (Sq = 1: causal sees every key) */
    {2, 8, 1, 33, 127, 64, 0, 0, 0, P, 0, 0, F32, 0},
    {2, 8, 2, 1, 1823, 128, 1, 1, 1, O, 0, 0, F16, 0},
    {1, 4, 1, 1, 1823, 64, 0, 1, 0, S, 0, 0, BF16, 0},
    /* a kv head's few rows against many keys, causal with Sq > 1 (the GPUs' decode kernel packs the G heads' rows
     * of a kv head into one work-group, each row with its own last key) */
    {1, 8, 2, 2, 300, 64, 1, 1, 0, P, 0, 0, F16, 0},
    /* decode's edges in the kernels that tile a kv head's rows by 16 (OpenCL's mma decode form): one row a kv
     * head with large logits; GQA 8 causal with a negative scale; exactly 16 rows (GQA 8, Sq = 2) under causal,
     * keys not a multiple of any block */
    {1, 4, 4, 1, 1000, 64, 0, 1, 0, P, LL, 0, BF16, 0},
    {2, 16, 2, 1, 700, 128, 1, 1, 0, P, 0, -0.1, F16, 0},
    {1, 16, 2, 2, 517, 128, 1, 1, 0, P, 0, 0, BF16, 0},
    /* Sq != Skv, both ways, with and without causal; Sq > Skv causal: the first Sq - Skv rows see no key */
    {1, 1, 1, 1000, 17, 64, 1, 1, 1, S, 0, 0, F32, 0},
    {1, 1, 1, 1823, 127, 16, 1, 1, 1, S, 0, 0, F16, 0},
    {1, 3, 3, 17, 127, 80, 1, 1, 1, P, 0, 0, BF16, 0},
    {2, 2, 1, 17, 127, 80, 0, 0, 0, S, 0, 0, F32, 0},
    {1, 1, 1, 33, 1000, 80, 0, 1, 0, O, 0, 0, F16, 0},
    {1, 1, 1, 33, 1823, 16, 1, 1, 0, P, 0, 0, BF16, 0},
    {1, 1, 1, 1000, 1000, 1, 1, 0, 0, P, 0, 0, F32, 0},
    /* long keys at a large head dim: where a device limits a work-item's loops (llvmpipe) the keys are split */
    {1, 1, 1, 17, 1823, 128, 0, 1, 0, P, 0, 0, F16, 0},
    {1, 1, 1, 17, 1000, 128, 1, 1, 1, S, 0, 0, F32, 0},
    /* head dims 128 and 256, and odd ones */
    {1, 2, 2, 127, 127, 128, 0, 1, 1, P, 0, 0, BF16, 0},
    {1, 1, 1, 127, 127, 256, 1, 1, 1, S, 0, 0, F32, 0},
    {1, 2, 2, 17, 33, 1, 0, 1, 0, O, 0, 0, F16, 0},
    {2, 2, 1, 17, 127, 17, 1, 1, 1, S, 0, 0, BF16, 0},
    /* large-magnitude logits again, causal at D 128 */
    {1, 2, 1, 127, 127, 128, 1, 1, 1, S, LL, 0, F32 | F16, 0},
    /* an explicit scale, negative too (the parameter reaches the kernel) */
    {1, 2, 2, 17, 127, 64, 0, 1, 0, P, 0, 0.3, BF16, 0},
    {1, 2, 1, 17, 33, 80, 1, 1, 1, S, 0, -0.05, F32, 0},
    /* negative scales in halves, with the query rows of a kv head filling the 128-row blocks of the Hopper kernel
     * (which negates Q for them) */
    {1, 4, 2, 127, 1000, 128, 1, 1, 0, P, 0, -0.07, F16, 0},
    {2, 8, 2, 127, 127, 64, 0, 1, 1, P, 0, -0.2, BF16, 0},
};

int trr_case_causal(const trr_case *c) {
    for (int i = 0; i < c->params.count; i++)
        if (c->params.values[i].name && !strcmp(c->params.values[i].name, "causal"))
            return c->params.values[i].value != 0;
    return 0;
}

static double case_scale(const trr_case *c) {
    for (int i = 0; i < c->params.count; i++)
        if (c->params.values[i].name && !strcmp(c->params.values[i].name, "scale")) return c->params.values[i].value;
    return 0.0;
}

int trr_cases_add_attention(trr_case *items, int *count, int cap) {
    static const trr_dtype dts[3] = {TRR_F32, TRR_F16, TRR_BF16};
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < sizeof g_shapes / sizeof g_shapes[0]; i++) {
            const attn_shape *sh = &g_shapes[i];
            if (!(sh->dtypes & (1 << t))) continue;
            trr_case c;
            memset(&c, 0, sizeof c);
            c.op = TRR_OP_ATTENTION;
            c.in_dtype = c.out_dtype = dts[t];
            c.attn.b = sh->b, c.attn.hq = sh->hq, c.attn.hkv = sh->hkv;
            c.attn.sq = sh->sq, c.attn.skv = sh->skv, c.attn.d = sh->d;
            c.attn.lse = sh->lse, c.attn.bshd = sh->bshd;
            c.rows = sh->sq, c.cols = sh->d; /* the normalised call's rows and cols */
            c.layout = sh->layout;
            c.special = sh->special;
            c.quick = sh->quick;
            if (sh->causal && trr_op_params_set(&c.params, "causal", 1.0) != TRR_OK) return 0;
            if (sh->scale != 0 && trr_op_params_set(&c.params, "scale", sh->scale) != TRR_OK) return 0;
            if (*count >= cap) return 0;
            items[(*count)++] = c;
        }
    return 1;
}

void trr_case_describe_attention(const trr_case *c, char *out, size_t cap) {
    const char *dt = "?";
    trr_dtype_name(c->in_dtype, &dt);
    char scale[32] = "";
    if (case_scale(c) != 0.0) snprintf(scale, sizeof scale, " scale=%g", case_scale(c));
    snprintf(out, cap, "attention %s B%lld H%lld/%lld S%lldx%lld D%lld%s%s%s%s %s%s%s", dt, (long long)c->attn.b,
             (long long)c->attn.hq, (long long)c->attn.hkv, (long long)c->attn.sq, (long long)c->attn.skv,
             (long long)c->attn.d, trr_case_causal(c) ? " causal" : "", c->attn.lse ? " lse" : "",
             c->attn.bshd ? " bshd" : "", scale, trr_case_layout_name(c->layout), c->special ? " " : "",
             trr_case_special_name(c->special));
}
