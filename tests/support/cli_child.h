/* Running the `trireme` tool (TRR_CLI_PATH) as a child process from a Criterion test: its exit status, stdout
 * and stderr, with TRIREME_DEVICE unset and optional extra environment variables. */
#ifndef TRR_TEST_CLI_CHILD_H
#define TRR_TEST_CLI_CHILD_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef TRR_CLI_PATH
#error "TRR_CLI_PATH must name the trireme binary"
#endif

#define CLI_CHILD_CAP 262144

typedef struct cli_child {
    int status; /* exit status, or -1 when it did not exit normally */
    char out[CLI_CHILD_CAP];
    char err[CLI_CHILD_CAP];
} cli_child;

/* In the forked child, before exec: TRIREME_DEVICE unset, and under the sanitizer build no exit-time leak report
 * (drivers the tool unloads leave allocations whose frames name no module, which no suppression can match; the
 * library's own leaks are checked in-process). */
static inline void cli_child_environment(void) {
    unsetenv("TRIREME_DEVICE");
    const char *asan = getenv("ASAN_OPTIONS");
    char no_leaks[512];
    snprintf(no_leaks, sizeof no_leaks, "%s%sdetect_leaks=0", asan ? asan : "", asan && *asan ? ":" : "");
    setenv("ASAN_OPTIONS", no_leaks, 1);
}

static inline void cli_child_slurp(int fd, char *buf) {
    lseek(fd, 0, SEEK_SET);
    size_t at = 0;
    for (ssize_t n; at < CLI_CHILD_CAP - 1 && (n = read(fd, buf + at, CLI_CHILD_CAP - 1 - at)) > 0;) at += (size_t)n;
    buf[at] = '\0';
    close(fd);
}

/* Runs the tool with args (NULL-terminated, without argv[0]); env: "NAME=value" entries (NULL-terminated, or
 * NULL) set in the child. The result is static: each call overwrites the last. */
static inline cli_child *cli_child_run_env(const char *const *args, const char *const *env) {
    static cli_child r;
    char out_path[] = "/tmp/trireme-cli-out-XXXXXX", err_path[] = "/tmp/trireme-cli-err-XXXXXX";
    int out_fd = mkstemp(out_path), err_fd = mkstemp(err_path);
    cr_assert(out_fd >= 0 && err_fd >= 0);
    unlink(out_path);
    unlink(err_path);
    char *argv[48];
    int argc = 0;
    argv[argc++] = (char *)TRR_CLI_PATH;
    for (int i = 0; args[i] && argc < 47; i++) argv[argc++] = (char *)args[i];
    argv[argc] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        dup2(out_fd, 1);
        dup2(err_fd, 2);
        cli_child_environment();
        for (int i = 0; env && env[i]; i++) {
            char name[128];
            const char *eq = strchr(env[i], '=');
            if (!eq || (size_t)(eq - env[i]) >= sizeof name) _exit(126);
            memcpy(name, env[i], (size_t)(eq - env[i]));
            name[eq - env[i]] = '\0';
            setenv(name, eq + 1, 1);
        }
        execv(TRR_CLI_PATH, argv);
        _exit(127);
    }
    int ws = 0;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    cli_child_slurp(out_fd, r.out);
    cli_child_slurp(err_fd, r.err);
    return &r;
}

static inline cli_child *cli_child_run(const char *const *args) { return cli_child_run_env(args, NULL); }

#define CLI_EXPECT(res, code)                                                                                  \
    cr_assert_eq((res)->status, (code), "exit %d, want %d\nstdout:\n%s\nstderr:\n%s", (res)->status, (code),  \
                 (res)->out, (res)->err)

#endif
