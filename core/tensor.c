/* Tensor-view helpers and dtype/op/epilogue names. */
#include "backend.h"
#include "op_table.h"

#include <stdio.h>
#include <string.h>

static const char *const dtype_names[TRR_DTYPE_COUNT] = {"f32", "f16", "bf16", "u8", "f8e4m3", "f8e5m2"};
static const size_t dtype_sizes[TRR_DTYPE_COUNT] = {4, 2, 2, 1, 1, 1};
static const char *const epilogue_names[TRR_EPI_COUNT] = {"none", "relu", "leaky_relu", "gelu"};

trr_status trr_dtype_size(trr_dtype dtype, size_t *out_bytes) {
    if ((unsigned)dtype >= TRR_DTYPE_COUNT || !out_bytes)
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "unknown dtype %d or out_bytes NULL", (int)dtype);
    *out_bytes = dtype_sizes[dtype];
    return TRR_OK;
}

trr_status trr_dtype_name(trr_dtype dtype, const char **out_name) {
    if ((unsigned)dtype >= TRR_DTYPE_COUNT || !out_name)
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "unknown dtype %d or out_name NULL", (int)dtype);
    *out_name = dtype_names[dtype];
    return TRR_OK;
}

trr_status trr_op_name(trr_op op, const char **out_name) {
    const trr_op_desc *d = trr_op_desc_get(op);
    if (!d || !out_name) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "unknown op %d or out_name NULL", (int)op);
    *out_name = d->name;
    return TRR_OK;
}

trr_status trr_op_from_name(const char *name, trr_op *out_op) {
    if (!name || !out_op) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "name or out_op is NULL");
    int count = TRR_OP_COUNT;
    trr_op_count(&count);
    for (int i = 0; i < count; i++)
        if (strcmp(trr_op_desc_get((trr_op)i)->name, name) == 0) {
            *out_op = (trr_op)i;
            return TRR_OK;
        }
    char names[1024] = "";
    for (int i = 0; i < count; i++) {
        size_t at = strlen(names);
        snprintf(names + at, sizeof names - at, "%s%s", i ? ", " : "", trr_op_desc_get((trr_op)i)->name);
    }
    return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "unknown op '%s' (%s)", name, names);
}

trr_status trr_epilogue_name(trr_epilogue epilogue, const char **out_name) {
    if ((unsigned)epilogue >= TRR_EPI_COUNT || !out_name)
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "unknown epilogue %d or out_name NULL", (int)epilogue);
    *out_name = epilogue_names[epilogue];
    return TRR_OK;
}

trr_status trr_tensor_1d(trr_buffer *buffer, size_t offset, trr_dtype dtype, int64_t n, trr_tensor *out_tensor) {
    if (!out_tensor) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "out_tensor is NULL");
    if ((unsigned)dtype >= TRR_DTYPE_COUNT) return trr_error(NULL, TRR_ERR_DTYPE, "unknown dtype %d", (int)dtype);
    if (n < 0) return trr_error(NULL, TRR_ERR_SHAPE, "negative length %lld", (long long)n);
    memset(out_tensor, 0, sizeof *out_tensor);
    out_tensor->buffer = buffer;
    out_tensor->offset = offset;
    out_tensor->dtype = dtype;
    out_tensor->ndim = 1;
    out_tensor->shape[0] = n;
    out_tensor->strides[0] = 1;
    return TRR_OK;
}

trr_status trr_tensor_2d(trr_buffer *buffer, size_t offset, trr_dtype dtype, int64_t rows, int64_t cols,
                         int64_t row_stride, trr_tensor *out_tensor) {
    if (!out_tensor) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "out_tensor is NULL");
    if ((unsigned)dtype >= TRR_DTYPE_COUNT) return trr_error(NULL, TRR_ERR_DTYPE, "unknown dtype %d", (int)dtype);
    if (rows < 0 || cols < 0)
        return trr_error(NULL, TRR_ERR_SHAPE, "negative shape [%lld, %lld]", (long long)rows, (long long)cols);
    if (row_stride == 0) row_stride = cols > 0 ? cols : 1; /* strides stay positive for empty rows too */
    if (row_stride < cols)
        return trr_error(NULL, TRR_ERR_STRIDE, "row stride %lld is shorter than the row (%lld)", (long long)row_stride,
                         (long long)cols);
    memset(out_tensor, 0, sizeof *out_tensor);
    out_tensor->buffer = buffer;
    out_tensor->offset = offset;
    out_tensor->dtype = dtype;
    out_tensor->ndim = 2;
    out_tensor->shape[0] = rows;
    out_tensor->shape[1] = cols;
    out_tensor->strides[0] = row_stride;
    out_tensor->strides[1] = 1;
    return TRR_OK;
}

trr_status trr_tensor_transpose(const trr_tensor *in, trr_tensor *out_tensor) {
    if (!in || !out_tensor) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "in or out_tensor is NULL");
    if (in->ndim != 2) return trr_error(NULL, TRR_ERR_SHAPE, "transpose needs a 2-D view, got %d-D", in->ndim);
    trr_tensor t = *in;
    t.shape[0] = in->shape[1];
    t.shape[1] = in->shape[0];
    t.strides[0] = in->strides[1];
    t.strides[1] = in->strides[0];
    *out_tensor = t;
    return TRR_OK;
}

trr_status trr_tensor_nd(trr_buffer *buffer, size_t offset, trr_dtype dtype, int ndim, const int64_t *shape,
                         const int64_t *strides, trr_tensor *out_tensor) {
    if (!out_tensor || !shape) return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "shape or out_tensor is NULL");
    if ((unsigned)dtype >= TRR_DTYPE_COUNT) return trr_error(NULL, TRR_ERR_DTYPE, "unknown dtype %d", (int)dtype);
    if (ndim < 1 || ndim > TRR_MAX_DIMS)
        return trr_error(NULL, TRR_ERR_SHAPE, "rank %d outside [1, %d]", ndim, TRR_MAX_DIMS);
    trr_tensor t;
    memset(&t, 0, sizeof t);
    t.buffer = buffer;
    t.offset = offset;
    t.dtype = dtype;
    t.ndim = ndim;
    int64_t packed = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        if (shape[i] < 0)
            return trr_error(NULL, TRR_ERR_SHAPE, "dimension %d is negative (%lld)", i, (long long)shape[i]);
        t.shape[i] = shape[i];
        t.strides[i] = strides ? strides[i] : packed;
        if (t.strides[i] < 1)
            return trr_error(NULL, TRR_ERR_STRIDE, "stride %d is %lld; strides must be positive", i,
                             (long long)t.strides[i]);
        /* packed strides of an empty dimension stay positive; overflow is the op's validation to report */
        if (!strides && __builtin_mul_overflow(packed, shape[i] > 0 ? shape[i] : 1, &packed))
            return trr_error(NULL, TRR_ERR_OVERFLOW, "the packed strides of this shape overflow 64 bits");
    }
    *out_tensor = t;
    return TRR_OK;
}
