/* `trireme bench --replot` prints what the run printed (issue #41 item 12): the copy ceiling's size and
 * repetitions, the flush, each case's config, read back from the JSON; merged reports' charts name each device
 * once and the dates of all the runs, not the first report's alone. */
#define _POSIX_C_SOURCE 200809L /* fork, execv, mkdtemp, waitpid, setenv */

#include "cli_child.h"

static char dir[] = "/tmp/trireme-replot-XXXXXX";

static void path_in(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", dir, name); }

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot read %s", path);
    static char buf[1 << 18];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

/* A tiny run on the CPU device: one streaming case and one matmul, so both config formats are printed. */
static void bench_to(const char *json, char *text, size_t cap, const char *const *benches) {
    const char *args[16] = {"bench", "--device", "cpu", "--reps", "5", "--sizes", benches[1], "--json", json, NULL};
    int n = 9;
    args[n++] = benches[0];
    args[n] = NULL;
    cli_child *r = cli_child_run(args);
    CLI_EXPECT(r, 0);
    snprintf(text, cap, "%s", r->out);
}

Test(bench_replot, replot_prints_the_runs_metadata, .timeout = 300) {
    cr_assert(mkdtemp(dir));
    char json_a[128], json_b[128], plots[128];
    path_in(json_a, sizeof json_a, "a.json");
    path_in(json_b, sizeof json_b, "b.json");
    path_in(plots, sizeof plots, "plots");
    static char run_a[CLI_CHILD_CAP], run_b[CLI_CHILD_CAP];
    bench_to(json_a, run_a, sizeof run_a, (const char *const[]){"add_f32", "2^12"});
    bench_to(json_b, run_b, sizeof run_b, (const char *const[]){"matmul_f32", "48"});

    /* each report alone: the replot's text is the run's, line for line */
    const char *files[2] = {json_a, json_b};
    const char *runs[2] = {run_a, run_b};
    for (int i = 0; i < 2; i++) {
        cli_child *r = cli_child_run((const char *const[]){"bench", "--replot", plots, files[i], NULL});
        CLI_EXPECT(r, 0);
        cr_assert_str_eq(r->out, runs[i], "the replot of %s differs from its run:\n--- run\n%s\n--- replot\n%s",
                         files[i], runs[i], r->out);
    }
    cr_assert(strstr(run_a, "median of ") && !strstr(run_a, "median of 0"), "%s", run_a);
    cr_assert(strstr(run_b, " simt"), "the matmul's config: %s", run_b);

    /* both merged: a chart names the device once and both runs' dates */
    cli_child *r = cli_child_run((const char *const[]){"bench", "--replot", plots, json_a, json_b, NULL});
    CLI_EXPECT(r, 0);
    cr_assert(strstr(r->out, run_a) && strstr(r->out, run_b), "%s", r->out);
    char svg_path[160], date_a[32] = "", date_b[32] = "";
    snprintf(svg_path, sizeof svg_path, "%s/add_f32.svg", plots);
    sscanf(strstr(run_a, "trireme ") + 8, "%*[^,], %31s", date_a);
    sscanf(strstr(run_b, "trireme ") + 8, "%*[^,], %31s", date_b);
    cr_assert(date_a[0] && date_b[0], "%s\n%s", run_a, run_b);
    const char *svg = read_text(svg_path);
    /* the subtitle: the text element holding ", trireme " */
    const char *mid = strstr(svg, ", trireme ");
    cr_assert(mid, "%s", svg);
    const char *start = mid, *end = strchr(mid, '<');
    while (start > svg && start[-1] != '>') start--;
    char subtitle[1024];
    snprintf(subtitle, sizeof subtitle, "%.*s", (int)(end - start), start);
    const char *cpu = strstr(subtitle, "cpu:0");
    cr_assert(cpu && !strstr(cpu + 5, "cpu:0"), "the subtitle names cpu:0 %s: %s", cpu ? "twice" : "nowhere",
              subtitle);
    cr_assert(strstr(subtitle, date_a) && strstr(subtitle, date_b), "dates %s and %s: %s", date_a, date_b, subtitle);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}
