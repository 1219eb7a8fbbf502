/* Charts: one hand-written SVG per benchmark (figure against size), readable in any browser with no other tool.
 * One solid line per device and backend; its ceilings dashed in the same colour (copy bandwidth as a level
 * line for memory-bound benchmarks, the vendor library per size for matmul). The x axis is logarithmic
 * (base 2) when the sizes span a decade or more. The title says when, with which version and on which devices;
 * the legend sits under the plot with full device names, then a note per device whose cases did not all run. */
#define _POSIX_C_SOURCE 200809L /* mkdir */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define W 900.0
#define H 470.0  /* the plot and its axes; the legend and notes are added below it */
#define ML 78.0  /* margins: left (y labels), right, top (title), bottom (x labels) */
#define MR 24.0
#define MT 58.0
#define MB 56.0
#define LINE 18.0 /* one legend or note line */

static const char *const colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
                                      "#17becf"};
#define N_COLOURS ((int)(sizeof colours / sizeof colours[0]))

void trr_svg_text(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '&') fputs("&amp;", f);
        else if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '"') fputs("&quot;", f);
        else fputc(*s, f);
    }
}

typedef struct axes {
    double x0, x1, y1; /* data range; y starts at 0 */
    int logx;
} axes;

static double px(const axes *a, double x) {
    double t = a->logx ? (log2(x) - log2(a->x0)) / fmax(log2(a->x1) - log2(a->x0), 1e-9)
                       : (x - a->x0) / fmax(a->x1 - a->x0, 1e-9);
    return ML + t * (W - ML - MR);
}

static double py(const axes *a, double y) { return H - MB - y / a->y1 * (H - MT - MB); }

/* 1, 2 or 5 times a power of ten, so about n steps cover span */
static double nice_step(double span, int n) {
    double raw = span / n, p = pow(10.0, floor(log10(raw))), m = raw / p;
    return p * (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10);
}

static void fmt_x(char *out, size_t cap, double x, int logx) {
    double e = log2(x);
    if (logx && x >= 65536 && fabs(e - round(e)) < 1e-9) snprintf(out, cap, "2^%.0f", e);
    else if (x >= 1e6) snprintf(out, cap, "%.3gM", x / 1e6);
    else snprintf(out, cap, "%.0f", x);
}

static void draw_axes(FILE *f, const axes *a, const trr_bench_def *def, const char *subtitle) {
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#444\"/>\n", ML, MT,
            W - ML - MR, H - MT - MB);
    const double ys = nice_step(a->y1, 6);
    for (double y = 0; y <= a->y1 * 1.0001; y += ys) {
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", ML, W - MR, py(a, y),
                py(a, y));
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">%g</text>\n", ML - 6,
                py(a, y) + 4, y);
    }
    if (a->logx) {
        const double span = log2(a->x1) - log2(a->x0);
        const int step = span > 20 ? 4 : span > 10 ? 2 : 1;
        for (double e = ceil(log2(a->x0)); e <= log2(a->x1) + 1e-9; e += step) {
            double x = exp2(e);
            char lab[32];
            fmt_x(lab, sizeof lab, x, 1);
            fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", px(a, x), px(a, x),
                    MT, H - MB);
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\">%s</text>\n", px(a, x),
                    H - MB + 16, lab);
        }
    } else {
        const double xs = nice_step(a->x1 - a->x0 > 0 ? a->x1 - a->x0 : a->x1, 6);
        for (double x = ceil(a->x0 / xs) * xs; x <= a->x1 * 1.0001; x += xs) {
            char lab[32];
            fmt_x(lab, sizeof lab, x, 0);
            fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", px(a, x), px(a, x),
                    MT, H - MB);
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\">%s</text>\n", px(a, x),
                    H - MB + 16, lab);
        }
    }
    const char *xlabel = def->sizing == TRR_SIZING_IMAGE ? "H x W (pixels)"
                         : def->compute_bound           ? "M = N = K (cube root of M·N·K)"
                         : !strcmp(def->size_label, "n")  ? "n (elements)"
                                                         : "N (row length, M = 4096)";
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"12\">%s%s</text>\n",
            (ML + W - MR) / 2, H - 14, xlabel, a->logx ? ", log scale" : "");
    fprintf(f, "<text transform=\"translate(18 %.1f) rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">%s</text>\n",
            (MT + H - MB) / 2, def->unit);
    fprintf(f, "<text x=\"%.1f\" y=\"24\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">", (ML + W - MR) / 2);
    trr_svg_text(f, def->title);
    fprintf(f, "</text>\n");
    /* a long subtitle breaks at its last "; " that leaves a line the chart's width holds */
    char line[1024];
    snprintf(line, sizeof line, "%s", subtitle);
    char *second = NULL;
    if (strlen(line) > 130)
        for (char *p = strstr(line, "; "); p && p - line < 130; p = strstr(p + 2, "; ")) second = p;
    if (second) *second = '\0', second += 2;
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" font-size=\"11\" fill=\"#333\">", (ML + W - MR) / 2,
            second ? 38 : 42);
    trr_svg_text(f, line);
    fprintf(f, "</text>\n");
    if (second) {
        fprintf(f, "<text x=\"%.1f\" y=\"51\" text-anchor=\"middle\" font-size=\"11\" fill=\"#333\">", (ML + W - MR) / 2);
        trr_svg_text(f, second);
        fprintf(f, "</text>\n");
    }
}

static void legend_entry(FILE *f, int slot, const char *colour, int dashed, const char *label) {
    const double y = H + 4 + LINE * slot, x = ML;
    fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s/>\n", x,
            x + 24, y, y, colour, dashed ? " stroke-dasharray=\"6 4\"" : "");
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">", x + 30, y + 4);
    trr_svg_text(f, label);
    fprintf(f, "</text>\n");
}

/* A polyline through the points of one series, in size order (results are stored in size order). */
static void series(FILE *f, const axes *a, const trr_bench_report *rep, trr_bench_id id, int vendor,
                   const char *colour) {
    int n = 0;
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", colour,
            vendor ? " stroke-dasharray=\"6 4\"" : "");
    for (int i = 0; i < rep->n_results; i++) {
        const trr_bench_result *r = &rep->results[i];
        double y = vendor ? r->vendor_figure : r->figure;
        if (r->bench != id || r->outcome != TRR_BENCH_OK || y <= 0) continue;
        fprintf(f, "%s%.1f,%.1f", n++ ? " " : "", px(a, r->x), py(a, y));
    }
    fprintf(f, "\"/>\n");
    for (int i = 0; i < rep->n_results; i++) {
        const trr_bench_result *r = &rep->results[i];
        double y = vendor ? r->vendor_figure : r->figure;
        if (r->bench != id || r->outcome != TRR_BENCH_OK || y <= 0) continue;
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%s\" fill=\"%s\"><title>%s %s: %.4g %s</title></circle>\n",
                px(a, r->x), py(a, y), vendor ? "2" : "3", colour, rep->device.spec, r->size, y,
                trr_bench_get(id)->unit);
    }
}

/* What a device's series adds to the legend (a line, its ceiling) and whether it has a note. */
static int legend_slots(const trr_bench_report *rep, trr_bench_id id, int *out_note) {
    const trr_bench_def *def = trr_bench_get(id);
    int any = 0, any_vendor = 0, missing = 0;
    for (int j = 0; j < rep->n_results; j++) {
        const trr_bench_result *r = &rep->results[j];
        if (r->bench != id) continue;
        any |= r->outcome == TRR_BENCH_OK;
        any_vendor |= r->vendor_figure > 0;
        missing |= r->outcome != TRR_BENCH_OK;
    }
    *out_note = missing;
    if (!any) return 0;
    return 1 + ((def->compute_bound && any_vendor) || (!def->compute_bound && rep->copy.gbs > 0));
}

/* "vulkan:0 (llvmpipe ...): 2 skipped (over the budget ...), 1 unsupported" */
static void note_line(FILE *f, int slot, const trr_bench_report *rep, trr_bench_id id) {
    int counts[4] = {0};
    const char *first[4] = {NULL};
    for (int j = 0; j < rep->n_results; j++) {
        const trr_bench_result *r = &rep->results[j];
        if (r->bench != id || r->outcome == TRR_BENCH_OK) continue;
        counts[r->outcome]++;
        if (!first[r->outcome]) first[r->outcome] = r->reason;
    }
    char text[1024];
    int len = snprintf(text, sizeof text, "%s (%s): ", rep->device.spec, rep->device.name);
    int written = 0;
    for (int o = TRR_BENCH_SKIPPED; o <= TRR_BENCH_FAILED && len < (int)sizeof text; o++)
        if (counts[o])
            len += snprintf(text + len, sizeof text - (size_t)len, "%s%d %s (%.110s)", written++ ? "; " : "",
                            counts[o], trr_bench_outcome_name((trr_bench_outcome)o), first[o] ? first[o] : "");
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#666\">not measured: ", ML, H + 8 + LINE * slot);
    trr_svg_text(f, text);
    fprintf(f, "</text>\n");
}

/* Appends item to a ", "-separated list in out unless the list already holds it. */
static void add_distinct(char *out, size_t cap, size_t *len, const char *item) {
    const size_t n = strlen(item);
    for (const char *p = out; (p = strstr(p, item)) != NULL; p += n)
        if ((p == out || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0')) return;
    if (*len < cap) *len += (size_t)snprintf(out + *len, cap - *len, "%s%s", *len ? ", " : "", item);
}

void trr_bench_runs_text(const trr_bench_report *const *reports, int n, int with_devices, char *out, size_t cap) {
    if (!cap) return;
    const char *first = NULL, *last = NULL;
    char versions[128] = "", devices[512] = "";
    size_t vlen = 0, dlen = 0;
    for (int i = 0; i < n; i++) {
        const char *d = reports[i]->date;
        if (d[0] && (!first || strcmp(d, first) < 0)) first = d;
        if (d[0] && (!last || strcmp(d, last) > 0)) last = d;
        add_distinct(versions, sizeof versions, &vlen, reports[i]->library_version[0] ? reports[i]->library_version : "?");
        add_distinct(devices, sizeof devices, &dlen, reports[i]->device.spec);
    }
    int len = snprintf(out, cap, "%s%s%s, trireme %s", first ? first : "", first && strcmp(first, last) ? " .. " : "",
                       first && strcmp(first, last) ? last : "", versions);
    if (with_devices && len >= 0 && (size_t)len < cap) snprintf(out + len, cap - (size_t)len, ": %s", devices);
}

static trr_status plot_one(const trr_bench_report *const *reports, int n, trr_bench_id id, const char *path,
                           const char *what) {
    const trr_bench_def *def = trr_bench_get(id);
    axes a = {.x0 = INFINITY, .x1 = 0, .y1 = 0};
    for (int i = 0; i < n; i++)
        for (int j = 0; j < reports[i]->n_results; j++) {
            const trr_bench_result *r = &reports[i]->results[j];
            if (r->bench != id || r->outcome != TRR_BENCH_OK) continue;
            a.x0 = fmin(a.x0, r->x), a.x1 = fmax(a.x1, r->x);
            a.y1 = fmax(a.y1, fmax(r->figure, r->vendor_figure));
            if (!def->compute_bound) a.y1 = fmax(a.y1, reports[i]->copy.gbs);
        }
    if (a.x1 <= 0) return TRR_OK; /* nothing measured: no chart */
    if (a.x0 == a.x1) a.x0 *= 0.5, a.x1 *= 2;
    a.logx = a.x1 / a.x0 >= 10;
    a.y1 = a.y1 > 0 ? a.y1 * 1.1 : 1;
    const double ys = nice_step(a.y1, 6);
    a.y1 = ceil(a.y1 / ys) * ys;

    int slots = 0, notes = 0;
    char subtitle[1024];
    char runs[900];
    trr_bench_runs_text(reports, n, 1, runs, sizeof runs);
    snprintf(subtitle, sizeof subtitle, "%s%s%s", what ? what : "", what ? "; " : "", runs);
    for (int i = 0; i < n; i++) {
        int note = 0;
        slots += legend_slots(reports[i], id, &note);
        notes += note;
    }
    const double height = H + LINE * (slots + notes) + 12;

    FILE *f = fopen(path, "w");
    if (!f) return trr_error(NULL, TRR_ERR_IO, "cannot write %s", path);
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
               "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n<rect width=\"100%%\" "
               "height=\"100%%\" fill=\"white\"/>\n", W, height, W, height);
    draw_axes(f, &a, def, subtitle);
    int slot = 0;
    for (int i = 0; i < n; i++) {
        const trr_bench_report *rep = reports[i];
        const char *col = colours[i % N_COLOURS];
        int note = 0;
        const int entries = legend_slots(rep, id, &note);
        if (!entries) continue;
        char label[400];
        series(f, &a, rep, id, 0, col);
        snprintf(label, sizeof label, "%s %s (%s)", rep->device.spec, rep->device.name, rep->device.driver);
        legend_entry(f, slot++, col, 0, label);
        if (entries < 2) continue;
        if (def->compute_bound) {
            series(f, &a, rep, id, 1, col);
            snprintf(label, sizeof label, "%s vendor library (%s)", rep->device.spec, rep->vendor);
            legend_entry(f, slot++, col, 1, label);
        } else {
            fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.5\" "
                       "stroke-dasharray=\"6 4\"/>\n", ML, W - MR, py(&a, rep->copy.gbs), py(&a, rep->copy.gbs), col);
            snprintf(label, sizeof label, "%s copy ceiling %.0f GB/s%s", rep->device.spec, rep->copy.gbs,
                     rep->copy.remeasured ? " (re-measured)" : "");
            legend_entry(f, slot++, col, 1, label);
        }
    }
    for (int i = 0; i < n; i++) {
        int note = 0;
        legend_slots(reports[i], id, &note);
        if (note) note_line(f, slot++, reports[i], id);
    }
    fprintf(f, "</svg>\n");
    return fclose(f) == 0 ? TRR_OK : trr_error(NULL, TRR_ERR_IO, "writing %s failed", path);
}

trr_status trr_bench_write_plots(const trr_bench_report *const *reports, int n, const char *dir, FILE *log) {
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) return trr_error(NULL, TRR_ERR_IO, "cannot create %s", dir);
    for (int b = 0; b < trr_bench_count(); b++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.svg", dir, trr_bench_get((trr_bench_id)b)->name);
        int any = 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < reports[i]->n_results; j++)
                any |= reports[i]->results[j].bench == (trr_bench_id)b && reports[i]->results[j].outcome == TRR_BENCH_OK;
        if (!any) continue;
        TRR_TRY(plot_one(reports, n, (trr_bench_id)b, path, NULL));
        if (log) fprintf(log, "wrote %s\n", path);
    }
    return TRR_OK;
}

trr_status trr_bench_write_physical_plots(const trr_bench_report *const *reports, int n, const char *dir, FILE *log) {
    if (n < 2) return TRR_OK;
    const trr_device_info *devs[64] = {0};
    int group_of[64];
    const int m = n < 64 ? n : 64;
    for (int i = 0; i < m; i++) devs[i] = &reports[i]->device;
    if (trr_bench_gpu_groups(devs, m, group_of) == 0) return TRR_OK;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) return trr_error(NULL, TRR_ERR_IO, "cannot create %s", dir);
    int k = 0;
    for (int g = 0; g < m; g++) {
        const trr_bench_report *members[64];
        int n_members = 0;
        for (int i = 0; i < m; i++)
            if (group_of[i] == g) members[n_members++] = reports[i];
        if (n_members < 2) continue;
        char what[300];
        snprintf(what, sizeof what, "one physical GPU (%s, %s), one line per API", reports[g]->device.name,
                 reports[g]->device.uuid[0] ? reports[g]->device.uuid : reports[g]->device.pci_bus_id);
        for (int b = 0; b < trr_bench_count(); b++) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s_gpu%d.svg", dir, trr_bench_get((trr_bench_id)b)->name, k);
            int any = 0;
            for (int i = 0; i < n_members; i++)
                for (int j = 0; j < members[i]->n_results; j++)
                    any |= members[i]->results[j].bench == (trr_bench_id)b && members[i]->results[j].outcome == TRR_BENCH_OK;
            if (!any) continue;
            TRR_TRY(plot_one(members, n_members, (trr_bench_id)b, path, what));
            if (log) fprintf(log, "wrote %s\n", path);
        }
        k++;
    }
    int nv = 0;
    trr_bench_gpu_view *views = trr_bench_gpu_views(reports, n, &nv);
    for (int g = 0; g < nv; g++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/same_gpu%d.svg", dir, g);
        trr_status st = trr_bench_write_same_gpu_svg(&views[g], path);
        if (st != TRR_OK) {
            free(views);
            return st;
        }
        if (log) fprintf(log, "wrote %s\n", path);
    }
    free(views);
    return TRR_OK;
}
