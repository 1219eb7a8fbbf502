/* Whole numbers as people write sizes (number.h). */
#include "number.h"

#include <ctype.h>
#include <limits.h>
#include <stddef.h>

/* Decimal digits at p into *out; 0 when there are none or they overflow. */
static int digits(const char *p, const char **end, int64_t *out) {
    int64_t v = 0;
    const char *s = p;
    for (; isdigit((unsigned char)*p); p++)
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *p - '0', &v)) return 0;
    if (p == s) return 0;
    *end = p;
    *out = v;
    return 1;
}

int trr_parse_number(const char *text, const char **end, int64_t *out) {
    if (!text) return 0;
    const char *p = text;
    const int negative = *p == '-';
    if (negative) p++;
    int64_t v = 0, e = 0;
    if (!digits(p, &p, &v)) return 0;
    if (*p == '^' || (p[0] == '<' && p[1] == '<')) {
        const int power = *p == '^';
        if (negative || !digits(p + (power ? 1 : 2), &p, &e)) return 0;
        if (power) {
            int64_t r = 1;
            for (int64_t i = 0; i < e; i++) {
                if (__builtin_mul_overflow(r, v, &r)) return 0;
                if (r == 0 || r == 1) break; /* 0^e and 1^e */
            }
            v = r;
        } else {
            if (e >= 63 || (v && v > (INT64_MAX >> e))) return 0;
            v <<= e;
        }
    }
    *out = negative ? -v : v;
    *end = p;
    return 1;
}

int trr_parse_number_all(const char *text, int64_t *out) {
    const char *end = NULL;
    int64_t v = 0;
    if (!trr_parse_number(text, &end, &v) || *end) return 0;
    *out = v;
    return 1;
}
