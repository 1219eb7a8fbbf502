/* Kernel sources (OpenCL C, CUDA C) and SPIR-V binaries embedded into the library at build time by
 * kernels/embed.cmake; each backend gets a table of them. */
#ifndef TRR_EMBEDDED_H
#define TRR_EMBEDDED_H

#include <stddef.h>

typedef struct trr_embedded_file {
    const char *name; /* file name without directory, e.g. "matmul.cl" */
    const unsigned char *data; /* for text files, NUL-terminated (size excludes the NUL) */
    size_t size;
} trr_embedded_file;

const trr_embedded_file *trr_embedded_find(const trr_embedded_file *table, size_t count, const char *name);

#endif
