/* Names and general messages of the status codes. */
#include "trireme.h"

typedef struct status_text {
    trr_status status;
    const char *name;
    const char *message;
} status_text;

static const status_text status_texts[] = {
    {TRR_OK, "TRR_OK", "success"},
    {TRR_ERR_INVALID_ARGUMENT, "TRR_ERR_INVALID_ARGUMENT", "invalid argument"},
    {TRR_ERR_DTYPE, "TRR_ERR_DTYPE", "dtype not allowed for this operand"},
    {TRR_ERR_SHAPE, "TRR_ERR_SHAPE", "shapes do not agree"},
    {TRR_ERR_STRIDE, "TRR_ERR_STRIDE", "stride not allowed"},
    {TRR_ERR_MISALIGNED, "TRR_ERR_MISALIGNED", "offset is not a whole number of elements"},
    {TRR_ERR_OUT_OF_BOUNDS, "TRR_ERR_OUT_OF_BOUNDS", "view or range reaches past the end of its buffer"},
    {TRR_ERR_OVERLAP, "TRR_ERR_OVERLAP", "output overlaps an input"},
    {TRR_ERR_OVERFLOW, "TRR_ERR_OVERFLOW", "size overflows the index type"},
    {TRR_ERR_WRONG_CONTEXT, "TRR_ERR_WRONG_CONTEXT", "buffer belongs to another context"},
    {TRR_ERR_UNSUPPORTED, "TRR_ERR_UNSUPPORTED", "not supported on this device"},
    {TRR_ERR_NO_DEVICE, "TRR_ERR_NO_DEVICE", "no such device"},
    {TRR_ERR_UNAVAILABLE, "TRR_ERR_UNAVAILABLE", "backend unavailable"},
    {TRR_ERR_DEVICE, "TRR_ERR_DEVICE", "device or driver error"},
    {TRR_ERR_OUT_OF_MEMORY, "TRR_ERR_OUT_OF_MEMORY", "out of memory"},
    {TRR_ERR_COMPILE, "TRR_ERR_COMPILE", "kernel compilation failed"},
    {TRR_ERR_IO, "TRR_ERR_IO", "file input/output failed"},
    {TRR_ERR_MISMATCH, "TRR_ERR_MISMATCH", "result does not match the reference"},
    {TRR_ERR_INTERNAL, "TRR_ERR_INTERNAL", "internal error"},
};

static const status_text *find(trr_status status) {
    for (size_t i = 0; i < sizeof status_texts / sizeof status_texts[0]; i++)
        if (status_texts[i].status == status) return &status_texts[i];
    return NULL;
}

const char *trr_status_name(trr_status status) {
    const status_text *t = find(status);
    return t ? t->name : "TRR_ERR_UNKNOWN";
}

const char *trr_status_message(trr_status status) {
    const status_text *t = find(status);
    return t ? t->message : "unknown status code";
}
