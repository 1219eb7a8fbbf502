/* trr_config as data: one table of its fields (name, place in the struct, op-table bit, largest value), so
 * every piece of code that reads, writes, prints or parses a config walks the table instead of the struct's
 * memory, and the text form "block_m=128,block_n=256,variant=wgmma" is the same everywhere (CLI, tuner, tuning
 * database). */
#ifndef TRR_CONFIG_FIELDS_H
#define TRR_CONFIG_FIELDS_H

#include "trireme.h"

#include <stddef.h>
#include <stdint.h>

/* Largest value a tile field may hold; anything above is a mistake, not a config. */
#define TRR_CONFIG_FIELD_MAX 65536

typedef struct trr_config_field {
    const char *name;  /* "block_m" */
    size_t offset;     /* offsetof(trr_config, ...) */
    unsigned bit;      /* TRR_CFG_* (op_table.h) */
    int max;           /* largest valid value; the smallest is 0 */
} trr_config_field;

enum { TRR_CONFIG_FIELD_COUNT = 9, TRR_CONFIG_FIELD_VARIANT = 8 /* the last: its value is a trr_variant */ };
extern const trr_config_field trr_config_fields[TRR_CONFIG_FIELD_COUNT];

/* The index of the field called name, or -1. */
int trr_config_field_index(const char *name);
int trr_config_get(const trr_config *c, int field);
void trr_config_set(trr_config *c, int field, int value);
int trr_config_equal(const trr_config *a, const trr_config *b);

/* Sets every field of c that is zero and named in fields (TRR_CFG_* bits) from defaults. */
void trr_config_fill(trr_config *c, const trr_config *defaults, unsigned fields);

/* A field filled from the product of others (a backend's heuristic: threads x vector width x loads): the product,
 * or TRR_CONFIG_FIELD_MAX + 1 where it passes the largest field, so the range check refuses it instead of an
 * int overflowing (overridden fields reach 65536 each). Factors are fields or small constants, never negative. */
static inline int trr_config_product(int64_t a, int64_t b) {
    const int64_t p = a * b;
    return p > TRR_CONFIG_FIELD_MAX ? TRR_CONFIG_FIELD_MAX + 1 : (int)p;
}

/* TRR_OK when every field lies in [0, max]; else TRR_ERR_INVALID_ARGUMENT with a message naming the field,
 * recorded on ctx (NULL: this thread). */
trr_status trr_config_check_range(trr_context *ctx, const trr_config *c);

/* "block_m=128,block_n=256,block_k=64,threads=384,stages=4,variant=wgmma": the non-zero fields in table order,
 * the variant by name; "" for an all-zero config. Truncated to cap. */
void trr_config_to_text(const trr_config *c, char *out, size_t cap);

/* Parses the form above (fields in any order, spaces around items allowed, each field at most once; an empty
 * string is the all-zero config). TRR_ERR_INVALID_ARGUMENT for an unknown name, a value that is not a
 * non-negative integer (or, for variant, a variant name), or a value out of range; the message is recorded on
 * ctx (NULL: this thread). */
trr_status trr_config_from_text(trr_context *ctx, const char *text, trr_config *out_config);

#endif
