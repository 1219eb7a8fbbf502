/* The report people read: per device, its ceilings, then one line per case. */
#include "op_table.h"
#include "bench.h"

static void print_config(const trr_bench_result *r, FILE *out) {
    const trr_config *c = &r->config;
    if (trr_op_desc_get(r->tcase.op)->shape == TRR_SHAPE_MATMUL)
    {
        fprintf(out, "%dx%dx%d g%d t%d s%d", c->block_m, c->block_n, c->block_k, c->group_m, c->threads, c->stages);
        if (c->split_k > 1) fprintf(out, " k%d", c->split_k);
    } else
        fprintf(out, "bn%d t%d v%d", c->block_n, c->threads, c->vector_width);
    const char *variant = NULL; /* the kernel family, for ops that have several */
    if (c->variant && trr_variant_name((trr_variant)c->variant, &variant) == TRR_OK) fprintf(out, " %s", variant);
}

void trr_bench_print(const trr_bench_report *const *reports, int n, FILE *out) {
    for (int i = 0; i < n; i++) {
        const trr_bench_report *rep = reports[i];
        const trr_device_info *d = &rep->device;
        fprintf(out, "== %s: %s (%s), driver %s, trireme %s, %s\n", d->spec, d->name, d->backend, d->driver,
                rep->library_version, rep->date);
        if (rep->copy.gbs > 0 && rep->copy.remeasured)
            fprintf(out, "   copy ceiling: %.1f GB/s (%.0f MiB device-to-device, read + write, median of %d; re-measured "
                    "because a figure was above the first measurement, %.1f GB/s)\n", rep->copy.gbs,
                    (double)rep->copy.bytes / 1048576.0, rep->copy.timing.reps, rep->copy.first_gbs);
        else if (rep->copy.gbs > 0)
            fprintf(out, "   copy ceiling: %.1f GB/s (%.0f MiB device-to-device, read + write, median of %d)\n",
                    rep->copy.gbs, (double)rep->copy.bytes / 1048576.0, rep->copy.timing.reps);
        else
            fprintf(out, "   copy ceiling: %s\n", rep->copy.note);
        fprintf(out, "   vendor matmul: %s\n", rep->vendor[0] ? rep->vendor : rep->vendor_note);
        if (rep->best_matmul_f32_tflops > 0 || rep->best_matmul_f16_tflops > 0) {
            fprintf(out, "   compute: best matmul measured in this run (not a hardware peak):");
            if (rep->best_matmul_f32_tflops > 0) fprintf(out, " f32 %.4g TFLOPS", rep->best_matmul_f32_tflops);
            if (rep->best_matmul_f16_tflops > 0) fprintf(out, " f16 %.4g TFLOPS", rep->best_matmul_f16_tflops);
            fprintf(out, "\n");
        }
        fprintf(out, "   L2 flush: %.0f MiB written between repetitions; sizes %s; %.1f s\n",
                (double)rep->flush_bytes / 1048576.0, rep->sizes, rep->seconds);
        if (rep->sizes_note[0]) fprintf(out, "   sizes: %s\n", rep->sizes_note);
        if (rep->interrupted)
            fprintf(out, "   interrupted: %d of %d cases ran\n", rep->n_results, rep->cases_planned);
        if (rep->llc_bytes)
            fprintf(out, "   last-level cache: %.0f MiB; a case whose operands fit in it is marked \"in cache\"\n",
                    (double)rep->llc_bytes / 1048576.0);
        if (rep->clock_max_mhz > 0)
            fprintf(out, "   SM clock: %s; the copy ceiling's repetitions at %.0f MHz; MHz = the mean over each "
                    "case's repetitions\n", rep->clock_source, rep->copy.timing.clock.mean_mhz);
        else if (rep->device.is_gpu)
            fprintf(out, "   SM %s\n", rep->clock_source);
        fprintf(out, "   %-16s %-16s %10s %-7s %21s %7s %9s %5s %5s %s\n", "bench", "size", "figure", "unit",
                "min..max", "of ceil", "vendor", "reps", "MHz", "config / note");
        for (int j = 0; j < rep->n_results; j++) {
            const trr_bench_result *r = &rep->results[j];
            const trr_bench_def *def = trr_bench_get(r->bench);
            fprintf(out, "   %-16s %-16s ", def->name, r->size);
            if (r->outcome != TRR_BENCH_OK) {
                fprintf(out, "%10s %-7s %s\n", trr_bench_outcome_name(r->outcome), "", r->reason);
                continue;
            }
            char range[48], frac[16] = "-", vend[16] = "-";
            snprintf(range, sizeof range, "%.4g..%.4g", r->figure_lo, r->figure_hi);
            if (r->fraction > 0) snprintf(frac, sizeof frac, "%.0f%%%s", 100.0 * r->fraction, r->above_ceiling ? "!" : "");
            if (r->vendor_figure > 0) snprintf(vend, sizeof vend, "%.4g", r->vendor_figure);
            char mhz[16] = "-";
            const int low = trr_bench_clock_idle_low(&r->timing.clock, rep->clock_max_mhz);
            if (r->timing.clock.samples) snprintf(mhz, sizeof mhz, "%.0f%s", r->timing.clock.mean_mhz, low ? "*" : "");
            fprintf(out, "%10.4g %-7s %21s %7s %9s %5d %5s ", r->figure, def->unit, range, frac, vend, r->timing.reps,
                    mhz);
            print_config(r, out);
            if (r->above_ceiling) fprintf(out, "  ABOVE the copy ceiling (re-measured)");
            if (r->in_cache) fprintf(out, "  in cache");
            fprintf(out, "\n");
        }
        int failed = 0, skipped = 0, ok = 0, unsupported = 0, above = 0, low = 0, cached = 0;
        for (int j = 0; j < rep->n_results; j++) {
            failed += rep->results[j].outcome == TRR_BENCH_FAILED;
            skipped += rep->results[j].outcome == TRR_BENCH_SKIPPED;
            unsupported += rep->results[j].outcome == TRR_BENCH_UNSUPPORTED;
            ok += rep->results[j].outcome == TRR_BENCH_OK;
            above += rep->results[j].above_ceiling;
            cached += rep->results[j].outcome == TRR_BENCH_OK && rep->results[j].in_cache;
            low += rep->results[j].outcome == TRR_BENCH_OK &&
                   trr_bench_clock_idle_low(&rep->results[j].timing.clock, rep->clock_max_mhz);
        }
        fprintf(out, "   %d measured, %d skipped, %d unsupported, %d failed", ok, skipped, unsupported, failed);
        if (cached)
            fprintf(out, "; %d in cache (their operands fit in the last-level cache, so a figure above the copy "
                         "ceiling is expected there)", cached);
        if (above)
            fprintf(out, "; %d above the copy ceiling even after re-measuring it (\"!\": the copy path is slower "
                         "than a kernel's streaming, or the figure is wrong)", above);
        if (low)
            fprintf(out, "; %d timed while the driver, seeing the GPU idle, held the SM clock below %.0f%% of its top "
                         "(\"*\": the figure may read low; run the case again)", low, 100.0 * TRR_BENCH_CLOCK_LOW);
        fprintf(out, "\n\n");
    }
}
