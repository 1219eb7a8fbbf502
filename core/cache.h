/* Shared by the backends that compile kernels at run time: where compiled programs are cached, how their keys
 * are hashed, and how files are written so a crash never leaves a half-written entry behind. */
#ifndef TRR_CACHE_H
#define TRR_CACHE_H

#include "trireme.h"

#include <stddef.h>
#include <stdint.h>

/* TRIREME_CACHE_DIR, else $XDG_CACHE_HOME/trireme, else $HOME/.cache/trireme; created if missing.
 * Returns TRR_ERR_IO (recorded on ctx) when no directory can be had. */
trr_status trr_cache_dir(trr_context *ctx, char *out_path, size_t cap);

/* 64-bit hash (XXH3) of a list of byte strings, each length-prefixed so ("ab","c") != ("a","bc"). */
uint64_t trr_hash_parts(const void *const *parts, const size_t *sizes, int n);

/* Reads a whole file into a malloc'd buffer. TRR_ERR_IO when missing or unreadable (no error recorded: a
 * missing cache entry is normal). Something other than a regular file in its place (a FIFO, a directory) is
 * not read: a one-line warning goes to stderr and the call returns TRR_ERR_IO, a cache miss. */
trr_status trr_file_read(const char *path, void **out_data, size_t *out_size);
/* The same for callers that report failures themselves: why gets the reason ("is a directory", "No such file
 * or directory"). Only regular files are read (a FIFO or device in the path never blocks the call); the
 * warning trr_file_read prints for those is left to the caller here. */
trr_status trr_file_read_why(const char *path, void **out_data, size_t *out_size, char *why, size_t cap);
/* Writes data to path through a temporary file in the same directory and rename(), so readers see the old
 * file or the whole new one. */
trr_status trr_file_write_atomic(trr_context *ctx, const char *path, const void *data, size_t size);

/* When TRIREME_DUMP_DIR is set, writes name (e.g. "cuda-matmul-1a2b.ptx") there; silently does nothing
 * otherwise. Failures are recorded as an error on ctx but returned, so the caller decides. */
trr_status trr_dump_file(trr_context *ctx, const char *name, const void *data, size_t size);

#endif
