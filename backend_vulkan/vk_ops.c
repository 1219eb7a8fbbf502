/* The ops: which kernel runs a call, with which specialization constants, push constants and dispatch size
 * (the config it runs with comes from vk_config.c). */
#include "vk_config.h"
#include "vk_kinds.h"
#include "vk_norm.h"

#include "matmul_fold.h"
#include "matmul_split.h"
#include "matmul_scale.h"
#include "op_table.h"
#include "user_op.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t trr_vk_dtype_bytes(trr_dtype t) {
    return t == TRR_F32 ? 4 : t == TRR_F16 || t == TRR_BF16 ? 2 : 1; /* 1: u8 and the 8-bit floats */
}

static const char *dtype_suffix(trr_dtype t) { return trr_vk_dtype_suffix(t); }

/* The op reads a second input (y). */
static int binary(const trr_call *c) { return trr_op_desc_get(c->op)->n_inputs == 2; }

/* Binds an operand at the largest aligned byte offset at or below its first element, so buffers larger than
 * maxStorageBufferRange still work and element offsets stay small. */
static trr_status bind_operand(trr_context *ctx, const trr_operand *o, int64_t extent, VkDescriptorBufferInfo *info,
                               uint32_t *out_elem_offset) {
    trr_vk_device *d = trr_vk_dev(ctx);
    const trr_vk_buffer *b = o->mem;
    uint64_t es = trr_vk_dtype_bytes(o->dtype);
    uint64_t align = d->phys.props.limits.minStorageBufferOffsetAlignment;
    if (align < 16) align = 16; /* kernels may read 16-byte words where the element offset is a multiple of them */
    uint64_t start = (uint64_t)o->offset * es;
    uint64_t base = start / align * align;
    uint64_t range = start + (uint64_t)extent * es - base;
    if (range > d->phys.props.limits.maxStorageBufferRange)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: an operand spans %llu bytes; the device binds at most %u",
                         (unsigned long long)range, d->phys.props.limits.maxStorageBufferRange);
    *info = (VkDescriptorBufferInfo){.buffer = b->buf, .offset = base, .range = range};
    *out_elem_offset = (uint32_t)((start - base) / es);
    return TRR_OK;
}

typedef struct dispatch {
    const char *shader;
    uint32_t spec[TRR_VK_MAX_SPEC];
    int nspec;
    const trr_operand *ops[3]; /* x, y, z; y may repeat x */
    int64_t extent[3];
    trr_vk_push push;
    uint64_t groups; /* linear workgroup count, spread over x and y */
    uint64_t batch;  /* matmul: grid z, one layer of workgroups per matrix (0 means 1) */
} dispatch;

/* A dispatch made ready to record: its operands bound, its pipeline built and its grid sized. Everything that
 * can fail without a command buffer happens here, before anything is recorded into the batch. */
typedef struct prepared {
    VkDescriptorBufferInfo info[3];
    VkPipeline pipeline;
    uint32_t gx, gy, gz;
} prepared;

static trr_status prepare_dispatch(trr_context *ctx, dispatch *w, prepared *p) {
    trr_vk_device *d = trr_vk_dev(ctx);
    uint32_t off[3];
    for (int i = 0; i < 3; i++) TRR_TRY(bind_operand(ctx, w->ops[i], w->extent[i], &p->info[i], &off[i]));
    w->push.xo = off[0];
    w->push.yo = off[1];
    w->push.zo = off[2];
    uint64_t gx = w->groups, gy = 1;
    uint64_t max_x = d->phys.props.limits.maxComputeWorkGroupCount[0];
    if (gx > max_x) {
        gx = max_x;
        gy = (w->groups + gx - 1) / gx;
        if (gy > d->phys.props.limits.maxComputeWorkGroupCount[1])
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: %llu workgroups exceed the device's grid",
                             (unsigned long long)w->groups);
    }
    uint64_t gz = w->batch > 1 ? w->batch : 1;
    if (gz > d->phys.props.limits.maxComputeWorkGroupCount[2])
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: a batch of %llu exceeds the device's grid depth of %u",
                         (unsigned long long)gz, d->phys.props.limits.maxComputeWorkGroupCount[2]);
    p->gx = (uint32_t)gx;
    p->gy = (uint32_t)gy;
    p->gz = (uint32_t)gz;
    return trr_vk_pipeline_get(ctx, w->shader, w->spec, w->nspec, &p->pipeline);
}

/* Records a prepared dispatch into the open batch: its operands pushed into the command buffer
 * (VK_KHR_push_descriptor) or written to a set from the batch's pool (TRR_VK_BATCH_OPS sets, one per op). */
void trr_vk_storage_writes(const VkDescriptorBufferInfo info[3], VkWriteDescriptorSet wr[3]) {
    for (uint32_t i = 0; i < 3; i++)
        wr[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                       .dstBinding = i,
                                       .descriptorCount = 1,
                                       .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                       .pBufferInfo = &info[i]};
}

static trr_vk_dispatch_rec dispatch_rec(const dispatch *w, const prepared *p) {
    trr_vk_dispatch_rec rec;
    memset(&rec, 0, sizeof rec); /* no stale bytes in a record that vk_submit.c compares with the next */
    rec.pipeline = p->pipeline;
    for (int i = 0; i < 3; i++) {
        rec.info[i] = p->info[i];
        rec.bufs[i] = w->ops[i]->mem;
    }
    rec.push = w->push;
    rec.gx = p->gx;
    rec.gy = p->gy;
    rec.gz = p->gz;
    return rec;
}

static trr_status record_dispatch(trr_context *ctx, VkCommandBuffer cmd, const dispatch *w, const prepared *p) {
    trr_vk_dispatch_rec rec = dispatch_rec(w, p);
    TRR_TRY(trr_vk_record(ctx, cmd, &rec));
    for (int i = 0; i < 3; i++) trr_vk_use(trr_vk_dev(ctx), rec.bufs[i]);
    return TRR_OK;
}

static trr_status run_dispatch(trr_context *ctx, dispatch *w) {
    prepared p;
    TRR_TRY(prepare_dispatch(ctx, w, &p));
    trr_vk_dispatch_rec rec = dispatch_rec(w, &p);
    return trr_vk_dispatch(ctx, &rec);
}

static int64_t rows_extent(int64_t rows, int64_t cols, int64_t stride) {
    return (rows - 1) * stride + cols;
}

/* Copies run on the copy kernel (kernels/vulkan/copy.comp): on NVIDIA GPUs vkCmdCopyBuffer reaches a fraction
 * of the memory bandwidth, where a load/store kernel reaches all of it. 16-byte words where both sides are
 * 16-aligned, else 4-byte words; vkCmdCopyBuffer is left with the few bytes before and after the words, or
 * with the whole copy where source and destination disagree modulo 4. */
typedef struct copy_span {
    trr_vk_buffer *x, *z;
    uint64_t xo, zo;   /* bytes, multiples of the word */
    uint64_t xs, zs;   /* row strides in bytes, multiples of the word; unused when rows == 1 */
    uint64_t rows, row_bytes;
} copy_span;

/* The streaming ops' config (copy, add, gelu, silu, rgb_to_grey), in the front-end vocabulary: threads per
 * workgroup, block_n elements per workgroup and vector_width elements per load, so each invocation makes
 * block_n / (threads x vector_width) loads (1..64). vector_width is a preference: elementwise.comp reads 4-element
 * vectors (1 or 4), copy moves words of vector_width elements (16 or 4 bytes); where the operands' layout rules
 * the wide load out the kernel falls back to the narrower one (scalar elements, 4-byte words or
 * vkCmdCopyBuffer) with the same number of loads per invocation, which is what the kernels always did. */
static uint32_t loads_per_invocation(const trr_config *c) {
    return (uint32_t)(c->block_n / (c->threads * c->vector_width));
}

/* elementwise.comp's ops (add, gelu, silu) may read 4-element vectors: every operand is one contiguous span
 * starting on a 4-element boundary (the binding starts 16-aligned). */
int trr_vk_elementwise_vec4_layout(const trr_call *c) {
    const trr_operand *y = binary(c) ? &c->y : &c->x;
    int contiguous = c->rows == 1 || (c->x.stride0 == c->cols && y->stride0 == c->cols && c->z.stride0 == c->cols);
    return contiguous && c->x.offset % 4 == 0 && y->offset % 4 == 0 && c->z.offset % 4 == 0;
}

/* The largest span one binding may cover, rounded down to whole words: the descriptor range also spans the
 * distance from the aligned binding start, and 2^30 bytes keep every word index well inside 32 bits. */
static uint64_t copy_chunk_limit(const trr_vk_device *d, unsigned word) {
    uint64_t align = d->phys.props.limits.minStorageBufferOffsetAlignment;
    if (align < 16) align = 16;
    uint64_t limit = d->phys.props.limits.maxStorageBufferRange;
    limit = limit > align ? limit - align : 0;
    if (limit > ((uint64_t)1 << 30)) limit = (uint64_t)1 << 30;
    return limit / word * word;
}

/* One op in the batch: the kernel over the span. */
static trr_status copy_kernel(trr_context *ctx, const copy_span *sp, unsigned word, uint32_t threads, uint32_t ept) {
    trr_operand ox = {.mem = sp->x, .offset = (int64_t)(sp->xo / 4), .stride0 = (int64_t)(sp->xs / 4),
                      .dtype = TRR_F32};
    trr_operand oz = {.mem = sp->z, .offset = (int64_t)(sp->zo / 4), .stride0 = (int64_t)(sp->zs / 4),
                      .dtype = TRR_F32};
    dispatch w = {0};
    w.shader = word == 16 ? "copy_w16" : "copy_w4";
    w.spec[0] = threads;
    w.spec[1] = ept;
    w.nspec = 2;
    w.ops[0] = w.ops[1] = &ox;
    w.ops[2] = &oz;
    int64_t cols4 = (int64_t)(sp->row_bytes / 4);
    w.extent[0] = w.extent[1] = rows_extent((int64_t)sp->rows, cols4, ox.stride0);
    w.extent[2] = rows_extent((int64_t)sp->rows, cols4, oz.stride0);
    uint64_t cols = sp->row_bytes / word;
    w.push = (trr_vk_push){.rows = (uint32_t)sp->rows, .cols = (uint32_t)cols,
                           .xs0 = (uint32_t)(sp->xs / word), .zs0 = (uint32_t)(sp->zs / word)};
    uint64_t per_group = (uint64_t)threads * ept;
    w.groups = (sp->rows * cols + per_group - 1) / per_group;
    if (w.groups > 65535) w.groups = 65535; /* the kernel loops over the rest */
    prepared p;
    TRR_TRY(prepare_dispatch(ctx, &w, &p));
    VkCommandBuffer cmd;
    TRR_TRY(trr_vk_begin(ctx, &cmd));
    TRR_TRY(record_dispatch(ctx, cmd, &w, &p));
    return trr_vk_end(ctx);
}

static trr_status copy_regions(trr_context *ctx, trr_vk_buffer *bz, trr_vk_buffer *bx, const VkBufferCopy *regions,
                               uint32_t n) {
    trr_vk_device *d = trr_vk_dev(ctx);
    VkCommandBuffer cmd;
    TRR_TRY(trr_vk_begin(ctx, &cmd));
    trr_vk_use(d, bx);
    trr_vk_use(d, bz);
    d->fn.vkCmdCopyBuffer(cmd, bx->buf, bz->buf, n, regions);
    return trr_vk_end(ctx);
}

static trr_status copy_flat(trr_context *ctx, trr_vk_buffer *bz, uint64_t zo, trr_vk_buffer *bx,
                            uint64_t xo, uint64_t bytes, unsigned max_word, uint32_t threads, uint32_t ept) {
    trr_vk_device *d = trr_vk_dev(ctx);
    /* The word is the widest, up to max_word, on which source and destination agree modulo its size. */
    unsigned word = max_word >= 16 && ((xo - zo) & 15) == 0 ? 16 : ((xo - zo) & 3) == 0 ? 4 : 0;
    uint64_t head = word ? (word - xo % word) % word : 0;
    uint64_t limit = word ? copy_chunk_limit(d, word) : 0;
    if (!word || limit == 0 || bytes < head + word) {
        VkBufferCopy all = {.srcOffset = xo, .dstOffset = zo, .size = bytes};
        return copy_regions(ctx, bz, bx, &all, 1);
    }
    uint64_t body = (bytes - head) / word * word, tail = bytes - head - body;
    VkBufferCopy edges[2];
    uint32_t nedges = 0;
    if (head) edges[nedges++] = (VkBufferCopy){.srcOffset = xo, .dstOffset = zo, .size = head};
    if (tail)
        edges[nedges++] = (VkBufferCopy){.srcOffset = xo + head + body, .dstOffset = zo + head + body, .size = tail};
    /* The edges are an op of their own, so a barrier stands between them and the kernel: their bytes are not the
     * kernel's, but the kernel's binding covers them, and Vulkan orders writes per binding range, not per byte
     * (the validation layer's synchronization check reports the pair as a write-after-write hazard). */
    if (nedges) TRR_TRY(copy_regions(ctx, bz, bx, edges, nedges));
    for (uint64_t done = 0; done < body;) {
        uint64_t n = body - done < limit ? body - done : limit;
        copy_span sp = {.x = bx, .z = bz, .xo = xo + head + done, .zo = zo + head + done, .rows = 1, .row_bytes = n};
        TRR_TRY(copy_kernel(ctx, &sp, word, threads, ept));
        done += n;
    }
    return TRR_OK;
}

trr_status trr_vk_copy_bytes(trr_context *ctx, trr_vk_buffer *dst, size_t dst_offset, trr_vk_buffer *src,
                             size_t src_offset, size_t bytes) {
    trr_vk_device *d = trr_vk_dev(ctx);
    /* Which copy is faster depends on the device: on CPU drivers vkCmdCopyBuffer is a memcpy, several times the
     * copy kernel (lavapipe); on NVIDIA GPUs the kernel, several times vkCmdCopyBuffer on a compute queue. */
    if (d->phys.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) {
        VkBufferCopy all = {.srcOffset = src_offset, .dstOffset = dst_offset, .size = bytes};
        return copy_regions(ctx, dst, src, &all, 1);
    }
    uint32_t threads = d->phys.props.limits.maxComputeWorkGroupInvocations;
    if (threads > 256) threads = 256;
    return copy_flat(ctx, dst, dst_offset, src, src_offset, bytes, 16, threads, COPY_WORDS_PER_INVOCATION);
}

static trr_status run_copy(trr_context *ctx, const trr_call *c) {
    trr_vk_device *d = trr_vk_dev(ctx);
    trr_vk_buffer *bx = c->x.mem, *bz = c->z.mem;
    if (bx == bz && c->x.offset == c->z.offset && (c->rows == 1 || c->x.stride0 == c->z.stride0))
        return TRR_OK; /* exact aliasing: nothing to move */
    uint64_t es = trr_vk_dtype_bytes(c->x.dtype);
    uint32_t threads = (uint32_t)c->config.threads, ept = loads_per_invocation(&c->config);
    unsigned max_word = (unsigned)((uint64_t)c->config.vector_width * es); /* 4 or 16 (check_config) */
    uint64_t xo = (uint64_t)c->x.offset * es, zo = (uint64_t)c->z.offset * es, row = (uint64_t)c->cols * es;
    if (c->rows == 1 || (c->x.stride0 == c->cols && c->z.stride0 == c->cols))
        return copy_flat(ctx, bz, zo, bx, xo, (uint64_t)c->rows * row, max_word, threads, ept);
    /* Strided rows: the kernel where every row starts and ends on a word on both sides and the rows fit in one
     * binding; else one vkCmdCopyBuffer region per row. */
    uint64_t xs = (uint64_t)c->x.stride0 * es, zs = (uint64_t)c->z.stride0 * es, all = xo | zo | xs | zs | row;
    unsigned word = max_word >= 16 && (all & 15) == 0 ? 16 : (all & 3) == 0 ? 4 : 0;
    uint64_t n = (uint64_t)c->rows;
    if (word) {
        uint64_t limit = copy_chunk_limit(d, word);
        uint64_t xspan = (n - 1) * xs + row, zspan = (n - 1) * zs + row;
        if (xspan <= limit && zspan <= limit) {
            copy_span sp = {.x = bx, .z = bz, .xo = xo, .zo = zo, .xs = xs, .zs = zs, .rows = n, .row_bytes = row};
            return copy_kernel(ctx, &sp, word, threads, ept);
        }
    }
    VkBufferCopy *regions = malloc(n * sizeof *regions);
    if (!regions) return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "vulkan: out of host memory");
    for (uint64_t r = 0; r < n; r++)
        regions[r] = (VkBufferCopy){.srcOffset = xo + r * xs, .dstOffset = zo + r * zs, .size = row};
    trr_status s = copy_regions(ctx, bz, bx, regions, (uint32_t)n);
    free(regions);
    return s;
}

static void streaming(dispatch *w, const trr_call *c, const char *shader) {
    uint32_t wg = (uint32_t)c->config.threads;
    uint32_t ept = loads_per_invocation(&c->config);
    w->shader = shader;
    w->spec[0] = wg;
    w->spec[1] = ept;
    w->nspec = 2;
    uint64_t n = (uint64_t)c->rows * (uint64_t)c->cols;
    uint64_t per_group = (uint64_t)wg * ept;
    w->groups = (n + per_group - 1) / per_group;
    if (w->groups > 65535) w->groups = 65535; /* the kernels loop over the rest */
}

/* elementwise.comp's ops (add, gelu, silu): one shader variant each, the op's definition's (vk_kinds.h). */
static trr_status elementwise_part(trr_context *ctx, const trr_call *c) {
    dispatch w = {0};
    char shader[64];
    trr_vk_shader_name(shader, sizeof shader, trr_op_desc_get(c->op), "", c->x.dtype, c->z.dtype);
    streaming(&w, c, shader);
    const int two = binary(c);
    w.ops[0] = &c->x;
    w.ops[1] = two ? &c->y : &c->x;
    w.ops[2] = &c->z;
    w.extent[0] = rows_extent(c->rows, c->cols, c->x.stride0);
    w.extent[1] = two ? rows_extent(c->rows, c->cols, c->y.stride0) : w.extent[0];
    w.extent[2] = rows_extent(c->rows, c->cols, c->z.stride0);
    w.push = (trr_vk_push){.rows = (uint32_t)c->rows, .cols = (uint32_t)c->cols, .k = (uint32_t)c->z.dtype,
                           .xs0 = (uint32_t)c->x.stride0,
                           .ys0 = (uint32_t)(two ? c->y.stride0 : 0), .zs0 = (uint32_t)c->z.stride0};
    /* 4-element vectors where the config asks for them and the layout allows (trr_vk_elementwise_vec4_layout). */
    if (c->config.vector_width == 4 && trr_vk_elementwise_vec4_layout(c)) {
        w.push.pad = 1u;
        uint64_t n4 = (uint64_t)c->rows * (uint64_t)c->cols / 4;
        uint64_t per_group = (uint64_t)w.spec[0] * w.spec[1];
        w.groups = (n4 + per_group - 1) / per_group;
        if (w.groups == 0) w.groups = 1; /* the tail of fewer than 4 elements */
        if (w.groups > 65535) w.groups = 65535;
    }
    return run_dispatch(ctx, &w);
}

trr_status trr_vk_run_planes(trr_context *ctx, const trr_call *c) {
    dispatch w = {0};
    char shader[64];
    trr_vk_shader_name(shader, sizeof shader, trr_op_desc_get(c->op), "", c->x.dtype, c->z.dtype);
    streaming(&w, c, shader);
    w.ops[0] = w.ops[1] = &c->x;
    w.ops[2] = &c->z;
    w.extent[0] = w.extent[1] = 2 * c->x.stride0 + rows_extent(c->rows, c->cols, c->x.stride1);
    w.extent[2] = rows_extent(c->rows, c->cols, c->z.stride0);
    w.push = (trr_vk_push){.rows = (uint32_t)c->rows, .cols = (uint32_t)c->cols, .k = (uint32_t)c->z.dtype,
                           .xs0 = (uint32_t)c->x.stride0,
                           .xs1 = (uint32_t)c->x.stride1, .zs0 = (uint32_t)c->z.stride0};
    return run_dispatch(ctx, &w);
}

/* The register softmaxes read 4-element vectors: rows 4-aligned on both sides, and subgroup arithmetic. */
int trr_vk_softmax_regs_layout(const trr_vk_device *d, const trr_call *c) {
    return d->phys.subgroup_arith && c->cols % 4 == 0 && c->x.offset % 4 == 0 && c->z.offset % 4 == 0 &&
           (c->rows == 1 || (c->x.stride0 % 4 == 0 && c->z.stride0 % 4 == 0));
}

/* Softmax's config: threads per row, and block_n, the longest row softmax_rows.comp keeps in registers (a
 * multiple of threads, at most 64 elements per invocation). The kernel is specialised for the row it gets
 * (ceil(cols / 4 / threads) vectors per invocation), so block_n only draws the line between it and the online
 * kernel; choose_config sets it to what the row needs, so every row the register kernel can hold takes it. */
static trr_status rowwise_part(trr_context *ctx, const trr_call *c) {
    trr_vk_device *d = trr_vk_dev(ctx);
    const trr_op_desc *desc = trr_op_desc_get(c->op);
    const int rows_rule = desc->shape == TRR_SHAPE_ROWS; /* else the row-reduce rule */
    dispatch w = {0};
    char shader[64];
    trr_vk_shader_name(shader, sizeof shader, desc, "", c->x.dtype, c->z.dtype);
    w.shader = shader;
    w.spec[0] = (uint32_t)c->config.threads;
    w.nspec = 1;
    w.groups = (uint64_t)c->rows;
    /* Softmax with the row in registers, 4-element vectors, on devices with subgroup arithmetic: the subgroup
     * variant with one subgroup per row (softmax_sg.comp, at most 32 vectors per lane), rows
     * of up to block_n columns with one workgroup each (softmax_rows.comp, at most 16 vectors per invocation,
     * as many as the row needs); longer rows take the online kernel (softmax.comp). */
    uint64_t n4 = (uint64_t)c->cols / 4, threads = (uint64_t)c->config.threads, sg = d->phys.subgroup_size;
    if (rows_rule && trr_vk_softmax_regs_layout(d, c)) {
        uint64_t vpt_sg = (n4 + sg - 1) / sg, vpt = (n4 + threads - 1) / threads;
        if (c->config.variant == TRR_VARIANT_SUBGROUP) { /* check_config: softmax_sg_runs */
            trr_vk_shader_name(shader, sizeof shader, desc, "_sg", c->x.dtype, c->z.dtype);
            /* the subgroup width the registers are sized for, and whether rows fill them exactly (no bounds
             * checks) */
            w.spec[1] = (uint32_t)vpt_sg;
            w.spec[2] = (uint32_t)sg;
            w.spec[3] = n4 == vpt_sg * sg;
            w.nspec = 4;
            uint64_t rows_per_group = threads / sg;
            w.groups = ((uint64_t)c->rows + rows_per_group - 1) / rows_per_group;
        } else if (c->cols <= c->config.block_n && vpt >= 1 && vpt <= 16) {
            trr_vk_shader_name(shader, sizeof shader, desc, "_rows", c->x.dtype, c->z.dtype);
            w.spec[1] = (uint32_t)vpt;
            w.spec[2] = n4 == vpt * threads; /* rows fill the registers exactly: no bounds checks */
            w.nspec = 3;
        }
    }
    if (!rows_rule && c->config.variant == TRR_VARIANT_SUBGROUP) { /* check_config: row_sum_sg_runs */
        trr_vk_shader_name(shader, sizeof shader, desc, "_sg", c->x.dtype, c->z.dtype);
        /* 4-element vectors where every row starts on a vector boundary (the binding starts on one: 16 bytes) */
        const int vec4 = c->config.vector_width == 4 && c->x.offset % 4 == 0 && (c->rows == 1 || c->x.stride0 % 4 == 0);
        w.spec[1] = vec4 ? 4u : 1u;
        /* loads in flight per invocation: block_n is what the workgroup loads per iteration (check_config) */
        w.spec[2] = (uint32_t)(c->config.block_n / (c->config.threads * c->config.vector_width));
        w.nspec = 3;
    }
    w.ops[0] = w.ops[1] = &c->x;
    w.ops[2] = &c->z;
    w.extent[0] = w.extent[1] = rows_extent(c->rows, c->cols, c->x.stride0);
    w.extent[2] = rows_rule ? rows_extent(c->rows, c->cols, c->z.stride0) : rows_extent(c->rows, 1, c->z.stride0);
    w.push = (trr_vk_push){.rows = (uint32_t)c->rows, .cols = (uint32_t)c->cols, .k = (uint32_t)c->z.dtype,
                           .xs0 = (uint32_t)c->x.stride0,
                           .zs0 = (uint32_t)c->z.stride0};
    return run_dispatch(ctx, &w);
}

/* The most elements of dtype t one binding takes: maxStorageBufferRange, less the up to one alignment unit the
 * binding starts before an operand's first element (bind_operand), in whole 4-element vectors. */
static int64_t binding_elems(const trr_vk_device *d, trr_dtype t) {
    uint64_t align = d->phys.props.limits.minStorageBufferOffsetAlignment;
    if (align < 16) align = 16;
    uint64_t limit = d->phys.props.limits.maxStorageBufferRange;
    return limit > align ? (int64_t)((limit - align) / trr_vk_dtype_bytes(t) / 4 * 4) : 0;
}

typedef trr_status (*part_fn)(trr_context *ctx, const trr_call *c);

/* Runs c in parts whose operands each fit one binding, where the whole call's do not (lavapipe binds 128 MiB):
 * element-wise ops (add, gelu, silu) in runs of whole rows where a row fits, else in pieces of a row, a
 * contiguous operand counting as one long row; row-wise ops (softmax, row_sum) in runs of whole rows (a single
 * row past the binding stays UNSUPPORTED, reported by bind_operand). Pieces start a multiple of 4 elements
 * apart, so each keeps the vector layout of the whole. The parts are recorded into the same batch, one after
 * another. */
static trr_status run_split(trr_context *ctx, const trr_call *c, int rowwise, part_fn run_part) {
    trr_vk_device *d = trr_vk_dev(ctx);
    const int has_y = !rowwise && binary(c);
    const trr_operand *o[3] = {&c->x, has_y ? &c->y : &c->x, &c->z};
    const int contiguous = !rowwise && (c->rows == 1 || (c->x.stride0 == c->cols &&
                                                         (!has_y || c->y.stride0 == c->cols) && c->z.stride0 == c->cols));
    const int64_t rows = contiguous ? 1 : c->rows, cols = contiguous ? c->rows * c->cols : c->cols;
    int64_t lim[3], width[3];
    int fits = 1, row_fits = 1;
    for (int i = 0; i < 3; i++) {
        lim[i] = binding_elems(d, o[i]->dtype);
        width[i] = rowwise && i == 2 && trr_op_desc_get(c->op)->shape == TRR_SHAPE_ROW_REDUCE ? 1 : cols;
        if (rows_extent(rows, width[i], o[i]->stride0) > lim[i]) fits = 0;
        if (width[i] > lim[i]) row_fits = 0;
    }
    if (fits || rows == 0 || cols == 0 || (rowwise && !row_fits)) return run_part(ctx, c);
    int64_t nr = rows, nc = cols; /* rows and columns per part */
    for (int i = 0; i < 3; i++) {
        if (!row_fits) {
            nr = 1;
            if (lim[i] < nc) nc = lim[i];
        } else if (rows > 1) {
            const int64_t r = (lim[i] - width[i]) / o[i]->stride0 + 1;
            if (r < nr) nr = r;
        }
    }
    if (nc <= 0) return run_part(ctx, c); /* the device binds less than one vector: let it say so */
    trr_call part = *c;
    for (int64_t r0 = 0; r0 < rows; r0 += nr)
        for (int64_t c0 = 0; c0 < cols; c0 += nc) {
            part.rows = rows - r0 < nr ? rows - r0 : nr;
            part.cols = cols - c0 < nc ? cols - c0 : nc;
            part.x.offset = c->x.offset + r0 * c->x.stride0 + c0;
            if (has_y) part.y.offset = c->y.offset + r0 * c->y.stride0 + c0;
            part.z.offset = c->z.offset + r0 * c->z.stride0 + (rowwise ? 0 : c0);
            if (contiguous) part.x.stride0 = part.y.stride0 = part.z.stride0 = part.cols;
            TRR_TRY(run_part(ctx, &part));
        }
    return TRR_OK;
}

/* The element-wise rule: an op that moves bytes on the copy kernel (or vkCmdCopyBuffer), the others on their
 * definition's shader. */
trr_status trr_vk_run_elementwise(trr_context *ctx, const trr_call *c) {
    if (trr_op_desc_get(c->op)->bytewise) return run_copy(ctx, c);
    return run_split(ctx, c, 0, elementwise_part);
}

/* The rows and row-reduce rules. */
trr_status trr_vk_run_rowwise(trr_context *ctx, const trr_call *c) {
    return run_split(ctx, c, 1, rowwise_part);
}

/* The register micro-tile (TM x TN) of the SIMT matmul for a config; 0 when the config has none. */
int trr_vk_micro_tile(const trr_config *cfg, int *out_tm, int *out_tn) {
    int bm = cfg->block_m, bn = cfg->block_n, th = cfg->threads;
    /* outputs per invocation; tile sides reach 65536 each, so the area is counted in 64 bits */
    const int64_t area = (int64_t)bm * bn;
    if (bm <= 0 || bn <= 0 || th <= 0 || area % th || area / th > 256) return 0;
    int per = (int)(area / th);
    static const int prefer[] = {4, 8, 2, 1, 16};
    for (int i = 0; i < 5; i++) {
        int tn = prefer[i];
        if (per % tn || bn % tn) continue;
        int tm = per / tn;
        if (tm > 16 || bm % tm) continue;
        if (tm * 2 < tn || tn * 2 < tm) continue; /* keep it squarish: fewer shared reads per FMA */
        *out_tm = tm;
        *out_tn = tn;
        return 1;
    }
    for (int tn = 1; tn <= 16; tn *= 2)
        if (per % tn == 0 && bn % tn == 0 && per / tn <= 16 && bm % (per / tn) == 0) {
            *out_tm = per / tn;
            *out_tn = tn;
            return 1;
        }
    return 0;
}

/* What both matmul kernels share: one workgroup per output tile, the three operands and their extents, and
 * the sizes, leading strides, leaky-relu slope and input scale as push constants. */
static void matmul_operands(const trr_call *c, dispatch *w) {
    uint64_t npm = (uint64_t)(c->rows + c->config.block_m - 1) / (uint64_t)c->config.block_m;
    uint64_t npn = (uint64_t)(c->cols + c->config.block_n - 1) / (uint64_t)c->config.block_n;
    w->groups = npm * npn;
    w->ops[0] = &c->x;
    w->ops[1] = &c->y;
    w->ops[2] = &c->z;
    w->extent[0] = c->trans_a ? rows_extent(c->k, c->rows, c->x.stride0) : rows_extent(c->rows, c->k, c->x.stride0);
    w->extent[1] = c->trans_b ? rows_extent(c->cols, c->k, c->y.stride0) : rows_extent(c->k, c->cols, c->y.stride0);
    w->extent[2] = rows_extent(c->rows, c->cols, c->z.stride0);
    /* a batch: grid z, each operand bound across all its matrices (the front-end keeps that extent < 2^31) */
    w->batch = c->batch > 1 ? (uint64_t)c->batch : 1;
    const trr_operand *ops[3] = {&c->x, &c->y, &c->z};
    for (int i = 0; i < 3; i++)
        if (w->extent[i] > 0) w->extent[i] += ((int64_t)w->batch - 1) * ops[i]->batch_stride;
    w->push = (trr_vk_push){.rows = (uint32_t)c->rows, .cols = (uint32_t)c->cols, .k = (uint32_t)c->k,
                            .xs0 = (uint32_t)c->x.stride0, .ys0 = (uint32_t)c->y.stride0,
                            .zs0 = (uint32_t)c->z.stride0, .alpha = c->alpha,
                            .xb = (uint32_t)c->x.batch_stride, .yb = (uint32_t)c->y.batch_stride,
                            .zb = (uint32_t)c->z.batch_stride};
    const float scale = trr_matmul_input_scale(c); /* 8-bit floats' scale_a * scale_b, 1 otherwise */
    memcpy(&w->push.aux, &scale, sizeof scale);
}

static trr_status run_matmul_whole(trr_context *ctx, const trr_call *c);

/* The bytes one binding of a matmul operand spans for an nr x nc part of C (A: nr rows, B: nc columns). */
static int64_t matmul_part_bytes(const trr_call *c, int which, int64_t nr, int64_t nc) {
    switch (which) {
    case 0: return (c->trans_a ? rows_extent(c->k, nr, c->x.stride0) : rows_extent(nr, c->k, c->x.stride0)) * (int64_t)trr_vk_dtype_bytes(c->x.dtype);
    case 1: return (c->trans_b ? rows_extent(nc, c->k, c->y.stride0) : rows_extent(c->k, nc, c->y.stride0)) * (int64_t)trr_vk_dtype_bytes(c->y.dtype);
    default: return rows_extent(nr, nc, c->z.stride0) * (int64_t)trr_vk_dtype_bytes(c->z.dtype);
    }
}

/* A matmul whose A, B or C is past one binding's range (lavapipe: 128 MiB) runs as a grid of smaller products:
 * runs of C's rows (A's rows, or its columns when stored transposed) where A or C is too large, runs of C's
 * columns where B or a single row of C is. Each part is the same kernel on offset operands, recorded into the
 * same batch. A batch of matrices, and a part that cannot be made to fit (a K too long for one row of A), run
 * whole and bind_operand says why not. */
trr_status trr_vk_run_matmul(trr_context *ctx, const trr_call *c) {
    trr_vk_device *d = trr_vk_dev(ctx);
    const int64_t lim = binding_elems(d, TRR_U8); /* in bytes */
    int64_t nr = c->rows, nc = c->cols;
    if (c->batch > 1 || nr <= 0 || nc <= 0) return run_matmul_whole(ctx, c);
    for (;;) {
        const int fa = matmul_part_bytes(c, 0, nr, nc) <= lim, fb = matmul_part_bytes(c, 1, nr, nc) <= lim,
                  fc = matmul_part_bytes(c, 2, nr, nc) <= lim;
        if (fa && fb && fc) break;
        if ((!fa || !fc) && nr > 1) nr = (nr + 1) / 2;
        else if ((!fb || !fc) && nc > 1) nc = (nc + 1) / 2;
        else return run_matmul_whole(ctx, c);
    }
    if (nr == c->rows && nc == c->cols) return run_matmul_whole(ctx, c);
    trr_call part = *c;
    for (int64_t r0 = 0; r0 < c->rows; r0 += nr)
        for (int64_t c0 = 0; c0 < c->cols; c0 += nc) {
            part.rows = c->rows - r0 < nr ? c->rows - r0 : nr;
            part.cols = c->cols - c0 < nc ? c->cols - c0 : nc;
            part.x.offset = c->x.offset + (c->trans_a ? r0 : r0 * c->x.stride0);
            part.y.offset = c->y.offset + (c->trans_b ? c0 * c->y.stride0 : c0);
            part.z.offset = c->z.offset + r0 * c->z.stride0 + c0;
            TRR_TRY(run_matmul_whole(ctx, &part));
        }
    return TRR_OK;
}

/* split_k >= 2 (core/matmul_split.h's driver): the K slices as a batch of the call's own kernel, their f32
 * products in the device's scratch, then matmul_split.comp adds them in order into C with the epilogue. */
static trr_status split_partials(trr_context *ctx, size_t bytes, void **out_mem) {
    trr_vk_buffer *scratch;
    TRR_TRY(trr_vk_scratch_get(ctx, &trr_vk_dev(ctx)->matmul_partials, bytes, &scratch));
    *out_mem = scratch;
    return TRR_OK;
}

static trr_status split_add(trr_context *ctx, const trr_call *c, void *partials_mem, int64_t slices) {
    const int64_t mn = c->rows * c->cols;
    dispatch w = {0};
    char shader[32];
    snprintf(shader, sizeof shader, "matmul_split_%s", dtype_suffix(c->z.dtype));
    w.shader = shader;
    const uint32_t most = trr_vk_dev(ctx)->phys.props.limits.maxComputeWorkGroupInvocations;
    const uint32_t threads = most < 256 ? most : 256;
    w.spec[0] = threads;
    w.spec[1] = (uint32_t)c->epilogue;
    w.nspec = 2;
    const trr_operand partials = {.mem = partials_mem, .stride0 = c->cols, .batch_stride = mn, .dtype = TRR_F32};
    w.ops[0] = w.ops[1] = &partials;
    w.ops[2] = &c->z;
    w.extent[0] = w.extent[1] = slices * mn;
    w.extent[2] = rows_extent(c->rows, c->cols, c->z.stride0);
    w.groups = ((uint64_t)mn + threads - 1) / threads;
    w.push = (trr_vk_push){.rows = (uint32_t)c->rows, .cols = (uint32_t)c->cols, .k = (uint32_t)slices,
                           .xs0 = (uint32_t)c->cols, .xb = (uint32_t)mn, .zs0 = (uint32_t)c->z.stride0,
                           .alpha = c->alpha};
    return run_dispatch(ctx, &w);
}

static const trr_matmul_split_ops split_ops = {run_matmul_whole, split_partials, split_add};

static trr_status run_matmul_whole(trr_context *ctx, const trr_call *c) {
    const int v = c->config.variant; /* check_config accepted it for this call */
    if (c->config.split_k > 1) return trr_matmul_run_split(ctx, c, &split_ops);
    if (trr_vk_coop_variant(v)) {
        dispatch w = {0};
        char shader[32];
        const int cm2 = v == TRR_VARIANT_CM2;
        /* 8-bit floats: one build per output, A's and B's formats as specialization constants 16 and 17 */
        const int f8 = trr_dtype_is_f8(c->x.dtype);
        snprintf(shader, sizeof shader, "matmul_%s_%s_%s", cm2 ? "cm2" : v == TRR_VARIANT_COOP_KHR ? "coopk" : "coop",
                 f8 ? "f8" : dtype_suffix(c->x.dtype), dtype_suffix(c->z.dtype));
        w.shader = shader;
        /* f32 output past 4096 deep: the accumulators are folded into f32 sums every 512 elements of K
         * (matmul_coop.comp says why). The second set of accumulators costs registers (nearly half the speed
         * on NVIDIA H200), and f16 outputs stay well inside their own bound without it (K = 131075),
         * so only the f32 output folds (bf16 outputs: their bound is wider still). cm2 folds its workgroup-scope
         * accumulator alike; its spec constant 9 is the config's stages as the slices its interior loop unrolls. */
        const uint32_t fold = trr_matmul_fold_tiles(c, 4096);
        const trr_vk_coop_geom g = trr_vk_coop_geometry(trr_vk_dev(ctx), v, c->x.dtype);
        uint32_t spec[18] = {(uint32_t)trr_vk_coop_invocations(&c->config, g), (uint32_t)c->config.block_m, (uint32_t)c->config.block_n,
                             (uint32_t)c->config.block_k, (uint32_t)trr_vk_coop_wm(&c->config, g), (uint32_t)c->config.group_m,
                             (uint32_t)c->trans_a, (uint32_t)c->trans_b, (uint32_t)c->epilogue,
                             (uint32_t)c->config.stages, fold, (uint32_t)g.tm, (uint32_t)g.tn, (uint32_t)g.tk,
                             (uint32_t)g.sg, TRR_VK_COOP_SMEM_SKIP, c->x.dtype == TRR_F8E5M2, c->y.dtype == TRR_F8E5M2};
        _Static_assert(sizeof spec <= sizeof w.spec, "more specialization constants than a pipeline takes");
        memcpy(w.spec, spec, sizeof spec);
        w.nspec = cm2 ? 11 : f8 ? 18 : 16;
        matmul_operands(c, &w);
        /* 16-byte loads (8-byte ones of 8-bit floats) where offset, leading stride and the contiguous extent are
         * whole 8-element words. */
        /* (every batch's start too: offset + b * batch_stride) */
        int vec_a = c->x.offset % 8 == 0 && c->x.stride0 % 8 == 0 && c->x.batch_stride % 8 == 0 &&
                    (c->trans_a ? c->rows : c->k) % 8 == 0;
        int vec_b = c->y.offset % 8 == 0 && c->y.stride0 % 8 == 0 && c->y.batch_stride % 8 == 0 &&
                    (c->trans_b ? c->k : c->cols) % 8 == 0;
        /* Whole 16x16 output tiles go straight to memory when every row starts on a 16-byte boundary. */
        int zw = c->z.dtype == TRR_F32 ? 4 : 8;
        int direct = c->z.offset % zw == 0 && c->z.stride0 % zw == 0 && c->z.batch_stride % zw == 0;
        w.push.pad = (vec_a ? 1u : 0u) | (vec_b ? 2u : 0u) | (direct ? 4u : 0u);
        return run_dispatch(ctx, &w);
    }
    dispatch w = {0};
    char shader[32];
    /* 8-bit floats: one build per output, A's and B's formats as specialization constants 12 and 13 */
    const int f8 = trr_dtype_is_f8(c->x.dtype);
    if (c->x.dtype == TRR_F32)
        snprintf(shader, sizeof shader, "matmul_f32");
    else
        snprintf(shader, sizeof shader, "matmul_%s_%s", f8 ? "f8" : dtype_suffix(c->x.dtype), dtype_suffix(c->z.dtype));
    int tm = 0, tn = 0;
    if (!trr_vk_micro_tile(&c->config, &tm, &tn)) return trr_error(ctx, TRR_ERR_INTERNAL, "vulkan: unchecked matmul config");
    w.shader = shader;
    /* 4-element vectors of an operand where every row of every matrix starts on one (the binding starts on a
     * 16-byte boundary): its offset, leading stride and (in a batch) batch stride are multiples of 4 elements. */
    const int vec_a = c->x.offset % 4 == 0 && c->x.stride0 % 4 == 0 && (c->batch <= 1 || c->x.batch_stride % 4 == 0);
    const int vec_b = c->y.offset % 4 == 0 && c->y.stride0 % 4 == 0 && (c->batch <= 1 || c->y.batch_stride % 4 == 0);
    const int vec_c = c->z.offset % 4 == 0 && c->z.stride0 % 4 == 0 && (c->batch <= 1 || c->z.batch_stride % 4 == 0);
    uint32_t spec[14] = {(uint32_t)c->config.threads, (uint32_t)c->config.block_m, (uint32_t)c->config.block_n,
                         (uint32_t)c->config.block_k, (uint32_t)tm, (uint32_t)tn, (uint32_t)c->config.group_m,
                         (uint32_t)c->trans_a, (uint32_t)c->trans_b, (uint32_t)c->epilogue, (uint32_t)c->config.stages,
                         trr_matmul_fold_tiles(c, TRR_MATMUL_SIMT_FOLD_FROM_K), c->x.dtype == TRR_F8E5M2,
                         c->y.dtype == TRR_F8E5M2};
    _Static_assert(sizeof spec <= sizeof w.spec, "more specialization constants than a pipeline takes");
    memcpy(w.spec, spec, sizeof spec);
    w.nspec = f8 ? 14 : 12;
    matmul_operands(c, &w);
    w.push.pad = (vec_a ? 1u : 0u) | (vec_b ? 2u : 0u) | (vec_c ? 4u : 0u);
    return run_dispatch(ctx, &w);
}

trr_status trr_vk_bind(trr_context *ctx, const trr_operand *o, int64_t extent, VkDescriptorBufferInfo *info,
                       uint32_t *out_elem_offset) {
    return bind_operand(ctx, o, extent, info, out_elem_offset);
}

/* A user op (core/user_op.h; docs/custom-ops.md, Vulkan's convention): its SPIR-V in the standard layout, bindings
 * 0 and 1 the inputs (the first again for an op of one input) and 2 the output, push constants rows, cols, the
 * call's dtype (a trr_dtype: one module serves every dtype of the definition), the three element offsets from each binding's start, the first input's row stride, 0, the second's and the output's,
 * then up to six parameters (f32 bits or int); specialization constant 0 the threads per group, 1.. the tile
 * parameters; the grid the launch rule's. */
trr_status trr_vk_user_prepare(trr_context *ctx, const trr_call *call, int64_t groups[3], int *threads) {
    const VkPhysicalDeviceLimits *l = &trr_vk_dev(ctx)->phys.props.limits;
    const uint32_t most = l->maxComputeWorkGroupInvocations < l->maxComputeWorkGroupSize[0]
                              ? l->maxComputeWorkGroupInvocations
                              : l->maxComputeWorkGroupSize[0];
    return trr_user_prepare(ctx, trr_op_desc_get(call->op)->user, call, TRR_USER_VULKAN, "vulkan",
                            most > INT32_MAX ? INT32_MAX : (int)most, groups, threads);
}

trr_status trr_vk_run_user(trr_context *ctx, const trr_call *c) {
    const trr_user_op *u = trr_op_desc_get(c->op)->user;
    trr_vk_device *d = trr_vk_dev(ctx);
    int64_t groups[3];
    int threads = 0;
    TRR_TRY(trr_vk_user_prepare(ctx, c, groups, &threads));
    for (int a = 0; a < 3; a++)
        if (groups[a] > d->phys.props.limits.maxComputeWorkGroupCount[a])
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: %s: %lld workgroups along %c, the device takes %u",
                             u->name, (long long)groups[a], "xyz"[a], d->phys.props.limits.maxComputeWorkGroupCount[a]);
    if (u->row_op) return trr_vk_run_user_rows(ctx, c, u, groups, threads); /* vk_norm.c: five bindings */
    if (u->desc.n_params > 6)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: %s: user ops take up to 6 parameters here", u->name);
    dispatch w;
    memset(&w, 0, sizeof w);
    char shader[32];
    snprintf(shader, sizeof shader, "user#%d", (int)c->op);
    w.shader = shader;
    int tiles[TRR_MAX_TILE_PARAMS];
    trr_user_tiles(u, &c->config, tiles);
    w.spec[0] = (uint32_t)threads;
    for (int t = 0; t < u->def.n_tiles; t++) w.spec[1 + t] = (uint32_t)tiles[t];
    w.nspec = 1 + u->def.n_tiles;
    w.ops[0] = &c->x;
    w.ops[1] = u->n_operands == 3 ? &c->y : &c->x;
    w.ops[2] = &c->z;
    for (int i = 0; i < 3; i++) w.extent[i] = rows_extent(c->rows, c->cols, w.ops[i]->stride0);
    w.push = (trr_vk_push){.rows = (uint32_t)c->rows, .cols = (uint32_t)c->cols, .k = (uint32_t)c->z.dtype,
                           .xs0 = (uint32_t)c->x.stride0,
                           .ys0 = (uint32_t)w.ops[1]->stride0, .zs0 = (uint32_t)c->z.stride0};
    uint32_t words[6] = {0};
    for (int i = 0; i < u->desc.n_params; i++) {
        if (trr_user_param_is_float(u, i)) {
            const float f = (float)c->params[i];
            memcpy(&words[i], &f, 4);
        } else {
            const int32_t v = (int32_t)c->params[i];
            memcpy(&words[i], &v, 4);
        }
    }
    memcpy(&w.push.alpha, &words[0], 4);
    w.push.pad = words[1], w.push.xb = words[2], w.push.yb = words[3], w.push.zb = words[4], w.push.aux = words[5];
    prepared p;
    uint32_t off[3];
    for (int i = 0; i < 3; i++) TRR_TRY(bind_operand(ctx, w.ops[i], w.extent[i], &p.info[i], &off[i]));
    w.push.xo = off[0], w.push.yo = off[1], w.push.zo = off[2];
    p.gx = (uint32_t)groups[0], p.gy = (uint32_t)groups[1], p.gz = (uint32_t)groups[2];
    TRR_TRY(trr_vk_pipeline_get(ctx, w.shader, w.spec, w.nspec, &p.pipeline));
    trr_vk_dispatch_rec rec = dispatch_rec(&w, &p);
    return trr_vk_dispatch(ctx, &rec);
}
