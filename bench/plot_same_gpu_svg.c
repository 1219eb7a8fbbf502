/* The same-GPU cross-API chart: for one physical GPU, every benchmark and size its APIs ran as a group of bars,
 * one bar per API at its figure's fraction of that GPU's ceiling (the copy ceiling for memory-bound benchmarks,
 * the vendor library for matmul), the figure written above it. The 100% line is the ceiling. */
#include "bench.h"

#include <math.h>
#include <string.h>

#define ML 64.0
#define MR 20.0
#define MT 64.0
#define PLOT_H 300.0
#define BAR 16.0
#define GAP 18.0
#define LABELS 128.0 /* the rotated case labels under the plot */
#define LINE 18.0

/* one colour per backend, so a backend reads the same on every chart */
static const char *backend_colour(const char *backend) {
    if (!strcmp(backend, "cuda")) return "#1f77b4";
    if (!strcmp(backend, "vulkan")) return "#d62728";
    if (!strcmp(backend, "opencl")) return "#2ca02c";
    return "#7f7f7f";
}

trr_status trr_bench_write_same_gpu_svg(const trr_bench_gpu_view *v, const char *path) {
    double top = 1.1; /* the y axis: up to 110% of the ceiling, or past the highest bar */
    for (int c = 0; c < v->n_cases; c++)
        for (int k = 0; k < v->n; k++) {
            const trr_bench_result *r = v->cases[c].api[k];
            if (r && r->outcome == TRR_BENCH_OK && v->cases[c].ceiling > 0)
                top = fmax(top, r->figure / v->cases[c].ceiling * 1.05);
        }
    top = ceil(top * 10.0) / 10.0;
    const double group_w = v->n * BAR + GAP;
    const double w = fmax(640.0, ML + MR + v->n_cases * group_w);
    const double h = MT + PLOT_H + LABELS + LINE * (v->n + 2) + 10;
    const double y0 = MT + PLOT_H; /* the plot's bottom */
    FILE *f = fopen(path, "w");
    if (!f) return trr_error(NULL, TRR_ERR_IO, "cannot write %s", path);
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
               "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n<rect width=\"100%%\" "
               "height=\"100%%\" fill=\"white\"/>\n", w, h, w, h);
    const trr_device_info *d = &v->member[0]->device;
    fprintf(f, "<text x=\"%.1f\" y=\"22\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">", w / 2);
    trr_svg_text(f, "One GPU, several APIs: ");
    trr_svg_text(f, d->name);
    fprintf(f, "</text>\n<text x=\"%.1f\" y=\"40\" text-anchor=\"middle\" font-size=\"11\" fill=\"#333\">", w / 2);
    char sub[1024], runs[512];
    trr_bench_runs_text(v->report, v->n_reports, 0, runs, sizeof runs);
    snprintf(sub, sizeof sub, "%s %s; %s", d->uuid[0] ? "uuid" : "pci", d->uuid[0] ? d->uuid : d->pci_bus_id, runs);
    trr_svg_text(f, sub);
    fprintf(f, "</text>\n<text x=\"%.1f\" y=\"54\" text-anchor=\"middle\" font-size=\"11\" fill=\"#333\">", w / 2);
    trr_svg_text(f, "bar = figure / this GPU's ceiling (copy bandwidth; matmul: vendor library)");
    fprintf(f, "</text>\n");
    /* y grid every 20% */
    for (double y = 0; y <= top + 1e-9; y += 0.2) {
        const double py = y0 - y / top * PLOT_H;
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"%s/>\n", ML, w - MR, py, py,
                fabs(y - 1.0) < 1e-9 ? "#444" : "#ddd", fabs(y - 1.0) < 1e-9 ? " stroke-dasharray=\"6 4\"" : "");
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">%.0f%%</text>\n", ML - 6, py + 4,
                y * 100);
    }
    fprintf(f, "<text transform=\"translate(16 %.1f) rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">"
               "fraction of the GPU's ceiling</text>\n", y0 - PLOT_H / 2);
    for (int c = 0; c < v->n_cases; c++) {
        const trr_bench_gpu_case *gc = &v->cases[c];
        const double gx = ML + GAP / 2 + c * group_w;
        for (int k = 0; k < v->n; k++) {
            const trr_bench_result *r = gc->api[k];
            const double x = gx + k * BAR;
            if (!r || r->outcome != TRR_BENCH_OK || gc->ceiling <= 0) {
                /* nothing to draw: say why in place of the bar */
                fprintf(f, "<text transform=\"translate(%.1f %.1f) rotate(-90)\" font-size=\"9\" fill=\"#888\">%s</text>\n",
                        x + BAR / 2 + 3, y0 - 4, !r ? "not run" : r->outcome != TRR_BENCH_OK ? trr_bench_outcome_name(r->outcome)
                                                                                              : "no ceiling");
                continue;
            }
            const double frac = r->figure / gc->ceiling, bh = fmin(frac, top) / top * PLOT_H;
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%s %s %s: %.4g %s, "
                       "%.0f%% of %.4g</title></rect>\n",
                    x + 1, y0 - bh, BAR - 2, bh, backend_colour(v->member[k]->device.backend), v->member[k]->device.spec,
                    trr_bench_get(gc->bench)->name, gc->size, r->figure, trr_bench_get(gc->bench)->unit, 100 * frac,
                    gc->ceiling);
            fprintf(f, "<text transform=\"translate(%.1f %.1f) rotate(-90)\" font-size=\"9\">%.4g</text>\n",
                    x + BAR / 2 + 3, y0 - bh - 3, r->figure);
        }
        fprintf(f, "<text transform=\"translate(%.1f %.1f) rotate(-40)\" text-anchor=\"end\" font-size=\"10\">",
                gx + v->n * BAR / 2, y0 + 14);
        trr_svg_text(f, trr_bench_get(gc->bench)->name);
        fprintf(f, " ");
        trr_svg_text(f, gc->size);
        fprintf(f, "</text>\n");
    }
    fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>\n", ML, w - MR, y0, y0);
    double ly = y0 + LABELS + 6;
    for (int k = 0; k < v->n; k++, ly += LINE) {
        const trr_bench_report *rep = v->member[k];
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"10\" fill=\"%s\"/>\n", ML, ly - 9,
                backend_colour(rep->device.backend));
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">", ML + 20, ly);
        /* the vendor library by name and version, without the path it was loaded from */
        char vendor[128];
        snprintf(vendor, sizeof vendor, "%s", rep->vendor);
        char *paren = strstr(vendor, " (");
        if (paren) *paren = '\0';
        char label[512];
        snprintf(label, sizeof label, "%s %s (%s); copy ceiling %.0f GB/s%s%s", rep->device.spec, rep->device.name,
                 rep->device.driver, rep->copy.gbs, vendor[0] ? "; vendor: " : "", vendor);
        trr_svg_text(f, label);
        fprintf(f, "</text>\n");
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#333\">", ML, ly);
    char note[256];
    snprintf(note, sizeof note, "GPU ceiling used for memory-bound bars: %.0f GB/s (%s)", v->copy_gbs,
             v->copy_from ? v->copy_from : "none measured");
    trr_svg_text(f, note);
    fprintf(f, "</text>\n</svg>\n");
    return fclose(f) == 0 ? TRR_OK : trr_error(NULL, TRR_ERR_IO, "writing %s failed", path);
}
