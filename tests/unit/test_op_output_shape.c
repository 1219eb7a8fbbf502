/* trr_op_output_shape: an op's output shape and dtype from its inputs, by its definition (what Python and other
 * callers that allocate outputs use instead of shape rules of their own). */
#include <criterion/criterion.h>
#include <string.h>

#include "trireme.h"

static trr_tensor view(trr_dtype dt, int ndim, int64_t a, int64_t b, int64_t c) {
    trr_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.ndim = ndim;
    const int64_t s[3] = {a, b, c};
    for (int i = 0; i < ndim; i++) t.shape[i] = s[i];
    return t;
}

static void expect_out(trr_op op, const trr_tensor *const *in, int want_dt, int ndim, const int64_t *shape,
                       trr_dtype dt) {
    int got_ndim = -1;
    int64_t got[TRR_MAX_DIMS];
    trr_dtype got_dt;
    cr_assert_eq(trr_op_output_shape(op, in, want_dt, &got_ndim, got, &got_dt), TRR_OK, "%s", trr_last_error(NULL));
    cr_assert_eq(got_ndim, ndim);
    for (int i = 0; i < ndim; i++) cr_expect_eq(got[i], shape[i], "dimension %d: %lld, want %lld", i, (long long)got[i],
                                                 (long long)shape[i]);
    cr_expect_eq(got_dt, dt);
}

Test(op_output_shape, each_shape_rule) {
    trr_tensor x3 = view(TRR_F16, 3, 2, 5, 7), y3 = view(TRR_F16, 3, 2, 5, 7);
    const trr_tensor *add[] = {&x3, &y3};
    expect_out(TRR_OP_ADD, add, -1, 3, (int64_t[]){2, 5, 7}, TRR_F16);

    trr_tensor img = view(TRR_U8, 3, 3, 10, 20);
    const trr_tensor *grey[] = {&img};
    expect_out(TRR_OP_RGB_TO_GREY, grey, -1, 2, (int64_t[]){10, 20}, TRR_U8);
    expect_out(TRR_OP_RGB_TO_GREY, grey, TRR_F32, 2, (int64_t[]){10, 20}, TRR_F32);

    trr_tensor m = view(TRR_BF16, 2, 6, 9, 0);
    const trr_tensor *one[] = {&m};
    expect_out(TRR_OP_SOFTMAX, one, -1, 2, (int64_t[]){6, 9}, TRR_BF16);
    expect_out(TRR_OP_ROW_SUM, one, -1, 1, (int64_t[]){6}, TRR_F32); /* row_sum writes f32 */

    trr_tensor a = view(TRR_F16, 2, 4, 8, 0), b = view(TRR_F16, 2, 8, 3, 0), ab = view(TRR_F16, 3, 5, 4, 8),
               bb = view(TRR_F16, 3, 5, 8, 3);
    const trr_tensor *mm[] = {&a, &b}, *mm_a[] = {&ab, &b}, *mm_b[] = {&a, &bb};
    expect_out(TRR_OP_MATMUL, mm, -1, 2, (int64_t[]){4, 3}, TRR_F16);
    expect_out(TRR_OP_MATMUL, mm, TRR_F32, 2, (int64_t[]){4, 3}, TRR_F32);
    expect_out(TRR_OP_MATMUL, mm_a, -1, 3, (int64_t[]){5, 4, 3}, TRR_F16);
    expect_out(TRR_OP_MATMUL, mm_b, -1, 3, (int64_t[]){5, 4, 3}, TRR_F16); /* a batched B makes a batch too */

    trr_tensor x = view(TRR_F32, 2, 3, 16, 0), w = view(TRR_F32, 1, 16, 0, 0), bias = view(TRR_F32, 1, 16, 0, 0);
    const trr_tensor *ln[] = {&x, &w, &bias};
    expect_out(TRR_OP_LAYER_NORM, ln, -1, 2, (int64_t[]){3, 16}, TRR_F32);
}

Test(op_output_shape, inputs_the_op_does_not_take) {
    int ndim;
    int64_t shape[TRR_MAX_DIMS];
    trr_dtype dt;
    trr_tensor v = view(TRR_F32, 1, 8, 0, 0), m = view(TRR_F32, 2, 4, 8, 0), two = view(TRR_U8, 3, 2, 4, 8);
    const trr_tensor *vec[] = {&v}, *mat[] = {&m}, *planes[] = {&two};
    cr_expect_eq(trr_op_output_shape(TRR_OP_SOFTMAX, vec, -1, &ndim, shape, &dt), TRR_ERR_SHAPE);
    cr_expect(strstr(trr_last_error(NULL), "softmax") != NULL, "%s", trr_last_error(NULL));
    cr_expect_eq(trr_op_output_shape(TRR_OP_SOFTMAX, mat, TRR_U8, &ndim, shape, &dt), TRR_ERR_DTYPE);
    cr_expect_eq(trr_op_output_shape(TRR_OP_RGB_TO_GREY, mat, -1, &ndim, shape, &dt), TRR_ERR_DTYPE,
                 "rgb_to_grey takes u8");
    cr_expect_eq(trr_op_output_shape(TRR_OP_RGB_TO_GREY, planes, -1, &ndim, shape, &dt), TRR_ERR_SHAPE,
                 "two planes are not an RGB image");
    cr_expect_eq(trr_op_output_shape(TRR_OP_COUNT, mat, -1, &ndim, shape, &dt), TRR_ERR_INVALID_ARGUMENT);
    cr_expect_eq(trr_op_output_shape(TRR_OP_SOFTMAX, NULL, -1, &ndim, shape, &dt), TRR_ERR_INVALID_ARGUMENT);
}
