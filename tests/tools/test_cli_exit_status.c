/* The `trireme` tool's exit statuses and messages (0 success, 1 runtime failure, 2 usage error), run as a
 * child process. TRR_CLI_PATH is the built binary. */
#define _POSIX_C_SOURCE 200809L /* fork, execv, mkstemp, waitpid, kill, pread */

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <signal.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_child.h"

#ifndef TRR_CLI_PATH
#error "TRR_CLI_PATH must name the trireme binary"
#endif

Test(cli, no_arguments_is_a_usage_error) {
    cli_child *r = cli_child_run((const char *const[]){NULL});
    CLI_EXPECT(r, 2);
    cr_assert(strstr(r->err, "usage"), "%s", r->err);
}

Test(cli, help_lists_the_commands) {
    cli_child *r = cli_child_run((const char *const[]){"--help", NULL});
    CLI_EXPECT(r, 0);
    cr_assert(strstr(r->out, "devices") && strstr(r->out, "run") && strstr(r->out, "conformance"), "%s", r->out);
}

Test(cli, unknown_command) {
    cli_child *r = cli_child_run((const char *const[]){"frobnicate", NULL});
    CLI_EXPECT(r, 2);
    cr_assert(strstr(r->err, "unknown command 'frobnicate'"), "%s", r->err);
}

Test(cli, every_command_has_help) {
    const char *cmds[] = {"devices", "run", "conformance"};
    for (int i = 0; i < 3; i++) {
        cli_child *r = cli_child_run((const char *const[]){cmds[i], "--help", NULL});
        CLI_EXPECT(r, 0);
        cr_assert(strstr(r->out, "usage: trireme"), "%s: %s", cmds[i], r->out);
    }
}

Test(cli, devices_lists_the_cpu) {
    cli_child *r = cli_child_run((const char *const[]){"devices", NULL});
    CLI_EXPECT(r, 0);
    cr_assert(strstr(r->out, "cpu: available"), "%s", r->out);
    cr_assert(strstr(r->out, "cpu:0"), "%s", r->out);
}

Test(cli, bad_arguments_to_run) {
    const char *const cases[][8] = {
        {"run", NULL},                                  /* no op */
        {"run", "convolve", NULL},                      /* unknown op */
        {"run", "add", "--bogus", NULL},                /* unknown option */
        {"run", "add", "--dtype", "f64", NULL},         /* unknown dtype */
        {"run", "add", "--n", "-3", NULL},              /* negative size */
        {"run", "add", "--n", NULL},                    /* missing value */
        {"run", "matmul", "--shape", "3x4", NULL},      /* matmul wants MxNxK */
        {"run", "matmul", "--epilogue", "tanh", NULL},  /* unknown epilogue */
        {"run", "add", "--dtype", "u8", "--device", "cpu", NULL}, /* a dtype the op rejects */
        {"devices", "extra", NULL},
        {"conformance", "--ops", "copy,nope", NULL},
        {"conformance", "--seed", "x", NULL},
        {"run", "matmul", "--config", "block_q=4", NULL},          /* unknown config field */
        {"run", "matmul", "--config", "block_m=x", NULL},          /* not a number */
        {"run", "matmul", "--config", "block_m=100000", NULL},     /* out of range */
        {"run", "matmul", "--config", "variant=tensor", NULL},     /* unknown variant */
        {"run", "matmul", "--config", "softmax:block_m=8", NULL},  /* another op's config */
        {"bench", "--config", "conv:block_m=8", NULL},             /* unknown op */
        {"conformance", "--config", "threads", NULL},              /* not name=value */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cli_child *r = cli_child_run(cases[i]);
        cr_assert_eq(r->status, 2, "case %zu (%s %s): exit %d\nstderr: %s", i, cases[i][0],
                     cases[i][1] ? cases[i][1] : "", r->status, r->err);
        cr_assert(r->err[0], "case %zu printed no error", i);
    }
}

Test(cli, unknown_devices_name_the_available_ones) {
    const char *specs[] = {"cuda:7", "nonsense", "cpu:3"};
    for (int i = 0; i < 3; i++) {
        cli_child *r = cli_child_run((const char *const[]){"run", "add", "--device", specs[i], NULL});
        CLI_EXPECT(r, 2);
        cr_assert(strstr(r->err, specs[i]), "%s", r->err);
        cr_assert(strstr(r->err, "available devices:") && strstr(r->err, "cpu:0"), "%s", r->err);
        r = cli_child_run((const char *const[]){"conformance", "--device", specs[i], "--quick", NULL});
        CLI_EXPECT(r, 2);
        cr_assert(strstr(r->err, "available devices:"), "%s", r->err);
    }
}

Test(cli, run_is_deterministic_for_a_seed) {
    const char *const args[] = {"run", "add", "--device", "cpu", "--n", "1000", "--seed", "42", NULL};
    cli_child *r = cli_child_run(args);
    CLI_EXPECT(r, 0);
    cr_assert(strstr(r->out, "device: cpu:0"), "%s", r->out);
    cr_assert(strstr(r->out, "selection:"), "%s", r->out);
    cr_assert(strstr(r->out, "device time:"), "%s", r->out);
    const char *h = strstr(r->out, "xxh64 ");
    cr_assert(h, "%s", r->out);
    char first[32];
    snprintf(first, sizeof first, "%.22s", h);
    r = cli_child_run(args);
    CLI_EXPECT(r, 0);
    cr_assert(strstr(r->out, first), "hash changed: %s vs\n%s", first, r->out);
}

Test(cli, run_matmul_with_options) {
    cli_child *r = cli_child_run((const char *const[]){"run", "matmul", "--device", "cpu", "--shape", "17x3x127",
                                                       "--trans-b", "--epilogue", "leaky_relu", "--alpha", "0.2",
                                                       "--dtype", "f16", "--out-dtype", "f32", "--seed", "7", NULL});
    CLI_EXPECT(r, 0);
    /* the case is named as the conformance suite names it */
    cr_assert(strstr(r->out, "op: matmul f16->f32 17x3x127 tB packed leaky_relu(0.2)"), "%s", r->out);
}

/* --config: named fields reach the call; a variant the device lacks fails the run with the reason (exit 1). The
 * same seed gives the same output, up to the f32 rounding of another summation order (block_k), whatever tiles
 * the CPU backend is given. */
Test(cli, run_with_config) {
    const char *const plain[] = {"run", "matmul", "--device", "cpu", "--shape", "33x40x21", "--seed", "9", NULL};
    cli_child *r = cli_child_run(plain);
    CLI_EXPECT(r, 0);
    const char *h = strstr(r->out, "sum ");
    cr_assert(h, "%s", r->out);
    const double plain_sum = strtod(h + 4, NULL);
    r = cli_child_run((const char *const[]){"run", "matmul", "--device", "cpu", "--shape", "33x40x21", "--seed", "9",
                                            "--config", "block_m=8,block_n=16,block_k=4,variant=simt", NULL});
    CLI_EXPECT(r, 0);
    h = strstr(r->out, "sum ");
    cr_assert(h, "%s", r->out);
    const double tiled_sum = strtod(h + 4, NULL);
    cr_assert(fabs(tiled_sum - plain_sum) <= 1e-5 * fabs(plain_sum), "the config changed the result: %.9g vs %.9g",
              plain_sum, tiled_sum);
    r = cli_child_run((const char *const[]){"run", "matmul", "--device", "cpu", "--config", "variant=wgmma", NULL});
    CLI_EXPECT(r, 1);
    cr_assert(strstr(r->err, "TRR_ERR_UNSUPPORTED") && strstr(r->err, "wgmma"), "%s", r->err);
}

Test(cli, devices_json_lists_every_backend) {
    cli_child *r = cli_child_run((const char *const[]){"devices", "--json", NULL});
    CLI_EXPECT(r, 0);
    cJSON *doc = cJSON_Parse(r->out);
    cr_assert(doc, "not JSON: %s", r->out);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(doc, "tool")), "trireme devices");
    const cJSON *be, *cpu = NULL;
    int n = 0;
    cJSON_ArrayForEach(be, cJSON_GetObjectItem(doc, "backends")) {
        n++;
        cr_assert(cJSON_IsString(cJSON_GetObjectItem(be, "name")));
        cr_assert(cJSON_IsBool(cJSON_GetObjectItem(be, "available")));
        cr_assert(cJSON_IsArray(cJSON_GetObjectItem(be, "devices")));
        /* an unavailable backend says why; an available one has no reason */
        const cJSON *reason = cJSON_GetObjectItem(be, "reason");
        cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(be, "available")) ? cJSON_IsNull(reason) : cJSON_IsString(reason));
        if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(be, "name")), "cpu")) cpu = be;
    }
    cr_assert_geq(n, 1);
    cr_assert(cpu && cJSON_IsTrue(cJSON_GetObjectItem(cpu, "available")));
    const cJSON *d0 = cJSON_GetArrayItem(cJSON_GetObjectItem(cpu, "devices"), 0);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(d0, "spec")), "cpu:0");
    cr_assert(cJSON_IsNull(cJSON_GetObjectItem(d0, "uuid")), "the CPU has no UUID: null");
    cr_assert(cJSON_IsNull(cJSON_GetObjectItem(d0, "pci_bus_id")));
    cr_assert(cJSON_IsNumber(cJSON_GetObjectItem(d0, "global_memory")));
    cJSON_Delete(doc);
}

/* --compare says whether the figures' ranges over the repetitions overlap. */
Test(cli, bench_compare_says_whether_ranges_overlap) {
    static const char *const docs[2] = {
        "{\"tool\":\"trireme bench\",\"reports\":[{\"device\":{\"spec\":\"cpu:0\"},\"results\":["
        "{\"bench\":\"add_f32\",\"size\":\"n=2^20\",\"status\":\"ok\",\"unit\":\"GB/s\",\"figure\":10,"
        "\"figure_min\":9,\"figure_max\":11},"
        "{\"bench\":\"gelu_f32\",\"size\":\"n=2^20\",\"status\":\"ok\",\"unit\":\"GB/s\",\"figure\":10,"
        "\"figure_min\":9,\"figure_max\":11}]}]}",
        "{\"tool\":\"trireme bench\",\"reports\":[{\"device\":{\"spec\":\"cpu:0\"},\"results\":["
        "{\"bench\":\"add_f32\",\"size\":\"n=2^20\",\"status\":\"ok\",\"unit\":\"GB/s\",\"figure\":10.5,"
        "\"figure_min\":10.8,\"figure_max\":12},"
        "{\"bench\":\"gelu_f32\",\"size\":\"n=2^20\",\"status\":\"ok\",\"unit\":\"GB/s\",\"figure\":20,"
        "\"figure_min\":19,\"figure_max\":21}]}]}"};
    char paths[2][32] = {"/tmp/trireme-cmp-a-XXXXXX", "/tmp/trireme-cmp-b-XXXXXX"};
    for (int i = 0; i < 2; i++) {
        int fd = mkstemp(paths[i]);
        cr_assert(fd >= 0);
        cr_assert_eq(write(fd, docs[i], strlen(docs[i])), (ssize_t)strlen(docs[i]));
        close(fd);
    }
    cli_child *r = cli_child_run((const char *const[]){"bench", "--compare", paths[0], paths[1], NULL});
    unlink(paths[0]);
    unlink(paths[1]);
    CLI_EXPECT(r, 0);
    const char *add = strstr(r->out, "add_f32"), *gelu = strstr(r->out, "gelu_f32");
    cr_assert(add && gelu, "%s", r->out);
    cr_assert(strstr(add, "yes (within the spread)") && strstr(add, "yes (within the spread)") < gelu, "%s", r->out);
    cr_assert(strstr(gelu, "no (a real difference)"), "%s", r->out);
}

Test(cli, conformance_quick_subset_writes_json) {
    char path[] = "/tmp/trireme-conf-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    cli_child *r = cli_child_run((const char *const[]){"conformance", "--device", "cpu", "--quick", "--ops",
                                                       "copy,add,row_sum", "--seed", "5", "--json", path, NULL});
    CLI_EXPECT(r, 0);
    cr_assert(strstr(r->out, "seed 5"), "%s", r->out);
    cr_assert(strstr(r->out, "copy f32->f32"), "%s", r->out);
    FILE *f = fopen(path, "r");
    cr_assert(f);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    unlink(path);
    cJSON *doc = cJSON_Parse(text);
    cr_assert(doc, "JSON did not parse");
    cJSON *rep = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "reports"), 0);
    cr_assert(rep);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(rep, "seed")), "5");
    cr_assert(cJSON_GetArraySize(cJSON_GetObjectItem(rep, "cases")) > 0);
    cr_assert_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(rep, "failed")), 0.0);
    /* the report names the command that made it, and the tool */
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(doc, "tool")), "trireme conformance");
    const char *cmd = cJSON_GetStringValue(cJSON_GetObjectItem(doc, "command_line"));
    cr_assert(cmd && !strncmp(cmd, "trireme conformance --device cpu --quick --ops copy,add,row_sum", 63), "%s",
              cmd ? cmd : "(null)");
    cJSON_Delete(doc);
}

/* Outputs that cannot be written fail before any work, with a message: a bench would otherwise run to the end. */
Test(cli, unwritable_outputs_fail_first) {
    cli_child *r = cli_child_run((const char *const[]){"bench", "add_f32", "--device", "cpu", "--sizes", "2^20",
                                                       "--json", "/nonexistent-dir/x.json", NULL});
    CLI_EXPECT(r, 2);
    cr_assert(strstr(r->err, "--json /nonexistent-dir/x.json"), "%s", r->err);
    cr_assert_eq(r->out[0], '\0', "nothing was benchmarked: %s", r->out);
    r = cli_child_run(
        (const char *const[]){"bench", "add_f32", "--device", "cpu", "--plot", "/nonexistent-dir/plots", NULL});
    CLI_EXPECT(r, 2);
    cr_assert(strstr(r->err, "--plot"), "%s", r->err);
    r = cli_child_run((const char *const[]){"tune", "add", "--device", "cpu", "--shapes", "1024", "--db",
                                            "/nonexistent-dir/tune.json", NULL});
    CLI_EXPECT(r, 2);
    cr_assert(strstr(r->err, "--db /nonexistent-dir/tune.json"), "%s", r->err);
    cr_assert_null(strstr(r->out, "wrote"), "%s", r->out);
}

Test(cli, bench_budget_must_be_positive_and_says_so) {
    cli_child *r = cli_child_run((const char *const[]){"bench", "--budget", "-1", NULL});
    CLI_EXPECT(r, 2);
    cr_assert(strstr(r->err, "--budget"), "%s", r->err);
}

Test(cli, bench_compare_refuses_a_conformance_report) {
    char path[] = "/tmp/trireme-conf-cmp-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    cli_child *r = cli_child_run(
        (const char *const[]){"conformance", "--device", "cpu", "--quick", "--ops", "copy", "--json", path, NULL});
    CLI_EXPECT(r, 0);
    r = cli_child_run((const char *const[]){"bench", "--compare", path, path, NULL});
    unlink(path);
    CLI_EXPECT(r, 1);
    cr_assert(strstr(r->out, "not a trireme bench report"), "%s", r->out);
}

/* Sizes that overflow or pass the device's memory fail fast with a reason, before any host memory is taken. */
Test(cli, run_rejects_sizes_past_the_limits) {
    cli_child *r =
        cli_child_run((const char *const[]){"run", "add", "--device", "cpu", "--shape", "4611686018427387904", NULL});
    cr_assert(r->status == 1 || r->status == 2, "exit %d\n%s", r->status, r->err);
    cr_assert(strstr(r->err, "device's memory") || strstr(r->err, "overflows"), "%s", r->err);
    r = cli_child_run((const char *const[]){"run", "add", "--device", "cpu", "--shape", "4611686018427387904x4", NULL});
    cr_assert(strstr(r->err, "overflows"), "%s", r->err);
    r = cli_child_run((const char *const[]){"run", "matmul", "--device", "cpu", "--m", "3037000500", "--n",
                                            "3037000500", "--k", "1", NULL});
    cr_assert(r->status == 1 || r->status == 2, "exit %d\n%s", r->status, r->err);
    cr_assert(strstr(r->err, "overflows") || strstr(r->err, "device's memory"), "%s", r->err);
    r = cli_child_run(
        (const char *const[]){"run", "rgb_to_grey", "--device", "cpu", "--shape", "3037000500x3037000500", NULL});
    cr_assert(r->status == 1 || r->status == 2, "exit %d\n%s", r->status, r->err);
}

/* SIGTERM (what `timeout` sends) or Ctrl-C in the middle of a bench: the run ends before its next case, the tables
 * and the --json file hold the cases that ran, marked interrupted, and the status is the shell's for the signal
 * (128 + 15). Many sizes of a 16 MiB add keep the CPU run going well past the moment of the signal, which is sent
 * once the progress lines show a case done. */
Test(cli, an_interrupted_bench_keeps_what_it_ran, .timeout = 120) {
    char json[] = "/tmp/trireme-interrupted-XXXXXX", err_path[] = "/tmp/trireme-cli-err-XXXXXX";
    int jfd = mkstemp(json), err_fd = mkstemp(err_path);
    cr_assert(jfd >= 0 && err_fd >= 0);
    close(jfd);
    char sizes[512] = "";
    for (int i = 0; i < 40; i++) strcat(sizes, i ? ",4194304" : "4194304");
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        dup2(err_fd, 2);
        cli_child_environment();
        execl(TRR_CLI_PATH, TRR_CLI_PATH, "bench", "add_f32", "--device", "cpu", "--sizes", sizes, "--reps", "20",
              "--json", json, (char *)NULL);
        _exit(127);
    }
    /* progress lines start once 2 s have passed: wait for the first, at most 60 s */
    int seen = 0;
    for (int t = 0; t < 600 && !seen; t++) {
        char buf[8192] = "";
        const ssize_t n = pread(err_fd, buf, sizeof buf - 1, 0);
        if (n > 0) buf[n] = '\0';
        seen = strstr(buf, "] add_f32 n=") != NULL;
        if (!seen) nanosleep(&(struct timespec){.tv_nsec = 100000000}, NULL);
    }
    cr_assert(seen, "no progress line within 60 s");
    kill(pid, SIGTERM);
    int ws = 0;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    char err[8192] = "";
    const ssize_t n = pread(err_fd, err, sizeof err - 1, 0);
    if (n > 0) err[n] = '\0';
    close(err_fd);
    unlink(err_path);
    cr_assert(WIFEXITED(ws), "the tool did not exit by itself\n%s", err);
    cr_assert_eq(WEXITSTATUS(ws), 128 + SIGTERM, "%s", err);
    cr_assert(strstr(err, "interrupted by signal 15"), "%s", err);
    FILE *f = fopen(json, "r");
    cr_assert(f);
    static char text[1 << 20];
    const size_t len = fread(text, 1, sizeof text - 1, f);
    text[len] = '\0';
    fclose(f);
    unlink(json);
    cJSON *doc = cJSON_Parse(text);
    cr_assert(doc, "not JSON: %.200s", text);
    const cJSON *rep = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "reports"), 0);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(rep, "interrupted")));
    cr_assert_eq(cJSON_GetObjectItem(rep, "cases_planned")->valueint, 40);
    const int ran = cJSON_GetArraySize(cJSON_GetObjectItem(rep, "results"));
    cr_assert(ran >= 1 && ran < 40, "%d cases in the report", ran);
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(rep, "results"))
        cr_assert_str_eq(cJSON_GetObjectItem(r, "status")->valuestring, "ok");
    cJSON_Delete(doc);
}
