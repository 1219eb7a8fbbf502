/* The conformance engine's verdict on one output: SPEC.md's bounds, poison, guard bytes (conformance.h lists
 * the rules). Split from the engine so the rules can be read, and tested, apart from the buffer handling. */
#ifndef TRR_CONFORMANCE_CHECK_H
#define TRR_CONFORMANCE_CHECK_H

#include "backend.h"
#include "conformance.h"

#include <stddef.h>
#include <stdint.h>

/* The poison written into every output element before a run. f32/f16: negative quiet NaNs with a payload no
 * arithmetic produces; u8 has no such value, so u8 outputs run twice, with each of these. */
#define TRR_CONF_POISON_F32 0xFFC5A5A5u
#define TRR_CONF_POISON_F16 0xFE5Au
#define TRR_CONF_POISON_U8_A 0xA5u
#define TRR_CONF_POISON_U8_B 0x5Au

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

/* One element of a host array as a double: f32, f16 (exactly widened) or u8. */
double trr_conf_load(const void *base, trr_dtype dtype, int64_t index);

#endif
