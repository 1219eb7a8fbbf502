/* The row norms' cases (cases.h, trr_cases_add_norms): rms_norm and layer_norm in every signature of the op table
 * (f32, f16, bf16), with M in {1, 3, 17, 127} and N in {1, 3, 17, 127, 781, 1000, 1823, 4099} combined so each
 * size appears in a few layouts rather than the whole cross product; the strided layout pads x's and y's rows
 * (w and b keep element stride 1, at odd offsets); special rows (constant, zero, N = 1, eps = 0); and a row of
 * 2^20 elements, past any one-tile kernel. The reference is O(MN), so the whole set costs little on 2 cores. */
#include "cases.h"

#include "op_table.h"

#include <string.h>

typedef struct norm_shape {
    int64_t rows, cols;
    trr_case_layout layout;
    int special; /* trr_case_special */
    double eps;  /* < 0: the op's default */
    int quick;
} norm_shape;

static const norm_shape g_shapes[] = {
    /* packed */
    {1, 1, TRR_LAYOUT_PACKED, 0, -1, 1},
    {3, 17, TRR_LAYOUT_PACKED, 0, -1, 1},
    {17, 127, TRR_LAYOUT_PACKED, 0, -1, 0},
    {127, 781, TRR_LAYOUT_PACKED, 0, -1, 0},
    {1, 1000, TRR_LAYOUT_PACKED, 0, -1, 0},
    {17, 1823, TRR_LAYOUT_PACKED, 0, -1, 0},
    {3, 4099, TRR_LAYOUT_PACKED, 0, -1, 1},
    {127, 1000, TRR_LAYOUT_PACKED, 0, -1, 0},
    /* N = 1: layer_norm gives b, rms_norm x / sqrt(x^2 + eps) * w */
    {17, 1, TRR_LAYOUT_PACKED, 0, -1, 1},
    /* odd offsets, packed rows */
    {3, 1000, TRR_LAYOUT_OFFSET, 0, -1, 0},
    {127, 17, TRR_LAYOUT_OFFSET, 0, -1, 0},
    /* padded rows of x and y, w and b at odd offsets */
    {1, 3, TRR_LAYOUT_STRIDED, 0, -1, 0},
    {17, 781, TRR_LAYOUT_STRIDED, 0, -1, 1},
    {127, 127, TRR_LAYOUT_STRIDED, 0, -1, 0},
    {3, 4099, TRR_LAYOUT_STRIDED, 0, -1, 0},
    {127, 1823, TRR_LAYOUT_STRIDED, 0, -1, 0},
    {17, 1, TRR_LAYOUT_STRIDED, 0, -1, 0},
    /* a large eps (the parameter reaches the kernel) */
    {17, 781, TRR_LAYOUT_PACKED, 0, 0.25, 1},
    /* constant rows: layer_norm gives exactly b there; rms_norm sign(x) * w / sqrt(1 + eps / x^2) */
    {5, 17, TRR_LAYOUT_PACKED, TRR_SPECIAL_CONST_ROWS, -1, 1},
    {3, 4099, TRR_LAYOUT_STRIDED, TRR_SPECIAL_CONST_ROWS, -1, 0},
    /* eps = 0: a constant row (layer_norm) or a zero row (rms_norm) is 0/0, NaN across the row; the rest finite */
    {4, 1000, TRR_LAYOUT_PACKED, TRR_SPECIAL_CONST_ROWS, 0.0, 1},
    {4, 127, TRR_LAYOUT_PACKED, TRR_SPECIAL_ZERO_ROWS, 0.0, 1},
    /* zero rows with the default eps: rms_norm and layer_norm give 0 (layer_norm: b) */
    {4, 127, TRR_LAYOUT_STRIDED, TRR_SPECIAL_ZERO_ROWS, -1, 0},
    /* long rows: 2^20 elements, many workgroup-sized chunks per row */
    {2, (int64_t)1 << 20, TRR_LAYOUT_PACKED, 0, -1, 0},
    {1, (int64_t)1 << 20, TRR_LAYOUT_STRIDED, TRR_SPECIAL_CONST_ROWS, -1, 0},
};

int trr_cases_add_norms(trr_case *items, int *count, int cap) {
    return trr_cases_add_row_norm(TRR_OP_RMS_NORM, items, count, cap) &&
           trr_cases_add_row_norm(TRR_OP_LAYER_NORM, items, count, cap);
}

int trr_cases_add_row_norm(trr_op op, trr_case *items, int *count, int cap) {
    const trr_op_desc *d = trr_op_desc_get(op);
    int has_eps = 0; /* a user's row op may declare no eps: its cases then run at its parameters' defaults */
    for (int p = 0; p < d->n_params; p++) has_eps |= !strcmp(d->params[p].name, "eps");
    for (int s = 0; s < d->n_signatures; s++) {
        for (size_t i = 0; i < sizeof g_shapes / sizeof g_shapes[0]; i++) {
            const norm_shape *sh = &g_shapes[i];
            if (sh->eps >= 0 && !has_eps) continue;
            trr_case c;
            memset(&c, 0, sizeof c);
            c.op = op;
            c.in_dtype = d->signatures[s].in;
            c.out_dtype = d->signatures[s].out;
            c.rows = sh->rows, c.cols = sh->cols;
            c.layout = sh->layout;
            c.special = sh->special;
            c.quick = sh->quick;
            if (sh->eps >= 0 && trr_op_params_set(&c.params, "eps", sh->eps) != TRR_OK) return 0;
            if (*count >= cap) return 0;
            items[(*count)++] = c;
        }
    }
    return 1;
}
