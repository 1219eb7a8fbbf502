/* `trireme run` reports what a run is worth (issue #41 item 15): the throughput as `trireme bench` counts it, the
 * config the call ran with and where it came from (--config, the tuning database, the backend's heuristic), and
 * the check against the float64 reference, which --no-check skips. */
#define _POSIX_C_SOURCE 200809L /* fork, execv, mkstemp, waitpid, setenv */

#include "cli_child.h"

#include <math.h>

static const char *const no_db[] = {"TRIREME_TUNE_DB=/nonexistent/trireme-test-tune.json", NULL};

/* The number after key in text, or NAN. */
static double number_after(const char *text, const char *key) {
    const char *p = strstr(text, key);
    return p ? strtod(p + strlen(key), NULL) : NAN;
}

/* GB/s = bytes / time with the bench's bytes (12n for add f32), from the printed time per call. */
Test(cli_run_report, add_prints_gbs_as_the_bench_counts_it) {
    cli_child *r = cli_child_run_env((const char *const[]){"run", "add", "--device", "cpu", "--n", "2^16", "--seed",
                                                           "1", "--repeat", "3", NULL}, no_db);
    CLI_EXPECT(r, 0);
    const double ms = number_after(r->out, "device time: "), gbs = number_after(r->out, "throughput: ");
    cr_assert(ms > 0 && gbs > 0, "%s", r->out);
    cr_assert(strstr(r->out, "GB/s"), "%s", r->out);
    const double want = 12.0 * 65536.0 / (ms * 1e-3) * 1e-9;
    cr_assert(fabs(gbs - want) <= 2e-3 * want + 1e-3, "%g GB/s printed, %g from the time (%s)", gbs, want, r->out);
    cr_assert(strstr(r->out, "check: passed"), "%s", r->out);
    cr_assert(strstr(r->out, "config: block_n="), "%s", r->out);
    cr_assert(strstr(r->out, "heuristic"), "no --config and no database: the heuristic's config\n%s", r->out);
}

/* TFLOPS = 2MNK / time for matmul. */
Test(cli_run_report, matmul_prints_tflops) {
    cli_child *r = cli_child_run_env((const char *const[]){"run", "matmul", "--device", "cpu", "--shape", "64x48x32",
                                                           "--seed", "1", NULL}, no_db);
    CLI_EXPECT(r, 0);
    const double ms = number_after(r->out, "device time: "), tflops = number_after(r->out, "throughput: ");
    cr_assert(strstr(r->out, "TFLOPS"), "%s", r->out);
    const double want = 2.0 * 64 * 48 * 32 / (ms * 1e-3) * 1e-12;
    cr_assert(fabs(tflops - want) <= 2e-3 * want + 1e-9, "%g TFLOPS printed, %g from the time (%s)", tflops, want,
              r->out);
    cr_assert(strstr(r->out, "check: passed against the float64 reference"), "%s", r->out);
}

Test(cli_run_report, config_source_is_named) {
    cli_child *r = cli_child_run_env((const char *const[]){"run", "add", "--device", "cpu", "--n", "4096", "--config",
                                                           "block_n=4096", NULL}, no_db);
    CLI_EXPECT(r, 0);
    cr_assert(strstr(r->out, "config: block_n=4096") && strstr(r->out, "from --config"), "%s", r->out);

    /* a database entry for the call: tuned here, then read by the run */
    char db[] = "/tmp/trireme-run-db-XXXXXX";
    int fd = mkstemp(db);
    cr_assert(fd >= 0);
    close(fd);
    unlink(db);
    r = cli_child_run((const char *const[]){"tune", "add", "--device", "cpu", "--shapes", "4096", "--dtype", "f32",
                                            "--reps", "2", "--db", db, NULL});
    CLI_EXPECT(r, 0);
    char env[sizeof db + 32];
    snprintf(env, sizeof env, "TRIREME_TUNE_DB=%s", db);
    r = cli_child_run_env((const char *const[]){"run", "add", "--device", "cpu", "--n", "4096", NULL},
                          (const char *const[]){env, NULL});
    unlink(db);
    CLI_EXPECT(r, 0);
    cr_assert(strstr(r->out, "from the tuning database"), "%s", r->out);
}

Test(cli_run_report, no_check_skips_the_reference) {
    cli_child *r = cli_child_run_env((const char *const[]){"run", "gelu", "--device", "cpu", "--n", "4096",
                                                           "--no-check", NULL}, no_db);
    CLI_EXPECT(r, 0);
    cr_assert(strstr(r->out, "check: skipped"), "%s", r->out);
    cr_assert(!strstr(r->out, "check: passed"), "%s", r->out);
}
