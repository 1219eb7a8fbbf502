/* attention on the Vulkan backend (kernels/vulkan/attention.comp, which says how it works): its own host code, as
 * matmul's. The kernel reads seven bindings (q, k, v, o, lse, and the splits' f32 scratch and its lse), more than
 * the backend's shared three-binding layout, so this path keeps its own set layout, pipeline layout (116 bytes of
 * push constants) and descriptor pools per batch slot, as vk_norm.c does. The config:
 *   block_m  query rows per workgroup (fewer where there are fewer queries: a decode step takes one)
 *   block_n  keys per block, sized so the workgroup's tiles fit shared memory
 *   threads  invocations per workgroup
 * Where the device limits an invocation's loop iterations (lavapipe) the keys are split across workgroups, each
 * within the budget, into a scratch buffer the path keeps (grown as needed), and a second dispatch merges them.
 * Variant coop_khr runs kernels/vulkan/attention_coop.comp instead (cooperative matrices; block_m is 16 or 32 rows
 * per subgroup, threads whole subgroups, stages 2 loads the next key block during this one's MMAs, stages 3
 * also keeps two K/V blocks in shared memory; f16 only where the config names the variant; one dispatch, no
 * split) in the same layout and push constants. split_k >= 2 (the heuristic's choice for decode) runs
 * kernels/vulkan/attention_decode.comp instead of attention.comp, in the same layout and push constants, over
 * (row blocks, kv heads, batch x chunks of the keys), and the same merge (core/attention_decode.h). */
#include "vk_attention.h"
#include "vk_bindset.h"
#include "attention_decode.h"
#include "attention_tile.h"

#include "op_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ATTN_BINDINGS 7

/* The push constants of attention.comp. */
typedef struct attn_push {
    uint32_t qo, ko, vo, oo, lo;
    uint32_t qb, qh, qs, kb, kh, ks, vb, vh, vs, ob, oh, os, lb, lh, ls;
    uint32_t hq, group, sq, skv, flags, nsplit, kps, rows;
    float qscale;
} attn_push; /* 116 bytes: inside the 128 every device offers */

typedef struct trr_vk_attn_state {
    trr_vk_bindset set;
    trr_vk_scratch scratch; /* the splits' partial o and lse */
} trr_vk_attn_state;

static const char *dtype_suffix(trr_dtype t) { return t == TRR_F32 ? "f32" : t == TRR_F16 ? "f16" : "bf16"; }

/* A multiple of 8 elements (16 bytes of f16 or bf16), or unused: a dimension of one. */
static int words(int64_t n, int64_t stride) { return n <= 1 || stride % 8 == 0; }

/* Whether attention_coop.comp (variant coop_khr) runs the call on this device: f16 and bf16 where that type's
 * KHR build is enabled, each with the 16x16x16 shape among the device's; D 64 or 128; subgroups of 16 to 128
 * invocations with shuffles; q, k and v read as 16-byte words (offsets and strides multiples of 8 elements,
 * bind_operand's descriptor offsets being multiples of 16 bytes); no loop budget (the kernel does not split the
 * keys); the grid within the device's. Else 0 with the reason. The weights' two 16-bit parts are split in integer
 * registers: NVIDIA's compiler folds a packHalf2x16 / unpackHalf2x16 round trip, which left f16's second part zero
 * and missed docs/ops.md's element bound where o cancels to near zero. */
static int coop_runs(const trr_vk_device *d, const trr_call *call, char *why, size_t cap) {
    const trr_attention_shape *a = &call->attn;
    const trr_dtype t = call->x.dtype;
    if (t != TRR_BF16 && t != TRR_F16) {
        snprintf(why, cap, "the cooperative-matrix attention kernel takes f16 and bf16 (f32 runs on simt)");
        return 0;
    }
    const int on = t == TRR_F16 ? d->coop_khr : d->coop_bf16;
    if (!on) {
        snprintf(why, cap, "%s", t == TRR_F16 ? d->coop_khr_why : d->coop_bf16_why);
        return 0;
    }
    const trr_vk_coop_shape *sh = t == TRR_F16 ? &d->phys.coop_f16_shape : &d->phys.coop_bf16_shape;
    if (sh->m != 16 || sh->n != 16 || sh->k != 16) {
        snprintf(why, cap, "%.60s offers no 16x16x16 cooperative matrices of this type (the attention kernel's)",
                 d->phys.props.deviceName);
        return 0;
    }
    if (a->head_dim != 64 && a->head_dim != 128) {
        snprintf(why, cap, "the cooperative-matrix attention kernel takes D = 64 and 128, not %lld",
                 (long long)a->head_dim);
        return 0;
    }
    const uint32_t sg = d->phys.subgroup_size;
    if (sg < 16 || sg > 128 || sg % 16 || (sg > 16 && !d->phys.subgroup_shuffle)) {
        snprintf(why, cap, "the cooperative-matrix attention kernel needs subgroups of 16 to 128 invocations (a "
                 "multiple of 16) with shuffles; %.60s has %u", d->phys.props.deviceName, sg);
        return 0;
    }
    const trr_operand *ops[3] = {&call->x, &call->y, &call->u};
    const int64_t heads[3] = {a->heads_q, a->heads_kv, a->heads_kv}, seq[3] = {a->seq_q, a->seq_kv, a->seq_kv};
    for (int i = 0; i < 3; i++)
        if (ops[i]->offset % 8 || !words(a->batch, ops[i]->batch_stride) || !words(heads[i], ops[i]->stride1) ||
            !words(seq[i], ops[i]->stride0)) {
            snprintf(why, cap, "the cooperative-matrix attention kernel reads q, k and v as 16-byte words: their "
                     "offsets and strides must be multiples of 8 elements");
            return 0;
        }
    if (trr_vk_loop_budget(d) != UINT64_MAX) {
        snprintf(why, cap, "the cooperative-matrix attention kernel does not split the keys under %.60s's loop limit",
                 d->phys.props.deviceName);
        return 0;
    }
    return 1;
}

/* attention_coop.comp's shared memory: K and V blocks (two of each at stages 3), the block_m rows of scores (over
 * them P and the rescale matrices), or Q's rows before the loop where they take more. */
static uint64_t coop_shared(int64_t bm, int64_t bn, int64_t d, int stages) {
    const uint64_t ld = (uint64_t)(d / 8 + 1), nbuf = stages > 2 ? 2 : 1;
    const uint64_t loop = nbuf * 2 * (uint64_t)bn * ld + (uint64_t)bm * (uint64_t)(bn / 4 + 5),
                   q = (uint64_t)bm * ld;
    return 16 * (loop > q ? loop : q);
}

/* The coop config's own rules: threads whole subgroups, block_m 16 or 32 rows per subgroup (rows a subgroup's
 * invocations split evenly), block_n a multiple of 16 of at least 32 that splits into whole words among a row's
 * invocations, stages 1 to 3, the tiles within shared memory. Else 0 with the reason. */
static int coop_config_ok(const trr_vk_device *d, const trr_call *call, char *why, size_t cap) {
    const trr_config *c = &call->config;
    const int64_t sg = d->phys.subgroup_size;
    const VkPhysicalDeviceLimits *lim = &d->phys.props.limits;
    if (c->threads < sg || c->threads % sg || (uint32_t)c->threads > lim->maxComputeWorkGroupInvocations ||
        (uint32_t)c->threads > lim->maxComputeWorkGroupSize[0]) {
        snprintf(why, cap, "coop_khr attention takes threads in whole subgroups of %lld, at most %u", (long long)sg,
                 lim->maxComputeWorkGroupInvocations);
        return 0;
    }
    const int64_t nsg = c->threads / sg, rows = c->block_m / nsg;
    if (c->block_m % nsg || (rows != 16 && rows != 32) || sg % rows) {
        snprintf(why, cap, "coop_khr attention takes block_m = 16 or 32 rows per subgroup of %lld (%lld or %lld at "
                 "%d threads; 32 where the subgroup has 32 invocations or more), not %d", (long long)sg,
                 (long long)(16 * nsg), (long long)(32 * nsg), c->threads, c->block_m);
        return 0;
    }
    const int64_t lpr = sg / rows;
    if (c->block_n < 32 || c->block_n > 256 || c->block_n % 16 || c->block_n % (8 * lpr)) {
        snprintf(why, cap, "coop_khr attention takes block_n a multiple of 16 and of %lld from 32 to 256, not %d",
                 (long long)(8 * lpr), c->block_n);
        return 0;
    }
    if (c->stages < 1 || c->stages > 3) {
        snprintf(why, cap, "coop_khr attention takes stages 1 (K and V loaded, then stored), 2 (the next block's "
                 "loaded during this one's MMAs) or 3 (as 2, with two K/V buffers in shared memory), not %d",
                 c->stages);
        return 0;
    }
    const uint64_t shared = coop_shared(c->block_m, c->block_n, call->attn.head_dim, c->stages);
    if (shared > lim->maxComputeSharedMemorySize) {
        snprintf(why, cap, "coop_khr attention at block_m %d, block_n %d, stages %d, D = %lld takes %llu bytes of "
                 "shared memory; %.60s has %u", c->block_m, c->block_n, c->stages, (long long)call->attn.head_dim,
                 (unsigned long long)shared, d->phys.props.deviceName, lim->maxComputeSharedMemorySize);
        return 0;
    }
    return 1;
}

/* The decode form (attention_decode.comp; core/attention_decode.h) where split_k >= 2 asks for it, or where the
 * heuristic finds a decode-shaped call (a kv head's rows few, the keys many) that the kernel takes on a GPU (on a
 * CPU driver such as lavapipe the per-head kernel compiles in a fraction of the time, and speed is not the
 * point there): 1 when it completed the config. Vulkan does not say how many compute units a device has. */
static int decode_choose(const trr_vk_device *d, trr_call *call) {
    trr_config *c = &call->config;
    if (c->variant != TRR_VARIANT_AUTO && c->variant != TRR_VARIANT_SIMT) return 0;
    const int gpu = d->phys.props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
    if (c->split_k == 1 || (!c->split_k && !(gpu && trr_attention_decode_wanted(call)))) return 0;
    if (!c->variant) c->variant = TRR_VARIANT_SIMT;
    trr_attention_decode_fill(call, 0, d->phys.props.limits.maxComputeSharedMemorySize, c);
    return 1;
}

static trr_status decode_check(trr_context *ctx, const trr_call *call) {
    const trr_vk_device *d = trr_vk_dev(ctx);
    const VkPhysicalDeviceLimits *lim = &d->phys.props.limits;
    char why[320];
    if (!trr_attention_decode_config_ok(call, lim->maxComputeSharedMemorySize, lim->maxComputeWorkGroupInvocations,
                                        trr_vk_loop_budget(d), why, sizeof why))
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: attention: %s", why);
    int64_t keys, nsplit;
    trr_attention_decode_chunks(call, trr_vk_loop_budget(d), &keys, &nsplit);
    const int64_t nrb = trr_attention_decode_row_blocks(call);
    if (nrb > lim->maxComputeWorkGroupCount[0] || call->attn.heads_kv > lim->maxComputeWorkGroupCount[1] ||
        call->attn.batch * nsplit > lim->maxComputeWorkGroupCount[2])
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: attention's decode grid of %lld x %lld x %lld "
                         "workgroups exceeds the device's", (long long)nrb, (long long)call->attn.heads_kv,
                         (long long)(call->attn.batch * nsplit));
    return TRR_OK;
}

/* Prefill (a block of queries or more) runs on cooperative matrices where they run the call; decode and the rest
 * on the SIMT kernel. */
#define TRR_VK_ATTN_COOP_MIN_SQ 64

/* The widest key block of 64 or 32 whose tiles fit shared memory at block_m rows and `stages` (32 where none
 * does: the config check then says why). */
static int coop_block_n(const trr_vk_device *d, const trr_call *call, int bm, int stages) {
    int bn = 64;
    while (bn > 32 &&
           coop_shared(bm, bn, call->attn.head_dim, stages) > d->phys.props.limits.maxComputeSharedMemorySize)
        bn /= 2;
    return bn;
}

/* The coop kernel's config: 4 subgroups; 32 query rows each at D = 64 (each K and V matrix a subgroup loads from
 * shared memory then feeds twice the multiply-adds; the accumulators and Q of 32 rows at D = 128 would leave too
 * few registers), else 16; the widest key block of 64 or 32 that fits with one K/V buffer; then two K/V buffers
 * where they fit at that block (stages 3: one workgroup barrier a block instead of two, the next block stored
 * while this one is read; on NVIDIA's 48 KiB both D = 64 at 128 rows and D = 128 at 64 rows fit with 32-key
 * blocks), else the next block's loads in flight during this one's MMAs (stages 2). */
static void fill_coop(const trr_vk_device *d, const trr_call *call, trr_config *c) {
    const int sg = (int)d->phys.subgroup_size;
    const int sizing = c->stages ? c->stages : 2; /* the stages block_m and block_n are sized for */
    if (!c->threads) {
        c->threads = 4 * sg;
        while (c->threads > sg && (uint32_t)c->threads > d->phys.props.limits.maxComputeWorkGroupInvocations)
            c->threads -= sg;
    }
    if (!c->block_m && sg > 0) {
        const int nsg = c->threads / sg;
        c->block_m = 16 * nsg;
        if (call->attn.head_dim == 64 && sg % 32 == 0 &&
            coop_shared(32 * nsg, c->block_n ? c->block_n : coop_block_n(d, call, 32 * nsg, sizing), 64, sizing) <=
                d->phys.props.limits.maxComputeSharedMemorySize)
            c->block_m = 32 * nsg;
    }
    if (!c->block_n) c->block_n = coop_block_n(d, call, c->block_m, sizing);
    if (!c->stages)
        c->stages = coop_shared(c->block_m, c->block_n, call->attn.head_dim, 3) <=
                            d->phys.props.limits.maxComputeSharedMemorySize
                        ? 3
                        : 2;
}

void trr_vk_attention_choose(const trr_vk_device *d, trr_call *call) {
    trr_config *c = &call->config;
    const int gpu = d->phys.props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
    if (decode_choose(d, call)) return;
    if (!c->variant && call->attn.seq_q >= TRR_VK_ATTN_COOP_MIN_SQ) {
        char why[256];
        trr_call t = *call;
        t.config.variant = TRR_VARIANT_COOP_KHR;
        if (coop_runs(d, &t, why, sizeof why)) {
            fill_coop(d, &t, &t.config);
            if (coop_config_ok(d, &t, why, sizeof why)) *c = t.config;
        }
    }
    if (c->variant == TRR_VARIANT_COOP_KHR) {
        fill_coop(d, call, c);
        return;
    }
    if (!c->variant) c->variant = TRR_VARIANT_SIMT;
    if (!c->threads) c->threads = 64;
    if (!c->block_m) c->block_m = call->attn.seq_q > 16 && gpu ? 32 : 16;
    if (!c->block_n) {
        int bn = 64;
        while (bn > 1 && trr_attention_tile_bytes(trr_attention_tile_rows(call), bn, call->attn.head_dim) >
                             d->phys.props.limits.maxComputeSharedMemorySize)
            bn /= 2;
        c->block_n = bn;
    }
    if (!c->stages) c->stages = 1;
}

trr_status trr_vk_attention_check(trr_context *ctx, const trr_call *call) {
    trr_vk_device *d = trr_vk_dev(ctx);
    const trr_config *c = &call->config;
    if (c->variant == TRR_VARIANT_COOP_KHR) {
        char why[256];
        if (!coop_runs(d, call, why, sizeof why) || !coop_config_ok(d, call, why, sizeof why))
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: attention variant coop_khr: %s", why);
        const VkPhysicalDeviceLimits *lim = &d->phys.props.limits;
        const int64_t nqb = (call->attn.seq_q + c->block_m - 1) / c->block_m;
        if (nqb > lim->maxComputeWorkGroupCount[0] || call->attn.heads_q > lim->maxComputeWorkGroupCount[1] ||
            call->attn.batch > lim->maxComputeWorkGroupCount[2])
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: attention's grid of %lld x %lld x %lld workgroups "
                             "exceeds the device's", (long long)nqb, (long long)call->attn.heads_q,
                             (long long)call->attn.batch);
        return TRR_OK;
    }
    if (c->variant != TRR_VARIANT_AUTO && c->variant != TRR_VARIANT_SIMT) {
        const char *name = "?";
        trr_variant_name((trr_variant)c->variant, &name);
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: attention has no %s kernel here (simt, coop_khr)", name);
    }
    if (trr_attention_decode_selected(c)) return decode_check(ctx, call);
    if (c->block_m < 1 || c->block_m > 256 || c->block_n < 1 || c->block_n > 1024)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: attention block_m %d and block_n %d must be 1 to 256 and "
                         "1 to 1024", c->block_m, c->block_n);
    const uint64_t shared = trr_attention_tile_bytes(trr_attention_tile_rows(call), c->block_n, call->attn.head_dim);
    if (shared > d->phys.props.limits.maxComputeSharedMemorySize)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: attention tiles of block_m %d, block_n %d at D = %lld take "
                         "%llu bytes of shared memory; %s has %u", c->block_m, c->block_n,
                         (long long)call->attn.head_dim, (unsigned long long)shared, d->phys.props.deviceName,
                         d->phys.props.limits.maxComputeSharedMemorySize);
    if (trr_attention_tile_keys(call, trr_vk_loop_budget(d)) < 1)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "vulkan: attention tiles of block_m %d, block_n %d at D = %lld do not "
                         "fit one key block in the %llu loop iterations %s runs",
                         c->block_m, c->block_n, (long long)call->attn.head_dim,
                         (unsigned long long)trr_vk_loop_budget(d), d->phys.props.deviceName);
    const VkPhysicalDeviceLimits *lim = &d->phys.props.limits;
    const int64_t kps = trr_attention_tile_keys(call, trr_vk_loop_budget(d));
    const int64_t nsplit = kps >= call->attn.seq_kv ? 1 : (call->attn.seq_kv + kps - 1) / kps;
    const int64_t nqb = (call->attn.seq_q + trr_attention_tile_rows(call) - 1) / trr_attention_tile_rows(call);
    if (nqb > lim->maxComputeWorkGroupCount[0] || call->attn.heads_q > lim->maxComputeWorkGroupCount[1] ||
        call->attn.batch * nsplit > lim->maxComputeWorkGroupCount[2])
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "vulkan: attention's grid of %lld x %lld x %lld workgroups exceeds "
                         "the device's",
                         (long long)nqb, (long long)call->attn.heads_q, (long long)(call->attn.batch * nsplit));
    return TRR_OK;
}

void trr_vk_attention_destroy(trr_vk_device *d) {
    trr_vk_attn_state *as = d->attn;
    if (!as) return;
    trr_vk_scratch_free(d, &as->scratch);
    trr_vk_bindset_destroy(d, &as->set);
    free(as);
    d->attn = NULL;
}

static trr_status attn_state(trr_context *ctx, trr_vk_attn_state **out) {
    trr_vk_device *d = trr_vk_dev(ctx);
    if (d->attn) {
        *out = d->attn;
        return TRR_OK;
    }
    trr_vk_attn_state *as = calloc(1, sizeof *as);
    if (!as) return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "vulkan: out of host memory");
    d->attn = as; /* freed at close, whatever is left unmade here */
    TRR_TRY(trr_vk_bindset_create(ctx, &as->set, ATTN_BINDINGS, sizeof(attn_push)));
    *out = as;
    return TRR_OK;
}

/* A stride as the kernel takes it: 32 bits, and 0 for a dimension of one (whose stride is never used, and may be
 * past 32 bits). */
static uint32_t stride32(int64_t n, int64_t stride) { return n > 1 ? (uint32_t)stride : 0u; }

/* The elements a view of (n0, n1, n2) rows of `inner` contiguous elements spans from its offset. */
static int64_t view_extent(const trr_operand *o, int64_t n0, int64_t n1, int64_t n2, int64_t inner) {
    return (n0 - 1) * o->batch_stride + (n1 - 1) * o->stride1 + (n2 - 1) * o->stride0 + inner;
}

/* One dispatch of shader (nspec specialization constants) in the path's layout: bindings info, push constants, a
 * grid of gx x gy x gz. */
static trr_status dispatch(trr_context *ctx, trr_vk_attn_state *as, const char *shader, const uint32_t *spec, int nspec,
                           const VkDescriptorBufferInfo info[ATTN_BINDINGS], trr_vk_buffer *const bufs[ATTN_BINDINGS],
                           const attn_push *push, uint32_t gx, uint32_t gy, uint32_t gz) {
    trr_vk_device *d = trr_vk_dev(ctx);
    VkPipeline pipeline;
    TRR_TRY(trr_vk_pipeline_get_in(ctx, shader, spec, nspec, as->set.layout, &pipeline));
    VkCommandBuffer cmd;
    TRR_TRY(trr_vk_begin(ctx, &cmd));
    TRR_TRY(trr_vk_bindset_bind(ctx, &as->set, cmd, info));
    d->fn.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    d->recording->bound = pipeline;
    d->fn.vkCmdPushConstants(cmd, as->set.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof *push, push);
    d->fn.vkCmdDispatch(cmd, gx, gy, gz);
    for (int i = 0; i < ATTN_BINDINGS; i++) trr_vk_use(d, bufs[i]);
    return trr_vk_end(ctx);
}

trr_status trr_vk_attention_run(trr_context *ctx, const trr_call *call) {
    trr_vk_device *d = trr_vk_dev(ctx);
    trr_vk_attn_state *as = NULL;
    TRR_TRY(attn_state(ctx, &as));
    const trr_attention_shape *a = &call->attn;
    const trr_config *cfg = &call->config;
    /* the coop kernel's block_m is its subgroups' rows, whatever the queries, and it never splits the keys */
    const int coop = cfg->variant == TRR_VARIANT_COOP_KHR;
    /* the decode form: block_m rows of a kv head's group, chunks of the keys (attention_decode.comp) */
    const int dec = !coop && trr_attention_decode_selected(cfg);
    int64_t bm = coop || dec ? cfg->block_m : trr_attention_tile_rows(call),
            kps = coop ? INT64_MAX : trr_attention_tile_keys(call, trr_vk_loop_budget(d)), nsplit;
    if (dec) trr_attention_decode_chunks(call, trr_vk_loop_budget(d), &kps, &nsplit);
    else nsplit = kps >= a->seq_kv ? 1 : (a->seq_kv + kps - 1) / kps;
    const int64_t rows = a->batch * a->heads_q * a->seq_q, D = a->head_dim;

    /* bindings: q, k, v, o, lse (o's buffer again when there is none: never written), scratch, its lse */
    const trr_operand *ops[5] = {&call->x, &call->y, &call->u, &call->z, a->has_lse ? &call->w : &call->z};
    const int64_t ext[5] = {view_extent(&call->x, a->batch, a->heads_q, a->seq_q, D),
                            view_extent(&call->y, a->batch, a->heads_kv, a->seq_kv, D),
                            view_extent(&call->u, a->batch, a->heads_kv, a->seq_kv, D),
                            view_extent(&call->z, a->batch, a->heads_q, a->seq_q, D),
                            a->has_lse ? view_extent(&call->w, a->batch, a->heads_q, a->seq_q, 1)
                                       : view_extent(&call->z, a->batch, a->heads_q, a->seq_q, D)};
    VkDescriptorBufferInfo info[ATTN_BINDINGS];
    trr_vk_buffer *bufs[ATTN_BINDINGS];
    uint32_t off[5];
    for (int i = 0; i < 5; i++) {
        TRR_TRY(trr_vk_bind(ctx, ops[i], ext[i], &info[i], &off[i]));
        bufs[i] = ops[i]->mem;
    }
    const size_t part_floats = nsplit > 1 ? (size_t)(nsplit * rows * D) : 0,
                 lse_floats = nsplit > 1 ? (size_t)(nsplit * rows) : 0;
    if (nsplit > 1) {
        /* the partial o from the start, its lse after it on a 256-byte boundary (every offset alignment) */
        const VkDeviceSize lse_at = ((VkDeviceSize)part_floats * 4 + 255) / 256 * 256;
        trr_vk_buffer *s = NULL;
        TRR_TRY(trr_vk_scratch_get(ctx, &as->scratch, (size_t)lse_at + lse_floats * 4, &s));
        info[5] = (VkDescriptorBufferInfo){.buffer = s->buf, .offset = 0, .range = (VkDeviceSize)part_floats * 4};
        info[6] = (VkDescriptorBufferInfo){.buffer = s->buf, .offset = lse_at, .range = (VkDeviceSize)lse_floats * 4};
        bufs[5] = bufs[6] = s;
    } else { /* not read without a split: o's binding stands in */
        info[5] = info[6] = info[3];
        bufs[5] = bufs[6] = bufs[3];
    }
    attn_push p = {.qo = off[0], .ko = off[1], .vo = off[2], .oo = off[3], .lo = off[4],
                   .qb = stride32(a->batch, call->x.batch_stride), .qh = stride32(a->heads_q, call->x.stride1),
                   .qs = stride32(a->seq_q, call->x.stride0),
                   .kb = stride32(a->batch, call->y.batch_stride), .kh = stride32(a->heads_kv, call->y.stride1),
                   .ks = stride32(a->seq_kv, call->y.stride0),
                   .vb = stride32(a->batch, call->u.batch_stride), .vh = stride32(a->heads_kv, call->u.stride1),
                   .vs = stride32(a->seq_kv, call->u.stride0),
                   .ob = stride32(a->batch, call->z.batch_stride), .oh = stride32(a->heads_q, call->z.stride1),
                   .os = stride32(a->seq_q, call->z.stride0),
                   .hq = (uint32_t)a->heads_q, .group = (uint32_t)(a->heads_q / a->heads_kv),
                   .sq = (uint32_t)a->seq_q, .skv = (uint32_t)a->seq_kv,
                   .flags = (a->causal ? 1u : 0u) | (a->has_lse ? 2u : 0u) | (nsplit > 1 ? 4u : 0u),
                   .nsplit = (uint32_t)nsplit, .kps = (uint32_t)(kps >= a->seq_kv ? a->seq_kv : kps),
                   .rows = (uint32_t)rows, .qscale = (float)((double)a->scale * 1.44269504088896340736)};
    if (a->has_lse) {
        p.lb = stride32(a->batch, call->w.batch_stride);
        p.lh = stride32(a->heads_q, call->w.stride1);
        p.ls = stride32(a->seq_q, call->w.stride0);
    }
    const uint32_t spec[6] = {(uint32_t)cfg->threads, (uint32_t)bm, (uint32_t)cfg->block_n, (uint32_t)D,
                              d->phys.subgroup_size, (uint32_t)cfg->stages};
    char shader[48];
    snprintf(shader, sizeof shader, coop ? "attention_coopk_%s" : dec ? "attention_decode_%s" : "attention_%s",
             dtype_suffix(call->x.dtype));
    const uint32_t nqb = (uint32_t)(dec ? trr_attention_decode_row_blocks(call) : (a->seq_q + bm - 1) / bm);
    TRR_TRY(dispatch(ctx, as, shader, spec, coop ? 6 : 4, info, bufs, &p, nqb,
                     (uint32_t)(dec ? a->heads_kv : a->heads_q), (uint32_t)(a->batch * nsplit)));
    if (nsplit == 1) return TRR_OK;
    /* the merge: one invocation per (row, d), 64 to a workgroup, the workgroups over x and y */
    const uint64_t groups = ((uint64_t)rows * (uint64_t)D + 63) / 64,
                   max_x = d->phys.props.limits.maxComputeWorkGroupCount[0];
    const uint64_t gx = groups < max_x ? groups : max_x, gy = (groups + gx - 1) / gx;
    const uint32_t cspec[4] = {64u, (uint32_t)bm, (uint32_t)cfg->block_n, (uint32_t)D};
    snprintf(shader, sizeof shader, "attention_combine_%s", dtype_suffix(call->x.dtype));
    return dispatch(ctx, as, shader, cspec, 4, info, bufs, &p, (uint32_t)gx, (uint32_t)gy, 1);
}
