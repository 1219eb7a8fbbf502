/* The conformance engine's verdict on one output: the bounds of docs/ops.md, poison, guard bytes (conformance.h lists
 * the rules). Split from the engine so the rules can be read, and tested, apart from the buffer handling. */
#ifndef TRR_CONFORMANCE_CHECK_H
#define TRR_CONFORMANCE_CHECK_H

#include "backend.h"
#include "conformance.h"

#include <stddef.h>
#include <stdint.h>

/* The poison written into every output element before a run. f32/f16: negative quiet NaNs with a payload no
 * arithmetic produces; the one-byte dtypes (u8, the 8-bit floats) have no such value, so their outputs run twice,
 * with each of the two byte poisons. */
#define TRR_CONF_POISON_F32 0xFFC5A5A5u
#define TRR_CONF_POISON_F16 0xFE5Au
#define TRR_CONF_POISON_BF16 0xFFE5u
#define TRR_CONF_POISON_U8_A 0xA5u
#define TRR_CONF_POISON_U8_B 0x5Au

/* The poison for an output of dtype dt (the one-byte dtypes: the first of their two). */
uint32_t trr_conf_poison(trr_dtype dt);

typedef struct trr_conf_check_input {
    const trr_case *tcase;
    const trr_call *call;   /* normalised on the device tensors; x.mem (and y.mem) point at host input copies */
    const uint8_t *before;  /* the output buffer as written before the run: guard pattern and poison */
    const uint8_t *after;   /* the output buffer read back after the run */
    const uint8_t *after2;  /* u8 outputs: the second run (poisoned with TRR_CONF_POISON_U8_B); else NULL */
    const uint8_t *before2;
    size_t bytes;           /* size of the output buffer */
    const double *ref;      /* trr_reference_run's packed result */
} trr_conf_check_input;

/* Fills outcome (pass or fail), metric, error, bound, ratio and message of *result. TRR_ERR_OUT_OF_MEMORY when
 * host memory for the bookkeeping runs out (result untouched). */
trr_status trr_conf_check(const trr_conf_check_input *in, trr_conf_result *result);

/* One element of a host array as a double: f32, f16 or bf16 (exactly widened) or u8. */
double trr_conf_load(const void *base, trr_dtype dtype, int64_t index);

/* The pieces of the rules that the benchmarks' sampled check (bench/check.c) judges by too, so both verdicts
 * agree on what passes. */

/* The smallest normal f16 (2^-14): the least the f16 relative-error floor can be. */
#define TRR_CONF_F16_MIN_NORMAL 6.103515625e-05

/* The denominator floor of the f16 relative error: max(2^-14, 2^-10 * rms(ref) * max(1, (K / 4096)^1.5)), K the
 * matmul depth (any other op: 1). The K term follows the classical bound on a sum of K products, K * u *
 * sum|a*b|, which grows as K^2 times a typical product while rms(ref) grows as K^0.5: at K = 8192 cuBLAS itself
 * (f32 compute, no reduced-precision reduction) misses 2^-10 * rms (tools/f16_bound.py checks it). Up to
 * K = 4096 nothing changes; the suite's one deeper case (1 x 17 x 4099) gets 0.1% more. */
double trr_conf_f16_floor(double rms, int64_t k);

/* The smallest normal bf16: f32's, 2^-126. */
#define TRR_CONF_BF16_MIN_NORMAL 1.1754943508222875e-38

/* The bf16 floor, by the same rule in bf16's unit: max(2^-126, 2^-7 * rms(ref) * max(1, (K / 4096)^1.5)).
 * The f16 floor's 2^-10 is f16's machine epsilon (the spacing at 1: 10 mantissa bits), not its rounding unit
 * 2^-11, so bf16's counterpart is its epsilon 2^-7 (7 mantissa bits), and the bounds scale alike (docs/ops.md, Correctness bounds:
 * f16 2e-3 / 1e-2, bf16 8e-3 / 4e-2, 4x and 8x the epsilon ratio's 1/8 step). The smallest normal is bf16's own
 * (f32's exponent range). */
double trr_conf_bf16_floor(double rms, int64_t k);
/* The floor for a half-precision output dtype (f16 or bf16). */
double trr_conf_half_floor(trr_dtype dt, double rms, int64_t k);
/* The error FP8 tensor cores make in summing, relative to rms(ref): 2^-8. They keep about 14 significant bits
 * within a K tile, an error of the result's scale, not of each element's; cuBLASLt's FP8 GEMM makes single
 * errors up to about 2^-9 of it (largest near K = 128), so the floor sits at twice that (docs/ops.md, 8-bit float
 * products, has the measurement). */
#define TRR_CONF_F8_SUM_ERROR 3.90625e-03
/* The relative-error floor of a half output of a product of inputs in dtype in: the half floor, and for 8-bit
 * float inputs at least the floor under which an error of TRR_CONF_F8_SUM_ERROR * rms passes rel_bound (f16 1e-2,
 * bf16 4e-2): an element that cancels to near zero is judged against the sum's error scale, as the Frobenius
 * bound of an f32 output is (1e-3). */
double trr_conf_product_floor(trr_dtype out, trr_dtype in, double rms, int64_t k, double rel_bound);

/* How an op's output is judged. */
typedef enum trr_conf_mode {
    TRR_CONF_MODE_BITEXACT, /* copy, add f32 */
    TRR_CONF_MODE_MAX_REL,  /* gelu f32, softmax f32 (plus max abs), rgb_to_grey f32 */
    TRR_CONF_MODE_ROW_REL,  /* row_sum */
    TRR_CONF_MODE_FROB,     /* matmul with f32 output */
    TRR_CONF_MODE_FROB_F8,  /* matmul of 8-bit floats with f32 output: as FROB, the tensor cores' FP8 bound */
    TRR_CONF_MODE_F16,      /* any other f16 output */
    TRR_CONF_MODE_BF16,     /* any other bf16 output: as f16, with bf16's bounds and floor */
    TRR_CONF_MODE_GREY_U8,  /* rgb_to_grey u8 */
    TRR_CONF_MODE_NORM      /* rms_norm, layer_norm f32: |err| <= 1e-5 (|y_ref| + |w| + |b|) per element */
} trr_conf_mode;

trr_conf_mode trr_conf_mode_of(const trr_case *c);
/* The modes judged by a Frobenius norm over each matrix (FROB, FROB_F8, F16, BF16). */
int trr_conf_mode_frobenius(trr_conf_mode mode);

/* One metric's worst value and where it occurred; metric NULL: the metric is not used. */
typedef struct trr_conf_worst {
    const char *metric;
    double value, bound;
    int64_t r, c;
    double got, want;
    int seen;
} trr_conf_worst;

/* The metrics (and bounds) a mode judges by; *w2 is left unused where one metric suffices. */
void trr_conf_worst_init(trr_conf_mode mode, trr_op op, trr_conf_worst *w1, trr_conf_worst *w2);
void trr_conf_note(trr_conf_worst *w, double value, int64_t r, int64_t c, double got, double want);
/* Worst value over bound (the value itself for bit-exact metrics); 0 before any value. */
double trr_conf_ratio(const trr_conf_worst *w);
int trr_conf_fails(const trr_conf_worst *w);
/* The verdict of a check's two measures: appends a sentence for each that fails to msg (for the whole-output
 * measures of mode, "over N checked elements" when checked >= 0), returns the worse measure in *out_top and 1
 * when one failed. */
int trr_conf_judge(const trr_conf_worst *w1, const trr_conf_worst *w2, trr_conf_mode mode, long long checked,
                   char *msg, size_t cap, const trr_conf_worst **out_top);

/* Distance in representable values between two floats of the output dtype (0 when the bits are equal). */
double trr_conf_ulp_distance(trr_dtype dt, double got, double want);
/* docs/ops.md's grey value (rgb_to_grey) computed in f32 in its order, each step rounded to f32. */
float trr_conf_grey_f32(double r, double g, double b);
double trr_conf_clamp_u8(double v);
/* The u8 grey verdict for one pixel: got must equal docs/ops.md's f32 expression rounded and clamped (*out_expect);
 * where the exact value lies within 1e-4 of a .5 tie either neighbour passes, since a device may contract to
 * FMA or round ties its own way. Returns 1 when got passes. */
int trr_conf_grey_u8_ok(double r, double g, double b, double got, double *out_expect);
/* The verdict on one element for the modes that judge each element alone (bit-exact, u8 grey, max relative,
 * row relative, norm): notes it in w1 (and in w2 for softmax's absolute bound) and returns 1. rgb is the pixel's
 * R, G, B (grey only), row_abs the row's sum of |x| (row relative) or the column's |w| + |b| (norm,
 * trr_conf_norm_scale). Returns 0, noting nothing, for the modes judged over the whole output (Frobenius, f16),
 * which the caller accumulates its own way. */
int trr_conf_judge_element(trr_conf_mode mode, trr_dtype odt, double got, double want, const double rgb[3],
                           double row_abs, int64_t r, int64_t c, trr_conf_worst *w1, trr_conf_worst *w2);

/* The row norms' per-column term of the f32 bound: |w[c]| + |b[c]| (layer_norm), |w[c]| (rms_norm), read from
 * call's host copies (y.mem = w, u.mem = b). */
double trr_conf_norm_scale(const trr_call *call, int64_t c);

/* ---- attention (conformance_attention.c; docs/ops.md, Correctness bounds) ---- */

/* The outputs of one attention case around its run, with the call's inputs' host copies (x.mem, y.mem, u.mem). */
typedef struct trr_conf_attention_input {
    const trr_case *tcase;
    const trr_call *call;
    const uint8_t *o_before, *o_after; /* o's buffer: guard pattern and poison, then as read back */
    size_t o_bytes;
    const uint8_t *lse_before, *lse_after; /* lse's buffer, NULL when the case has none */
    size_t lse_bytes;
} trr_conf_attention_input;

/* Judges o per (batch, head) matrix (half outputs as every half output plus the score term; f32 by
 * ‖err‖_F / ‖ref‖_F <= trr_conf_attention_f32_bound) and lse per element (|err| <=
 * trr_conf_attention_lse_bound); a row that sees no key must give exactly 0 and -inf; poison, guard bytes and
 * non-finite outputs fail as everywhere. Computes the float64 reference itself. Fills the verdict of *result as
 * trr_conf_check does. */
trr_status trr_conf_check_attention(const trr_conf_attention_input *in, trr_conf_result *result);
/* The error f32 scores bring, relative: 2^-24 (D + 8) L, L a logit scale (docs/ops.md, attention's bounds). Half o
 * adds it to its Frobenius bound, and times V (the kv head's largest |v|) to each element's allowance. */
double trr_conf_attention_score_term(int64_t head_dim, double logit_scale);
/* f32 o: 1e-5 + 2^-24 (D + 8) L, L the largest logit scale of the matrix's rows (trr_reference_attention). */
double trr_conf_attention_f32_bound(int64_t head_dim, double logit_scale);
/* lse: 1e-5 (1 + |lse_ref|) + 2^-24 (D + 8) L, L the row's logit scale. */
double trr_conf_attention_lse_bound(int64_t head_dim, double logit_scale, double lse_ref);

/* Appends a "; "-separated part to a verdict message, truncating at cap. */
void trr_conf_append(char *msg, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif
