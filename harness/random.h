/* The one random generator behind every harness's inputs (conformance engine, tuner, benchmarks): a seed then
 * means the same numbers wherever it is given, and a change to the draw is made in one place. */
#ifndef TRR_RANDOM_H
#define TRR_RANDOM_H

#include "trireme.h"

#include <stdint.h>

/* splitmix64: advances *state and returns the next 64 random bits. */
uint64_t trr_rng_next(uint64_t *state);

/* A random byte (the top bits, which splitmix64 mixes best). */
uint8_t trr_rng_byte(uint64_t *state);

/* Uniform in [-1, 1) on a 2^-23 grid, never zero: a zero hides a kernel that skips the element (and can run
 * faster than real data). */
float trr_rng_unit(uint64_t *state);

/* A float input element for op: trr_rng_unit, except softmax rows sit in [60, 100], where exp() overflows f32
 * unless the row maximum is subtracted first, as docs/ops.md's softmax defines it. */
float trr_rng_input(uint64_t *state, trr_op op);
/* Element idx of a float dtype dt at host: trr_rng_input stored in dt (rounded to nearest even), drawn again where
 * the rounding gives zero (an 8-bit float's draws below half its smallest subnormal), so inputs stay non-zero. */
void trr_rng_store(uint64_t *state, trr_op op, trr_dtype dt, void *host, int64_t idx);
/* n packed elements of dt at host drawn for op's inputs: trr_rng_store for the float dtypes, trr_rng_byte for
 * u8. */
void trr_rng_fill(uint64_t *state, trr_op op, trr_dtype dt, void *host, int64_t n);

#endif
