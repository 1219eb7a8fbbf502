/* IEEE binary16 <-> binary32 on the host, bit by bit so it is exact on every compiler and CPU. */
#include "half.h"
#include "backend.h"

#include <string.h>

uint16_t trr_half_from_float(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t mant = x & 0x7fffffu;
    if (exp == 0xffu) /* Inf stays Inf; NaN stays a quiet NaN with its top payload bits */
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00u); /* overflow to infinity */
    if (e <= 0) {
        /* subnormal half (or zero): shift the mantissa with its implicit bit, round to nearest even */
        if (e < -10) return (uint16_t)sign;
        uint32_t m = mant | 0x800000u;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t h = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (h & 1u))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)e << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    /* a carry out of the mantissa correctly bumps the exponent, up to infinity */
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}

float trr_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t x;
    if (exp == 0x1fu) {
        x = sign | 0x7f800000u | (mant << 13);
    } else if (exp == 0) {
        if (mant == 0) {
            x = sign;
        } else {
            /* normalise the subnormal */
            int32_t e = -1;
            do {
                mant <<= 1;
                e++;
            } while (!(mant & 0x400u));
            x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
        }
    } else {
        x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

trr_status trr_f32_to_f16(const float *src, uint16_t *dst, size_t n) {
    if (n && (!src || !dst))
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "trr_f32_to_f16: %s is NULL with n = %zu", src ? "dst" : "src", n);
    for (size_t i = 0; i < n; i++) dst[i] = trr_half_from_float(src[i]);
    return TRR_OK;
}

trr_status trr_f16_to_f32(const uint16_t *src, float *dst, size_t n) {
    if (n && (!src || !dst))
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "trr_f16_to_f32: %s is NULL with n = %zu", src ? "dst" : "src", n);
    for (size_t i = 0; i < n; i++) dst[i] = trr_half_to_float(src[i]);
    return TRR_OK;
}

uint16_t trr_bf16_from_float(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    /* NaN: keep the sign and top payload, force the quiet bit so truncation cannot make it an infinity */
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x0040u);
    /* round to nearest even on the 16 dropped bits; a carry bumps the exponent, up to infinity */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

float trr_bf16_to_float(uint16_t h) {
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

trr_status trr_f32_to_bf16(const float *src, uint16_t *dst, size_t n) {
    if (n && (!src || !dst))
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "trr_f32_to_bf16: %s is NULL with n = %zu", src ? "dst" : "src", n);
    for (size_t i = 0; i < n; i++) dst[i] = trr_bf16_from_float(src[i]);
    return TRR_OK;
}

trr_status trr_bf16_to_f32(const uint16_t *src, float *dst, size_t n) {
    if (n && (!src || !dst))
        return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, "trr_bf16_to_f32: %s is NULL with n = %zu", src ? "dst" : "src", n);
    for (size_t i = 0; i < n; i++) dst[i] = trr_bf16_to_float(src[i]);
    return TRR_OK;
}

/* f32 -> an 8-bit float of mbits mantissa bits and exponent bias `bias`, round to nearest even on the integer
 * bits. max_code is the largest finite magnitude's code, inf_code the infinity's (0: the format has none, and an
 * infinity saturates like any finite overflow), nan_code the NaN's magnitude bits. */
static uint8_t f8_from_float(float f, int mbits, int bias, uint32_t max_code, uint32_t inf_code, uint32_t nan_code) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    const uint32_t sign = (x >> 24) & 0x80u, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (uint8_t)(sign | nan_code);
    if (ax == 0x7f800000u) return (uint8_t)(sign | (inf_code ? inf_code : max_code));
    const int e = (int)(ax >> 23) - 127 + bias; /* the exponent field the value would have here */
    if ((ax >> 23) == 0 || e < -(mbits + 1)) return (uint8_t)sign; /* below half the smallest subnormal: 0 */
    uint32_t sig = (ax & 0x7fffffu) | 0x800000u;
    /* bits of the 24-bit significand dropped: a normal result keeps mbits, a subnormal (e <= 0) 1 - e fewer */
    const int shift = 23 - mbits + (e < 1 ? 1 - e : 0);
    uint32_t code = sig >> shift;
    const uint32_t rem = sig & ((1u << shift) - 1u), half = 1u << (shift - 1);
    /* a normal result: the exponent field on top of the kept mantissa (the implicit bit folds into it) */
    if (e >= 1) code = ((uint32_t)e << mbits) + (code & ((1u << mbits) - 1u));
    if (rem > half || (rem == half && (code & 1u))) code++; /* a carry moves up the exponent, as it should */
    if (code > max_code) code = max_code; /* finite overflow saturates */
    return (uint8_t)(sign | code);
}

uint8_t trr_f8e4m3_from_float(float f) { return f8_from_float(f, 3, 7, 0x7eu, 0, 0x7fu); }

uint8_t trr_f8e5m2_from_float(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    /* NaN: f16's quiet NaN, top byte (the quiet bit and the top payload bit) */
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint8_t)(((x >> 24) & 0x80u) | 0x7eu | ((x >> 21) & 1u));
    return f8_from_float(f, 2, 15, 0x7bu, 0x7cu, 0x7eu);
}

float trr_f8e4m3_to_float(uint8_t b) {
    const uint32_t sign = (uint32_t)(b & 0x80u) << 24, e = (b >> 3) & 15u, m = b & 7u;
    uint32_t x;
    if ((b & 0x7fu) == 0x7fu) x = sign | 0x7fc00000u; /* the quiet NaN of f32, with the sign */
    else if (e) x = sign | ((e + 120u) << 23) | (m << 20); /* rebias 7 -> 127 */
    else if (m) { /* m * 2^-9: the highest set bit of m becomes the implicit one */
        const uint32_t p = m >= 4 ? 2u : m >= 2 ? 1u : 0u;
        x = sign | ((p + 118u) << 23) | ((m << (23u - p)) & 0x7fffffu);
    } else x = sign;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

float trr_f8e5m2_to_float(uint8_t b) {
    /* the top byte of an f16, payload and all */
    return trr_half_to_float((uint16_t)((unsigned)b << 8));
}

double trr_dtype_max_finite(trr_dtype dt) {
    switch (dt) {
    case TRR_F32: return 3.4028234663852886e38;
    case TRR_F16: return 65504.0;
    case TRR_BF16: return 3.3895313892515355e38;
    case TRR_F8E4M3: return 448.0;
    case TRR_F8E5M2: return 57344.0;
    default: return 0.0;
    }
}

int trr_dtype_is_float(trr_dtype dt) { return dt == TRR_F32 || dt == TRR_F16 || dt == TRR_BF16 || trr_dtype_is_f8(dt); }

#define F8_ARRAY(name, from, to, fn)                                                                               \
    trr_status name(const from *src, to *dst, size_t n) {                                                           \
        if (n && (!src || !dst))                                                                                     \
            return trr_error(NULL, TRR_ERR_INVALID_ARGUMENT, #name ": %s is NULL with n = %zu", src ? "dst" : "src", \
                             n);                                                                                     \
        for (size_t i = 0; i < n; i++) dst[i] = fn(src[i]);                                                          \
        return TRR_OK;                                                                                               \
    }
F8_ARRAY(trr_f32_to_f8e4m3, float, uint8_t, trr_f8e4m3_from_float)
F8_ARRAY(trr_f8e4m3_to_f32, uint8_t, float, trr_f8e4m3_to_float)
F8_ARRAY(trr_f32_to_f8e5m2, float, uint8_t, trr_f8e5m2_from_float)
F8_ARRAY(trr_f8e5m2_to_f32, uint8_t, float, trr_f8e5m2_to_float)

void trr_dtype_store_f32(void *base, trr_dtype dt, int64_t idx, float value) {
    uint8_t *p = base;
    uint16_t h;
    switch (dt) {
    case TRR_F32: memcpy(p + idx * 4, &value, 4); break;
    case TRR_F16:
        h = trr_half_from_float(value);
        memcpy(p + idx * 2, &h, 2);
        break;
    case TRR_BF16:
        h = trr_bf16_from_float(value);
        memcpy(p + idx * 2, &h, 2);
        break;
    case TRR_F8E4M3: p[idx] = trr_f8e4m3_from_float(value); break;
    case TRR_F8E5M2: p[idx] = trr_f8e5m2_from_float(value); break;
    default: p[idx] = (uint8_t)value; break;
    }
}

float trr_dtype_load_f32(const void *base, trr_dtype dt, int64_t idx) {
    const uint8_t *p = base;
    float f;
    uint16_t h;
    switch (dt) {
    case TRR_F32: memcpy(&f, p + idx * 4, 4); return f;
    case TRR_F16: memcpy(&h, p + idx * 2, 2); return trr_half_to_float(h);
    case TRR_BF16: memcpy(&h, p + idx * 2, 2); return trr_bf16_to_float(h);
    case TRR_F8E4M3: return trr_f8e4m3_to_float(p[idx]);
    case TRR_F8E5M2: return trr_f8e5m2_to_float(p[idx]);
    default: return p[idx];
    }
}
