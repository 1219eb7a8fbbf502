/* The ops: which kernel runs a call, with which specialization constants, push constants and dispatch size;
 * plus the config heuristic and checks. */
#include "vk_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t dtype_bytes(trr_dtype t) {
    return t == TRR_F32 ? 4 : t == TRR_U8 ? 1 : 2;
}

static const char *dtype_suffix(trr_dtype t) {
    return t == TRR_F32 ? "f32" : t == TRR_F16 ? "f16" : t == TRR_U8 ? "u8" : "bf16";
}

/* Binds an operand at the largest aligned byte offset at or below its first element, so buffers larger than
 * maxStorageBufferRange still work and element offsets stay small. */
static trr_status bind_operand(trr_context *ctx, const trr_operand *o, int64_t extent, VkDescriptorBufferInfo *info,
                               uint32_t *out_elem_offset) {
    trr_vk_device *d = trr_vk_dev(ctx);
    const trr_vk_buffer *b = o->mem;
    uint64_t es = dtype_bytes(o->dtype);
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
    uint32_t spec[16];
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
static trr_status record_dispatch(trr_context *ctx, VkCommandBuffer cmd, const dispatch *w, const prepared *p) {
    trr_vk_device *d = trr_vk_dev(ctx);
    VkWriteDescriptorSet wr[3];
    for (uint32_t i = 0; i < 3; i++)
        wr[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                       .dstBinding = i,
                                       .descriptorCount = 1,
                                       .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                       .pBufferInfo = &p->info[i]};
    if (d->push_set) {
        d->push_set(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipeline_layout, 0, 3, wr);
    } else {
        VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                          .descriptorPool = d->recording->pool,
                                          .descriptorSetCount = 1,
                                          .pSetLayouts = &d->set_layout};
        VkDescriptorSet set;
        TRR_VK_CHECK(ctx, d->fn.vkAllocateDescriptorSets(d->device, &ai, &set), "vkAllocateDescriptorSets");
        for (uint32_t i = 0; i < 3; i++) wr[i].dstSet = set;
        d->fn.vkUpdateDescriptorSets(d->device, 3, wr, 0, NULL);
        d->fn.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipeline_layout, 0, 1, &set, 0, NULL);
    }
    for (int i = 0; i < 3; i++) trr_vk_use(d, w->ops[i]->mem);
    if (d->recording->bound != p->pipeline) {
        d->fn.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipeline);
        d->recording->bound = p->pipeline;
    }
    d->fn.vkCmdPushConstants(cmd, d->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof w->push, &w->push);
    d->fn.vkCmdDispatch(cmd, p->gx, p->gy, p->gz);
    return TRR_OK;
}

static trr_status run_dispatch(trr_context *ctx, dispatch *w) {
    prepared p;
    TRR_TRY(prepare_dispatch(ctx, w, &p));
    VkCommandBuffer cmd;
    TRR_TRY(trr_vk_begin(ctx, &cmd));
    TRR_TRY(record_dispatch(ctx, cmd, w, &p));
    return trr_vk_end(ctx);
}

static int64_t rows_extent(int64_t rows, int64_t cols, int64_t stride) {
    return (rows - 1) * stride + cols;
}

/* Copies run on the copy kernel (kernels/vulkan/copy.comp): vkCmdCopyBuffer reaches 847 GB/s on an H100, where
 * a load/store kernel reaches the memory bandwidth (about 3000 GB/s). 16-byte words where both sides are
 * 16-aligned, else 4-byte words; vkCmdCopyBuffer is left with the few bytes before and after the words, or
 * with the whole copy where source and destination disagree modulo 4. */
typedef struct copy_span {
    trr_vk_buffer *x, *z;
    uint64_t xo, zo;   /* bytes, multiples of the word */
    uint64_t xs, zs;   /* row strides in bytes, multiples of the word; unused when rows == 1 */
    uint64_t rows, row_bytes;
} copy_span;

/* Words per invocation of the copy kernel where no config applies (trr_buffer_copy): 2, as for add, whose
 * 16-byte loads run best with 2 per invocation on an H100. The copy op takes it from its config (block_n /
 * (threads x vector_width)), whose default is the same 2. */
#define COPY_WORDS_PER_INVOCATION 2
#define ADD_LOADS_PER_INVOCATION 2   /* H100: 2956 GB/s at n = 2^27 against 1702 with 4 */
#define STREAM_LOADS_PER_INVOCATION 4 /* gelu, silu and rgb_to_grey */

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
static int elementwise_vec4_layout(const trr_call *c) {
    const trr_operand *y = c->op == TRR_OP_ADD ? &c->y : &c->x;
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

/* One op in the batch: the edge copies (bytes the kernel leaves out, disjoint from its words, so no barrier
 * is needed between them) and the kernel over the span. */
static trr_status copy_kernel(trr_context *ctx, const copy_span *sp, unsigned word, uint32_t threads, uint32_t ept,
                              const VkBufferCopy *edges, uint32_t nedges) {
    trr_vk_device *d = trr_vk_dev(ctx);
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
    if (nedges) d->fn.vkCmdCopyBuffer(cmd, sp->x->buf, sp->z->buf, nedges, edges);
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
    for (uint64_t done = 0; done < body;) {
        uint64_t n = body - done < limit ? body - done : limit;
        copy_span sp = {.x = bx, .z = bz, .xo = xo + head + done, .zo = zo + head + done, .rows = 1, .row_bytes = n};
        TRR_TRY(copy_kernel(ctx, &sp, word, threads, ept, done == 0 ? edges : NULL, done == 0 ? nedges : 0));
        done += n;
    }
    return TRR_OK;
}

trr_status trr_vk_copy_bytes(trr_context *ctx, trr_vk_buffer *dst, size_t dst_offset, trr_vk_buffer *src,
                             size_t src_offset, size_t bytes) {
    trr_vk_device *d = trr_vk_dev(ctx);
    uint32_t threads = d->phys.props.limits.maxComputeWorkGroupInvocations;
    if (threads > 256) threads = 256;
    return copy_flat(ctx, dst, dst_offset, src, src_offset, bytes, 16, threads, COPY_WORDS_PER_INVOCATION);
}

static trr_status run_copy(trr_context *ctx, const trr_call *c) {
    trr_vk_device *d = trr_vk_dev(ctx);
    trr_vk_buffer *bx = c->x.mem, *bz = c->z.mem;
    if (bx == bz && c->x.offset == c->z.offset && (c->rows == 1 || c->x.stride0 == c->z.stride0))
        return TRR_OK; /* exact aliasing: nothing to move */
    uint64_t es = dtype_bytes(c->x.dtype);
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
            return copy_kernel(ctx, &sp, word, threads, ept, NULL, 0);
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

/* elementwise.comp's ops: add and the unary ops, one shader variant each (OP_ADD, OP_GELU, OP_SILU). */
static const char *elementwise_name(trr_op op) {
    return op == TRR_OP_ADD ? "add" : op == TRR_OP_SILU ? "silu" : "gelu";
}

static trr_status elementwise_part(trr_context *ctx, const trr_call *c) {
    dispatch w = {0};
    char shader[32];
    snprintf(shader, sizeof shader, "%s_%s", elementwise_name(c->op), dtype_suffix(c->z.dtype));
    streaming(&w, c, shader);
    w.ops[0] = &c->x;
    w.ops[1] = c->op == TRR_OP_ADD ? &c->y : &c->x;
    w.ops[2] = &c->z;
    w.extent[0] = rows_extent(c->rows, c->cols, c->x.stride0);
    w.extent[1] = c->op == TRR_OP_ADD ? rows_extent(c->rows, c->cols, c->y.stride0) : w.extent[0];
    w.extent[2] = rows_extent(c->rows, c->cols, c->z.stride0);
    w.push = (trr_vk_push){.rows = (uint32_t)c->rows, .cols = (uint32_t)c->cols, .xs0 = (uint32_t)c->x.stride0,
                           .ys0 = (uint32_t)(c->op == TRR_OP_ADD ? c->y.stride0 : 0), .zs0 = (uint32_t)c->z.stride0};
    /* 4-element vectors where the config asks for them and the layout allows (elementwise_vec4_layout). */
    if (c->config.vector_width == 4 && elementwise_vec4_layout(c)) {
        w.push.pad = 1u;
        uint64_t n4 = (uint64_t)c->rows * (uint64_t)c->cols / 4;
        uint64_t per_group = (uint64_t)w.spec[0] * w.spec[1];
        w.groups = (n4 + per_group - 1) / per_group;
        if (w.groups == 0) w.groups = 1; /* the tail of fewer than 4 elements */
        if (w.groups > 65535) w.groups = 65535;
    }
    return run_dispatch(ctx, &w);
}

static trr_status run_rgb(trr_context *ctx, const trr_call *c) {
    dispatch w = {0};
    streaming(&w, c, c->z.dtype == TRR_U8 ? "rgb_to_grey_u8" : "rgb_to_grey_f32");
    w.ops[0] = w.ops[1] = &c->x;
    w.ops[2] = &c->z;
    w.extent[0] = w.extent[1] = 2 * c->x.stride0 + rows_extent(c->rows, c->cols, c->x.stride1);
    w.extent[2] = rows_extent(c->rows, c->cols, c->z.stride0);
    w.push = (trr_vk_push){.rows = (uint32_t)c->rows, .cols = (uint32_t)c->cols, .xs0 = (uint32_t)c->x.stride0,
                           .xs1 = (uint32_t)c->x.stride1, .zs0 = (uint32_t)c->z.stride0};
    return run_dispatch(ctx, &w);
}

/* The heuristic's column limit for the subgroup-per-row softmax (softmax_sg.comp): 0, so it never picks it.
 * On the H100 (2026-11-22, bench/results/2026-11-22-h100-vulkan-softmax-sg.txt) it was slower than the
 * workgroup-per-row kernel at both sizes measured (4096x1024: 1165 vs 1222 GB/s; 4096x4096: 1853 vs 2168 GB/s),
 * presumably because 32 vec4 per lane in registers cost occupancy. It stays a variant (`variant=subgroup`) for
 * devices with narrow subgroups where it may win, and for the tuner to time. */
#define SOFTMAX_SG_AUTO_MAX_COLS 0

/* The register softmaxes read 4-element vectors: rows 4-aligned on both sides, and subgroup arithmetic. */
static int softmax_regs_layout(const trr_vk_device *d, const trr_call *c) {
    return d->phys.subgroup_arith && c->cols % 4 == 0 && c->x.offset % 4 == 0 && c->z.offset % 4 == 0 &&
           (c->rows == 1 || (c->x.stride0 % 4 == 0 && c->z.stride0 % 4 == 0));
}

/* softmax_sg.comp can take the call with this many threads: the register layout, subgroups wider than one
 * lane that tile the workgroup, and at most 32 vectors per lane. Else 0 with the reason. */
static int softmax_sg_runs(const trr_vk_device *d, const trr_call *c, int threads, char *why, size_t cap) {
    uint64_t sg = d->phys.subgroup_size, n4 = (uint64_t)c->cols / 4;
    if (!softmax_regs_layout(d, c))
        snprintf(why, cap, "it needs subgroup arithmetic and rows of whole 4-element vectors on 4-element "
                           "boundaries");
    else if (sg <= 1 || threads <= 0 || (uint64_t)threads % sg)
        snprintf(why, cap, "threads = %d must be a whole number of %llu-wide subgroups", threads,
                 (unsigned long long)sg);
    else if ((n4 + sg - 1) / sg > 32)
        snprintf(why, cap, "rows of %lld columns need more than 32 vectors per lane of a %llu-wide subgroup",
                 (long long)c->cols, (unsigned long long)sg);
    else
        return 1;
    return 0;
}

/* row_sum_sg.comp (row_sum's variant subgroup) can take the call with this many threads: subgroup arithmetic
 * and a workgroup of whole subgroups. Else 0 with the reason. */
static int row_sum_sg_runs(const trr_vk_device *d, int threads, char *why, size_t cap) {
    uint64_t sg = d->phys.subgroup_size;
    if (!d->phys.subgroup_arith)
        snprintf(why, cap, "%s lacks subgroup arithmetic in compute shaders", d->phys.props.deviceName);
    else if (threads <= 0 || (uint64_t)threads % sg)
        snprintf(why, cap, "threads = %d must be a whole number of %llu-wide subgroups", threads,
                 (unsigned long long)sg);
    else
        return 1;
    return 0;
}

/* Softmax's config: threads per row, and block_n, the longest row softmax_rows.comp keeps in registers (a
 * multiple of threads, at most 64 elements per invocation). The kernel is specialised for the row it gets
 * (ceil(cols / 4 / threads) vectors per invocation), so block_n only draws the line between it and the online
 * kernel; choose_config sets it to what the row needs, so every row the register kernel can hold takes it. */
static trr_status rowwise_part(trr_context *ctx, const trr_call *c) {
    trr_vk_device *d = trr_vk_dev(ctx);
    dispatch w = {0};
    char shader[32];
    snprintf(shader, sizeof shader, "%s_%s", c->op == TRR_OP_SOFTMAX ? "softmax" : "row_sum",
             dtype_suffix(c->x.dtype));
    w.shader = shader;
    w.spec[0] = (uint32_t)c->config.threads;
    w.nspec = 1;
    w.groups = (uint64_t)c->rows;
    /* Softmax with the row in registers, 4-element vectors, on devices with subgroup arithmetic: the subgroup
     * variant with one subgroup per row (softmax_sg.comp, at most 32 vectors per lane), rows
     * of up to block_n columns with one workgroup each (softmax_rows.comp, at most 16 vectors per invocation,
     * as many as the row needs); longer rows take the online kernel (softmax.comp). */
    uint64_t n4 = (uint64_t)c->cols / 4, threads = (uint64_t)c->config.threads, sg = d->phys.subgroup_size;
    if (c->op == TRR_OP_SOFTMAX && softmax_regs_layout(d, c)) {
        uint64_t vpt_sg = (n4 + sg - 1) / sg, vpt = (n4 + threads - 1) / threads;
        if (c->config.variant == TRR_VARIANT_SUBGROUP) { /* check_config: softmax_sg_runs */
            snprintf(shader, sizeof shader, "softmax_sg_%s", dtype_suffix(c->x.dtype));
            w.spec[1] = (uint32_t)vpt_sg;
            w.nspec = 2;
            uint64_t rows_per_group = threads / sg;
            w.groups = ((uint64_t)c->rows + rows_per_group - 1) / rows_per_group;
        } else if (c->cols <= c->config.block_n && vpt >= 1 && vpt <= 16) {
            snprintf(shader, sizeof shader, "softmax_rows_%s", dtype_suffix(c->x.dtype));
            w.spec[1] = (uint32_t)vpt;
            w.nspec = 2;
        }
    }
    if (c->op == TRR_OP_ROW_SUM && c->config.variant == TRR_VARIANT_SUBGROUP) { /* check_config: row_sum_sg_runs */
        snprintf(shader, sizeof shader, "row_sum_sg_%s", dtype_suffix(c->x.dtype));
        /* 4-element vectors where every row starts on a vector boundary (the binding starts on one: 16 bytes) */
        const int vec4 = c->config.vector_width == 4 && c->x.offset % 4 == 0 && (c->rows == 1 || c->x.stride0 % 4 == 0);
        w.spec[1] = vec4 ? 4u : 1u;
        w.nspec = 2;
    }
    w.ops[0] = w.ops[1] = &c->x;
    w.ops[2] = &c->z;
    w.extent[0] = w.extent[1] = rows_extent(c->rows, c->cols, c->x.stride0);
    w.extent[2] = c->op == TRR_OP_SOFTMAX ? rows_extent(c->rows, c->cols, c->z.stride0)
                                          : rows_extent(c->rows, 1, c->z.stride0);
    w.push = (trr_vk_push){.rows = (uint32_t)c->rows, .cols = (uint32_t)c->cols, .xs0 = (uint32_t)c->x.stride0,
                           .zs0 = (uint32_t)c->z.stride0};
    return run_dispatch(ctx, &w);
}

/* The most elements of dtype t one binding takes: maxStorageBufferRange, less the up to one alignment unit the
 * binding starts before an operand's first element (bind_operand), in whole 4-element vectors. */
static int64_t binding_elems(const trr_vk_device *d, trr_dtype t) {
    uint64_t align = d->phys.props.limits.minStorageBufferOffsetAlignment;
    if (align < 16) align = 16;
    uint64_t limit = d->phys.props.limits.maxStorageBufferRange;
    return limit > align ? (int64_t)((limit - align) / dtype_bytes(t) / 4 * 4) : 0;
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
    const int has_y = c->op == TRR_OP_ADD;
    const trr_operand *o[3] = {&c->x, has_y ? &c->y : &c->x, &c->z};
    const int contiguous = !rowwise && (c->rows == 1 || (c->x.stride0 == c->cols &&
                                                         (!has_y || c->y.stride0 == c->cols) && c->z.stride0 == c->cols));
    const int64_t rows = contiguous ? 1 : c->rows, cols = contiguous ? c->rows * c->cols : c->cols;
    int64_t lim[3], width[3];
    int fits = 1, row_fits = 1;
    for (int i = 0; i < 3; i++) {
        lim[i] = binding_elems(d, o[i]->dtype);
        width[i] = rowwise && i == 2 && c->op == TRR_OP_ROW_SUM ? 1 : cols;
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

static trr_status run_elementwise(trr_context *ctx, const trr_call *c) {
    return run_split(ctx, c, 0, elementwise_part);
}

static trr_status run_rowwise(trr_context *ctx, const trr_call *c) {
    return run_split(ctx, c, 1, rowwise_part);
}

/* The register micro-tile (TM x TN) of the SIMT matmul for a config; 0 when the config has none. */
static int micro_tile(const trr_config *cfg, int *out_tm, int *out_tn) {
    int bm = cfg->block_m, bn = cfg->block_n, th = cfg->threads;
    if (bm <= 0 || bn <= 0 || th <= 0 || (bm * bn) % th) return 0;
    int per = bm * bn / th;
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

static const char *variant_name(int v) {
    const char *name = "?";
    trr_variant_name((trr_variant)v, &name);
    return name;
}

static int coop_variant(int v) {
    return v == TRR_VARIANT_COOP_KHR || v == TRR_VARIANT_COOP_NV || v == TRR_VARIANT_CM2;
}

/* Whether this device runs matmul variant v for the call at all (the config's tiles aside): simt always, the
 * cooperative-matrix variants for f16 inputs where create_device enabled them, and coop_khr for bf16 inputs where
 * it enabled the bf16 build (coop_bf16). Else 0 with the reason. */
static int matmul_variant_runs(const trr_vk_device *d, const trr_call *c, int v, char *why, size_t cap) {
    if (v == TRR_VARIANT_SIMT) return 1;
    if (!coop_variant(v)) {
        snprintf(why, cap, "the Vulkan matmul kernels are simt, coop_khr, coop_nv and cm2");
        return 0;
    }
    if (c->x.dtype == TRR_BF16) {
        if (v != TRR_VARIANT_COOP_KHR) {
            snprintf(why, cap, "bf16 inputs run on cooperative matrices as variant coop_khr only");
            return 0;
        }
        if (!d->coop_bf16) snprintf(why, cap, "%s", d->coop_bf16_why);
        return d->coop_bf16;
    }
    if (c->x.dtype != TRR_F16) {
        snprintf(why, cap, "the cooperative-matrix kernels take f16 and bf16 inputs");
        return 0;
    }
    const int on = v == TRR_VARIANT_COOP_KHR ? d->coop_khr : v == TRR_VARIANT_COOP_NV ? d->coop_nv : d->coop2;
    const char *no = v == TRR_VARIANT_COOP_KHR ? d->coop_khr_why : v == TRR_VARIANT_COOP_NV ? d->coop_nv_why : d->coop2_why;
    if (!on) snprintf(why, cap, "%s", no);
    return on;
}

/* The cooperative kernel's matrix shape and subgroup size for variant v and input dtype in: on
 * VK_KHR_cooperative_matrix the shape picked from the device's list (vk_coop_shape.h) on the device's subgroup
 * size; the NV extensions' kernels take 16x16x16 on 32-wide subgroups. */
typedef struct coop_geom {
    int tm, tn, tk, sg;
} coop_geom;

static coop_geom coop_geometry(const trr_vk_device *d, int v, trr_dtype in) {
    coop_geom g = {16, 16, 16, 32};
    if (v == TRR_VARIANT_COOP_KHR) {
        const trr_vk_coop_shape *s = in == TRR_BF16 ? &d->phys.coop_bf16_shape : &d->phys.coop_f16_shape;
        if (s->m) g.tm = (int)s->m, g.tn = (int)s->n, g.tk = (int)s->k;
        g.sg = (int)d->phys.subgroup_size;
    }
    return g;
}

/* Subgroups along M for the cooperative kernel: the split of threads/SG subgroups whose per-subgroup patch
 * ((BM/WM) x (BN/WN), whole TM x TN tiles) is closest to square; 0 when none fits. A patch holds at most 256
 * accumulator floats per invocation (32 16x16 tiles on 32-wide subgroups). */
static int coop_wm(const trr_config *cfg, coop_geom g) {
    if (cfg->threads <= 0 || g.sg <= 0 || cfg->threads % g.sg) return 0;
    int nsg = cfg->threads / g.sg, best = 0, best_score = 0;
    for (int wm = 1; wm <= nsg; wm++) {
        if (nsg % wm) continue;
        int wn = nsg / wm;
        if (cfg->block_m <= 0 || cfg->block_n <= 0 || cfg->block_m % (g.tm * wm) || cfg->block_n % (g.tn * wn)) continue;
        int pm = cfg->block_m / wm, pn = cfg->block_n / wn;
        if ((int64_t)pm * pn > 256 * (int64_t)g.sg) continue; /* accumulator registers */
        int score = pm > pn ? pm - pn : pn - pm;
        if (!best || score < best_score) {
            best = wm;
            best_score = score;
        }
    }
    return best;
}

/* Shared memory of the cooperative kernel (kernels/vulkan/matmul_coop.comp): two buffers of each staged slice
 * in 16-byte words with one word of padding per row, for the larger of the two layouts. */
static uint64_t coop_words(int rows_nt, int cols_nt) {
    uint64_t a = (uint64_t)rows_nt * (uint64_t)(cols_nt / 8 + 1), b = (uint64_t)cols_nt * (uint64_t)(rows_nt / 8 + 1);
    return a > b ? a : b;
}

static uint64_t coop_shared(const trr_config *c) {
    return 16ull * 2ull * (coop_words(c->block_m, c->block_k) + coop_words(c->block_k, c->block_n));
}

/* matmul_cm2.comp (past coop_config_ok's common checks): workgroup-scope matrices of the whole tile, staged by
 * the driver (no shared arrays of its own), so only the extension's limits apply: the workgroup size and the
 * largest flexible dimension. */
static int cm2_config_ok(const trr_vk_device *d, const trr_config *c, char *why, size_t cap) {
    uint32_t max_threads = d->phys.coop2_max_threads ? d->phys.coop2_max_threads : 256;
    uint32_t max_dim = d->phys.coop2_max_dim ? d->phys.coop2_max_dim : 256;
    if ((uint32_t)c->threads > max_threads) {
        snprintf(why, cap, "threads = %d; workgroup-scope matrices allow up to %u", c->threads, max_threads);
        return 0;
    }
    const int dims[3] = {c->block_m, c->block_n, c->block_k};
    for (int i = 0; i < 3; i++)
        if (dims[i] <= 0 || dims[i] % 16 || (uint32_t)dims[i] > max_dim) {
            snprintf(why, cap, "block %dx%dx%d: each side must be a multiple of 16 up to %u", c->block_m,
                     c->block_n, c->block_k, max_dim);
            return 0;
        }
    return 1;
}

/* The config runs on the cooperative kernel: whole TM x TN x TK tiles per subgroup (coop_geometry), the slices
 * fit in shared memory, and the A buffers hold the epilogue scratch (TM·TN/4 words per subgroup); on
 * matmul_cm2.comp (variant cm2), cm2_config_ok's rules instead. Else 0, with the reason in why. */
static int coop_config_ok(const trr_vk_device *d, const trr_config *c, trr_dtype in, char *why, size_t cap) {
    const coop_geom g = coop_geometry(d, c->variant, in);
    if (c->threads <= 0 || c->threads % g.sg) {
        snprintf(why, cap, "threads = %d is not whole %d-wide subgroups", c->threads, g.sg);
        return 0;
    }
    if (c->split_k != 1 || c->group_m <= 0) {
        snprintf(why, cap, "split_k must be 1 and group_m positive");
        return 0;
    }
    if (c->variant == TRR_VARIANT_CM2) return cm2_config_ok(d, c, why, cap);
    if (c->stages < 1 || c->stages > 3) {
        snprintf(why, cap, "stages = %d: the kernel's pipelines are 1, 2 and 3", c->stages);
        return 0;
    }
    if (c->block_k <= 0 || c->block_k % g.tk) {
        snprintf(why, cap, "block_k = %d is not a multiple of the %dx%dx%d matrices' depth", c->block_k, g.tm, g.tn,
                 g.tk);
        return 0;
    }
    if (!coop_wm(c, g)) {
        snprintf(why, cap, "%d subgroups cannot split a %dx%d block into whole %dx%d tiles of at most %d floats "
                 "per invocation each", c->threads / g.sg, c->block_m, c->block_n, g.tm, g.tn, 256);
        return 0;
    }
    uint64_t shared = coop_shared(c), limit = d->phys.props.limits.maxComputeSharedMemorySize;
    if (shared > limit) {
        snprintf(why, cap, "its slices need %llu bytes of shared memory; the device has %llu",
                 (unsigned long long)shared, (unsigned long long)limit);
        return 0;
    }
    uint64_t a_min = (uint64_t)c->block_m * (uint64_t)(c->block_k / 8 + 1), a_t = (uint64_t)c->block_k * (uint64_t)(c->block_m / 8 + 1);
    if (a_t < a_min) a_min = a_t;
    if ((uint64_t)(g.tm * g.tn / 4) * (uint64_t)(c->threads / g.sg) > 2ull * a_min) {
        snprintf(why, cap, "the %dx%d A slices cannot hold the epilogue scratch of %d subgroups", c->block_m,
                 c->block_k, c->threads / g.sg);
        return 0;
    }
    return 1;
}

/* What both matmul kernels share: one workgroup per output tile, the three operands and their extents, and
 * the sizes, leading strides and leaky-relu slope as push constants. */
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
}

static trr_status run_matmul_whole(trr_context *ctx, const trr_call *c);

/* The bytes one binding of a matmul operand spans for an nr x nc part of C (A: nr rows, B: nc columns). */
static int64_t matmul_part_bytes(const trr_call *c, int which, int64_t nr, int64_t nc) {
    switch (which) {
    case 0: return (c->trans_a ? rows_extent(c->k, nr, c->x.stride0) : rows_extent(nr, c->k, c->x.stride0)) * (int64_t)dtype_bytes(c->x.dtype);
    case 1: return (c->trans_b ? rows_extent(nc, c->k, c->y.stride0) : rows_extent(c->k, nc, c->y.stride0)) * (int64_t)dtype_bytes(c->y.dtype);
    default: return rows_extent(nr, nc, c->z.stride0) * (int64_t)dtype_bytes(c->z.dtype);
    }
}

/* A matmul whose A, B or C is past one binding's range (lavapipe: 128 MiB) runs as a grid of smaller products:
 * runs of C's rows (A's rows, or its columns when stored transposed) where A or C is too large, runs of C's
 * columns where B or a single row of C is. Each part is the same kernel on offset operands, recorded into the
 * same batch. A batch of matrices, and a part that cannot be made to fit (a K too long for one row of A), run
 * whole and bind_operand says why not. */
static trr_status run_matmul(trr_context *ctx, const trr_call *c) {
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

static trr_status run_matmul_whole(trr_context *ctx, const trr_call *c) {
    const int v = c->config.variant; /* check_config accepted it for this call */
    if (coop_variant(v)) {
        dispatch w = {0};
        char shader[32];
        const int cm2 = v == TRR_VARIANT_CM2;
        snprintf(shader, sizeof shader, "matmul_%s_%s_%s", cm2 ? "cm2" : v == TRR_VARIANT_COOP_KHR ? "coopk" : "coop",
                 dtype_suffix(c->x.dtype), dtype_suffix(c->z.dtype));
        w.shader = shader;
        /* f32 output past 4096 deep: the accumulators are folded into f32 sums every 512 elements of K
         * (matmul_coop.comp says why). The second set of accumulators costs registers (H200 f16 8192^3: 224 ->
         * 124 TFLOPS), and f16 outputs stay inside their own bound without it (K = 131075: 0.17 of the bound),
         * so only the f32 output folds (bf16 outputs: their bound is wider still). cm2 leaves accumulation to the driver. */
        const uint32_t fold = c->z.dtype == TRR_F32 && c->k > 4096
                                  ? (uint32_t)(512 / c->config.block_k > 0 ? 512 / c->config.block_k : 1)
                                  : 0;
        const coop_geom g = coop_geometry(trr_vk_dev(ctx), v, c->x.dtype);
        uint32_t spec[15] = {(uint32_t)c->config.threads, (uint32_t)c->config.block_m, (uint32_t)c->config.block_n,
                             (uint32_t)c->config.block_k, (uint32_t)coop_wm(&c->config, g), (uint32_t)c->config.group_m,
                             (uint32_t)c->trans_a, (uint32_t)c->trans_b, (uint32_t)c->epilogue,
                             (uint32_t)c->config.stages, fold, (uint32_t)g.tm, (uint32_t)g.tn, (uint32_t)g.tk,
                             (uint32_t)g.sg};
        memcpy(w.spec, spec, sizeof spec);
        w.nspec = cm2 ? 9 : 15;
        matmul_operands(c, &w);
        /* 16-byte loads where offset, leading stride and the contiguous extent are whole 8-half words. */
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
    if (c->x.dtype == TRR_F32)
        snprintf(shader, sizeof shader, "matmul_f32");
    else
        snprintf(shader, sizeof shader, "matmul_%s_%s", dtype_suffix(c->x.dtype), dtype_suffix(c->z.dtype));
    int tm = 0, tn = 0;
    if (!micro_tile(&c->config, &tm, &tn)) return trr_error(ctx, TRR_ERR_INTERNAL, "vulkan: unchecked matmul config");
    w.shader = shader;
    uint32_t spec[10] = {(uint32_t)c->config.threads, (uint32_t)c->config.block_m, (uint32_t)c->config.block_n,
                         (uint32_t)c->config.block_k, (uint32_t)tm, (uint32_t)tn, (uint32_t)c->config.group_m,
                         (uint32_t)c->trans_a, (uint32_t)c->trans_b, (uint32_t)c->epilogue};
    memcpy(w.spec, spec, sizeof spec);
    w.nspec = 10;
    matmul_operands(c, &w);
    return run_dispatch(ctx, &w);
}

trr_status trr_vk_run(trr_context *ctx, const trr_call *call) {
    switch (call->op) {
    case TRR_OP_COPY: return run_copy(ctx, call);
    case TRR_OP_ADD:
    case TRR_OP_GELU:
    case TRR_OP_SILU: return run_elementwise(ctx, call);
    case TRR_OP_RGB_TO_GREY: return run_rgb(ctx, call);
    case TRR_OP_SOFTMAX:
    case TRR_OP_ROW_SUM: return run_rowwise(ctx, call);
    case TRR_OP_MATMUL: return run_matmul(ctx, call);
    default: return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: op %d is not implemented", (int)call->op);
    }
}

trr_status trr_vk_supports(trr_context *ctx, const trr_call *call) {
    trr_vk_device *d = trr_vk_dev(ctx);
    if (call->op == TRR_OP_COPY) return TRR_OK; /* a byte copy: every dtype */
    trr_dtype types[2] = {call->x.dtype, call->z.dtype};
    for (int i = 0; i < 2; i++) {
        if ((types[i] == TRR_F16 || types[i] == TRR_BF16) && !d->phys.storage16)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: %s lacks storageBuffer16BitAccess, needed for %s",
                             d->phys.props.deviceName, dtype_suffix(types[i]));
        if (types[i] == TRR_U8 && !d->phys.storage8)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: %s lacks storageBuffer8BitAccess, needed for u8",
                             d->phys.props.deviceName);
    }
    return TRR_OK;
}

static int pow2_at_least(int64_t v, int lo, int hi) {
    int p = lo;
    while (p < hi && p < v) p *= 2;
    return p;
}

/* lavapipe (llvmpipe) ends an invocation's loops after 65535 iterations in all, counted over every loop of the
 * shader (gallivm's LP_MAX_TGSI_LOOP_ITERATIONS, there to stop runaway loops), and returns what the cut-short
 * loops left. A config whose loops would run longer is refused there; elsewhere loops are unbounded. */
static uint64_t loop_budget(const trr_vk_device *d) {
    int llvmpipe = d->phys.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU &&
                   !strncmp(d->phys.props.deviceName, "llvmpipe", 8);
    return llvmpipe ? 65535u : UINT64_MAX;
}

/* The cooperative-matrix variants' heuristic (c->variant names one of them). */
static void fill_coop(const trr_vk_device *d, const trr_call *call, trr_config *c) {
    /* 128x128x16 tiles over 8 subgroups (64x32 each): the fastest of the tiles swept on an H100 (209 TFLOPS at
     * f16 4096^3 with the KHR build; wider tiles spill past 180 registers and fit one workgroup per SM);
     * 64x64x32 when 128x128 leaves fewer than 128 workgroups, where the tuner found the small tiles faster.
     * Other tiles come through the config; check_config says which the kernel cannot take. The sweeps are in
     * bench/results/README.md (history) and 2026-11-22-h100-vulkan-stages.txt. */
    /* a batch's matrices each have their own tiles (grid z) */
    const int64_t batch = call->batch > 1 ? call->batch : 1;
    int64_t tiles = ((call->rows + 127) / 128) * ((call->cols + 127) / 128) * batch;
    int small = tiles < 128;
    int bm = small ? 64 : 128, bn = small ? 64 : 128, bk = small ? 32 : 16;
    /* matmul_cm2.comp's slices are loaded and pipelined by the driver: deeper ones, as llama.cpp's
     * cooperative_matrix2 kernel takes (not yet measured here) */
    if (c->variant == TRR_VARIANT_CM2) bk = 32;
    /* whole slices of the device's matrix depth (KHR shapes other than 16x16x16 have not been measured) */
    const coop_geom g = coop_geometry(d, c->variant, call->x.dtype);
    if (bk < g.tk) bk = g.tk;
    if (!c->block_m) c->block_m = bm;
    if (!c->block_n) c->block_n = bn;
    if (!c->block_k) c->block_k = bk;
    if (!c->threads) c->threads = 256;
    if (!c->group_m) c->group_m = 8;
    /* matmul_coop.comp's pipeline: stages 2 stages the next slice right after the multiply, then reads the one
     * after it; 3 is the same loop unrolled by two, which helps the KHR build and hurts the NV one on an H100
     * (bench/results/2026-11-22-h100-vulkan-stages.txt). */
    if (!c->stages) c->stages = c->variant == TRR_VARIANT_CM2 ? 1 : c->variant == TRR_VARIANT_COOP_KHR ? 3 : 2;
    if (!c->vector_width) c->vector_width = 1;
    if (!c->split_k) c->split_k = 1;
}

/* The SIMT matmul's heuristic. */
static void fill_simt(const trr_vk_device *d, const trr_call *call, trr_config *c) {
    /* GPUs: 128x128 tiles from 1024x2048 outputs up, 64x64 with 32-deep slices below (H100 f32: 1.99x
     * at 1024^3, 1.13x at 768^3, 1.04x at 512^3 over 128x128x16 or 64x64x16; -tune-final.txt) */
    int gpu = d->phys.props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
    int big = gpu && call->rows * call->cols * (call->batch > 1 ? call->batch : 1) > (int64_t)1024 * 1024;
    if (!c->block_m) c->block_m = big ? 128 : 64;
    if (!c->block_n) c->block_n = big ? 128 : 64;
    /* twice as deep slices where K would run past lavapipe's loop budget in 16-deep ones */
    if (!c->block_k)
        c->block_k = (gpu && !big) || (uint64_t)(call->k + 15) / 16u + 300u > loop_budget(d) ? 32 : 16;
    if (!c->threads) c->threads = 256;
    if (!c->group_m) c->group_m = 8;
    if (!c->stages) c->stages = 1;
    if (!c->vector_width) c->vector_width = 1;
    if (!c->split_k) c->split_k = 1;
}

void trr_vk_choose_config(trr_context *ctx, trr_call *call) {
    trr_vk_device *d = trr_vk_dev(ctx);
    trr_config *c = &call->config;
    int max_threads = (int)d->phys.props.limits.maxComputeWorkGroupInvocations;
    if (max_threads > 1024) max_threads = 1024;
    switch (call->op) {
    case TRR_OP_COPY:
    case TRR_OP_ADD:
    case TRR_OP_GELU:
    case TRR_OP_SILU:
    case TRR_OP_RGB_TO_GREY: {
        if (!c->threads) c->threads = 256 <= max_threads ? 256 : max_threads;
        /* The widest load the layout allows (16-byte words for copy, 4-element vectors for add, gelu, silu,
         * scalars for rgb_to_grey), unless a block_n already given holds no whole number of them per
         * invocation; then the narrow one. */
        int wide = 1, narrow = 1;
        if (call->op == TRR_OP_COPY) {
            int es = (int)dtype_bytes(call->x.dtype);
            wide = 16 / es;
            narrow = 4 / es;
        } else if (call->op != TRR_OP_RGB_TO_GREY) {
            /* Rank-3 views that do not fold run slice by slice, each with its own offsets, and the kernel takes
             * vectors in every slice whose layout allows: vectors are asked for if any slice can have them (the
             * offsets' residues mod 4 repeat within 4 slices). The rest fall back with the same loads per
             * invocation, as before the config chose. */
            for (int64_t s = 0; s < call->slices && s < 4 && wide == 1; s++) {
                trr_call slice = *call; /* what the front-end's trr_call_slice makes of it */
                slice.x.offset += s * call->x.slice_stride;
                slice.y.offset += s * call->y.slice_stride;
                slice.z.offset += s * call->z.slice_stride;
                if (elementwise_vec4_layout(&slice)) wide = 4;
            }
        }
        if (!c->vector_width)
            c->vector_width = !c->block_n || c->block_n % (c->threads * wide) == 0 ? wide : narrow;
        /* Loads per invocation: 2 for add (H100: 2956 GB/s at n = 2^27 against 1702 with 4) and copy, 4 for
         * gelu, silu and rgb_to_grey. */
        if (!c->block_n) {
            int loads = call->op == TRR_OP_ADD ? ADD_LOADS_PER_INVOCATION
                        : call->op == TRR_OP_COPY ? COPY_WORDS_PER_INVOCATION
                                                  : STREAM_LOADS_PER_INVOCATION;
            c->block_n = loads * c->threads * c->vector_width;
        }
        break;
    }
    case TRR_OP_SOFTMAX:
    case TRR_OP_ROW_SUM:
        /* About 8 elements per invocation (32 for softmax, whose rows stay in registers), within [64, 1024]:
         * enough parallelism per row without idle lanes. */
        if (!c->threads) c->threads = pow2_at_least(call->cols / (call->op == TRR_OP_SOFTMAX ? 32 : 8), 64, max_threads);
        if (!c->block_n) {
            /* softmax: the register kernel's row, 4 x threads x the vectors per invocation the row needs, where
             * it fits (at most 16); else (and for row_sum, which ignores it) threads. */
            int64_t vpt = (call->cols / 4 + c->threads - 1) / c->threads;
            int regs = call->op == TRR_OP_SOFTMAX && softmax_regs_layout(d, call) && vpt >= 1 && vpt <= 16;
            c->block_n = regs ? 4 * (int)vpt * c->threads : c->threads;
        }
        /* The subgroup kernels where they were measured faster: on lavapipe (three alternated rounds,
         * bench/results/2026-11-23-lavapipe-row-variants.txt) row_sum 2.0-2.1 against 0.74-0.75 GB/s at
         * 4096x8192 and 1.3 against 0.47-0.50 at 4096x256; softmax 3.1-3.2 against 1.1 at 4096x256 and 2.3
         * against 1.5-1.6 at 4096x1024 (longer rows do not fit its registers on 8-wide subgroups). On GPUs the
         * simt kernels stay until the two are measured there (bench/gpu_run.sh row-variants; the H100's softmax
         * figures are at SOFTMAX_SG_AUTO_MAX_COLS). */
        if (!c->variant) {
            char why[192];
            const int cpu = d->phys.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
            const int sg = call->op == TRR_OP_ROW_SUM
                               ? cpu && row_sum_sg_runs(d, c->threads, why, sizeof why)
                               : (cpu || call->cols <= SOFTMAX_SG_AUTO_MAX_COLS) &&
                                     softmax_sg_runs(d, call, c->threads, why, sizeof why);
            c->variant = sg ? TRR_VARIANT_SUBGROUP : TRR_VARIANT_SIMT;
        }
        if (!c->vector_width) c->vector_width = call->op == TRR_OP_ROW_SUM && c->variant == TRR_VARIANT_SUBGROUP ? 4 : 1;
        break;
    case TRR_OP_MATMUL: {
        if (!c->variant) {
            /* The first cooperative-matrix variant that runs the call with the config it completes, in the order
             * measured fastest on the H100 (coop_khr 209, coop_nv 167, cm2 150 TFLOPS at 4096^3), else simt: a
             * given tile that no cooperative kernel takes runs on the SIMT one. */
            static const int order[] = {TRR_VARIANT_COOP_KHR, TRR_VARIANT_COOP_NV, TRR_VARIANT_CM2};
            char why[192];
            for (int i = 0; i < 3 && !c->variant; i++) {
                if (!matmul_variant_runs(d, call, order[i], why, sizeof why)) continue;
                trr_config t = *c;
                t.variant = order[i];
                fill_coop(d, call, &t);
                if (coop_config_ok(d, &t, call->x.dtype, why, sizeof why)) *c = t;
            }
            if (!c->variant) c->variant = TRR_VARIANT_SIMT;
        }
        if (coop_variant(c->variant))
            fill_coop(d, call, c);
        else
            fill_simt(d, call, c);
        break;
    }
    default: break;
    }
}

trr_status trr_vk_check_config(trr_context *ctx, const trr_call *call) {
    trr_vk_device *d = trr_vk_dev(ctx);
    const trr_config *c = &call->config;
    const VkPhysicalDeviceLimits *lim = &d->phys.props.limits;
    if (c->threads <= 0 || (uint32_t)c->threads > lim->maxComputeWorkGroupInvocations ||
        (uint32_t)c->threads > lim->maxComputeWorkGroupSize[0])
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: threads = %d; the device allows 1..%u", c->threads,
                         lim->maxComputeWorkGroupInvocations);
    switch (call->op) {
    case TRR_OP_COPY:
    case TRR_OP_ADD:
    case TRR_OP_GELU:
    case TRR_OP_SILU:
    case TRR_OP_RGB_TO_GREY:
    {
        if (call->op == TRR_OP_COPY) {
            /* the copy kernel moves 4- or 16-byte words */
            int es = (int)dtype_bytes(call->x.dtype), word = c->vector_width * es;
            if (c->vector_width <= 0 || (word != 4 && word != 16))
                return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                                 "vulkan: copy vector_width = %d; it moves 4- or 16-byte words (%d or %d elements of "
                                 "%d bytes)", c->vector_width, 4 / es, 16 / es, es);
        } else if (call->op == TRR_OP_RGB_TO_GREY) {
            if (c->vector_width != 1)
                return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                                 "vulkan: rgb_to_grey vector_width = %d; the kernel reads single elements (1)",
                                 c->vector_width);
        } else if (c->vector_width != 1 && c->vector_width != 4) {
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "vulkan: %s vector_width = %d; the kernel reads single elements (1) or 4-element "
                             "vectors (4)", elementwise_name(call->op), c->vector_width);
        }
        int64_t per_load = (int64_t)c->threads * c->vector_width;
        if (c->block_n < per_load || c->block_n % per_load || c->block_n / per_load > 64)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "vulkan: block_n = %d must be threads x vector_width (%d x %d) times 1..64 loads per "
                             "invocation",
                             c->block_n, c->threads, c->vector_width);
        return TRR_OK;
    }
    case TRR_OP_SOFTMAX:
    case TRR_OP_ROW_SUM:
        if (c->threads & (c->threads - 1))
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: threads = %d must be a power of two (tree reduction)",
                             c->threads);
        /* softmax: block_n bounds the register kernel's row (softmax_rows.comp holds at most 16 vectors per
         * invocation); row_sum ignores it */
        if (call->op == TRR_OP_SOFTMAX &&
            (c->block_n < c->threads || c->block_n % c->threads || c->block_n / c->threads > 64))
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "vulkan: softmax block_n = %d must be threads (%d) times 1..64 elements per invocation",
                             c->block_n, c->threads);
        if ((uint64_t)c->threads * 8 > lim->maxComputeSharedMemorySize)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: threads = %d needs more shared memory than %u bytes",
                             c->threads, lim->maxComputeSharedMemorySize);
        if (call->op == TRR_OP_SOFTMAX && c->variant == TRR_VARIANT_SUBGROUP) {
            char why[192];
            if (!softmax_sg_runs(d, call, c->threads, why, sizeof why))
                return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: softmax variant subgroup: %s", why);
        } else if (call->op == TRR_OP_ROW_SUM && c->variant == TRR_VARIANT_SUBGROUP) {
            char why[192];
            if (!row_sum_sg_runs(d, c->threads, why, sizeof why))
                return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: row_sum variant subgroup: %s", why);
        } else if (c->variant != TRR_VARIANT_SIMT && c->variant != TRR_VARIANT_AUTO) {
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: %s variant %s; its kernels are simt and subgroup",
                             call->op == TRR_OP_SOFTMAX ? "softmax" : "row_sum", variant_name(c->variant));
        }
        if (call->op == TRR_OP_ROW_SUM && c->vector_width != 1 && c->vector_width != 4)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "vulkan: row_sum vector_width = %d; the kernels read single elements (1) or, variant "
                             "subgroup, 4-element vectors where rows start on one (4)", c->vector_width);
        {
            /* softmax.comp reads the row twice, row_sum.comp once, four elements per invocation per iteration;
             * the tails and the tree (log2 threads) add a few dozen at most */
            uint64_t per_pass = (uint64_t)call->cols / (4u * (uint64_t)c->threads) + 4u;
            uint64_t loops = (call->op == TRR_OP_SOFTMAX ? 2u : 1u) * per_pass + 32u;
            /* row_sum_sg.comp's first invocation adds one sum per subgroup */
            if (call->op == TRR_OP_ROW_SUM && c->variant == TRR_VARIANT_SUBGROUP)
                loops += (uint64_t)c->threads / (d->phys.subgroup_size ? d->phys.subgroup_size : 1);
            if (loops > loop_budget(d))
                return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                                 "vulkan: %s rows of %lld over %d threads take about %llu loop iterations per "
                                 "invocation; %s stops at %llu (more threads per row shorten them)",
                                 call->op == TRR_OP_SOFTMAX ? "softmax" : "row_sum", (long long)call->cols,
                                 c->threads, (unsigned long long)loops, d->phys.props.deviceName,
                                 (unsigned long long)loop_budget(d));
        }
        return TRR_OK;
    case TRR_OP_MATMUL: {
        int tm, tn;
        if (c->split_k != 1)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: split_k = %d; only 1 is implemented", c->split_k);
        if (c->group_m <= 0 || c->block_k <= 0)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: group_m and block_k must be positive");
        char why[192] = "";
        if (!matmul_variant_runs(d, call, c->variant, why, sizeof why))
            return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: matmul variant %s: %s", variant_name(c->variant), why);
        if (coop_variant(c->variant)) {
            if (!coop_config_ok(d, c, call->x.dtype, why, sizeof why))
                return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: matmul %dx%dx%d over %d threads on %s: %s",
                                 c->block_m, c->block_n, c->block_k, c->threads, variant_name(c->variant), why);
            return TRR_OK;
        }
        uint64_t shared = 4ull * (uint64_t)c->block_k * (uint64_t)(c->block_m + c->block_n + 2);
        if (!micro_tile(c, &tm, &tn))
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "vulkan: matmul (simt): block %dx%d over %d threads gives no TMxTN register tile (each "
                             "at most 16)", c->block_m, c->block_n, c->threads);
        if (shared > lim->maxComputeSharedMemorySize)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "vulkan: matmul (simt): tiles need %llu bytes of shared memory; the device has %u",
                             (unsigned long long)shared, lim->maxComputeSharedMemorySize);
        /* The slice loop's body is unrolled, and its length sets the compile time: lavapipe takes 7 s for 2048
         * multiply-adds and 64 loads per invocation (64x64x32 over 64 threads), 89 s for 4096 and 1024 (8x8x64
         * over one), minutes past that. The tuner's largest tiles unroll 2048 and 32. */
        const uint64_t th = (uint64_t)c->threads, bk = (uint64_t)c->block_k;
        const uint64_t fmas = bk * (uint64_t)tm * (uint64_t)tn;
        const uint64_t loads = ((uint64_t)c->block_m * bk + th - 1) / th + ((uint64_t)c->block_n * bk + th - 1) / th;
        if (fmas > 4096 || loads > 256)
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "vulkan: matmul (simt): a %dx%dx%d tile over %d threads unrolls %llu multiply-adds and "
                             "%llu loads per invocation and slice; the kernel takes at most 4096 and 256 (more "
                             "threads or a shallower block_k)", c->block_m, c->block_n, c->block_k, c->threads,
                             (unsigned long long)fmas, (unsigned long long)loads);
        /* matmul.comp runs one loop iteration per BK-deep slice (its inner loops are unrolled), plus the
         * epilogue's at most 16 x 16 */
        if ((uint64_t)(call->k + c->block_k - 1) / (uint64_t)c->block_k + 300u > loop_budget(d))
            return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                             "vulkan: matmul (simt): K = %lld in %d-deep slices takes more loop iterations per "
                             "invocation than the %llu %s runs (a larger block_k takes fewer)", (long long)call->k,
                             c->block_k, (unsigned long long)loop_budget(d), d->phys.props.deviceName);
        return TRR_OK;
    }
    default: return TRR_OK;
    }
}
