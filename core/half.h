/* IEEE binary16 conversion on the host, round to nearest even (docs/ops.md, Element types: half ops round once on store). */
#ifndef TRR_HALF_H
#define TRR_HALF_H

#include "trireme.h"

#include <stdint.h>

uint16_t trr_half_from_float(float f);
float trr_half_to_float(uint16_t h);
/* bfloat16: the top 16 bits of an f32, rounded to nearest even; NaN stays a quiet NaN */
uint16_t trr_bf16_from_float(float f);
float trr_bf16_to_float(uint16_t h);

/* One element of a host array of any dtype from/to f32: the one conversion path the harness, tuner, bench and
 * CLI fill and read their host copies through (f16/bf16 round to nearest even; u8 truncates the value, which
 * callers keep in [0, 255]). */
void trr_dtype_store_f32(void *base, trr_dtype dt, int64_t idx, float value);
float trr_dtype_load_f32(const void *base, trr_dtype dt, int64_t idx);

#endif
