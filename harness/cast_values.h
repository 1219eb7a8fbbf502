/* Inputs for cast's conformance cases: values chosen for the output dtype's rounding rules (docs/ops.md, cast),
 * not the uniform draws of random.h, so every case meets the specials, ties and boundaries. */
#ifndef TRR_CAST_VALUES_H
#define TRR_CAST_VALUES_H

#include "trireme.h"

#include <stdint.h>

/* Draws one value for a cast to out and stores it as element idx of host in dtype in (rounded to nearest even
 * there, as every input is). The mix: specials (NaN of either sign, infinities, signed zeros, f32's extremes and
 * subnormals), exact values of out, midpoints between neighbouring values of out (ties) and the floats beside
 * them, values about out's largest finite value and its smallest subnormal, and values spread log-uniformly over
 * 2^-30 .. 2^20. */
void trr_cast_input_store(uint64_t *rng, void *host, trr_dtype in, trr_dtype out, int64_t idx);

#endif
