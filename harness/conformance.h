/* The conformance engine: runs the case list (cases.h) on one context and checks every output against the
 * float64 reference with the bounds of docs/ops.md, poisoned outputs and guard bytes around every output view.
 *
 * It is library code: it never prints on its own. Progress goes to a callback and reports are written to a
 * FILE* (or a path) the caller names. Thread safety: one run per context at a time, like every context call.
 *
 * Checks, per case (what "worst error" means in each):
 *   copy (every dtype), add f32   bit-exact; error = largest distance in units in the last place, bound 0
 *   gelu, softmax f32              max |err| / max(|ref|, FLT_MIN) <= 1e-5; softmax also max |err| <= 1e-6
 *   row_sum                        per row |err| / (sum |x|) <= 1e-6
 *   matmul with f32 output         ||err||_F / ||ref||_F <= 1e-5
 *   rms_norm, layer_norm f32       every element |err| / (|ref| + |w[c]| + |b[c]|) <= 1e-5 (w, b of its column;
 *                                  b = 0 for rms_norm); a NaN reference (eps = 0 with a constant or zero row)
 *                                  must come back NaN; layer_norm of a constant row exactly b, in every dtype
 *   rgb_to_grey f32 output         max relative error <= 1e-5 (as gelu)
 *   any f16 output                 ||err||_F / ||ref||_F <= 2e-3 and max |err| / max(|ref|, floor) <= 1e-2,
 *                                  floor = max(2^-14, 2^-10 * rms(ref) * max(1, (K/4096)^1.5)): 2^-14 is
 *                                  the smallest normal half (below it a half has only absolute precision)
 *                                  and the rms term keeps an element that cancels to almost nothing, in a
 *                                  matmul whose outputs are large, from being judged by its own tiny size;
 *                                  it grows with a matmul's depth K past 4096 as the f32 accumulation error
 *                                  does (trr_conf_f16_floor says why).
 *   any bf16 output                as f16 with ||err||_F / ||ref||_F <= 8e-3 and max relative error <= 4e-2,
 *                                  floor = max(2^-126, 2^-7 * rms(ref) * max(1, (K/4096)^1.5)): the same
 *                                  rule in bf16's epsilon (trr_conf_bf16_floor says why)
 *   matmul of 8-bit floats         f32 output ||err||_F / ||ref||_F <= 1e-3; f16 and bf16 outputs as above with
 *                                  the floor at least 2^-8 * rms(ref) / the relative bound, the FP8 tensor
 *                                  cores' summation error (trr_conf_product_floor says why)
 *   rgb_to_grey u8 output          equal to round-to-nearest of docs/ops.md's f32 expression (0.2989·R first,
 *                                  then + 0.5870·G, then + 0.1140·B, each rounded to f32), clamped; where
 *                                  the exact value lies within 1e-4 of a .5 tie either neighbour is accepted
 *                                  (a device may contract to FMA or round ties differently); error = largest
 *                                  distance in units, bound 0
 * In every case an output that is NaN or Inf where the reference is finite fails, an element still holding its
 * poison fails (u8 outputs are run twice with two poisons, since any u8 value is a legal result), and a byte
 * around an output view that changed fails. Inputs are random and never zero; the padding between input rows
 * holds NaN (f32/f16), so a kernel that computes with elements outside its view produces NaN and fails. */
#ifndef TRR_CONFORMANCE_H
#define TRR_CONFORMANCE_H

#include "cases.h"
#include "trireme.h"

#include <stdint.h>
#include <stdio.h>

typedef enum trr_conf_outcome { TRR_CONF_PASS = 0, TRR_CONF_FAIL, TRR_CONF_UNSUPPORTED } trr_conf_outcome;

typedef struct trr_conf_result {
    trr_case tcase;
    char name[96];          /* trr_case_describe() */
    trr_conf_outcome outcome;
    const char *metric;     /* the check with the worst ratio: "ulp", "max_rel", "max_abs", "frobenius",
                               "row_rel", "u8" or "" */
    double error;           /* that check's measured value */
    double bound;
    double ratio;           /* error / bound; for the bound-0 checks, the error itself (0 passes) */
    double device_ms;       /* trr_timer_start/stop around the op call */
    double wall_ms;         /* the whole case, including the reference */
    char message[320];      /* why it failed or is unsupported; "" on a pass */
} trr_conf_result;

/* Results per op and signature. */
typedef struct trr_conf_summary {
    trr_op op;
    trr_dtype in_dtype, out_dtype;
    int mixed;              /* the second input is in2_dtype (trr_case.mixed) */
    trr_dtype in2_dtype;
    int pass, fail, unsupported;
    double worst_ratio;     /* over the cases that ran */
    char first_problem[420];/* the first failure (or, with no failure, the first unsupported reason) */
} trr_conf_summary;

typedef struct trr_conf_report {
    trr_device_info device;
    uint64_t seed;
    int quick;
    int n_results;
    trr_conf_result *results;
    int n_summary;
    trr_conf_summary summary[128]; /* one per (op, signature): 68 with cast and the 8-bit float products */
    int passed, failed, unsupported;
    double seconds;
    char date[32];           /* when the run started, UTC ISO 8601 */
    char command_line[1024]; /* options.command_line, "" when none was given */
} trr_conf_report;

/* Called after each case: index is 0-based, total the number of cases selected, elapsed_s since the start. */
typedef void (*trr_conf_progress_fn)(void *user, int index, int total, const trr_conf_result *result,
                                     double elapsed_s);

typedef struct trr_conf_options {
    uint64_t seed;       /* inputs of case i come from (seed, i), so one case reruns alone identically */
    int quick;           /* the quick subset */
    uint64_t op_mask;    /* bit (1 << op) selects op (user ops included: op < TRR_OP_LIMIT); 0 selects every op */
    trr_conf_progress_fn progress; /* optional */
    void *user;
    const char *command_line; /* optional: what the JSON report names as the command that made it */
    /* optional: of the cases quick and op_mask select, only those for which this returns non-zero run */
    int (*select)(const trr_case *c, void *select_user);
    void *select_user;
} trr_conf_options;

/* Runs the selected cases on ctx. Returns TRR_OK when every case ran to a verdict (failures are in the report,
 * not in the status); another status only when the engine itself could not go on (host memory, a bad
 * argument). *out_report is set on TRR_OK and freed with trr_conformance_free. */
trr_status trr_conformance_run(trr_context *ctx, const trr_conf_options *options, trr_conf_report **out_report);
void trr_conformance_free(trr_conf_report *report);

/* The ops x devices matrix: one row per op and signature, one column per report, each cell the outcome and
 * worst ratio ("ok 0.12", "FAIL 3.4", "unsup", "-" where the row was not run). Then each failing case. */
trr_status trr_conformance_print_matrix(const trr_conf_report *const *reports, int n_reports, FILE *out);

/* JSON with cJSON: {"tool", "version", "trireme_version", "command_line", "host", "commit", "date",
 * "device_uuids", "reports": [{device, seed, quick, seconds, passed, failed, unsupported,
 * summary: [...], cases: [...]}]}. TRR_ERR_IO when the file cannot be written. */
trr_status trr_conformance_write_json(const trr_conf_report *const *reports, int n_reports, const char *path);
/* The same document as a malloc'd string (free() it). */
trr_status trr_conformance_json(const trr_conf_report *const *reports, int n_reports, char **out_text);

/* "pass", "FAIL", "unsupported" */
const char *trr_conf_outcome_name(trr_conf_outcome outcome);

#endif
