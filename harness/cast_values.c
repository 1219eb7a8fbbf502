/* cast's conformance inputs (cast_values.h). */
#include "cast_values.h"

#include "half.h"
#include "random.h"

#include <float.h>
#include <math.h>
#include <string.h>

static float from_bits(uint32_t x) {
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

/* The value of a random finite code of dt (NaN codes become the quiet NaN, so no output can repeat a poison). */
static float random_value(uint64_t *rng, trr_dtype dt) {
    const uint64_t r = trr_rng_next(rng);
    switch (dt) {
    case TRR_F32: {
        /* an exponent within 2^-40 .. 2^40 or, one time in eight, anywhere */
        uint32_t bits = (uint32_t)r;
        if ((r >> 32) % 8) bits = (bits & 0x807fffffu) | ((uint32_t)(87 + (r >> 40) % 81) << 23);
        const float f = from_bits(bits);
        return isnan(f) ? NAN : f;
    }
    case TRR_F16: return isnan(trr_half_to_float((uint16_t)r)) ? NAN : trr_half_to_float((uint16_t)r);
    case TRR_BF16: return isnan(trr_bf16_to_float((uint16_t)r)) ? NAN : trr_bf16_to_float((uint16_t)r);
    default: {
        uint8_t b = (uint8_t)r;
        const float f = trr_dtype_load_f32(&b, dt, 0);
        return isnan(f) ? NAN : f;
    }
    }
}

/* The next representable value of dt above v (v finite, >= 0, below dt's largest finite value). */
static double next_up(trr_dtype dt, float v) {
    if (dt == TRR_F32) return nextafterf(v, INFINITY);
    /* the smallest f32 above v that dt rounds to something else: dt's grid is coarser than f32's */
    uint8_t cell[4];
    trr_dtype_store_f32(cell, dt, 0, v);
    const float at = trr_dtype_load_f32(cell, dt, 0);
    float probe = at;
    for (int step = 0; step < 40; step++) {
        /* double the distance until the rounding changes, then the value there is dt's next */
        const float d = probe == at ? (at > 0 ? at * 0x1p-12f : 0x1p-40f) : (probe - at) * 2.0f;
        probe = at + d;
        trr_dtype_store_f32(cell, dt, 0, probe);
        const float got = trr_dtype_load_f32(cell, dt, 0);
        if (got > at) return got;
    }
    return at;
}

void trr_cast_input_store(uint64_t *rng, void *host, trr_dtype in, trr_dtype out, int64_t idx) {
    const double max = trr_dtype_max_finite(out);
    /* the output's smallest subnormal: 2^-149, 2^-24, 2^-133, 2^-9, 2^-16 */
    const double tiny = out == TRR_F32 ? 0x1p-149 : out == TRR_F16 ? 0x1p-24 : out == TRR_BF16 ? 0x1p-133
                        : out == TRR_F8E4M3 ? 0x1p-9 : 0x1p-16;
    const uint64_t r = trr_rng_next(rng);
    const int kind = (int)(r % 16);
    const double sign = (r >> 8) & 1 ? -1.0 : 1.0;
    const double u = (double)((r >> 12) & 0xfffff) / 1048576.0; /* [0, 1) */
    double v;
    if (kind == 0) {
        static const double specials[] = {NAN, INFINITY, 0.0, FLT_MAX, FLT_MIN, 0x1p-149, 65504.0, 65520.0,
                                          448.0, 464.0, 480.0, 57344.0, 61440.0, 0x1p-9, 0x1p-10, 0x1.8p-9,
                                          0x1p-16, 0x1p-17, 0x1p-24, 0x1p-25, 1.0, 0x1.fep127};
        v = sign * specials[(r >> 16) % (sizeof specials / sizeof specials[0])];
    } else if (kind <= 4) {
        v = random_value(rng, out);
    } else if (kind <= 10) {
        /* the midpoint of two neighbours of out (a tie), or the float just either side of it */
        const float a = fabsf(random_value(rng, out));
        if (!isfinite(a) || a >= max) {
            v = sign * max;
        } else {
            const double mid = ((double)a + next_up(out, a)) / 2.0;
            const float m = (float)mid;
            v = sign * (kind <= 6 ? mid : kind <= 8 ? nextafterf(m, INFINITY) : nextafterf(m, 0.0f));
        }
    } else if (kind <= 12) {
        v = sign * max * (0.875 + 0.25 * u); /* either side of the largest finite value */
    } else if (kind == 13) {
        v = sign * tiny * 4.0 * u; /* the smallest subnormals and the ties between them */
    } else {
        v = sign * ldexp(1.0 + u, (int)((r >> 40) % 51) - 30);
    }
    trr_dtype_store_f32(host, in, idx, (float)v);
}
