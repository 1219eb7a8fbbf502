/*
 * The Vulkan shaders the op definitions name, as one list that the build and the backend both read: for each
 * shape rule with a generic path, its shader kinds. An op of the rule is built, for each kind and each of its
 * definition's signatures (in -> out), from kernels/vulkan/<stem><kind>.comp with -DENTRY_<name> and its dtypes'
 * defines (X_F16, X_BF16, X_U8, X_F8E4M3, X_F8E5M2 for the input; Z_F16, Z_BF16, Z_U8, Z_F8E4M3, Z_F8E5M2 for the
 * output; none for f32) into
 * [<stem>_]<name><kind>_<dtypes>.spv, where <dtypes> is "f16" when in and out agree and "u8_f32" when they do
 * not (trr_vk_shader_name). backend_vulkan/tools/vk_variants.c prints that list for CMake at configure time; the
 * backend looks the same names up. Ops that move bytes (copy) run on copy.comp, matmul and attention on their own
 * shaders, listed in backend_vulkan/CMakeLists.txt.
 */
#ifndef TRR_VK_KINDS_H
#define TRR_VK_KINDS_H

#include "op_table.h"

#include <stdio.h>
#include <string.h>

#define TRR_VK_MAX_KINDS 3

typedef struct trr_vk_rule_kinds {
    trr_op_shape shape;
    int count;
    const char *kind[TRR_VK_MAX_KINDS]; /* the first is the rule's base kernel */
} trr_vk_rule_kinds;

/* rows: softmax.comp (online), softmax_rows.comp (the row in registers), softmax_sg.comp (a subgroup per row);
 * row-reduce: row_sum.comp (a tree), row_sum_sg.comp (subgroup sums) */
static const trr_vk_rule_kinds trr_vk_kinds[] = {
    {TRR_SHAPE_ELEMENTWISE, 1, {""}},
    {TRR_SHAPE_PLANES, 1, {""}},
    {TRR_SHAPE_ROWS, 3, {"", "_rows", "_sg"}},
    {TRR_SHAPE_ROW_REDUCE, 2, {"", "_sg"}},
    {TRR_SHAPE_ROW_NORM, 1, {""}},
};

/* The kinds of d's shape rule, when the rule's shaders come from the definition (NULL for matmul and for ops that
 * move bytes). */
static inline const trr_vk_rule_kinds *trr_vk_kinds_of(const trr_op_desc *d) {
    if (!d || !d->kernel || (d->shape == TRR_SHAPE_ELEMENTWISE && d->bytewise)) return NULL;
    for (size_t i = 0; i < sizeof trr_vk_kinds / sizeof trr_vk_kinds[0]; i++)
        if (trr_vk_kinds[i].shape == d->shape) return &trr_vk_kinds[i];
    return NULL;
}

static inline const char *trr_vk_dtype_suffix(trr_dtype t) {
    return t == TRR_F32 ? "f32" : t == TRR_F16 ? "f16" : t == TRR_BF16 ? "bf16" : t == TRR_F8E4M3 ? "f8e4m3"
           : t == TRR_F8E5M2 ? "f8e5m2" : "u8";
}

/* [<stem>_]<name><kind>_<dtypes>: the shader of op d's kind for inputs of dtype in and an output of dtype out; the
 * stem leads where it is not the op's name (elementwise_add_f32, norm_rms_norm_f16, softmax_rows_f32). */
static inline void trr_vk_shader_name(char *out_name, size_t cap, const trr_op_desc *d, const char *kind,
                                      trr_dtype in, trr_dtype out) {
    const int named = d->kernel && strcmp(d->kernel, d->name) != 0;
    char dtypes[24];
    if (in == out) snprintf(dtypes, sizeof dtypes, "%s", trr_vk_dtype_suffix(in));
    else snprintf(dtypes, sizeof dtypes, "%s_%s", trr_vk_dtype_suffix(in), trr_vk_dtype_suffix(out));
    snprintf(out_name, cap, "%s%s%s%s_%s", named ? d->kernel : "", named ? "_" : "", d->name, kind, dtypes);
}

#endif
