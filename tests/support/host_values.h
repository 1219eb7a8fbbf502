/* Host-side values for tests that fill device buffers themselves: a seeded uniform draw, and f32 / f16 / bf16
 * elements stored with one rounding and read back exactly (trr_f32_to_f16 and friends). */
#ifndef TRR_TEST_HOST_VALUES_H
#define TRR_TEST_HOST_VALUES_H

#include <stddef.h>
#include <stdint.h>

#include "trireme.h"

/* xorshift32 over *state: a value in [lo, hi) */
static inline float host_uniform(uint32_t *state, float lo, float hi) {
    uint32_t r = *state;
    r ^= r << 13, r ^= r >> 17, r ^= r << 5;
    *state = r;
    return lo + (hi - lo) * (float)(r >> 8) / (float)(1u << 24);
}

/* Bytes of one element of a float dtype. */
static inline size_t host_dtype_size(trr_dtype dt) { return dt == TRR_F32 ? 4 : 2; }

/* Rounds v to dt, stores it at element i of p and returns the stored value as f32. */
static inline float host_store(void *p, size_t i, trr_dtype dt, float v) {
    if (dt == TRR_F32) {
        ((float *)p)[i] = v;
        return v;
    }
    uint16_t h;
    float back;
    if (dt == TRR_F16) {
        trr_f32_to_f16(&v, &h, 1);
        trr_f16_to_f32(&h, &back, 1);
    } else {
        trr_f32_to_bf16(&v, &h, 1);
        trr_bf16_to_f32(&h, &back, 1);
    }
    ((uint16_t *)p)[i] = h;
    return back;
}

/* Element i of p, of dtype dt, as f32 (exact for every float dtype). */
static inline float host_load(const void *p, size_t i, trr_dtype dt) {
    if (dt == TRR_F32) return ((const float *)p)[i];
    float v;
    if (dt == TRR_F16) trr_f16_to_f32(&((const uint16_t *)p)[i], &v, 1);
    else trr_bf16_to_f32(&((const uint16_t *)p)[i], &v, 1);
    return v;
}

#endif
