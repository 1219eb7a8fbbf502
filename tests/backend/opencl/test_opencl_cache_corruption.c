/* A kernel-cache entry altered with its header hash recomputed (as a bit flip before the hash was taken, or a
 * writer that knows the format, would leave it) is never handed to the driver: PoCL crashed on such binaries
 * (SIGSEGV or SIGABRT in 4 of 8 seeds; issue #41, item 6). Every OpenCL device: one child fills a fresh cache
 * (TRIREME_CACHE_DIR) with an add and a matmul; then, per seed, the entries' driver binaries are damaged in one of
 * several ways, each entry's header (magic, payload size, XXH3 of the payload: backend_opencl/program.c) is
 * rewritten to match, and another child opens the device on that cache and runs both ops: right answers, no
 * crash. Children because a driver's threads do not survive fork: the parent never touches OpenCL. */
#define _POSIX_C_SOURCE 200809L /* fork, mkdtemp, setenv, waitpid */

#include "cache.h"
#include "random.h"
#include "test_support.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { CHILD_OK = 0, CHILD_WRONG = 1, CHILD_ERROR = 2, CHILD_NO_DEVICE = 5, CHILD_NOT_COMPILED = 6 };
enum { N = 1000, MM = 17, NN = 9, KK = 33, SEEDS = 8 };

/* In a child: opencl:index on cache, an add of N floats and an MMxNNxKK matmul of small integers (exact). */
static void child_run(int index, const char *cache) {
    setenv("RUSTICL_ENABLE", "llvmpipe", 0);
    setenv("TRIREME_CACHE_DIR", cache, 1);
    int n_backends = 0, found = 0;
    trr_backend_info bi = {0};
    if (trr_backend_count(&n_backends) != TRR_OK) _exit(CHILD_ERROR);
    for (int b = 0; b < n_backends && !found; b++) {
        if (trr_backend_get_info(b, &bi) != TRR_OK) _exit(CHILD_ERROR);
        found = !strcmp(bi.name, "opencl");
    }
    if (!found) _exit(CHILD_NOT_COMPILED);
    if (!bi.available || index >= bi.device_count) _exit(CHILD_NO_DEVICE);
    char spec[32];
    snprintf(spec, sizeof spec, "opencl:%d", index);
    trr_context *ctx = NULL;
    if (trr_context_create(spec, &ctx) != TRR_OK) {
        printf("%s: %s\n", spec, trr_last_error(NULL));
        _exit(CHILD_ERROR);
    }
    static float x[N], y[N], z[N], a[MM * KK], b[KK * NN], c[MM * NN];
    for (int i = 0; i < N; i++) x[i] = (float)i, y[i] = (float)(3 * i + 1);
    for (int i = 0; i < MM * KK; i++) a[i] = (float)(i % 7 - 3);
    for (int i = 0; i < KK * NN; i++) b[i] = (float)(i % 5 - 2);
    trr_buffer *bx, *by, *bz, *ba, *bb, *bc;
    trr_tensor tx, ty, tz, ta, tb, tc;
    int ok = trr_buffer_create(ctx, sizeof x, &bx) == TRR_OK && trr_buffer_create(ctx, sizeof y, &by) == TRR_OK &&
             trr_buffer_create(ctx, sizeof z, &bz) == TRR_OK && trr_buffer_create(ctx, sizeof a, &ba) == TRR_OK &&
             trr_buffer_create(ctx, sizeof b, &bb) == TRR_OK && trr_buffer_create(ctx, sizeof c, &bc) == TRR_OK &&
             trr_buffer_write(ctx, bx, 0, x, sizeof x) == TRR_OK && trr_buffer_write(ctx, by, 0, y, sizeof y) == TRR_OK &&
             trr_buffer_write(ctx, ba, 0, a, sizeof a) == TRR_OK && trr_buffer_write(ctx, bb, 0, b, sizeof b) == TRR_OK &&
             trr_tensor_2d(bx, 0, TRR_F32, 1, N, N, &tx) == TRR_OK && trr_tensor_2d(by, 0, TRR_F32, 1, N, N, &ty) == TRR_OK &&
             trr_tensor_2d(bz, 0, TRR_F32, 1, N, N, &tz) == TRR_OK &&
             trr_tensor_2d(ba, 0, TRR_F32, MM, KK, KK, &ta) == TRR_OK &&
             trr_tensor_2d(bb, 0, TRR_F32, KK, NN, NN, &tb) == TRR_OK &&
             trr_tensor_2d(bc, 0, TRR_F32, MM, NN, NN, &tc) == TRR_OK && trr_add(ctx, &tx, &ty, &tz) == TRR_OK &&
             trr_matmul(ctx, &ta, &tb, &tc, TRR_EPI_NONE, 0.0f, 0) == TRR_OK &&
             trr_buffer_read(ctx, bz, 0, z, sizeof z) == TRR_OK && trr_buffer_read(ctx, bc, 0, c, sizeof c) == TRR_OK;
    if (!ok) {
        printf("%s: %s\n", spec, trr_last_error(ctx));
        _exit(CHILD_ERROR);
    }
    int wrong = 0;
    for (int i = 0; i < N; i++) wrong += z[i] != x[i] + y[i];
    for (int i = 0; i < MM; i++)
        for (int j = 0; j < NN; j++) {
            float s = 0;
            for (int k = 0; k < KK; k++) s += a[i * KK + k] * b[k * NN + j];
            wrong += c[i * NN + j] != s;
        }
    if (wrong) printf("%s: %d wrong outputs\n", spec, wrong);
    trr_context_destroy(ctx);
    fflush(stdout);
    _exit(wrong ? CHILD_WRONG : CHILD_OK);
}

static int run_child(int index, const char *cache) {
    fflush(stdout);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) child_run(index, cache);
    int ws = 0;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

static int read_all(const char *path, unsigned char **out, size_t *out_size) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *out = malloc(n > 0 ? (size_t)n : 1);
    *out_size = n > 0 && fread(*out, 1, (size_t)n, f) == (size_t)n ? (size_t)n : 0;
    fclose(f);
    return 1;
}

static void write_all(const char *path, const void *data, size_t size) {
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(data, 1, size, f), size);
    fclose(f);
}

static void clear_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (e->d_name[0] != '.') remove(p);
    }
    closedir(d);
    rmdir(dir);
}

/* Copies every file of from into to, damaging the payload of each opencl-*.bin entry (header: 8-byte magic,
 * u64 payload size, u64 XXH3 of the payload) the seed's way, and rewriting its size and hash to match.
 * Returns the number of entries damaged. */
static int copy_damaged(const char *from, const char *to, uint64_t seed) {
    DIR *d = opendir(from);
    cr_assert_not_null(d);
    int damaged = 0;
    uint64_t rng = 0x9E3779B97F4A7C15ull ^ (seed * 0x100000001B3ull);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char src[1024], dst[1024];
        snprintf(src, sizeof src, "%s/%s", from, e->d_name);
        snprintf(dst, sizeof dst, "%s/%s", to, e->d_name);
        unsigned char *data = NULL;
        size_t size = 0;
        cr_assert(read_all(src, &data, &size));
        const size_t hdr = 24;
        const size_t len = strlen(e->d_name);
        if (!strncmp(e->d_name, "opencl-", 7) && len > 4 && !strcmp(e->d_name + len - 4, ".bin") && size > hdr + 64) {
            unsigned char *p = data + hdr;
            size_t n = size - hdr;
            switch (seed % 4) {
            case 0: /* a few flipped bits anywhere */
                for (int i = 0; i < 8; i++) p[trr_rng_next(&rng) % n] ^= (unsigned char)(1u << (trr_rng_next(&rng) % 8));
                break;
            case 1: /* the driver's own header: the first 64 bytes scrambled */
                for (size_t i = 0; i < 64; i++) p[i] = (unsigned char)trr_rng_next(&rng);
                break;
            case 2: { /* a run of garbage in the middle */
                size_t at = (size_t)(trr_rng_next(&rng) % (n / 2)), run = n / 8 + 1;
                for (size_t i = 0; i < run && at + i < n; i++) p[at + i] = (unsigned char)trr_rng_next(&rng);
                break;
            }
            default: /* cut short */
                n = n / 3 + (size_t)(trr_rng_next(&rng) % (n / 3));
                size = hdr + n;
                break;
            }
            const void *parts[1] = {p};
            size_t sizes[1] = {n};
            const uint64_t payload_size = n, hash = trr_hash_parts(parts, sizes, 1);
            memcpy(data + 8, &payload_size, 8);
            memcpy(data + 16, &hash, 8);
            damaged++;
        }
        write_all(dst, data, size);
        free(data);
    }
    closedir(d);
    return damaged;
}

Test(opencl_cache, damaged_entries_with_recomputed_hashes_are_rebuilt, .timeout = 1200) {
    char root[] = "/tmp/trireme-cache-damage-XXXXXX";
    cr_assert_not_null(mkdtemp(root));
    char pristine[600];
    snprintf(pristine, sizeof pristine, "%s/pristine", root);
    int devices = 0, bad = 0;
    for (int d = 0; d < 64; d++) {
        clear_dir(pristine);
        int st = run_child(d, pristine);
        if (st == CHILD_NOT_COMPILED) skip_not_compiled_in("opencl");
        if (st == CHILD_NO_DEVICE) break;
        devices++;
        cr_assert_eq(st, CHILD_OK, "opencl:%d on a fresh cache: child status %d (above)", d, st);
        for (uint64_t seed = 0; seed < SEEDS; seed++) {
            char damaged_dir[600];
            snprintf(damaged_dir, sizeof damaged_dir, "%s/seed%llu", root, (unsigned long long)seed);
            clear_dir(damaged_dir);
            cr_assert_eq(mkdir(damaged_dir, 0755), 0);
            const int n = copy_damaged(pristine, damaged_dir, seed);
            cr_assert_gt(n, 0, "opencl:%d wrote no opencl-*.bin entry into %s", d, pristine);
            st = run_child(d, damaged_dir);
            if (st != CHILD_OK) {
                printf("opencl:%d, seed %llu (%d entries damaged): child %s %d\n", d, (unsigned long long)seed, n,
                       st >= 128 ? "died of signal" : "exit", st >= 128 ? st - 128 : st);
                bad++;
            }
            clear_dir(damaged_dir);
        }
    }
    clear_dir(pristine);
    rmdir(root);
    fflush(stdout);
    if (devices == 0) {
        if (backend_required("opencl")) cr_assert_fail("opencl is required but has no device");
        cr_skip_test("no OpenCL device");
    }
    cr_assert_eq(bad, 0, "%d of %d damaged caches crashed or computed wrong (listed above)", bad, devices * SEEDS);
}
