/* Library code never prints: `trireme devices` on a cold kernel cache (a fresh TRIREME_CACHE_DIR, and fresh
 * cache directories for the drivers that keep their own, PoCL's among them) leaves stderr empty. A compiler's
 * diagnostics belong in the last-error text, not on the process's stderr: PoCL's clang printed "N warnings and
 * M errors generated" there while the OpenCL backend probed for inline PTX (issue #41, item 17). */
#define _POSIX_C_SOURCE 200809L /* fork, execv, mkdtemp, setenv, waitpid */

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_child.h"

#ifndef TRR_CLI_PATH
#error "TRR_CLI_PATH must name the trireme binary"
#endif

#define CAP 65536

static void slurp(int fd, char *buf) {
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, buf, CAP - 1);
    buf[n > 0 ? n : 0] = '\0';
    close(fd);
}

static void remove_tree(const char *path) {
    DIR *d = opendir(path);
    if (!d) {
        remove(path);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        remove_tree(p);
    }
    closedir(d);
    rmdir(path);
}

Test(cli_quiet, devices_on_a_cold_cache_prints_nothing_to_stderr, .timeout = 600) {
    char home[] = "/tmp/trireme-quiet-XXXXXX";
    cr_assert_not_null(mkdtemp(home));
    char cache[600], xdg[600];
    snprintf(cache, sizeof cache, "%s/trireme", home);
    snprintf(xdg, sizeof xdg, "%s/xdg", home);
    static char out[CAP], err[CAP];
    char out_path[] = "/tmp/trireme-quiet-out-XXXXXX", err_path[] = "/tmp/trireme-quiet-err-XXXXXX";
    int out_fd = mkstemp(out_path), err_fd = mkstemp(err_path);
    cr_assert(out_fd >= 0 && err_fd >= 0);
    unlink(out_path);
    unlink(err_path);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        dup2(out_fd, 1);
        dup2(err_fd, 2);
        cli_child_environment();
        setenv("TRIREME_CACHE_DIR", cache, 1);
        /* PoCL's own kernel cache (POCL_CACHE_DIR, else under XDG_CACHE_HOME), Mesa's likewise: cold too */
        setenv("POCL_CACHE_DIR", xdg, 1);
        setenv("XDG_CACHE_HOME", xdg, 1);
        setenv("MESA_SHADER_CACHE_DIR", xdg, 1);
        setenv("RUSTICL_ENABLE", "llvmpipe", 0); /* rusticl's device too, where Mesa's OpenCL is installed */
        char *argv[] = {(char *)TRR_CLI_PATH, (char *)"devices", NULL};
        execv(TRR_CLI_PATH, argv);
        _exit(127);
    }
    int ws = 0;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    slurp(out_fd, out);
    slurp(err_fd, err);
    remove_tree(home);
    cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "trireme devices: status %d\nstdout:\n%s\nstderr:\n%s", ws, out,
              err);
    cr_assert_eq(err[0], '\0', "trireme devices on a cold cache wrote to stderr:\n%s\nstdout:\n%s", err, out);
}
