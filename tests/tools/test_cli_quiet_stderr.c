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
    char cache_env[640], pocl_env[640], xdg_env[640], mesa_env[640], rusticl_env[128];
    snprintf(cache_env, sizeof cache_env, "TRIREME_CACHE_DIR=%s", cache);
    /* PoCL's own kernel cache (POCL_CACHE_DIR, else under XDG_CACHE_HOME), Mesa's likewise: cold too */
    snprintf(pocl_env, sizeof pocl_env, "POCL_CACHE_DIR=%s", xdg);
    snprintf(xdg_env, sizeof xdg_env, "XDG_CACHE_HOME=%s", xdg);
    snprintf(mesa_env, sizeof mesa_env, "MESA_SHADER_CACHE_DIR=%s", xdg);
    /* rusticl's device too, where Mesa's OpenCL is installed */
    const char *rusticl = getenv("RUSTICL_ENABLE");
    snprintf(rusticl_env, sizeof rusticl_env, "RUSTICL_ENABLE=%s", rusticl ? rusticl : "llvmpipe");
    const char *const env[] = {cache_env, pocl_env, xdg_env, mesa_env, rusticl_env, NULL};
    const char *const args[] = {"devices", NULL};
    const cli_child *r = cli_child_run_env(args, env);
    remove_tree(home);
    CLI_EXPECT(r, 0);
    cr_assert_eq(r->err[0], '\0', "trireme devices on a cold cache wrote to stderr:\n%s\nstdout:\n%s", r->err, r->out);
}
