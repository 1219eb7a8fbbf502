/* The float64 reference: the definition of every op's semantics (docs/ops.md), computed on the host. */
#ifndef TRR_REFERENCE_H
#define TRR_REFERENCE_H

#include "backend.h"

/* Computes call in float64. The operands' mem fields are host base pointers (offsets and strides in elements,
 * exactly as a backend would see them); inputs are read in their dtype (f16 and u8 widened exactly). out gets
 * the results packed row-major: rows*cols values, or rows values for row_sum. The output operand (z) is not
 * touched. */
trr_status trr_reference_run(const trr_call *call, double *out);
/* The same, and an op's second output (a row op's of a definition; backend.h's w) packed the same way into out2
 * where the op has one and out2 is not NULL. */
trr_status trr_reference_run_outputs(const trr_call *call, double *out, double *out2);

/* attention's part (reference_attention.c), on its normalised call (backend.h) with x.mem (q), y.mem (k) and
 * u.mem (v) host copies: o packed [B,Hq,Sq,D] (B·Hq·Sq rows of D), lse packed [B,Hq,Sq] and each row's logit
 * scale L = |scale| · max_j Σ_d |q_d·k_jd| over the keys it sees (0 where it sees none); lse and logit_scale may
 * be NULL. A row that sees no key gives o = 0 and lse = -inf. trr_reference_run writes o followed by lse. */
trr_status trr_reference_attention(const trr_call *call, double *o, double *lse, double *logit_scale);
/* One row (b, h, i) of it: o (D values), *lse, *logit_scale (may be NULL); what the bench's sampled check uses. */
trr_status trr_reference_attention_row(const trr_call *call, int64_t b, int64_t h, int64_t i, double *o,
                                       double *lse, double *logit_scale);
/* The keys query row i sees: Skv, or with causal min(Skv, max(0, i + Skv - Sq + 1)); they are keys 0 .. n-1. */
int64_t trr_reference_attention_visible(const trr_call *call, int64_t i);

#endif
