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
    default: return p[idx];
    }
}
