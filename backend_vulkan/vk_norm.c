/* The row norms (op_table.h's TRR_SHAPE_ROW_NORM: rms_norm, layer_norm) on the Vulkan backend: one path for the
 * shape rule, which takes the kernel the op table names (kernels/vulkan/<stem>.comp, entry point = the op's
 * name, built as <name>_<dtype>.spv: vk_kinds.h) and launches it by the rule: one workgroup per row, in the
 * layout of a user row op (docs/custom-ops.md, Row ops): binding i the i-th operand (x, w, [b,] y), the offsets,
 * strides and eps in its push constants, the kernel's shape in specialization constants 1 and 2; so a user op
 * defined with the same SPIR-V runs it as it is. That layout holds five bindings where the backend's shared
 * descriptor set layout holds three (x, y, z), so this path keeps its own set layout and pipeline layout, and,
 * where operands go into descriptor sets rather than being pushed, its own descriptor pool per batch slot; user
 * row ops (trr_vk_run_user_rows) share them. */
#include "vk_norm.h"
#include "vk_bindset.h"
#include "vk_config.h"
#include "vk_kinds.h"

#include "config_fields.h"
#include "op_table.h"
#include "user_op.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The kernel's vectors are 16 bytes: 4 f32 or 8 f16 / bf16 elements (norm.comp's UNIT). The register kernel
 * takes about NORM_VECTORS of them per invocation: threads = ceil(N / UNIT / NORM_VECTORS), whole subgroups, at
 * least NORM_MIN_THREADS; rows that need more than NORM_MAX_VECTORS per invocation at the largest workgroup take
 * the looping kernel. Measured on NVIDIA H200 over rows of 1024 to 16384: 4 vectors per invocation ran ahead
 * of 8 on f16 rows of 16384 and alike elsewhere, and 128 threads ahead of 64 on rows of 1024;
 * 16-byte loads of the 16-bit types ahead of 8-byte ones. */
#define NORM_VECTORS 4
#define NORM_MAX_VECTORS 16
#define NORM_MIN_THREADS 128
#define NORM_PREFETCH_THREADS 256

typedef struct trr_vk_norm_state {
    trr_vk_bindset set; /* USER_ROW_BINDINGS, user_row_push: the row norms' and user row ops' (core/user_op.h) */
} trr_vk_norm_state;

/* A user row op's layout (docs/custom-ops.md, Vulkan's convention for row ops; kernels/vulkan/norm.comp's):
 * binding i the i-th operand (inputs, then outputs; unused bindings repeat the first), and these push
 * constants. */
#define USER_ROW_BINDINGS TRR_MAX_ROW_OPERANDS
#define USER_ROW_PARAMS 8
typedef struct user_row_push {
    uint32_t rows, cols, dtype;
    uint32_t offset[USER_ROW_BINDINGS]; /* elements from each binding's start */
    uint32_t stride[USER_ROW_BINDINGS]; /* a [M,N] operand's row stride, a [N] vector's element stride */
    uint32_t params[USER_ROW_PARAMS];   /* f32 bits, or an int */
} user_row_push;

static int has_bias(const trr_call *call) {
    return trr_op_desc_get(call->op)->operand[TRR_SLOT_U].name != NULL;
}

trr_status trr_vk_row_norm_supports(trr_context *ctx, const trr_call *call) {
    trr_vk_device *d = trr_vk_dev(ctx);
    if (!d->phys.subgroup_arith)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: %s needs subgroup arithmetic in compute shaders, which %s "
                         "lacks", trr_op_desc_get(call->op)->name, d->phys.props.deviceName);
    if (call->x.dtype != TRR_F32 && call->x.dtype != TRR_F16 && call->x.dtype != TRR_BF16)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: %s runs f32, f16 and bf16",
                         trr_op_desc_get(call->op)->name);
    return TRR_OK;
}

static int64_t unit_of(trr_dtype t) {
    return t == TRR_F32 ? 4 : 8;
}

/* x and y rows are whole vectors on vector boundaries (the bindings start on 16 bytes). */
static int rows_vec(const trr_call *c) {
    const int64_t u = unit_of(c->x.dtype);
    return c->cols % u == 0 && c->x.offset % u == 0 && c->z.offset % u == 0 &&
           (c->rows == 1 || (c->x.stride0 % u == 0 && c->z.stride0 % u == 0));
}

/* w (and b) contiguous on a vector boundary too. */
static int params_vec(const trr_call *c) {
    const int64_t u = unit_of(c->x.dtype);
    const int b_ok = !has_bias(c) || (c->u.stride0 == 1 && c->u.offset % u == 0);
    return rows_vec(c) && c->y.stride0 == 1 && c->y.offset % u == 0 && b_ok;
}

static int max_threads(const trr_vk_device *d) {
    uint32_t m = d->phys.props.limits.maxComputeWorkGroupInvocations;
    if (m > d->phys.props.limits.maxComputeWorkGroupSize[0]) m = d->phys.props.limits.maxComputeWorkGroupSize[0];
    return m > 1024 ? 1024 : (int)m;
}

/* The kernel's shape for a call and its (checked) config: the threads, VPT, and the flags norm.comp's PATH
 * packs. */
typedef struct norm_shape {
    uint32_t threads, vpt, vec, wvec, full, loop, prefetch;
} norm_shape;

enum { PATH_REGS = 1, PATH_LOOP = 2, PATH_VEC = 4, PATH_WVEC = 8, PATH_FULL = 16, PATH_PREFETCH = 32 };

static uint32_t path_of(const norm_shape *s) {
    return (s->loop ? PATH_LOOP : PATH_REGS) | (s->vec ? PATH_VEC : 0) | (s->wvec ? PATH_WVEC : 0) |
           (s->full ? PATH_FULL : 0) | (s->prefetch ? PATH_PREFETCH : 0);
}

static norm_shape shape_of(const trr_call *c) {
    norm_shape s;
    const uint64_t th = (uint64_t)c->config.threads, u = (uint64_t)unit_of(c->x.dtype);
    const uint64_t n4 = ((uint64_t)c->cols + u - 1) / u;
    s.threads = (uint32_t)th;
    s.vec = c->config.vector_width == (int)u && rows_vec(c);
    s.wvec = s.vec && params_vec(c);
    s.loop = c->cols > c->config.block_n;
    s.vpt = s.loop ? 1u : (uint32_t)((n4 + th - 1) / th);
    if (s.vpt < 1) s.vpt = 1;
    s.full = !s.loop && s.vec && n4 == (uint64_t)s.vpt * th;
    /* w and b read ahead of the reduction in registers: ahead on NVIDIA H200 over workgroups of up to
     * NORM_PREFETCH_THREADS, behind on larger ones (fewer of them fit a multiprocessor) */
    s.prefetch = !s.loop && s.wvec && th <= NORM_PREFETCH_THREADS;
    return s;
}

void trr_vk_row_norm_choose(const trr_vk_device *d, trr_call *call) {
    trr_config *c = &call->config;
    const int64_t sg = d->phys.subgroup_size >= 1 ? d->phys.subgroup_size : 1, top = max_threads(d);
    const int64_t unit = unit_of(call->x.dtype), n4 = (call->cols + unit - 1) / unit;
    if (!c->threads) {
        /* about NORM_VECTORS vectors an invocation in registers, in whole subgroups; the largest workgroup for
         * rows past NORM_MAX_VECTORS of it, the more invocations the shorter each one's loops */
        int64_t th = (n4 + NORM_VECTORS - 1) / NORM_VECTORS;
        if (th < NORM_MIN_THREADS) th = NORM_MIN_THREADS;
        th = (th + sg - 1) / sg * sg;
        if (th > top || (n4 + top - 1) / top > NORM_MAX_VECTORS) th = top;
        c->threads = (int)th;
    }
    if (!c->vector_width) c->vector_width = rows_vec(call) ? (int)unit : 1;
    if (!c->block_n) {
        /* the row itself where it fits NORM_MAX_VECTORS an invocation and a config field: the register kernel;
         * else the most a config may hold, which the row is past: the looping kernel */
        const int64_t vpt = (n4 + c->threads - 1) / c->threads, regs = (vpt > 0 ? vpt : 1) * unit * c->threads;
        int64_t most = unit * NORM_MAX_VECTORS;
        if (most > TRR_CONFIG_FIELD_MAX / c->threads) most = TRR_CONFIG_FIELD_MAX / c->threads;
        c->block_n = vpt <= NORM_MAX_VECTORS && regs <= TRR_CONFIG_FIELD_MAX ? (int)regs : (int)(most * c->threads);
    }
}

trr_status trr_vk_row_norm_check(trr_context *ctx, const trr_call *call) {
    trr_vk_device *d = trr_vk_dev(ctx);
    const trr_config *c = &call->config;
    const char *name = trr_op_desc_get(call->op)->name;
    TRR_TRY(trr_vk_row_norm_supports(ctx, call));
    const int unit = (int)unit_of(call->x.dtype);
    if (c->vector_width != 1 && c->vector_width != unit)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "vulkan: %s vector_width = %d; the kernel reads single elements (1) or, where rows are whole "
                         "16-byte vectors on vector boundaries, 16-byte vectors (%d)", name, c->vector_width, unit);
    if (c->block_n < c->threads || c->block_n % c->threads || c->block_n / c->threads > unit * NORM_MAX_VECTORS)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "vulkan: %s block_n = %d (the longest row held in registers) must be threads (%d) times "
                         "1..%d elements per invocation", name, c->block_n, c->threads, unit * NORM_MAX_VECTORS);
    if ((uint64_t)c->threads * 8 > d->phys.props.limits.maxComputeSharedMemorySize)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: %s threads = %d needs more shared memory than %u bytes",
                         name, c->threads, d->phys.props.limits.maxComputeSharedMemorySize);
    /* Loop iterations per invocation, counted as lavapipe counts them (every loop the shader runs): the looping
     * kernel's two passes over the row, four vectors an iteration and up to three single ones after, or the
     * register kernel's VPT vectors twice; where any operand is read by elements, up to 4 x UNIT iterations of
     * element loops per vector (should the compiler keep them); and the merge over the subgroups. */
    const norm_shape s = shape_of(call);
    const uint64_t th = (uint64_t)c->threads, n4 = ((uint64_t)call->cols + unit - 1) / (uint64_t)unit;
    const uint64_t elem = s.wvec ? 0 : 4 * (uint64_t)unit;
    const uint64_t per_pass = s.loop ? (n4 / (4 * th) + 4) * (1 + 4 * elem) : (uint64_t)s.vpt * (1 + elem);
    const uint64_t loops = 2 * per_pass + th / (d->phys.subgroup_size ? d->phys.subgroup_size : 1) + 32;
    if (loops > trr_vk_loop_budget(d))
        return trr_error(ctx, TRR_ERR_UNSUPPORTED,
                         "vulkan: %s rows of %lld over %d threads take about %llu loop iterations per invocation; %s "
                         "stops at %llu (more threads per row shorten them)", name, (long long)call->cols, c->threads,
                         (unsigned long long)loops, d->phys.props.deviceName,
                         (unsigned long long)trr_vk_loop_budget(d));
    return TRR_OK;
}

void trr_vk_norm_destroy(trr_vk_device *d) {
    trr_vk_norm_state *ns = d->norm;
    if (!ns) return;
    trr_vk_bindset_destroy(d, &ns->set);
    free(ns);
    d->norm = NULL;
}

/* The path's layouts, created on first use: USER_ROW_BINDINGS storage buffers (pushed where the backend pushes
 * its own) and user_row_push. */
static trr_status norm_state(trr_context *ctx, trr_vk_norm_state **out) {
    trr_vk_device *d = trr_vk_dev(ctx);
    if (d->norm) {
        *out = d->norm;
        return TRR_OK;
    }
    trr_vk_norm_state *ns = calloc(1, sizeof *ns);
    if (!ns) return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "vulkan: out of host memory");
    d->norm = ns; /* freed at close, whatever is left unmade here */
    TRR_TRY(trr_vk_bindset_create(ctx, &ns->set, USER_ROW_BINDINGS, sizeof(user_row_push)));
    *out = ns;
    return TRR_OK;
}

/* Records one dispatch of the path: the operands' set, the pipeline, the push constants, the grid; the operands'
 * memory is marked in use until the batch completes. */
static trr_status record(trr_context *ctx, trr_vk_norm_state *ns, const VkDescriptorBufferInfo *info,
                         VkPipeline pipeline, const user_row_push *push, const uint32_t grid[3],
                         const trr_operand *const *ops, int n) {
    trr_vk_device *d = trr_vk_dev(ctx);
    VkCommandBuffer cmd;
    TRR_TRY(trr_vk_begin(ctx, &cmd));
    TRR_TRY(trr_vk_bindset_bind(ctx, &ns->set, cmd, info));
    d->fn.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    d->recording->bound = pipeline;
    d->fn.vkCmdPushConstants(cmd, ns->set.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof *push, push);
    d->fn.vkCmdDispatch(cmd, grid[0], grid[1], grid[2]);
    for (int i = 0; i < n; i++) trr_vk_use(d, ops[i]->mem);
    return trr_vk_end(ctx);
}

static int64_t rows_extent(int64_t rows, int64_t cols, int64_t stride) {
    return (rows - 1) * stride + cols;
}

/* One dispatch over the call's rows, all of whose operands fit one binding each. */
static trr_status run_part(trr_context *ctx, const trr_call *c) {
    trr_vk_device *d = trr_vk_dev(ctx);
    trr_vk_norm_state *ns = NULL;
    TRR_TRY(norm_state(ctx, &ns));
    const trr_op_desc *desc = trr_op_desc_get(c->op);
    const int bias = has_bias(c);
    /* the operands in order: x, w, [b,] y; the bindings past them repeat x */
    const trr_operand *ops[4] = {&c->x, &c->y, bias ? &c->u : &c->z, &c->z};
    const int n = 3 + bias;
    user_row_push push = {.rows = (uint32_t)c->rows, .cols = (uint32_t)c->cols, .dtype = (uint32_t)c->z.dtype};
    const float eps = (float)c->params[TRR_NORM_PARAM_EPS];
    memcpy(&push.params[0], &eps, 4);
    VkDescriptorBufferInfo info[USER_ROW_BINDINGS];
    for (int i = 0; i < USER_ROW_BINDINGS; i++) {
        if (i >= n) {
            info[i] = info[0];
            continue;
        }
        const int vector = ops[i] == &c->y || ops[i] == &c->u;
        const int64_t ext = vector ? rows_extent(c->cols, 1, ops[i]->stride0)
                                   : rows_extent(c->rows, c->cols, ops[i]->stride0);
        TRR_TRY(trr_vk_bind(ctx, ops[i], ext, &info[i], &push.offset[i]));
        push.stride[i] = (uint32_t)ops[i]->stride0;
    }
    const norm_shape s = shape_of(c);
    const uint32_t spec[3] = {s.threads, s.vpt, path_of(&s)};
    char shader[64];
    trr_vk_shader_name(shader, sizeof shader, desc, "", c->x.dtype, c->z.dtype);
    VkPipeline pipeline;
    TRR_TRY(trr_vk_pipeline_get_in(ctx, shader, spec, 3, ns->set.layout, &pipeline));
    /* one workgroup per row, spread over x and y (trr_group_id) */
    const uint64_t groups = (uint64_t)c->rows, max_x = d->phys.props.limits.maxComputeWorkGroupCount[0];
    const uint64_t gx = groups < max_x ? groups : max_x, gy = (groups + gx - 1) / gx;
    if (gy > d->phys.props.limits.maxComputeWorkGroupCount[1])
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: %llu workgroups exceed the device's grid",
                         (unsigned long long)groups);

    const uint32_t grid[3] = {(uint32_t)gx, (uint32_t)gy, 1};
    return record(ctx, ns, info, pipeline, &push, grid, ops, n);
}

/* The rows in runs whose x and y each fit one binding (lavapipe binds 128 MiB), recorded one after another into
 * the same batch; a single row past a binding is left to trr_vk_bind to refuse. */
trr_status trr_vk_row_norm_run(trr_context *ctx, const trr_call *call) {
    trr_vk_device *d = trr_vk_dev(ctx);
    uint64_t align = d->phys.props.limits.minStorageBufferOffsetAlignment;
    if (align < 16) align = 16;
    const uint64_t range = d->phys.props.limits.maxStorageBufferRange;
    const int64_t lim = range > align ? (int64_t)((range - align) / trr_vk_dtype_bytes(call->x.dtype) / 4 * 4) : 0;
    int64_t nr = call->rows;
    const int64_t strides[2] = {call->x.stride0, call->z.stride0};
    for (int i = 0; i < 2 && call->cols <= lim; i++)
        if (call->rows > 1 && rows_extent(nr, call->cols, strides[i]) > lim) {
            const int64_t r = (lim - call->cols) / strides[i] + 1;
            if (r < nr) nr = r;
        }
    if (nr >= call->rows || nr < 1) return run_part(ctx, call);
    trr_call part = *call;
    for (int64_t r0 = 0; r0 < call->rows; r0 += nr) {
        part.rows = call->rows - r0 < nr ? call->rows - r0 : nr;
        part.x.offset = call->x.offset + r0 * call->x.stride0;
        part.z.offset = call->z.offset + r0 * call->z.stride0;
        TRR_TRY(run_part(ctx, &part));
    }
    return TRR_OK;
}

/* A user row op (core/user_op.h): the definition's SPIR-V in the row ops' layout above, its launch rule's grid,
 * specialization constant 0 the threads per group and 1.. the tile parameters, as the element-wise user path. */
trr_status trr_vk_run_user_rows(trr_context *ctx, const trr_call *c, const trr_user_op *u, const int64_t groups[3],
                                int threads) {
    if (u->desc.n_params > USER_ROW_PARAMS)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "vulkan: %s: row ops take up to %d parameters here", u->name,
                         USER_ROW_PARAMS);
    trr_vk_norm_state *ns = NULL;
    TRR_TRY(norm_state(ctx, &ns));
    const trr_operand *ops[USER_ROW_BINDINGS];
    const int n = trr_user_operands(u, c, ops);
    user_row_push push = {.rows = (uint32_t)c->rows, .cols = (uint32_t)c->cols, .dtype = (uint32_t)c->z.dtype};
    VkDescriptorBufferInfo info[USER_ROW_BINDINGS];
    for (int i = 0; i < USER_ROW_BINDINGS; i++) {
        if (i >= n) { /* an unused binding: the first operand again, so every binding is valid */
            info[i] = info[0];
            continue;
        }
        const int64_t ext = u->vector[i] ? rows_extent(c->cols, 1, ops[i]->stride0)
                                         : rows_extent(c->rows, c->cols, ops[i]->stride0);
        TRR_TRY(trr_vk_bind(ctx, ops[i], ext, &info[i], &push.offset[i]));
        push.stride[i] = (uint32_t)ops[i]->stride0;
    }
    for (int i = 0; i < u->desc.n_params; i++) {
        if (trr_user_param_is_float(u, i)) {
            const float f = (float)c->params[i];
            memcpy(&push.params[i], &f, 4);
        } else {
            const int32_t v = (int32_t)c->params[i];
            memcpy(&push.params[i], &v, 4);
        }
    }
    int tiles[TRR_MAX_TILE_PARAMS];
    trr_user_tiles(u, &c->config, tiles);
    uint32_t spec[1 + TRR_MAX_TILE_PARAMS] = {(uint32_t)threads};
    for (int t = 0; t < u->def.n_tiles; t++) spec[1 + t] = (uint32_t)tiles[t];
    char shader[32];
    snprintf(shader, sizeof shader, "user#%d", (int)c->op);
    VkPipeline pipeline;
    TRR_TRY(trr_vk_pipeline_get_in(ctx, shader, spec, 1 + u->def.n_tiles, ns->set.layout, &pipeline));
    const uint32_t grid[3] = {(uint32_t)groups[0], (uint32_t)groups[1], (uint32_t)groups[2]};
    return record(ctx, ns, info, pipeline, &push, grid, ops, n);
}
