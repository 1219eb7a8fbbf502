/* Rank-4 views through the element-wise ops on every backend: views that fold, views that leave one and two
 * outer slice dimensions, every element right and every byte around the views
 * untouched (the output buffer is poisoned with NaN). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "test_support.h"

enum { B = 3, H = 4, S = 5, D = 6, ELEMS = 4096 };

typedef struct layout {
    const char *name;
    int64_t shape[4];
    int64_t strides[4];
} layout;

/* Each fits in ELEMS elements. */
static const layout layouts[] = {
    /* packed [B,H,S,D]: folds to one vector */
    {"packed", {B, H, S, D}, {H * S * D, S * D, D, 1}},
    /* rows padded to 8, heads packed over them, batches padded: H and S fold, one outer slice dimension */
    {"padded_batch", {B, H, S, D}, {H * S * 8 + 5, S * 8, 8, 1}},
    /* padded rows and heads: nothing folds past D, two outer slice dimensions */
    {"padded", {B, H, S, D}, {H * 60, 60, 11, 1}},
    /* a unit head dimension in the middle, padded batches */
    {"unit_head", {B, 1, S, D}, {41, 7, 8, 1}},
    /* the innermost dimension of size 1 with a stride other than 1 after dropping it: [B,H,S,1] */
    {"unit_inner", {B, H, S, 1}, {H * 9, 9, 1, 1}},
};

static int64_t offset_of(const layout *l, const int64_t idx[4]) {
    int64_t o = 0;
    for (int d = 0; d < 4; d++) o += idx[d] * l->strides[d];
    return o;
}

static void check_device(const char *spec) {
    trr_context *ctx = open_device_or_skip(spec, NULL);
    trr_buffer *in = NULL, *out = NULL;
    cr_assert_eq(trr_buffer_create(ctx, ELEMS * sizeof(float), &in), TRR_OK, "%s", trr_last_error(ctx));
    cr_assert_eq(trr_buffer_create(ctx, ELEMS * sizeof(float), &out), TRR_OK, "%s", trr_last_error(ctx));
    static float host[ELEMS], got[ELEMS];
    uint32_t seed = 12345u;
    for (int i = 0; i < ELEMS; i++) {
        seed = seed * 1664525u + 1013904223u;
        host[i] = (float)(seed >> 8) / (float)(1u << 24) * 8.0f - 4.0f;
    }
    cr_assert_eq(trr_buffer_write(ctx, in, 0, host, sizeof host), TRR_OK);
    for (size_t li = 0; li < sizeof layouts / sizeof layouts[0]; li++) {
        const layout *l = &layouts[li];
        /* the output at another offset than the input, so slices' residues differ between operands */
        const size_t out_offset = 3 * sizeof(float);
        trr_tensor x, y, z;
        cr_assert_eq(trr_tensor_nd(in, 0, TRR_F32, 4, l->shape, l->strides, &x), TRR_OK);
        cr_assert_eq(trr_tensor_nd(in, sizeof(float), TRR_F32, 4, l->shape, l->strides, &y), TRR_OK);
        cr_assert_eq(trr_tensor_nd(out, out_offset, TRR_F32, 4, l->shape, l->strides, &z), TRR_OK);
        cr_assert_eq(trr_buffer_fill(ctx, out, 0, ELEMS * sizeof(float), 0xFF), TRR_OK);
        cr_assert_eq(trr_add(ctx, &x, &y, &z), TRR_OK, "%s %s: %s", spec, l->name, trr_last_error(ctx));
        cr_assert_eq(trr_buffer_read(ctx, out, 0, got, sizeof got), TRR_OK);
        static unsigned char in_view[ELEMS];
        memset(in_view, 0, sizeof in_view);
        int64_t idx[4];
        for (idx[0] = 0; idx[0] < l->shape[0]; idx[0]++)
            for (idx[1] = 0; idx[1] < l->shape[1]; idx[1]++)
                for (idx[2] = 0; idx[2] < l->shape[2]; idx[2]++)
                    for (idx[3] = 0; idx[3] < l->shape[3]; idx[3]++) {
                        const int64_t o = offset_of(l, idx);
                        const int64_t zo = o + (int64_t)(out_offset / sizeof(float));
                        in_view[zo] = 1;
                        const float want = host[o] + host[o + 1]; /* f32 add is bit-exact (docs/ops.md) */
                        cr_assert(got[zo] == want, "%s %s [%lld,%lld,%lld,%lld]: %g, want %g", spec, l->name,
                                  (long long)idx[0], (long long)idx[1], (long long)idx[2], (long long)idx[3],
                                  (double)got[zo], (double)want);
                    }
        for (int i = 0; i < ELEMS; i++)
            if (!in_view[i]) cr_assert(isnan(got[i]), "%s %s: element %d outside the view was written", spec, l->name, i);
    }
    trr_buffer_destroy(in);
    trr_buffer_destroy(out);
    trr_context_destroy(ctx);
}

Test(rank4, elementwise_views_cpu) { check_device("cpu"); }
Test(rank4, elementwise_views_opencl) { check_device("opencl:0"); }
Test(rank4, elementwise_views_vulkan) { check_device("vulkan:0"); }
Test(rank4, elementwise_views_cuda) { check_device("cuda:0"); }

Test(rank4, tensor_nd_checks_its_arguments) {
    trr_tensor t;
    const int64_t shape[5] = {2, 3, 4, 5, 6};
    cr_expect_eq(trr_tensor_nd(NULL, 0, TRR_F32, 5, shape, NULL, &t), TRR_ERR_SHAPE);
    cr_expect_eq(trr_tensor_nd(NULL, 0, TRR_F32, 0, shape, NULL, &t), TRR_ERR_SHAPE);
    const int64_t neg[4] = {2, -1, 4, 5};
    cr_expect_eq(trr_tensor_nd(NULL, 0, TRR_F32, 4, neg, NULL, &t), TRR_ERR_SHAPE);
    const int64_t zero_stride[4] = {60, 20, 0, 1};
    cr_expect_eq(trr_tensor_nd(NULL, 0, TRR_F32, 4, shape, zero_stride, &t), TRR_ERR_STRIDE);
    cr_expect_eq(trr_tensor_nd(NULL, 0, TRR_DTYPE_COUNT, 4, shape, NULL, &t), TRR_ERR_DTYPE);
    cr_expect_eq(trr_tensor_nd(NULL, 0, TRR_F32, 4, NULL, NULL, &t), TRR_ERR_INVALID_ARGUMENT);
    cr_assert_eq(trr_tensor_nd(NULL, 8, TRR_F16, 4, shape, NULL, &t), TRR_OK);
    cr_expect_eq(t.ndim, 4);
    cr_expect_eq(t.offset, 8u);
    const int64_t packed[4] = {60, 20, 5, 1};
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(t.shape[i], shape[i]);
        cr_expect_eq(t.strides[i], packed[i], "stride %d: %lld", i, (long long)t.strides[i]);
    }
}
