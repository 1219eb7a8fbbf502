/* Kernel compilation with NVRTC and the module cache: in memory per device, and on disk as cubins keyed by
 * everything that changes the binary (source, options, arch, driver and NVRTC versions). A disk entry carries
 * a header with a magic, its length and a hash of the payload; anything that does not verify is rebuilt. */
#include "trr_cuda.h"

#include "cache.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct trr_cuda_fn {
    char name[32];
    CUfunction fn;
} trr_cuda_fn;

struct trr_cuda_module {
    uint64_t key; /* hash of file name and defines: the source is fixed for the library's lifetime */
    CUmodule module;
    trr_cuda_fn fns[4];
    int fn_count;
    trr_cuda_module *next;
};

#define CUBIN_MAGIC "TRRCUBN1"
typedef struct cubin_header {
    char magic[8];
    uint64_t size;         /* payload bytes after the header */
    uint64_t payload_hash; /* trr_hash_parts of the payload */
    uint64_t key;          /* the cache key, so a renamed or colliding file is not taken for another */
} cubin_header;

/* common.cuh, then the kernel file, its includes expanded (trr_embedded_source); a user op's text alone. */
static char *build_source(trr_context *ctx, const trr_cuda_variant *v) {
    if (v->text) {
        char *src = malloc(strlen(v->text) + 1);
        if (!src) trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "no host memory for kernel source");
        else strcpy(src, v->text);
        return src;
    }
    char why[300], *src = NULL;
    const trr_status st = trr_embedded_source(trr_cuda_kernels, trr_cuda_kernels_count, "common.cuh", v->file, &src,
                                              NULL, why, sizeof why);
    if (st != TRR_OK) trr_error(ctx, st, "CUDA %s", why);
    return src;
}

int trr_cuda_define(trr_cuda_variant *v, const char *fmt, ...) {
    size_t used = strlen(v->defines);
    if (used && used + 1 < sizeof v->defines) v->defines[used++] = ' ';
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(v->defines + used, sizeof v->defines - used, fmt, ap);
    va_end(ap);
    return n >= 0 && (size_t)n < sizeof v->defines - used;
}

trr_status trr_cuda_compile(trr_context *ctx, const trr_cuda_variant *v, const char *arch, void **out_cubin,
                            size_t *out_cubin_size, char **out_ptx, char **out_log) {
    return trr_cuda_compile_with(ctx, v, arch, NULL, out_cubin, out_cubin_size, out_ptx, out_log);
}

trr_status trr_cuda_compile_with(trr_context *ctx, const trr_cuda_variant *v, const char *arch, const char *options,
                                 void **out_cubin, size_t *out_cubin_size, char **out_ptx, char **out_log) {
    char reason[1024];
    *out_cubin = NULL;
    *out_cubin_size = 0;
    if (out_ptx) *out_ptx = NULL;
    *out_log = NULL;
    if (trr_cuda_load_nvrtc(reason, sizeof reason) != TRR_OK)
        return trr_error(ctx, TRR_ERR_UNAVAILABLE, "%s", reason);
    char *src = build_source(ctx, v);
    if (!src) return ctx ? ctx->last_status : TRR_ERR_INTERNAL;

    /* Options: the target, then each -D of the variant and each extra option (split at spaces; neither holds
     * one inside a value). */
    char defs[sizeof v->defines + 128];
    if (snprintf(defs, sizeof defs, "%s %s", v->defines, options ? options : "") >= (int)sizeof defs) {
        free(src);
        return trr_error(ctx, TRR_ERR_INVALID_ARGUMENT, "NVRTC options too long for %s: %s", v->file, options);
    }
    char archopt[48];
    snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", arch);
    const char *opts[40];
    int nopt = 0;
    opts[nopt++] = archopt;
    opts[nopt++] = "-default-device";
    opts[nopt++] = "--std=c++17";
    for (char *p = defs; *p && nopt < 40;) {
        while (*p == ' ') *p++ = '\0';
        if (!*p) break;
        opts[nopt++] = p;
        while (*p && *p != ' ') p++;
    }

    nvrtcProgram prog = NULL;
    nvrtcResult r = trr_nvrtc.CreateProgram(&prog, src, v->file, 0, NULL, NULL);
    free(src);
    if (r != 0) return trr_error(ctx, TRR_ERR_COMPILE, "nvrtcCreateProgram: %s", trr_nvrtc.GetErrorString(r));
    nvrtcResult cr = trr_nvrtc.CompileProgram(prog, nopt, opts);
    size_t log_size = 0;
    trr_nvrtc.GetProgramLogSize(prog, &log_size);
    char *log = calloc(1, log_size + 1);
    if (log && log_size) trr_nvrtc.GetProgramLog(prog, log);
    *out_log = log;
    trr_status st = TRR_OK;
    if (cr != 0) {
        st = trr_error(ctx, TRR_ERR_COMPILE, "NVRTC could not compile %s (%s) for %s: %s\n", v->file, v->defines,
                       arch, trr_nvrtc.GetErrorString(cr));
        if (log) trr_error_append(ctx, log);
        trr_nvrtc.DestroyProgram(&prog);
        return st;
    }
    size_t cubin_size = 0;
    void *cubin = NULL;
    if (trr_nvrtc.GetCUBINSize(prog, &cubin_size) != 0 || !(cubin = malloc(cubin_size ? cubin_size : 1)) ||
        trr_nvrtc.GetCUBIN(prog, cubin) != 0) {
        free(cubin);
        trr_nvrtc.DestroyProgram(&prog);
        return trr_error(ctx, TRR_ERR_COMPILE, "NVRTC produced no cubin for %s (%s) on %s", v->file, v->defines, arch);
    }
    if (out_ptx) {
        size_t ptx_size = 0;
        if (trr_nvrtc.GetPTXSize(prog, &ptx_size) == 0 && (*out_ptx = calloc(1, ptx_size + 1)) != NULL)
            trr_nvrtc.GetPTX(prog, *out_ptx);
    }
    trr_nvrtc.DestroyProgram(&prog);
    *out_cubin = cubin;
    *out_cubin_size = cubin_size;
    return TRR_OK;
}

uint64_t trr_cuda_variant_key(const trr_cuda_variant *v, const char *arch, const char *versions) {
    char *src = build_source(NULL, v);
    if (!src) return 0;
    const void *parts[4] = {src, v->defines, arch, versions};
    size_t sizes[4] = {strlen(src), strlen(v->defines), strlen(arch), strlen(versions)};
    uint64_t key = trr_hash_parts(parts, sizes, 4);
    free(src);
    return key;
}

static uint64_t hash1(const void *data, size_t size) {
    const void *parts[1] = {data};
    size_t sizes[1] = {size};
    return trr_hash_parts(parts, sizes, 1);
}

/* The payload of an intact cache file for key, or NULL. */
static void *read_cached(const char *path, uint64_t key, size_t *out_size) {
    void *data = NULL;
    size_t size = 0;
    if (trr_file_read(path, &data, &size) != TRR_OK) return NULL;
    cubin_header h;
    if (size < sizeof h) goto stale;
    memcpy(&h, data, sizeof h);
    if (memcmp(h.magic, CUBIN_MAGIC, 8) != 0 || h.size != size - sizeof h || h.key != key) goto stale;
    unsigned char *payload = (unsigned char *)data + sizeof h;
    if (hash1(payload, h.size) != h.payload_hash) goto stale;
    memmove(data, payload, h.size);
    *out_size = h.size;
    return data;
stale:
    free(data);
    return NULL;
}

static void write_cached(trr_context *ctx, const char *path, uint64_t key, const void *cubin, size_t size) {
    cubin_header h;
    memcpy(h.magic, CUBIN_MAGIC, 8);
    h.size = size;
    h.payload_hash = hash1(cubin, size);
    h.key = key;
    unsigned char *file = malloc(sizeof h + size);
    if (!file) return;
    memcpy(file, &h, sizeof h);
    memcpy(file + sizeof h, cubin, size);
    /* A cache that cannot be written costs a recompile next time, never a failed op. */
    trr_file_write_atomic(ctx, path, file, sizeof h + size);
    free(file);
}

static void dump_variant(trr_context *ctx, const trr_cuda_variant *v, const char *arch, uint64_t key,
                         const char *ptx) {
    char name[128];
    char *src = build_source(ctx, v);
    char base[80];
    snprintf(base, sizeof base, "cuda-%.*s-%016llx", (int)strcspn(v->file, "."), v->file, (unsigned long long)key);
    if (src) {
        snprintf(name, sizeof name, "%s.cu", base);
        trr_dump_file(ctx, name, src, strlen(src));
        free(src);
    }
    char opts[400];
    int n = snprintf(opts, sizeof opts, "--gpu-architecture=%s -default-device --std=c++17 %s\n", arch, v->defines);
    snprintf(name, sizeof name, "%s.options", base);
    trr_dump_file(ctx, name, opts, (size_t)n < sizeof opts ? (size_t)n : sizeof opts - 1);
    if (ptx) {
        snprintf(name, sizeof name, "%s.ptx", base);
        trr_dump_file(ctx, name, ptx, strlen(ptx));
    }
}

/* Loads (from disk or by compiling) the module of variant v for dev. */
static trr_status load_module(trr_context *ctx, trr_cuda_dev *dev, const trr_cuda_variant *v, CUmodule *out) {
    char *src = build_source(ctx, v);
    if (!src) return ctx->last_status;
    char versions[64];
    snprintf(versions, sizeof versions, "driver %d nvrtc %d", dev->driver_version, trr_cuda_nvrtc_version());
    const void *parts[4] = {src, v->defines, dev->arch, versions};
    size_t sizes[4] = {strlen(src), strlen(v->defines), strlen(dev->arch), strlen(versions)};
    uint64_t key = trr_hash_parts(parts, sizes, 4);
    free(src);

    const char *dump_dir = getenv("TRIREME_DUMP_DIR");
    int dumping = dump_dir && dump_dir[0];
    char dir[1024], path[1200];
    int have_dir = trr_cache_dir(ctx, dir, sizeof dir) == TRR_OK;
    if (have_dir) snprintf(path, sizeof path, "%s/cuda-%016llx.cubin", dir, (unsigned long long)key);

    size_t size = 0;
    void *cubin = (have_dir && !dumping) ? read_cached(path, key, &size) : NULL;
    if (cubin) {
        CUresult r = trr_cu.ModuleLoadData(out, cubin);
        free(cubin);
        if (r == TRR_CUDA_SUCCESS) return TRR_OK;
        /* An entry the driver refuses is stale in a way the key missed: rebuild it. */
    }
    char *ptx = NULL, *log = NULL;
    trr_status st = trr_cuda_compile(ctx, v, dev->arch, &cubin, &size, dumping ? &ptx : NULL, &log);
    free(log);
    if (st != TRR_OK) return st;
    if (dumping) dump_variant(ctx, v, dev->arch, key, ptx);
    free(ptx);
    if (have_dir) write_cached(ctx, path, key, cubin, size);
    CUresult r = trr_cu.ModuleLoadData(out, cubin);
    free(cubin);
    TRR_CU_CHECK(ctx, r, "cuModuleLoadData");
    return TRR_OK;
}

trr_status trr_cuda_get_function(trr_context *ctx, const trr_cuda_variant *v, const char *kernel,
                                 CUfunction *out_fn) {
    trr_cuda_dev *dev = ctx->dev;
    const void *parts[2] = {v->file, v->defines};
    size_t sizes[2] = {strlen(v->file), strlen(v->defines)};
    uint64_t mkey = trr_hash_parts(parts, sizes, 2);
    trr_cuda_module *m = dev->modules;
    while (m && m->key != mkey) m = m->next;
    if (!m) {
        CUmodule module = NULL;
        TRR_TRY(load_module(ctx, dev, v, &module));
        m = calloc(1, sizeof *m);
        if (!m) {
            trr_cu.ModuleUnload(module);
            return trr_error(ctx, TRR_ERR_OUT_OF_MEMORY, "no host memory for the module cache");
        }
        m->key = mkey;
        m->module = module;
        m->next = dev->modules;
        dev->modules = m;
    }
    for (int i = 0; i < m->fn_count; i++) {
        if (strcmp(m->fns[i].name, kernel) == 0) {
            *out_fn = m->fns[i].fn;
            return TRR_OK;
        }
    }
    CUfunction fn = NULL;
    CUresult r = trr_cu.ModuleGetFunction(&fn, m->module, kernel);
    if (r != TRR_CUDA_SUCCESS)
        return trr_error(ctx, TRR_ERR_INTERNAL, "cuModuleGetFunction(%s in %s): %s", kernel, v->file,
                         trr_cuda_result_name(r));
    if (m->fn_count < (int)(sizeof m->fns / sizeof m->fns[0]) && strlen(kernel) < sizeof m->fns[0].name) {
        snprintf(m->fns[m->fn_count].name, sizeof m->fns[0].name, "%s", kernel);
        m->fns[m->fn_count++].fn = fn;
    }
    *out_fn = fn;
    return TRR_OK;
}

static unsigned fast_slot(uint64_t key) {
    key ^= key >> 29;
    key *= 0xbf58476d1ce4e5b9ull;
    key ^= key >> 32;
    return (unsigned)(key % TRR_CUDA_FAST_SLOTS);
}

CUfunction trr_cuda_fast_get(const trr_cuda_dev *dev, uint64_t key) {
    const trr_cuda_fast_fn *f = &dev->fast[fast_slot(key)];
    return f->key == key ? f->fn : NULL;
}

void trr_cuda_fast_put(trr_cuda_dev *dev, uint64_t key, CUfunction fn) {
    trr_cuda_fast_fn *f = &dev->fast[fast_slot(key)];
    f->key = key;
    f->fn = fn;
}

void trr_cuda_modules_release(trr_cuda_dev *dev) {
    memset(dev->fast, 0, sizeof dev->fast); /* the functions die with their modules */
    trr_cuda_module *m = dev->modules;
    while (m) {
        trr_cuda_module *next = m->next;
        trr_cu.ModuleUnload(m->module);
        free(m);
        m = next;
    }
    dev->modules = NULL;
}
