/* `trireme bench`: the benchmarks of docs/ops.md, timed on the device against ceilings measured in the same run.
 *
 * Every benchmark case is a trr_case (core/cases.h), the same description the conformance engine checks, in the
 * packed layout at docs/ops.md's benchmark sizes. Each case is checked against the float64 reference (at sampled
 * elements when the output is large) before it is timed, so a wrong kernel never reports a figure.
 *
 * This is library code: it prints only to the FILE* it is given, and reports progress through a callback.
 * Thread safety: one run per context at a time, like every context call. */
#ifndef TRR_BENCH_H
#define TRR_BENCH_H

#include "backend.h"
#include "cases.h"
#include "cache_flush.h"
#include "layout.h"
#include "op_table.h"
#include "trireme.h"

#include <cjson/cJSON.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

/* ---- the benchmarks (sizes.c) ---- */

/* A benchmark: one of those the op definitions declare (trr_op_desc.benches, core/op_table.c), numbered in op
 * order from 0 to trr_bench_count() - 1. */
typedef int trr_bench_id;
#define TRR_BENCH_MAX 64 /* a bench mask (uint64_t) holds one bit per benchmark, the built-ins' and user ops' */
int trr_bench_count(void);

typedef enum trr_bench_sizes_mode { TRR_BENCH_SIZES_QUICK = 0, TRR_BENCH_SIZES_FULL, TRR_BENCH_SIZES_LIST } trr_bench_sizes_mode;

typedef struct trr_bench_def {
    trr_bench_id id;
    const char *name;        /* on the command line and in reports: "add_f32", "matmul_f16_relu" */
    const char *title;       /* for charts: "add f32 (GB/s = 12n/t)" */
    const char *unit;        /* "GB/s" or "TFLOPS" */
    const char *size_label;  /* what a LIST names: "n", "N", "M=N=K", "H", "BxMxNxK" */
    int compute_bound;       /* 1: counts FLOPs (matmul), judged against the vendor library; 0: bytes, against
                                copy bandwidth */
    trr_op op;
    int reads_only;          /* 1: its bytes are (nearly) all reads, which stream faster than a copy's reads and
                                writes, so a figure above the copy ceiling is expected (row_sum) */
    trr_bench_sizing sizing; /* what its sizes name */
    const trr_op_bench *row; /* its row in the op's definition */
} trr_bench_def;

const trr_bench_def *trr_bench_get(trr_bench_id id);
/* Whether a figure above the copy ceiling is suspect: a memory-bound bench that also writes (a cold first
 * ceiling, a copy path slower than a kernel's streaming, or a wrong figure). Such a figure has the ceiling
 * measured again and, still above, is flagged. */
int trr_bench_above_ceiling_suspect(trr_bench_id id, double figure, double copy_gbs);
/* By name ("add_f32"), by op name ("add", "matmul": the first benchmark of that op) or -1. */
int trr_bench_find(const char *name);
/* All benchmarks whose name or op matches name ("matmul" gives every matmul benchmark), as a bit mask of
 * (1 << id); 0 when nothing matches. */
uint64_t trr_bench_mask_for(const char *name);
/* 1 when benchmark earlier's times predict id's (the run's time budget): an earlier benchmark of the same op,
 * sizing and dtypes, differing in what costs next to nothing (matmul_f16 for matmul_f16_relu's epilogue). */
int trr_bench_predicts(trr_bench_id earlier, trr_bench_id id);

/* The cases of one benchmark. LIST is comma separated, each entry one number in the benchmark's size_label
 * (n for add/gelu, N for softmax/row_sum, M=N=K for matmul, H for rgb_to_grey with W = H·1600/1066 rounded),
 * or MxNxK for a matmul, BxMxNxK (batch B) for bmm_f16 and bmm_bf16; "2^24" is accepted for any number. Writes a malloc'd array (free() it). */
trr_status trr_bench_cases(trr_bench_id id, trr_bench_sizes_mode mode, const char *list, trr_case **out_cases,
                           int *out_count);
/* The work any case's figure counts, one definition for the bench and `trireme run`: bytes moved (every input
 * read and the output written once: 12n for add f32, 8n for gelu and softmax, 4MN for row_sum, whose per-row
 * output is not counted, 4HW for rgb_to_grey u8, (2MN + 2N) e for rms_norm and (2MN + 3N) e for layer_norm in
 * e-byte elements), or 2·B·M·N·K floating-point operations for matmul. */
double trr_bench_case_work(const trr_case *c);
/* 1 when the case's figure is TFLOPS (matmul), 0 when GB/s. */
int trr_bench_case_compute_bound(const trr_case *c);
/* trr_bench_case_work per time: GB/s, or TFLOPS for matmul; 0 when ms <= 0. */
double trr_bench_case_figure(const trr_case *c, double ms);
/* Quick mode on a CPU device keeps each case's whole cost (input fill, warm-up, the checked call, repetitions)
 * to about a second on a 2-core host, so the run stays under a minute: a case whose work passes these caps is
 * halved until it fits (add 2^27 took 70 s there, gelu 2^24 29 s, matmul f16 1024^3 13 s), and the report says
 * which sizes ran smaller. */
#define TRR_BENCH_CPU_QUICK_MAX_BYTES (48.0 * 1048576.0) /* add 2^22, gelu 2^22, softmax 4096x1536 */
#define TRR_BENCH_CPU_QUICK_MAX_FLOP 268435456.0         /* 2^28: 512^3, 64 batches of 128^3 */
/* Seconds of repetitions per case in quick mode on a CPU device (1 s in full mode, 0.5 s on GPUs). */
#define TRR_BENCH_CPU_QUICK_TARGET_S 0.25
/* 1 when c is within the caps above. */
int trr_bench_cpu_quick_fits(const trr_case *c);
/* The cases of one benchmark on a device: trr_bench_cases, except quick mode on a CPU device (is_gpu 0), which
 * halves each quick size until it is within the caps above (a size that lands on one already listed runs once)
 * and appends "bench size as smaller" for each to capped (", "-separated; the caller zeroes it first). */
trr_status trr_bench_device_cases(trr_bench_id id, trr_bench_sizes_mode mode, const char *list, int is_gpu,
                                  trr_case **out_cases, int *out_count, char *capped, size_t capped_cap);
/* Bytes docs/ops.md's figure counts (12n for add, ...), or 2·M·N·K for matmul: trr_bench_case_work. */
double trr_bench_work(trr_bench_id id, const trr_case *c);
/* The figure for one time: GB/s or TFLOPS. */
double trr_bench_figure(trr_bench_id id, const trr_case *c, double ms);
/* The size as people read it ("n=2^24", "4096x1024", "4096^3", "8192x4096x6144", "3x1066x1600"), and as a
 * number for the x axis of a chart (n, N, the cube root of M·N·K, H·W). */
void trr_bench_size_text(trr_bench_id id, const trr_case *c, char *out, size_t cap);
double trr_bench_size_x(trr_bench_id id, const trr_case *c);

/* ---- the last-level cache (llc.c) ---- */

/* The last-level data cache under a sysfs cache folder (/sys/devices/system/cpu/cpu0/cache): the size of the
 * highest-level index* that is not an instruction cache; 0 when none can be read. */
size_t trr_bench_llc_bytes_sysfs(const char *cache_dir);
/* The device's last-level cache: the host's (sysfs) for CPU devices; 0 (unknown) for GPUs, whose L2 size the
 * runtime does not report, so their figures keep the copy-ceiling rule alone. */
size_t trr_bench_device_llc_bytes(const trr_device_info *dev);
/* 1 when the case's working set (every operand, trr_case_bytes) fits in llc_bytes (0: unknown, never). Such a
 * case streams from the cache, so its figure may pass the copy ceiling without being wrong: "in cache". */
int trr_bench_in_cache(const trr_case *c, size_t llc_bytes);

/* Whether a measured result is suspect above the copy ceiling copy_gbs: trr_bench_above_ceiling_suspect, unless
 * its working set is in cache (r->in_cache), where streaming past a copy through memory is expected. */
struct trr_bench_result;
int trr_bench_result_suspect(const struct trr_bench_result *r, double copy_gbs);

/* ---- operands (operands.c): one case laid out on the device, with host copies of the inputs ---- */

typedef struct trr_bench_operand {
    trr_dtype dtype;
    int64_t count;          /* elements */
    size_t bytes;
    void *host;             /* inputs only: what was written */
    trr_buffer *buf;
} trr_bench_operand;

typedef struct trr_bench_setup {
    trr_case tcase;
    int n_inputs;
    unsigned char has[TRR_CASE_SLOTS]; /* the slots the op has (harness/layout.h) */
    trr_bench_operand op[TRR_CASE_SLOTS]; /* x, y, z, u (harness/layout.h); only the slots in has[] are used */
    trr_tensor t[TRR_CASE_SLOTS];
} trr_bench_setup;

/* Allocates and fills the inputs with random values (never zero) drawn from seed. */
trr_status trr_bench_setup_create(trr_context *ctx, const trr_case *c, uint64_t seed, trr_bench_setup *out);
void trr_bench_setup_destroy(trr_bench_setup *s);
/* One call of the op, exactly as it is timed. */
trr_status trr_bench_setup_call(trr_context *ctx, const trr_bench_setup *s);

/* ---- the check (check.c) ---- */

/* How much of an output is compared with the reference: every element while that costs at most
 * TRR_BENCH_CHECK_BUDGET reference operations (one per element-wise output, N per softmax or row_sum row, K per
 * matmul element), else a sample of that cost, and never fewer than TRR_BENCH_CHECK_SAMPLES elements
 * (TRR_BENCH_CHECK_ROWS whole rows for softmax). */
#define TRR_BENCH_CHECK_BUDGET (1ll << 24)
#define TRR_BENCH_CHECK_SAMPLES 256
#define TRR_BENCH_CHECK_ROWS 8

typedef struct trr_bench_check {
    int64_t checked;         /* output elements compared with the reference */
    int64_t total;           /* output elements, all scanned for unwritten and non-finite values */
    const char *metric;      /* the worst check: "ulp", "max_rel", "max_abs", "frobenius", "row_rel", "u8" */
    double error, bound, ratio;
    char message[320];       /* why it failed; "" on a pass */
} trr_bench_check;

/* Judges one output against the float64 reference with docs/ops.md's bounds (the rules of harness/conformance.h),
 * at a deterministic sample of elements drawn from seed (all of them for small outputs; whole rows for
 * softmax). call is the normalised call with x.mem (and y.mem) pointing at host copies of the inputs; out is
 * the whole output buffer read back, out2 (u8 outputs, else NULL) a second run's read-back after a different
 * poison: an element that differs between the two was not written. Every element of out is also scanned:
 * NaN (the poison) or Inf where the reference is finite fails. Returns TRR_OK on a pass, TRR_ERR_MISMATCH on
 * a failure (with *res saying why), another status when the reference itself could not run. */
trr_status trr_bench_check_output(const trr_case *c, const trr_call *call, const void *out, const void *out2,
                                  uint64_t seed, trr_bench_check *res);
/* Runs the case once on a poisoned output (twice for u8), reads it back and checks it (above). */
trr_status trr_bench_check_case(trr_context *ctx, const trr_bench_setup *s, uint64_t seed, trr_bench_check *res);
/* attention's part of the check (check_attention.c): whole query rows sampled within the budget. */
trr_status trr_bench_check_attention(const trr_case *c, const trr_call *call, const void *out, uint64_t seed,
                                     trr_bench_check *res);

/* ---- timing (timing.c) ---- */

/* ---- the clock (gpu_clock.c) ----
 * The driver lowers a GPU's SM clock when it sees the GPU idle, and a case timed at a lowered clock reads as a
 * slow kernel. The clock is sampled from a second thread (every 20 ms, through NVIDIA's management library, NVML,
 * loaded at run time) while a case's repetitions run, so a report says at what clock each figure was timed. */
typedef struct trr_bench_clock trr_bench_clock;
typedef struct trr_bench_clock_stats {
    int samples;              /* 0: not sampled */
    double min_mhz, mean_mhz, max_mhz;
    int idle_samples;         /* readings whose clock-event reasons held "GPU idle" */
} trr_bench_clock_stats;
/* A case whose clock fell below this fraction of the GPU's top SM clock while the driver called it idle. */
#define TRR_BENCH_CLOCK_LOW 0.85

/* Finds dev in NVML (no_clock: does not, and says so). Never fails: *out is set (NULL only without host memory), and without NVML or an NVIDIA GPU
 * the sampler does nothing and trr_bench_clock_source() says why. */
void trr_bench_clock_open(const trr_device_info *dev, int no_clock, trr_bench_clock **out);
void trr_bench_clock_close(trr_bench_clock *c);
/* "NVML, driver 580.x, SM clock up to 1980 MHz", or why the clock is not sampled */
const char *trr_bench_clock_source(const trr_bench_clock *c);
/* The GPU's top SM clock; 0 when not sampled */
unsigned trr_bench_clock_max_mhz(const trr_bench_clock *c);
/* Sampling from begin to end (NULL c: nothing; end then gives samples 0). */
void trr_bench_clock_begin(trr_bench_clock *c);
void trr_bench_clock_end(trr_bench_clock *c, trr_bench_clock_stats *out);
/* Whether the driver's idle governor lowered the clock under a case: an idle reading and a clock below
 * TRR_BENCH_CLOCK_LOW of max_mhz (a power cap lowers it too, under load: that is the figure's clock, not a flaw of
 * the method). */
int trr_bench_clock_idle_low(const trr_bench_clock_stats *s, double max_mhz);

typedef struct trr_bench_timing {
    int reps;
    double median_ms, min_ms, max_ms;
    double p25_ms, p75_ms;       /* the quartiles of the repetitions' times */
    trr_bench_clock_stats clock; /* over the repetitions (not the warm-up) */
} trr_bench_timing;

/* A buffer written between repetitions, outside the timed region, so each repetition starts with a cold L2
 * (or last-level cache on a CPU): core/cache_flush.h. */
typedef trr_cache_flush trr_bench_flush;

/* What is timed: one call of fn(ctx, user) between trr_timer_start and trr_timer_stop. */
typedef trr_status (*trr_bench_fn)(trr_context *ctx, void *user);

/* The timing of n repetitions' times ms[0..n) (sorted in place): the median, the quartiles (linear
 * interpolation between order statistics), min and max. The clock stats are left alone. */
void trr_bench_timing_of(double *ms, int n, trr_bench_timing *out);

/* Warms up, then times reps repetitions (0: as many as fit in target_s, at least 5 and at most 200), flushing
 * before each, with clock (may be NULL) sampling the repetitions. */
trr_status trr_bench_time(trr_context *ctx, trr_bench_fn fn, void *user, const trr_bench_flush *flush,
                          trr_bench_clock *clock, int reps, double target_s, trr_bench_timing *out);

/* Several calls timed side by side (a case and its vendor ceiling): warmed up together, then repetition by
 * repetition each call in turn, each after its own flush, so that all of them run under the same clocks and
 * power state; outs[j] is items[j]'s timing. reps 0: as many rounds as fit in target_s (5 to 200). */
#define TRR_BENCH_TIMED_MAX 4
typedef struct trr_bench_timed {
    trr_bench_fn fn;
    void *user;
} trr_bench_timed;
trr_status trr_bench_time_each(trr_context *ctx, const trr_bench_timed *items, int n, const trr_bench_flush *flush,
                               trr_bench_clock *clock, int reps, double target_s, trr_bench_timing *outs);

/* ---- ceilings (ceilings.c, cublas.c) ---- */

typedef struct trr_bench_copy_ceiling {
    double gbs;              /* (read + written bytes) / t; 0 when not measured (null in the JSON) */
    size_t bytes;            /* bytes copied per repetition */
    trr_bench_timing timing;
    char note[256];          /* why it was not measured */
    /* A memory-bound figure above the ceiling has it measured once more (a bigger buffer, more repetitions):
     * first_gbs is the first measurement, gbs the higher of the two. */
    int remeasured;
    double first_gbs;
} trr_bench_copy_ceiling;

trr_status trr_bench_copy_ceiling_measure(trr_context *ctx, const trr_device_info *dev,
                                          const trr_bench_flush *flush, trr_bench_clock *clock,
                                          trr_bench_copy_ceiling *out);
/* The second measurement: twice the buffer (at most a quarter of device memory) and a longer timing target;
 * keeps the higher figure in *c and sets c->remeasured. */
trr_status trr_bench_copy_ceiling_remeasure(trr_context *ctx, const trr_device_info *dev,
                                            const trr_bench_flush *flush, trr_bench_clock *clock,
                                            trr_bench_copy_ceiling *c);

/* The CPU backend's vendor matmul, the system BLAS's sgemm (blas.c): NULL for a device of another backend, else a
 * handle whose library is described in name. */
typedef struct trr_bench_blas trr_bench_blas;
trr_bench_blas *trr_bench_blas_open(trr_context *ctx, char *name, size_t name_cap);
void trr_bench_blas_close(trr_bench_blas *b);
/* As trr_bench_vendor_call, for the CPU: f32 cases only. */
trr_status trr_bench_blas_call(trr_bench_blas *b, trr_context *ctx, const trr_bench_setup *s, trr_bench_timed *out,
                               const char **out_what);

/* The vendor matmul library (cuBLAS on CUDA devices, loaded at run time; the system BLAS on the CPU). */
typedef struct trr_bench_vendor trr_bench_vendor;

/* Opens the vendor library for ctx's device. Never fails: when there is none, *out is still set and
 * trr_bench_vendor_reason() says why it cannot run. */
void trr_bench_vendor_open(trr_context *ctx, trr_bench_vendor **out);
void trr_bench_vendor_close(trr_bench_vendor *v);
/* "cuBLAS 13.0.2 (libcublas.so.13)", or "" when unavailable */
const char *trr_bench_vendor_name(const trr_bench_vendor *v);
/* "" when available */
const char *trr_bench_vendor_reason(const trr_bench_vendor *v);
/* The vendor's matmul for the case on the setup's device buffers (f16 in, f32 compute and reductions through
 * cublasGemmEx; f32 through cublasSgemm without TF32), as a call to time beside the case's own (same device
 * timer, same flush): *out is valid until the next call for v. The epilogue is not applied (the vendor's plain
 * product is the ceiling). *out_what names the call, or with TRR_ERR_UNSUPPORTED says why the case or the device
 * has no vendor equivalent. */
trr_status trr_bench_vendor_call(trr_bench_vendor *v, trr_context *ctx, const trr_bench_setup *s,
                                 trr_bench_timed *out, const char **out_what);

/* ---- a run (run.c) ---- */

typedef enum trr_bench_outcome {
    TRR_BENCH_OK = 0,
    TRR_BENCH_SKIPPED,     /* over the time or memory budget */
    TRR_BENCH_UNSUPPORTED, /* the device cannot run the case */
    TRR_BENCH_FAILED       /* the check failed or the run failed: no figure */
} trr_bench_outcome;

typedef struct trr_bench_result {
    trr_bench_id bench;
    trr_case tcase;
    char size[48];           /* trr_bench_size_text */
    double x;                /* trr_bench_size_x */
    trr_bench_outcome outcome;
    trr_status status;       /* TRR_ERR_MISMATCH for a failed check, else the failing call's status */
    char reason[320];        /* why it is not OK; "" otherwise */
    trr_bench_timing timing;
    double figure, figure_lo, figure_hi; /* at the median, slowest and fastest repetitions */
    double figure_p25, figure_p75;       /* the figure's quartiles: at the p75 and the p25 times */
    double ceiling;          /* the figure of the ceiling it is judged against (copy GB/s or vendor TFLOPS) */
    double fraction;         /* figure / ceiling; 0 when there is no ceiling (null in the JSON) */
    double vendor_figure;    /* matmul: the vendor library at the same size; 0 when not measured (null) */
    int above_ceiling;       /* memory-bound: the figure is above the copy ceiling even after it was re-measured */
    int in_cache;            /* the working set fits in the last-level cache (trr_bench_in_cache): never flagged */
    trr_bench_timing vendor_timing;
    trr_config config;       /* trr_config_last after the checked run */
    trr_bench_check check;
} trr_bench_result;

typedef struct trr_bench_report {
    trr_device_info device;
    char library_version[16];  /* TRR_VERSION_STRING */
    char date[32];             /* UTC, ISO 8601 */
    char sizes[16];            /* "quick", "full" or "list" */
    int reps_requested;        /* 0: automatic */
    double budget_s;
    uint64_t seed;
    size_t flush_bytes;
    size_t llc_bytes;          /* the last-level cache (trr_bench_device_llc_bytes); 0 when unknown */
    char sizes_note[2400];     /* the sizes the mode ran smaller on this device (quick on a CPU device), or "" */
    trr_bench_copy_ceiling copy;
    char clock_source[256];    /* trr_bench_clock_source: what sampled the SM clock, or why nothing did */
    double clock_max_mhz;      /* the GPU's top SM clock; 0 when not sampled */
    char vendor[128];          /* the vendor library used, or "" */
    char vendor_note[256];     /* why it is missing */
    int n_results;
    trr_bench_result *results;
    int cases_planned;         /* the cases the run was to time; n_results of them ran */
    int interrupted;           /* the run ended early (options.stop), after n_results of cases_planned */
    double seconds;
    char command_line[1024];   /* options.command_line, "" when none was given */
    /* Compute ceilings: the runtime's own best matmul figure of this run (TFLOPS), 0 when no such case ran.
     * Not a hardware peak: the public API has no FMA-chain kernel, so the best measured matmul stands in. */
    double best_matmul_f32_tflops, best_matmul_f16_tflops;
} trr_bench_report;

/* Called before (result == NULL) and after each case. index is 0-based over total cases; eta_s the estimated
 * seconds left (< 0 when unknown). */
typedef void (*trr_bench_progress_fn)(void *user, int index, int total, const char *name,
                                      const trr_bench_result *result, double elapsed_s, double eta_s);

typedef struct trr_bench_options {
    uint64_t bench_mask;     /* (1 << trr_bench_id); 0 is every benchmark */
    trr_bench_sizes_mode sizes;
    const char *size_list;   /* TRR_BENCH_SIZES_LIST: applied to every selected benchmark */
    int reps;                /* 0: automatic */
    double budget_s;         /* skip a case predicted to take longer per repetition; 0: 2 s off GPUs, 30 s on */
    uint64_t seed;
    int no_vendor;           /* skip the vendor library */
    int no_clock;            /* do not sample the SM clock (gpu_clock.c) */
    trr_bench_progress_fn progress; /* optional */
    void *user;
    const char *command_line; /* optional: what the JSON report names as the command that made it */
    /* optional: once it is nonzero (a signal handler may set it), the run ends before its next case and the
     * report holds the cases run so far, marked interrupted */
    const volatile sig_atomic_t *stop;
} trr_bench_options;

/* Runs the selected benchmarks on ctx. Failed and skipped cases are in the report, not in the status; another
 * status only when the run itself could not go on (bad options, host memory). Free with trr_bench_free. */
trr_status trr_bench_run(trr_context *ctx, const trr_bench_options *options, trr_bench_report **out_report);
void trr_bench_free(trr_bench_report *report);
/* "ok", "skipped", "unsupported", "FAILED" */
const char *trr_bench_outcome_name(trr_bench_outcome outcome);
/* Cases that failed their check or run, over all reports. */
int trr_bench_failures(const trr_bench_report *const *reports, int n);

/* ---- reports ---- */

/* A table per device: case, figure, min-max, fraction of the ceiling, vendor, config. */
void trr_bench_print(const trr_bench_report *const *reports, int n, FILE *out);
/* JSON (cJSON): {"tool", "version", "date", "reports": [{device, backend, driver, library_version, date,
 * ceilings, results: [...]}]}; bench/README.md lists every key. TRR_ERR_IO when the file cannot be written. */
trr_status trr_bench_json(const trr_bench_report *const *reports, int n, char **out_text);
trr_status trr_bench_write_json(const trr_bench_report *const *reports, int n, const char *path);
/* One row per device and case. */
trr_status trr_bench_write_csv(const trr_bench_report *const *reports, int n, const char *path);
/* One SVG chart per benchmark into dir (created when missing): <dir>/<bench>.svg. */
trr_status trr_bench_write_plots(const trr_bench_report *const *reports, int n, const char *dir, FILE *log);
/* Prints the cases two JSON reports share, side by side with the ratio B / A, each side's repetitions and whether
 * the difference is within the run-to-run spread (trr_bench_spreads_overlap). TRR_ERR_IO when a file cannot be
 * read or is not a bench report (the reason goes to out). */
trr_status trr_bench_compare(const char *path_a, const char *path_b, FILE *out);
/* One side of --compare: a figure's spread over its repetitions, the interquartile range [lo, hi]
 * (figure_p25..figure_p75), or min..max where a report from before the quartiles has only those. */
typedef struct trr_bench_spread {
    int known;     /* 0: no figure (not ok, or no range in the report) */
    int quartiles; /* 1: lo..hi are the quartiles; 0: min..max */
    int reps;      /* 0 when the report does not say */
    double lo, hi;
} trr_bench_spread;
/* The spread of one result object of a bench JSON report. */
trr_bench_spread trr_bench_spread_of(const cJSON *result);
/* 1 when the two spreads overlap (the difference is within the run-to-run spread), 0 when they do not (a real
 * difference), -1 when either is unknown. Quartiles, not min..max: one slow repetition (a page fault, a clock
 * dip) stretches a min..max range across a 30x gap, while the middle half of the repetitions stays put. */
int trr_bench_spreads_overlap(const trr_bench_spread *a, const trr_bench_spread *b);
/* A bench JSON report's parsed document, or NULL when it cannot be read or is not one (the reason goes to out). */
cJSON *trr_bench_json_load(const char *path, FILE *out);
/* Appends the reports of a bench JSON file to reports[*n..cap) (free each with trr_bench_free). The figures,
 * ranges, ceilings, device identities, outcomes, cases and configs come back; checks do not. */
trr_status trr_bench_load_reports(const char *path, trr_bench_report **reports, int cap, int *n, FILE *log);

/* ---- one physical GPU seen through several APIs (physical.c) ----
 * Two devices are one physical GPU when both are GPUs of different backends and their UUIDs match, or, where
 * either lacks a UUID, their PCI bus ids match. CPU devices (PoCL, lavapipe, cpu) are never grouped: they share
 * the host but report no identity to prove it, and their figures are not a GPU's. */
int trr_bench_same_gpu(const trr_device_info *a, const trr_device_info *b);
/* group_of[i] = the lowest index j with trr_bench_same_gpu(j, i) (i itself when none). Returns the number of
 * groups with two devices or more. */
int trr_bench_gpu_groups(const trr_device_info *const *devices, int n, int *group_of);
/* The cross-API view of the reports: per physical GPU with two devices or more, per bench and size, each API's
 * figure, its fraction of the GPU's copy ceiling (the best any of its APIs measured) and of the best API. */
void trr_bench_print_physical(const trr_bench_report *const *reports, int n, FILE *out);
cJSON *trr_bench_physical_json(const trr_bench_report *const *reports, int n);
/* One SVG per bench and physical GPU: <dir>/<bench>_gpu<k>.svg, one line per API; and one grouped-bar chart per
 * physical GPU, <dir>/same_gpu<k>.svg: every bench and size, a bar per API at its fraction of the GPU's ceiling. */
trr_status trr_bench_write_physical_plots(const trr_bench_report *const *reports, int n, const char *dir, FILE *log);

/* The view all three outputs (text, JSON, charts) draw from. */
#define TRR_BENCH_VIEW_MAX_APIS 8
#define TRR_BENCH_VIEW_MAX_CASES 96
typedef struct trr_bench_gpu_case {
    trr_bench_id bench;
    const char *size;
    double ceiling; /* the GPU's copy ceiling, or for matmul the vendor library's figure; 0 when none */
    double best;    /* the best API's figure; 0 when none ran */
    const trr_bench_result *api[TRR_BENCH_VIEW_MAX_APIS]; /* per member, NULL when that API did not run it */
} trr_bench_gpu_case;
typedef struct trr_bench_gpu_view {
    const trr_bench_report *member[TRR_BENCH_VIEW_MAX_APIS]; /* the first report of each API (device spec) */
    int n;
    /* every report of this GPU, and which member's API each is: reports merged from several files (--replot)
     * give one API several reports */
    const trr_bench_report *report[TRR_BENCH_VIEW_MAX_APIS * 8];
    int api_of[TRR_BENCH_VIEW_MAX_APIS * 8];
    int n_reports;
    double copy_gbs;       /* the best copy ceiling any of its APIs measured */
    const char *copy_from; /* the spec that measured it */
    int n_cases;
    trr_bench_gpu_case cases[TRR_BENCH_VIEW_MAX_CASES];
} trr_bench_gpu_view;
/* The physical GPUs of the reports that two APIs or more reached (calloc'ed, free it); NULL and 0 when none. */
trr_bench_gpu_view *trr_bench_gpu_views(const trr_bench_report *const *reports, int n, int *out_n);
/* The grouped-bar chart of one view (plot_same_gpu_svg.c). */
trr_status trr_bench_write_same_gpu_svg(const trr_bench_gpu_view *v, const char *path);
/* What runs the reports come from, for a chart's subtitle (plot_svg.c): their date, or the first and last of
 * their dates when they differ (reports merged by --replot), the trireme versions that made them, and with
 * with_devices each device once: "2026-12-01T10:00:00Z .. 2026-12-01T11:00:00Z, trireme 0.1.0: cpu:0, vulkan:0". */
void trr_bench_runs_text(const trr_bench_report *const *reports, int n, int with_devices, char *out, size_t cap);
/* SVG text with &, <, >, " escaped (plot_svg.c). */
void trr_svg_text(FILE *f, const char *s);

/* ---- the CLI entry point (cli/cmd_bench.c) ---- */
int trr_cli_bench(int argc, char **argv);

#endif
