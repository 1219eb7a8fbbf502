/* Random inputs (random.h). */
#include "random.h"

#include "half.h"
#include "op_table.h"

uint64_t trr_rng_next(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint8_t trr_rng_byte(uint64_t *state) { return (uint8_t)(trr_rng_next(state) >> 56); }

float trr_rng_unit(uint64_t *state) {
    float v = (float)((int64_t)(trr_rng_next(state) >> 40) - (1 << 23)) / (float)(1 << 23);
    return v == 0.0f ? 0.5f : v;
}

float trr_rng_input(uint64_t *state, trr_op op) {
    const float v = trr_rng_unit(state);
    const trr_op_desc *d = trr_op_desc_get(op);
    return d && d->shape == TRR_SHAPE_ROWS ? 80.0f + 20.0f * v : v;
}

void trr_rng_store(uint64_t *state, trr_op op, trr_dtype dt, void *host, int64_t idx) {
    /* an 8-bit float rounds draws below half its smallest subnormal (e4m3: 2^-10) to zero: draw again */
    for (int tries = 0; tries < 64; tries++) {
        trr_dtype_store_f32(host, dt, idx, trr_rng_input(state, op));
        if (trr_dtype_load_f32(host, dt, idx) != 0.0f) return;
    }
}

void trr_rng_fill(uint64_t *state, trr_op op, trr_dtype dt, void *host, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        if (dt == TRR_U8) ((uint8_t *)host)[i] = trr_rng_byte(state);
        else trr_rng_store(state, op, dt, host, i);
    }
}
