/* Compiled programs: cached in memory per device (keyed by file and options) and on disk (keyed by a hash of
 * device, driver, source and options). A disk entry is a header (magic, payload length, payload hash) and the
 * driver's binary; any entry that fails its checks, fails to load or fails to build is rebuilt from source. */
#include "opencl.h"

#include "cache.h"
#include "ptx_retarget.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KERNELS 4
#define CACHE_MAGIC "TRRCLBN1"

struct trr_cl_program {
    trr_cl_program *next;
    char file[32];
    char *options;
    cl_program program;
    char kernel_names[MAX_KERNELS][64]; /* "" where unused; names come from op definitions, so they are copied */
    cl_kernel kernels[MAX_KERNELS];
};

/* The disk cache is best effort: its failures must not replace the error text the caller may be reading. */
typedef struct saved_error {
    trr_status status;
    char text[sizeof(((trr_context *)0)->last_error)];
} saved_error;

static void error_save(const trr_context *ctx, saved_error *s) {
    s->status = ctx->last_status;
    memcpy(s->text, ctx->last_error, sizeof s->text);
}

static void error_restore(trr_context *ctx, const saved_error *s) {
    ctx->last_status = s->status;
    memcpy(ctx->last_error, s->text, sizeof s->text);
}

typedef struct cache_header {
    char magic[8];
    uint64_t size;
    uint64_t hash;
} cache_header;

/* Every program is common.cl followed by the op's file, its includes expanded (trr_embedded_source), so each op
 * file sees the dtype and half helpers; a user op's program is its definition's source alone (text). */
static trr_status program_source(trr_context *ctx, const char *file, const char *text, char **out_source,
                                 size_t *out_size) {
    if (text) {
        const size_t n = strlen(text);
        char *copy = malloc(n + 1);
        if (!copy) return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "opencl: no host memory for kernel source");
        memcpy(copy, text, n + 1);
        *out_source = copy;
        *out_size = n;
        return TRR_OK;
    }
    char why[300];
    const trr_status st = trr_embedded_source(trr_opencl_kernels, trr_opencl_kernels_count, "common.cl", file,
                                              out_source, out_size, why, sizeof why);
    return st == TRR_OK ? TRR_OK : trr_error(ctx, st, "opencl: %s", why);
}

static uint64_t payload_hash(const void *data, size_t size) {
    const void *parts[1] = {data};
    size_t sizes[1] = {size};
    return trr_hash_parts(parts, sizes, 1);
}

/* Builds program for dev; on failure the status is TRR_ERR_COMPILE and the log is in the error text. */
static trr_status build(trr_context *ctx, cl_program program, const char *options, const char *file,
                        int record) {
    trr_cl_dev *dev = ctx->dev;
    cl_int err = trr_cl.BuildProgram(program, 1, &dev->device, options, NULL, NULL);
    if (err == CL_SUCCESS) return TRR_OK;
    if (!record) return TRR_ERR_COMPILE;
    trr_error(ctx, TRR_ERR_COMPILE, "clBuildProgram(%s, \"%s\"): %s; build log:", file, options,
              trr_cl_error_name(err));
    size_t size = 0;
    if (trr_cl.GetProgramBuildInfo(program, dev->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size) == CL_SUCCESS &&
        size > 0) {
        char *log = malloc(size + 1);
        if (log && trr_cl.GetProgramBuildInfo(program, dev->device, CL_PROGRAM_BUILD_LOG, size, log, NULL) ==
                       CL_SUCCESS) {
            log[size] = '\0';
            trr_error_append(ctx, log);
        }
        free(log);
    }
    return TRR_ERR_COMPILE;
}

/* The entry's checksum file: path + ".sum", "xxh3 <16 hex digits>\n" over the whole entry (header and binary).
 * The header's own hash catches an entry damaged on its own; the checksum kept beside it, outside the file,
 * also catches one altered with its header hash recomputed, which drivers must never be handed: PoCL crashed
 * (SIGSEGV, SIGABRT) on such binaries (issue #41, item 6). An entry without a matching checksum is rebuilt. */
static void sum_path(const char *path, char *out, size_t cap) { snprintf(out, cap, "%s.sum", path); }

static void sum_text(const void *data, size_t size, char out[32]) {
    snprintf(out, 32, "xxh3 %016llx\n", (unsigned long long)payload_hash(data, size));
}

static int sum_matches(const char *path, const void *data, size_t size) {
    char spath[1300], want[32];
    sum_path(path, spath, sizeof spath);
    void *text = NULL;
    size_t n = 0;
    if (trr_file_read(spath, &text, &n) != TRR_OK) return 0;
    sum_text(data, size, want);
    int ok = n == strlen(want) && memcmp(text, want, n) == 0;
    free(text);
    return ok;
}

static cl_program load_cached(trr_context *ctx, const char *path, const char *options, const char *file) {
    trr_cl_dev *dev = ctx->dev;
    void *data = NULL;
    size_t size = 0;
    if (trr_file_read(path, &data, &size) != TRR_OK) return NULL;
    cache_header h;
    cl_program program = NULL;
    if (size > sizeof h && sum_matches(path, data, size)) {
        memcpy(&h, data, sizeof h);
        const unsigned char *payload = (const unsigned char *)data + sizeof h;
        size_t payload_size = size - sizeof h;
        if (memcmp(h.magic, CACHE_MAGIC, 8) == 0 && h.size == payload_size &&
            h.hash == payload_hash(payload, payload_size)) {
            cl_int binary_status = CL_SUCCESS, err = CL_SUCCESS;
            program = trr_cl.CreateProgramWithBinary(dev->context, 1, &dev->device, &payload_size, &payload,
                                                     &binary_status, &err);
            if (program && (err != CL_SUCCESS || binary_status != CL_SUCCESS)) {
                trr_cl.ReleaseProgram(program);
                program = NULL;
            }
            if (program && build(ctx, program, options, file, 0) != TRR_OK) {
                trr_cl.ReleaseProgram(program);
                program = NULL;
            }
        }
    }
    free(data);
    return program;
}

/* Best effort: a cache that cannot be written costs a recompile next time, never a failed call. */
static void store_cached(trr_context *ctx, const char *path, cl_program program) {
    size_t size = 0;
    if (trr_cl.GetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) != CL_SUCCESS ||
        size == 0)
        return;
    unsigned char *data = malloc(sizeof(cache_header) + size);
    if (!data) return;
    unsigned char *payload = data + sizeof(cache_header);
    if (trr_cl.GetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof payload, &payload, NULL) == CL_SUCCESS) {
        cache_header h;
        memcpy(h.magic, CACHE_MAGIC, 8);
        h.size = size;
        h.hash = payload_hash(payload, size);
        memcpy(data, &h, sizeof h);
        static _Thread_local saved_error saved;
        error_save(ctx, &saved);
        /* the entry first, then its checksum: a reader between the two finds them apart and rebuilds */
        char spath[1300], sum[32];
        sum_path(path, spath, sizeof spath);
        sum_text(data, sizeof h + size, sum);
        if (trr_file_write_atomic(ctx, path, data, sizeof h + size) != TRR_OK ||
            trr_file_write_atomic(ctx, spath, sum, strlen(sum)) != TRR_OK)
            error_restore(ctx, &saved);
    }
    free(data);
}

cl_int trr_cl_retargeted_program(cl_context context, cl_device_id device, cl_program built, cl_program *out,
                                 char *why, size_t cap) {
    *out = NULL;
    size_t size = 0;
    cl_int err = trr_cl.GetProgramInfo(built, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL);
    if (err == CL_SUCCESS && size == 0) err = CL_INVALID_PROGRAM_EXECUTABLE;
    unsigned char *ptx = err == CL_SUCCESS ? malloc(size) : NULL;
    if (err == CL_SUCCESS && !ptx) err = CL_OUT_OF_HOST_MEMORY;
    if (err == CL_SUCCESS) err = trr_cl.GetProgramInfo(built, CL_PROGRAM_BINARIES, sizeof ptx, &ptx, NULL);
    if (err != CL_SUCCESS) {
        free(ptx);
        snprintf(why, cap, "no PTX from the driver: %s", trr_cl_error_name(err));
        return err;
    }
    char *text = NULL;
    size_t n = 0;
    const int bad = trr_ptx_retarget_sm90a((const char *)ptx, size, &text, &n, why, cap);
    free(ptx);
    if (bad) return CL_INVALID_BINARY;
    const unsigned char *bin = (const unsigned char *)text;
    const size_t bin_size = n + 1; /* the driver takes PTX with its terminator */
    cl_int status = CL_SUCCESS;
    cl_program p = trr_cl.CreateProgramWithBinary(context, 1, &device, &bin_size, &bin, &status, &err);
    free(text);
    if (!p || err != CL_SUCCESS || status != CL_SUCCESS) {
        if (p) trr_cl.ReleaseProgram(p);
        err = err != CL_SUCCESS ? err : status != CL_SUCCESS ? status : CL_INVALID_BINARY;
        snprintf(why, cap, "clCreateProgramWithBinary of sm_90a PTX: %s", trr_cl_error_name(err));
        return err;
    }
    *out = p;
    return CL_SUCCESS;
}

/* program, built for sm_90 from a file whose sm_90a instructions are marked (ptx_retarget.h), replaced by its
 * retargeted build; the build log goes into the error text where that fails. */
static trr_status retarget_sm90a(trr_context *ctx, cl_program *program, const char *options, const char *file) {
    trr_cl_dev *dev = ctx->dev;
    char why[192];
    cl_program p;
    if (trr_cl_retargeted_program(dev->context, dev->device, *program, &p, why, sizeof why) != CL_SUCCESS)
        return trr_error(ctx, TRR_ERR_UNSUPPORTED, "opencl: %s on %s: %s", file, dev->info.name, why);
    trr_status st = build(ctx, p, options, file, 1);
    if (st != TRR_OK) {
        trr_cl.ReleaseProgram(p);
        return st;
    }
    trr_cl.ReleaseProgram(*program);
    *program = p;
    return TRR_OK;
}

static trr_status compile(trr_context *ctx, const char *file, const char *text, const char *options, int sm90a,
                          cl_program *out_program) {
    trr_cl_dev *dev = ctx->dev;
    char *source = NULL;
    size_t source_size = 0;
    TRR_TRY(program_source(ctx, file, text, &source, &source_size));

    /* a retargeted build hashes its target too */
    const void *parts[5] = {dev->info.name, dev->driver_version, source, options, "sm_90a"};
    size_t sizes[5] = {strlen(dev->info.name), strlen(dev->driver_version), source_size, strlen(options), 6};
    uint64_t key = trr_hash_parts(parts, sizes, sm90a ? 5 : 4);

    char name[96];
    snprintf(name, sizeof name, "opencl-%.40s-%016llx.cl", file, (unsigned long long)key);
    {
        static _Thread_local saved_error saved;
        error_save(ctx, &saved);
        if (trr_dump_file(ctx, name, source, source_size) != TRR_OK) error_restore(ctx, &saved);
        snprintf(name, sizeof name, "opencl-%.40s-%016llx.options", file, (unsigned long long)key);
        if (trr_dump_file(ctx, name, options, strlen(options)) != TRR_OK) error_restore(ctx, &saved);
    }

    char dir[1024], path[1200];
    int have_dir = 0;
    {
        static _Thread_local saved_error saved;
        error_save(ctx, &saved);
        have_dir = trr_cache_dir(ctx, dir, sizeof dir) == TRR_OK;
        if (!have_dir) error_restore(ctx, &saved);
    }
    if (have_dir) {
        snprintf(path, sizeof path, "%s/opencl-%016llx.bin", dir, (unsigned long long)key);
        cl_program cached = load_cached(ctx, path, options, file);
        if (cached) {
            free(source);
            *out_program = cached;
            return TRR_OK;
        }
    }

    cl_int err = CL_SUCCESS;
    const char *source_text = source;
    cl_program program = trr_cl.CreateProgramWithSource(dev->context, 1, &source_text, &source_size, &err);
    free(source);
    if (!program || err != CL_SUCCESS) return trr_cl_fail(ctx, "clCreateProgramWithSource", err);
    trr_status status = build(ctx, program, options, file, 1);
    if (status == TRR_OK && sm90a) status = retarget_sm90a(ctx, &program, options, file);
    if (status != TRR_OK) {
        trr_cl.ReleaseProgram(program);
        return status;
    }
    if (have_dir) store_cached(ctx, path, program);
    *out_program = program;
    return TRR_OK;
}

static trr_status get_kernel(trr_context *ctx, const char *file, const char *text, const char *options, int sm90a,
                             const char *kernel, cl_kernel *out_kernel);

trr_status trr_cl_get_kernel(trr_context *ctx, const char *file, const char *options, const char *kernel,
                             cl_kernel *out_kernel) {
    return get_kernel(ctx, file, NULL, options, 0, kernel, out_kernel);
}

trr_status trr_cl_get_kernel_sm90a(trr_context *ctx, const char *file, const char *options, const char *kernel,
                                   cl_kernel *out_kernel) {
    return get_kernel(ctx, file, NULL, options, 1, kernel, out_kernel);
}

trr_status trr_cl_get_kernel_text(trr_context *ctx, const char *file, const char *text, const char *options,
                                  const char *kernel, cl_kernel *out_kernel) {
    return get_kernel(ctx, file, text, options, 0, kernel, out_kernel);
}

static trr_status get_kernel(trr_context *ctx, const char *file, const char *text, const char *options, int sm90a,
                             const char *kernel, cl_kernel *out_kernel) {
    trr_cl_dev *dev = ctx->dev;
    trr_cl_program *p = dev->programs;
    while (p && !(strcmp(p->file, file) == 0 && strcmp(p->options, options) == 0)) p = p->next;
    if (!p) {
        p = calloc(1, sizeof *p);
        if (!p) return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "opencl: no host memory for a program");
        snprintf(p->file, sizeof p->file, "%s", file);
        p->options = malloc(strlen(options) + 1);
        if (!p->options) {
            free(p);
            return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "opencl: no host memory for a program");
        }
        strcpy(p->options, options);
        trr_status status = compile(ctx, file, text, options, sm90a, &p->program);
        if (status != TRR_OK) {
            free(p->options);
            free(p);
            return status;
        }
        p->next = dev->programs;
        dev->programs = p;
    }
    if (strlen(kernel) >= sizeof p->kernel_names[0])
        return trr_error(ctx, TRR_ERR_INTERNAL, "opencl: kernel name %s is too long", kernel);
    for (int i = 0; i < MAX_KERNELS; i++) {
        if (p->kernel_names[i][0] && strcmp(p->kernel_names[i], kernel) == 0) {
            *out_kernel = p->kernels[i];
            return TRR_OK;
        }
        if (!p->kernel_names[i][0]) {
            cl_int err = CL_SUCCESS;
            cl_kernel k = trr_cl.CreateKernel(p->program, kernel, &err);
            if (!k || err != CL_SUCCESS) return trr_cl_fail(ctx, "clCreateKernel", err);
            snprintf(p->kernel_names[i], sizeof p->kernel_names[i], "%s", kernel);
            p->kernels[i] = k;
            *out_kernel = k;
            return TRR_OK;
        }
    }
    return trr_error(ctx, TRR_ERR_INTERNAL, "opencl: more than %d kernels asked of %s", MAX_KERNELS, file);
}

void trr_cl_programs_release(trr_cl_dev *dev) {
    trr_cl_program *p = dev->programs;
    while (p) {
        trr_cl_program *next = p->next;
        for (int i = 0; i < MAX_KERNELS; i++)
            if (p->kernels[i]) trr_cl.ReleaseKernel(p->kernels[i]);
        trr_cl.ReleaseProgram(p->program);
        free(p->options);
        free(p);
        p = next;
    }
    dev->programs = NULL;
}
