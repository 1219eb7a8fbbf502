/* The op table: every op's name, operands, allowed dtypes, tile-parameter schema and default configs. This is
 * the one place an op is declared; adding an op touches this table, the reference and one kernel per backend. */
#ifndef TRR_OP_TABLE_H
#define TRR_OP_TABLE_H

#include "trireme.h"

/* Which trr_config fields an op uses (its tile-parameter schema). */
enum {
    TRR_CFG_BLOCK_M = 1u << 0,
    TRR_CFG_BLOCK_N = 1u << 1,
    TRR_CFG_BLOCK_K = 1u << 2,
    TRR_CFG_GROUP_M = 1u << 3,
    TRR_CFG_THREADS = 1u << 4,
    TRR_CFG_STAGES = 1u << 5,
    TRR_CFG_VECTOR_WIDTH = 1u << 6,
    TRR_CFG_SPLIT_K = 1u << 7
};

#define TRR_DTYPE_BIT(d) (1u << (unsigned)(d))

/* One allowed combination of operand dtypes. */
typedef struct trr_op_signature {
    trr_dtype in;  /* every input */
    trr_dtype out;
} trr_op_signature;

typedef struct trr_op_desc {
    trr_op op;
    const char *name;
    int n_inputs;              /* 1 or 2 */
    const char *operands;      /* "x, y -> z", for people */
    const trr_op_signature *signatures;
    int n_signatures;
    unsigned config_fields;    /* TRR_CFG_* */
    trr_config default_config; /* used for any field a backend's heuristic leaves at zero */
} trr_op_desc;

const trr_op_desc *trr_op_desc_get(trr_op op);
/* 1 if (in, out) is one of op's signatures. */
int trr_op_allows(trr_op op, trr_dtype in, trr_dtype out);

/* SPEC.md's known-good f16 matmul configs on NVIDIA, the starting set for tuning. */
extern const trr_config trr_matmul_f16_nvidia_configs[];
extern const int trr_matmul_f16_nvidia_config_count;

#endif
