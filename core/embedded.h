/* Kernel sources (OpenCL C, CUDA C) and SPIR-V binaries embedded into the library at build time by
 * kernels/embed.cmake; each backend gets a table of them. */
#ifndef TRR_EMBEDDED_H
#define TRR_EMBEDDED_H

#include <stddef.h>

#include "trireme.h"

typedef struct trr_embedded_file {
    const char *name; /* file name without directory, e.g. "matmul.cl" */
    const unsigned char *data; /* for text files, NUL-terminated (size excludes the NUL) */
    size_t size;
} trr_embedded_file;

const trr_embedded_file *trr_embedded_find(const trr_embedded_file *table, size_t count, const char *name);

/* The program text a compiler is given for kernel file `file` of table: the prelude's text (NULL: none), then the
 * file's, each line `#include "name"` of either replaced by the embedded file of that name (its own includes
 * likewise), with #line directives so that a compiler's messages name the file and line they are about. Kernel
 * compilers are handed one text and no file system, so this is how kernel files share code. *out_text is the
 * NUL-terminated text (malloc'd; its length in *out_size when that is not NULL). Fails with TRR_ERR_INTERNAL (a
 * file not embedded, includes nested past 4 levels) or TRR_ERR_OUT_OF_MEMORY, *out_text NULL and the reason in
 * why. */
trr_status trr_embedded_source(const trr_embedded_file *table, size_t count, const char *prelude, const char *file,
                               char **out_text, size_t *out_size, char *why, size_t why_cap);

#endif
