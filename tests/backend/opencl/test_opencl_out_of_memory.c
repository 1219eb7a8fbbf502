/* A buffer the host cannot back is TRR_ERR_OUT_OF_MEMORY on every OpenCL device, never an abort: PoCL backs a
 * CPU device's buffer only at its first use and asserts there when the allocation fails (rc 134 under
 * `ulimit -v`), and rusticl answers clCreateBuffer with CL_OUT_OF_RESOURCES (issue #41, item 7). Each device runs
 * in a forked child whose address space is capped (RLIMIT_AS) a little above what it already maps; the child asks
 * for a buffer larger than the headroom, uses it if it was granted, and reports by its exit status. Skipped under
 * AddressSanitizer, whose allocator ends the process when the cap refuses it memory. */
#define _POSIX_C_SOURCE 200809L /* fork, waitpid */

#include "test_support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define TRR_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TRR_TEST_ASAN 1
#endif
#endif

/* Bytes of address space the process maps now (VmSize), 0 when unknown. */
static unsigned long long mapped_bytes(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %llu kB", &kb) == 1) break;
    fclose(f);
    return kb * 1024ull;
}

enum {
    CHILD_OOM = 0,
    CHILD_OTHER_STATUS = 1,
    CHILD_GRANTED = 2,
    CHILD_SETUP = 3,
    CHILD_BROKEN_AFTER = 4,
    CHILD_NO_DEVICE = 5, /* past the last OpenCL device, or none */
    CHILD_NOT_COMPILED = 6
};

static const size_t HEADROOM = 256u << 20, ASK = 768u << 20;

/* In the child: exits with one of the codes above; messages go to stdout. The parent never touches OpenCL: a
 * driver's worker threads do not survive fork, so the child finds the device itself. */
static void child(int index) {
    setenv("RUSTICL_ENABLE", "llvmpipe", 0); /* rusticl's llvmpipe device too, where Mesa's OpenCL is installed */
    int n_backends = 0, found = 0;
    trr_backend_info bi = {0};
    if (trr_backend_count(&n_backends) != TRR_OK) _exit(CHILD_SETUP);
    for (int b = 0; b < n_backends && !found; b++) {
        if (trr_backend_get_info(b, &bi) != TRR_OK) _exit(CHILD_SETUP);
        found = !strcmp(bi.name, "opencl");
    }
    if (!found) _exit(CHILD_NOT_COMPILED);
    if (!bi.available || index >= bi.device_count) {
        if (index == 0) printf("opencl: %s\n", bi.available ? "no device" : bi.reason);
        fflush(stdout);
        _exit(CHILD_NO_DEVICE);
    }
    char spec[32];
    snprintf(spec, sizeof spec, "opencl:%d", index);
    trr_context *ctx = NULL;
    if (trr_context_create(spec, &ctx) != TRR_OK) {
        printf("%s: %s\n", spec, trr_last_error(NULL));
        _exit(CHILD_SETUP);
    }
    /* a small buffer first: the context's own setup is done before the cap */
    trr_buffer *small = NULL;
    if (trr_buffer_create(ctx, 4096, &small) != TRR_OK || trr_buffer_fill(ctx, small, 0, 4096, 1) != TRR_OK ||
        trr_synchronize(ctx) != TRR_OK) {
        printf("%s: a 4 KiB buffer: %s\n", spec, trr_last_error(ctx));
        _exit(CHILD_SETUP);
    }
    struct rlimit old;
    const unsigned long long now = mapped_bytes();
    if (!now || getrlimit(RLIMIT_AS, &old) != 0) _exit(CHILD_SETUP);
    struct rlimit cap = {(rlim_t)(now + HEADROOM), old.rlim_max};
    if (setrlimit(RLIMIT_AS, &cap) != 0) _exit(CHILD_SETUP);
    trr_buffer *big = NULL;
    trr_status st = trr_buffer_create(ctx, ASK, &big);
    int code;
    if (st == TRR_ERR_OUT_OF_MEMORY) {
        printf("%s: %zu MiB with %zu MiB of headroom: out of memory (%s)\n", spec, ASK >> 20, HEADROOM >> 20,
               trr_last_error(ctx));
        code = CHILD_OOM;
    } else if (st != TRR_OK) {
        printf("%s: %zu MiB with %zu MiB of headroom: status %d, not TRR_ERR_OUT_OF_MEMORY: %s\n", spec, ASK >> 20,
               HEADROOM >> 20, (int)st, trr_last_error(ctx));
        code = CHILD_OTHER_STATUS;
    } else {
        /* granted: its first use is where PoCL used to abort */
        st = trr_buffer_fill(ctx, big, 0, ASK, 7);
        if (st == TRR_OK) st = trr_synchronize(ctx);
        printf("%s: %zu MiB with %zu MiB of headroom was granted; filling it: status %d (%s)\n", spec, ASK >> 20,
               HEADROOM >> 20, (int)st, st == TRR_OK ? "" : trr_last_error(ctx));
        code = CHILD_GRANTED;
        trr_buffer_destroy(big);
    }
    setrlimit(RLIMIT_AS, &old);
    /* the context goes on working after the refusal */
    unsigned char got[16] = {0};
    if (trr_buffer_fill(ctx, small, 0, 4096, 9) != TRR_OK || trr_buffer_read(ctx, small, 0, got, sizeof got) != TRR_OK ||
        got[0] != 9 || got[15] != 9) {
        printf("%s: the context failed after the refusal: %s\n", spec, trr_last_error(ctx));
        if (code == CHILD_OOM) code = CHILD_BROKEN_AFTER;
    }
    trr_buffer_destroy(small);
    trr_context_destroy(ctx);
    fflush(stdout);
    _exit(code);
}

Test(opencl_out_of_memory, unbackable_buffer_is_out_of_memory_on_every_device, .timeout = 600) {
#ifdef TRR_TEST_ASAN
    (void)child; /* compiled all the same, so the sanitizer build checks it too */
    cr_skip_test("AddressSanitizer ends the process when RLIMIT_AS refuses its allocator memory");
#else
    int bad = 0, devices = 0;
    for (int d = 0; d < 64; d++) {
        fflush(stdout);
        pid_t pid = fork();
        cr_assert(pid >= 0);
        if (pid == 0) child(d);
        int ws = 0;
        cr_assert_eq(waitpid(pid, &ws, 0), pid);
        if (WIFEXITED(ws) && WEXITSTATUS(ws) == CHILD_NOT_COMPILED) skip_not_compiled_in("opencl");
        if (WIFEXITED(ws) && WEXITSTATUS(ws) == CHILD_NO_DEVICE) break;
        devices++;
        if (WIFSIGNALED(ws)) {
            printf("opencl:%d: the child died of signal %d\n", d, WTERMSIG(ws));
            bad++;
        } else if (WEXITSTATUS(ws) != CHILD_OOM) {
            printf("opencl:%d: child exit %d (%s)\n", d, WEXITSTATUS(ws),
                   WEXITSTATUS(ws) == CHILD_GRANTED ? "granted past the cap" : "see above");
            bad++;
        }
    }
    fflush(stdout);
    if (devices == 0) {
        if (backend_required("opencl")) cr_assert_fail("opencl is required but has no device (above)");
        cr_skip_test("no OpenCL device");
    }
    cr_assert_eq(bad, 0, "%d of %d OpenCL devices did not answer TRR_ERR_OUT_OF_MEMORY (listed above)", bad, devices);
#endif
}
