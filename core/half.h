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

/* OCP 8-bit floats (docs/ops.md, Element types), from and to f32 bit by bit: round to nearest even; a finite value
 * past the largest finite one saturates to it (e4m3 448, e5m2 57344), and so does an infinity in e4m3 (which has
 * none); e5m2 keeps infinities; a NaN stays a NaN with its sign (e4m3: S.1111.111; e5m2: the quiet NaN with the
 * top payload bit f16 would keep). Widening is exact. Every value of f32, f16, bf16 and the 8-bit floats is exact
 * in f32, so converting from f32 is converting from the source's exact value: one rounding, never two. */
uint8_t trr_f8e4m3_from_float(float f);
float trr_f8e4m3_to_float(uint8_t b);
uint8_t trr_f8e5m2_from_float(float f);
float trr_f8e5m2_to_float(uint8_t b);
/* The largest finite value of a float dtype (FLT_MAX, 65504, bf16's 0x1.fep127, 448, 57344); 0 for u8. */
double trr_dtype_max_finite(trr_dtype dt);
/* 1 for the dtypes that hold floating-point values (f32, f16, bf16, f8e4m3, f8e5m2). */
int trr_dtype_is_float(trr_dtype dt);
/* 1 for the OCP 8-bit floats. */
static inline int trr_dtype_is_f8(trr_dtype dt) { return dt == TRR_F8E4M3 || dt == TRR_F8E5M2; }

/* One element of a host array of any dtype from/to f32: the one conversion path the harness, tuner, bench and
 * CLI fill and read their host copies through (f16/bf16 round to nearest even, the 8-bit floats as above; u8 truncates the value, which
 * callers keep in [0, 255]). */
void trr_dtype_store_f32(void *base, trr_dtype dt, int64_t idx, float value);
float trr_dtype_load_f32(const void *base, trr_dtype dt, int64_t idx);

#endif
